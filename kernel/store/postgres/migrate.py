"""Creating and upgrading the PostgreSQL schema with Alembic, from the revisions in ``migrations/``.

The SQLite store's migrations (:mod:`ctx_kernel.kernel.store.sqlite.migrate`) are another branch in
another folder, so neither backend ever runs the other's; both keep Alembic's ordered, recorded
history and one transaction per revision. SQLAlchemy's ``postgresql+psycopg`` dialect runs them
over a connection ctx opens itself (so a URL libpq accepts and SQLAlchemy's parser would not, such
as a socket folder in ``?host=``, works the same), and loads only when a schema is created or
upgraded: a database already at head is recognised by one query.

Only ``ctx init --db postgresql://...`` calls :func:`upgrade`, as the role that is to own the
tables; opening a store never migrates it. ``python -m ctx_kernel.kernel.store.postgres.migrate
draft MESSAGE URL`` drafts the next revision's DDL from the models (:func:`draft`).
"""

from __future__ import annotations

import re
import sys
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


def _engine(url: str, where: str) -> Any:
    """A SQLAlchemy engine over connections ctx opens itself (see the module's docstring)."""
    from sqlalchemy import create_engine  # noqa: PLC0415
    from sqlalchemy.pool import NullPool  # noqa: PLC0415

    def raw() -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(url, connect_timeout=connection.CONNECT_TIMEOUT)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {where}: {connection.first_line(exc)}") from exc

    return create_engine("postgresql+psycopg://", creator=raw, poolclass=NullPool)


def _run_alembic(url: str, where: str, target: str) -> None:
    from alembic import command  # noqa: PLC0415

    engine = _engine(url, where)
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


def revisions(folder: Path = MIGRATIONS_DIR) -> list[str]:
    """Every PostgreSQL revision id in ``folder``, oldest first."""
    from alembic.script import ScriptDirectory  # noqa: PLC0415

    script = ScriptDirectory(str(folder))
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


_DRAFT = '''"""{message}

Revision ID: {revision}
Revises: {down_revision}

Drafted from kernel/store/models.py by `python -m ctx_kernel.kernel.store.postgres.migrate draft`:
the ordinary tables' steps. Review them, add what the models do not declare (CHECKs, triggers,
grants, row-level security, a boolean's default), and pin the statements in
tests/postgres/test_pg_revisions.py once the revision ships.
"""

from ctx_kernel.kernel.store.postgres.migrations import run

revision = "{revision}"
down_revision = "{down_revision}"
branch_labels = None
depends_on = None

STATEMENTS = [
{statements}]


def upgrade() -> None:
    run(STATEMENTS)
'''


def _literal(statement: str) -> str:
    """``statement`` as a Python string literal, triple-quoted where that keeps it as written."""
    if '"""' in statement or statement.endswith('"') or "\\" in statement:
        return repr(statement)
    return f'"""{statement}"""'


def draft(message: str, url: str, folder: Path = MIGRATIONS_DIR) -> Path:
    """Write the next revision into ``folder``: the DDL that brings a database at head to the models
    (:func:`~ctx_kernel.kernel.store.postgres.declared.drafted_statements`). ``url`` names a
    scratch database, empty or a ctx store, which is brought to head first."""
    from ctx_kernel.kernel.store.postgres import declared  # noqa: PLC0415 - SQLModel loads only here

    where = connection.describe(url)
    upgrade(url)
    engine = _engine(url, where)
    try:
        with engine.connect() as bind:
            statements = declared.drafted_statements(bind)
    finally:
        engine.dispose()
    last = revisions(folder)[-1]
    slug = re.sub(r"\W+", "_", message.lower()).strip("_")
    revision = f"p{int(last[1:4]) + 1:03d}_{slug}"
    listed = "".join(f"    {_literal(statement)},\n" for statement in statements)
    path = folder / "versions" / f"{revision}.py"
    text = _DRAFT.format(message=message, revision=revision, down_revision=last, statements=listed)
    path.write_text(text, encoding="utf-8")
    return path


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "draft":
        sys.exit("usage: python -m ctx_kernel.kernel.store.postgres.migrate draft MESSAGE SCRATCH_URL")
    print(draft(sys.argv[2], sys.argv[3]))
