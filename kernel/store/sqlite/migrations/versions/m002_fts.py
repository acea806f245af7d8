"""m002_fts: full-text indexes over evidence and decisions, kept in sync by triggers.

Revision ID: m002_fts
Revises: m001_initial
"""

from alembic import op

revision = "m002_fts"
down_revision = "m001_initial"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 2

TOKENIZE = "porter unicode61 remove_diacritics 2"

# unicode61 splits on '.', '-' and '_', so dotted subjects index as words. Indexed
# texts never change after insert, so an insert trigger keeps
# each external-content index in sync; 'rebuild' indexes rows from before this migration.
STATEMENTS = [
    f"""CREATE VIRTUAL TABLE evidence_fts USING fts5(
        text, content='evidence', content_rowid='rowid', tokenize='{TOKENIZE}')""",
    """CREATE TRIGGER evidence_fts_insert AFTER INSERT ON evidence BEGIN
         INSERT INTO evidence_fts (rowid, text) VALUES (NEW.rowid, NEW.text);
       END""",
    "INSERT INTO evidence_fts (evidence_fts) VALUES ('rebuild')",
    f"""CREATE VIRTUAL TABLE decision_fts USING fts5(
        subject, decision, rationale, content='decision', content_rowid='rowid',
        tokenize='{TOKENIZE}')""",
    """CREATE TRIGGER decision_fts_insert AFTER INSERT ON decision BEGIN
         INSERT INTO decision_fts (rowid, subject, decision, rationale)
         VALUES (NEW.rowid, NEW.subject, NEW.decision, NEW.rationale);
       END""",
    "INSERT INTO decision_fts (decision_fts) VALUES ('rebuild')",
]


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
