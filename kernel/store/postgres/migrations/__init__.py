"""Alembic revisions of the PostgreSQL store (p001, p002, ...), apart from SQLite's m-revisions."""

from __future__ import annotations

from collections.abc import Iterable


def run(statements: Iterable[str]) -> None:
    """Run a revision's statements on the driver's connection, in the revision's transaction.

    They go to psycopg as they are: they hold ``%`` and ``:`` that SQLAlchemy's bind-parameter
    parser would misread.
    """
    from alembic import op  # noqa: PLC0415 - bound only while Alembic runs a revision

    conn = op.get_bind().connection.driver_connection
    assert conn is not None  # a connection Alembic holds open
    for statement in statements:
        conn.execute(statement)
