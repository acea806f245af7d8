"""p011_reconfirm_requests: a proposal may ask a person to re-confirm a current decision.

Revision ID: p011_reconfirm_requests
Revises: p010_links_logged

Runs :data:`ctx_kernel.kernel.store.postgres.schema.P011_STATEMENTS`: SQLite's
m012_reconfirm_requests. p001's resolve-once trigger already covers the new column.
"""

from ctx_kernel.kernel.store.postgres import schema
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p011_reconfirm_requests"
down_revision = "p010_links_logged"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run(schema.P011_STATEMENTS)
