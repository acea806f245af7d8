"""m007_adr_fields: a decision's and a proposal's title and deciders, as an ADR states them.

Revision ID: m007_adr_fields
Revises: m006_vault

``title`` is the record's title (an ADR's heading, ``ctx propose --title``); ``deciders`` is a
JSON list of the people the record names as having decided: attribution, never the ratifier.
Rows from before this migration have no title and no deciders: nothing about them is invented.
"""

from alembic import op

revision = "m007_adr_fields"
down_revision = "m006_vault"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 7

STATEMENTS = [
    "ALTER TABLE decision ADD COLUMN title TEXT",
    "ALTER TABLE decision ADD COLUMN deciders TEXT NOT NULL DEFAULT '[]'",
    "ALTER TABLE proposal ADD COLUMN title TEXT",
    "ALTER TABLE proposal ADD COLUMN deciders TEXT NOT NULL DEFAULT '[]'",
    # The immutability triggers cover the new columns too.
    "DROP TRIGGER decision_close_once",
    """CREATE TRIGGER decision_close_once BEFORE UPDATE ON decision
       WHEN OLD.valid_until IS NOT NULL OR NEW.valid_until IS NULL
         OR NEW.valid_until < OLD.valid_from
         OR NEW.id IS NOT OLD.id OR NEW.subject IS NOT OLD.subject
         OR NEW.decision IS NOT OLD.decision OR NEW.rationale IS NOT OLD.rationale
         OR NEW.valid_from IS NOT OLD.valid_from OR NEW.ratified_by IS NOT OLD.ratified_by
         OR NEW.ratified_at IS NOT OLD.ratified_at OR NEW.proposal_id IS NOT OLD.proposal_id
         OR NEW.amended IS NOT OLD.amended OR NEW.source IS NOT OLD.source
         OR NEW.adr_number IS NOT OLD.adr_number
         OR NEW.title IS NOT OLD.title OR NEW.deciders IS NOT OLD.deciders
       BEGIN SELECT RAISE(ABORT, 'a decision only has its window closed, once'); END""",
    "DROP TRIGGER proposal_resolve_once",
    """CREATE TRIGGER proposal_resolve_once BEFORE UPDATE ON proposal
       WHEN OLD.status <> 'pending' OR NEW.status = 'pending'
         OR NEW.id IS NOT OLD.id OR NEW.subject IS NOT OLD.subject
         OR NEW.decision IS NOT OLD.decision OR NEW.rationale IS NOT OLD.rationale
         OR NEW.proposer IS NOT OLD.proposer OR NEW.session IS NOT OLD.session
         OR NEW.created_at IS NOT OLD.created_at OR NEW.supersedes IS NOT OLD.supersedes
         OR NEW.explicit_supersedes IS NOT OLD.explicit_supersedes
         OR NEW.near_duplicate_of IS NOT OLD.near_duplicate_of
         OR NEW.near_duplicate_score IS NOT OLD.near_duplicate_score
         OR NEW.source IS NOT OLD.source OR NEW.adr_number IS NOT OLD.adr_number
         OR NEW.title IS NOT OLD.title OR NEW.deciders IS NOT OLD.deciders
       BEGIN SELECT RAISE(ABORT, 'a proposal is resolved once, from pending, and never edited'); END""",
]


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
