"""m003_sources: where an imported decision or proposal came from (file path and ADR number).

Revision ID: m003_sources
Revises: m002_fts
"""

from alembic import op

revision = "m003_sources"
down_revision = "m002_fts"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 3

STATEMENTS = [
    "ALTER TABLE decision ADD COLUMN source TEXT",
    "ALTER TABLE decision ADD COLUMN adr_number INTEGER",
    "ALTER TABLE proposal ADD COLUMN source TEXT",
    "ALTER TABLE proposal ADD COLUMN adr_number INTEGER",
    "CREATE INDEX ix_decision_source ON decision (source)",
    "CREATE INDEX ix_proposal_source ON proposal (source)",
    # The immutability triggers now cover the new columns too.
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
       BEGIN SELECT RAISE(ABORT, 'a proposal is resolved once, from pending, and never edited'); END""",
]


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
