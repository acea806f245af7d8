"""p004_login_binding: every act is bound to the login that does it, by the database itself.

Revision ID: p004_login_binding
Revises: p003_window_rule

Runs :data:`ctx_kernel.kernel.store.postgres.schema.P004_STATEMENTS` in this revision's one
transaction, as the tables' owner: for every login but the owner's, triggers refuse a proposer,
resolver, ratifier or audit actor other than ``session_user`` and evidence whose agent names
another login, and an agent's withdrawal policy covers its own proposals only.
"""

from ctx_kernel.kernel.store.postgres import schema
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p004_login_binding"
down_revision = "p003_window_rule"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run(schema.P004_STATEMENTS)
