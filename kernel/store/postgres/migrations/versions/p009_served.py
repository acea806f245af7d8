"""p009_served: what each agent was served, as a hash chain of its own, and its signed folds.

Revision ID: p009_served
Revises: p008_staleness

Runs :data:`ctx_kernel.kernel.store.postgres.schema.P009_STATEMENTS`: SQLite's m010_served, an
entry's agent bound to the login that writes it, and an agent's login limited to appending.
"""

from ctx_kernel.kernel.store.postgres import schema
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p009_served"
down_revision = "p008_staleness"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run(schema.P009_STATEMENTS)
