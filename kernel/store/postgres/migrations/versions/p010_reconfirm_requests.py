"""p010_reconfirm_requests: a proposal may ask a person to re-confirm a current decision.

Revision ID: p010_reconfirm_requests
Revises: p009_served

Runs :data:`ctx_kernel.kernel.store.postgres.schema.P010_STATEMENTS`: SQLite's
m011_reconfirm_requests. p001's resolve-once trigger already covers the new column.
"""

from ctx_kernel.kernel.store.postgres import schema
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p010_reconfirm_requests"
down_revision = "p009_served"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run(schema.P010_STATEMENTS)
