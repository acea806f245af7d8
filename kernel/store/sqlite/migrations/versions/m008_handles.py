"""m008_handles: records found by the end of their id, the handle a person types.

Revision ID: m008_handles
Revises: m007_adr_fields

Ids start with their creation time, so records made close together share long prefixes; their
ends are random. A handle is the shortest end of an id (four characters or more) that no other
record's id ends with. One index per table on an id's last four characters (its 26th to 29th:
an id is always 29 characters, and ``substr(id, 26, 4)`` means the same in SQLite and PostgreSQL)
makes finding the ids that share an end a lookup instead of a scan of every id.
"""

from alembic import op

revision = "m008_handles"
down_revision = "m007_adr_fields"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 8

STATEMENTS = [
    "CREATE INDEX ix_evidence_tail ON evidence (substr(id, 26, 4))",
    "CREATE INDEX ix_proposal_tail ON proposal (substr(id, 26, 4))",
    "CREATE INDEX ix_decision_tail ON decision (substr(id, 26, 4))",
]


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
