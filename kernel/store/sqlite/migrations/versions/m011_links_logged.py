"""m011_links_logged: a proposal's links are written with it, before the audit row that logs them.

Revision ID: m011_links_logged
Revises: m010_served

ctx inserts a proposal's links in the transaction that queues it, before its ``proposal.created``
or ``proposal.imported`` row, which holds them. A link inserted once that row exists was added
around ctx, and a ratification would snapshot it as if the proposer had named it: the trigger
refuses it (and ``ctx audit verify`` names one written with the trigger dropped). The index finds a
target's audit rows without reading the whole log, for this check and for anyone reading a
record's history.
"""

from alembic import op

revision = "m011_links_logged"
down_revision = "m010_served"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 11

STATEMENTS = [
    "CREATE INDEX ix_audit_target ON audit (target)",
    """CREATE TRIGGER proposal_link_before_logged BEFORE INSERT ON proposal_link
       WHEN EXISTS (SELECT 1 FROM audit WHERE target = NEW.proposal_id
                    AND action IN ('proposal.created', 'proposal.imported'))
       BEGIN SELECT RAISE(ABORT, 'a proposal''s links are written with it, never added later'); END""",
]


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
