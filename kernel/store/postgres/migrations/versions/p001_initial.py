"""p001_initial: the store's schema as SQLite's m007 leaves it, in PostgreSQL's types, and its roles.

Revision ID: p001_initial
Revises:

Runs :data:`ctx_kernel.kernel.store.postgres.schema.STATEMENTS` and then
:data:`ctx_kernel.kernel.store.postgres.roles.STATEMENTS`, in order, in this revision's one
transaction, as the role that is to own the tables (the administrator). The statements go to the
driver as they are: they hold ``%`` and ``:`` that a bind-parameter parser would misread.
Those lists have shipped: tests/postgres/test_pg_revisions.py holds their digest, so a schema
change goes into a new revision, never into them.
"""

from ctx_kernel.kernel.store.postgres import roles, schema
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p001_initial"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Every login reads the revision to know whether its ctx matches the schema.
    grant = f"GRANT SELECT ON alembic_version TO {', '.join(roles.GROUPS)}"
    run([*schema.STATEMENTS, *roles.STATEMENTS, grant])
