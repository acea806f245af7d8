"""p008_staleness: what a decision governs in the repository, and when a person last confirmed it.

Revision ID: p008_staleness
Revises: p007_handles

Runs :data:`ctx_kernel.kernel.store.postgres.schema.P008_STATEMENTS`: a proposal's links, written
by its proposer, and the append-only snapshots a reviewer's ratification or re-confirmation takes.
"""

from ctx_kernel.kernel.store.postgres import schema
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p008_staleness"
down_revision = "p007_handles"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run(schema.P008_STATEMENTS)
