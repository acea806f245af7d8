"""m012_reconfirm_requests: a proposal may ask a person to re-confirm a current decision.

Revision ID: m012_reconfirm_requests
Revises: m011_links_logged

``reconfirms`` names the decision a proposal asks a person to re-confirm (an agent found it still
holds after its linked code changed); NULL for every other proposal. Its subject and text are the
decision's; ratifying it records the person's re-confirmation of that decision, no new one.
Rows from before this migration ask for no re-confirmation.
"""

from alembic import op

revision = "m012_reconfirm_requests"
down_revision = "m011_links_logged"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 12

STATEMENTS = [
    # No foreign key, like decision_id: decision already references proposal, and SQLite cannot add
    # one later; ctx checks the decision exists when the request is made.
    "ALTER TABLE proposal ADD COLUMN reconfirms TEXT",
    # The immutability trigger covers the new column too.
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
         OR NEW.reconfirms IS NOT OLD.reconfirms
       BEGIN SELECT RAISE(ABORT, 'a proposal is resolved once, from pending, and never edited'); END""",
]


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
