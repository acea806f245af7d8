"""Creating and upgrading the PostgreSQL schema with Alembic, from the revisions in ``migrations/``.

The SQLite store's migrations (:mod:`ctx_kernel.kernel.store.sqlite.migrate`) are another branch in
another folder, so neither backend ever runs the other's; both keep Alembic's ordered, recorded
history and one transaction per revision. SQLAlchemy's ``postgresql+psycopg`` dialect runs them
over a connection ctx opens itself (so a URL libpq accepts and SQLAlchemy's parser would not, such
as a socket folder in ``?host=``, works the same), and loads only when a schema is created or
upgraded: a database already at head is recognised by one query.

Only ``ctx init --db postgresql://...`` calls :func:`upgrade`, as the role that is to own the
tables; opening a store never migrates it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from ctx_kernel.kernel.errors import StoreError
from ctx_kernel.kernel.store.postgres import connection
from ctx_kernel.kernel.store.sqlite.migrate import alembic_config

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# Two `ctx init` at once: the second waits for the first's migration, then finds the schema at head.
_MIGRATION_LOCK = "SELECT pg_advisory_lock(1668577355, 2)"


def upgrade(url: str, target: str = "head") -> None:
    """Bring the database at ``url`` to ``target``: an empty database or a ctx store, nothing else."""
    where = connection.describe(url)
    probe = connection.connect(url)
    try:
        probe.execute(_MIGRATION_LOCK)
        state = connection.schema_state(probe, where)
        if state == connection.HEAD_REVISION and target == "head":
            return
        _run_alembic(url, where, target)
    except psycopg.Error as exc:
        raise connection.store_error(where, exc) from exc
    finally:
        probe.close()  # releases the session's migration lock


def _run_alembic(url: str, where: str, target: str) -> None:
    from alembic import command  # noqa: PLC0415
    from sqlalchemy import create_engine  # noqa: PLC0415
    from sqlalchemy.pool import NullPool  # noqa: PLC0415

    def raw() -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(url, connect_timeout=connection.CONNECT_TIMEOUT)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {where}: {connection.first_line(exc)}") from exc

    engine = create_engine("postgresql+psycopg://", creator=raw, poolclass=NullPool)
    try:
        with engine.connect() as bind:
            command.upgrade(alembic_config(bind, MIGRATIONS_DIR), target)
    except Exception as exc:
        cause = exc.orig if hasattr(exc, "orig") and exc.orig is not None else exc
        if isinstance(cause, psycopg.Error):
            raise connection.store_error(where, cause) from exc
        raise
    finally:
        engine.dispose()


def revisions() -> list[str]:
    """Every PostgreSQL revision id, oldest first."""
    from alembic.script import ScriptDirectory  # noqa: PLC0415

    script = ScriptDirectory(str(MIGRATIONS_DIR))
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]
