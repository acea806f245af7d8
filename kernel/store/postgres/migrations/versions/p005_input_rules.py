"""p005_input_rules: the input rules of what a person ratifies, held by the database.

Revision ID: p005_input_rules
Revises: p004_login_binding

Runs :data:`ctx_kernel.kernel.store.postgres.schema.P005_STATEMENTS` in this revision's one
transaction, as the tables' owner: for every login but the owner's, triggers refuse hidden
characters, a subject not in its normal form or that looks like another, over-long or blank
fields, and a creation time far from the server's clock, in proposals, decisions and evidence.
"""

from ctx_kernel.kernel.store.postgres import schema
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p005_input_rules"
down_revision = "p004_login_binding"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run(schema.P005_STATEMENTS)
