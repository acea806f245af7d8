"""m006_vault: evidence text may be sealed (encrypted) in place; the index follows plain text only.

Revision ID: m006_vault
Revises: m005_provenance

Evidence stays append-only: the one change allowed is replacing a row's text with a sealed BLOB
(``ctx encrypt`` seals plain rows, ``ctx rekey`` seals them again under a new key), every other
column unchanged. The content hash still pins the plain text, and ctx checks it after decrypting.
Sealed rows are indexed by ctx itself, with keyed tokens, so the insert trigger skips them.
"""

from alembic import op

revision = "m006_vault"
down_revision = "m005_provenance"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 6

SEALED = "typeof(NEW.text) = 'blob' AND substr(NEW.text, 1, 5) = X'4354584501'"

STATEMENTS = [
    "DROP TRIGGER evidence_no_update",
    f"""CREATE TRIGGER evidence_no_update BEFORE UPDATE ON evidence
       WHEN NOT ({SEALED})
         OR NEW.id IS NOT OLD.id OR NEW.content_hash IS NOT OLD.content_hash
         OR NEW.kind IS NOT OLD.kind OR NEW.agent IS NOT OLD.agent
         OR NEW.session IS NOT OLD.session OR NEW.tags IS NOT OLD.tags
         OR NEW.created_at IS NOT OLD.created_at OR NEW.source IS NOT OLD.source
         OR NEW.speaker IS NOT OLD.speaker OR NEW.occurred_at IS NOT OLD.occurred_at
       BEGIN SELECT RAISE(ABORT, 'evidence is append-only'); END""",
    "DROP TRIGGER evidence_fts_insert",
    """CREATE TRIGGER evidence_fts_insert AFTER INSERT ON evidence WHEN typeof(NEW.text) = 'text' BEGIN
         INSERT INTO evidence_fts (rowid, text) VALUES (NEW.rowid, NEW.text);
       END""",
]


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
