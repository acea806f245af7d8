"""p003_window_rule: SQLite's rule for overlapping decision windows, empty windows included.

Revision ID: p003_window_rule
Revises: p002_role_grants

Runs :data:`ctx_kernel.kernel.store.postgres.schema.P003_STATEMENTS` in this revision's one
transaction, as the tables' owner: a BEFORE INSERT trigger on decision with the predicate of
SQLite's ``decision_no_overlap``, so a window closed the moment it opened is refused inside or
against another window of its subject, as SQLite refuses it. The exclusion constraint of p001 stays.
"""

from ctx_kernel.kernel.store.postgres import schema
from ctx_kernel.kernel.store.postgres.migrations import run

revision = "p003_window_rule"
down_revision = "p002_role_grants"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run(schema.P003_STATEMENTS)
