"""p002_role_grants: what a reviewer's ratification and an auditor's signed checkpoint need.

Revision ID: p002_role_grants
Revises: p001_initial

Runs :data:`ctx_kernel.kernel.store.postgres.roles.P002_STATEMENTS` in this revision's one
transaction, as the tables' owner: a reviewer may update a recorded conflict's text (the upsert a
ratification runs), and a reviewer or auditor may set the two metadata keys of the signed head and
the last verify, no other.
"""

from ctx_kernel.kernel.store.postgres import roles
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p002_role_grants"
down_revision = "p001_initial"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run(roles.P002_STATEMENTS)
