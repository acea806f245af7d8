"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
"""

from alembic import op

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = None
depends_on = None
SCHEMA_VERSION = ${int(up_revision[1:4])}


def upgrade() -> None:
    ${upgrades if upgrades else "pass"}
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
