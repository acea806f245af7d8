"""p010_links_logged: a proposal's links are written with it, before the audit row that logs them.

Revision ID: p010_links_logged
Revises: p009_served

Runs :data:`ctx_kernel.kernel.store.postgres.schema.P010_STATEMENTS`: SQLite's m011_links_logged, a
link inserted once its proposal's audit row exists refused for every login.
"""

from ctx_kernel.kernel.store.postgres import schema
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p010_links_logged"
down_revision = "p009_served"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run(schema.P010_STATEMENTS)
