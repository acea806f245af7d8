"""p007_handles: records found by the end of their id, the handle a person types.

Revision ID: p007_handles
Revises: p006_lookalikes_and_vectors

Runs :data:`ctx_kernel.kernel.store.postgres.schema.P007_STATEMENTS`: an index per table on an
id's last four characters, so finding the ids that share an end is a lookup, not a scan.
"""

from ctx_kernel.kernel.store.postgres import schema
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p007_handles"
down_revision = "p006_lookalikes_and_vectors"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run(schema.P007_STATEMENTS)
