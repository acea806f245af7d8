"""p006_lookalikes_and_vectors: the facade's whole look-alike table, and decision vectors a person's.

Revision ID: p006_lookalikes_and_vectors
Revises: p005_input_rules

Runs :func:`ctx_kernel.kernel.store.postgres.schema.p006_statements` in this revision's one
transaction, as the tables' owner: new subjects are compared by the look-alike key of every letter,
digit and mark the facade knows (``ctx_lookalike_char``), and an agent's login may no longer insert
decisions' vectors.
"""

from ctx_kernel.kernel.store.postgres import schema
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p006_lookalikes_and_vectors"
down_revision = "p005_input_rules"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run(schema.p006_statements())
