"""p008_served: what each agent was served, as a hash chain of its own, and its signed folds.

Revision ID: p008_served
Revises: p007_handles

Runs :data:`ctx_kernel.kernel.store.postgres.schema.P008_STATEMENTS`: SQLite's m009_served, an
entry's agent bound to the login that writes it, and an agent's login limited to appending.
"""

from ctx_kernel.kernel.store.postgres import schema
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p008_served"
down_revision = "p007_handles"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run(schema.P008_STATEMENTS)
