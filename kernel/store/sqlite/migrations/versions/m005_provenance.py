"""m005_provenance: where an evidence text came from and when it was written.

Revision ID: m005_provenance
Revises: m004_recall

``source`` points back at the origin (``path#L12`` for a transcript turn), ``speaker``
says who wrote the text (user, assistant, tool) and ``occurred_at`` when it was written,
as opposed to ``created_at``, when the vault took it in. Rows from before this migration
keep NULL in all three: nothing about them is invented.
"""

from alembic import op

revision = "m005_provenance"
down_revision = "m004_recall"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 5

STATEMENTS = [
    "ALTER TABLE evidence ADD COLUMN source TEXT",
    "ALTER TABLE evidence ADD COLUMN speaker TEXT",
    "ALTER TABLE evidence ADD COLUMN occurred_at TEXT",
]


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
