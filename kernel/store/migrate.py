"""Schema migrations, run with Alembic over the connection factory, and the mark of a ctx store.

Every migration sets ``PRAGMA user_version`` to its number inside its own transaction,
so opening a store only reads one pragma to know whether it is current; Alembic (and
SQLAlchemy, ~0.5 s to import) loads only when a store must be created or upgraded.

A ctx store carries ``PRAGMA application_id`` = APPLICATION_ID, as SQLite asks of application
file formats. Before ctx writes anything to a file (WAL mode, a migration, the mark) it reads the
file on a read-only connection and refuses one that is not an empty database or a ctx store, so
another application's SQLite file is never migrated. Stores made before the mark are recognised
by their tables and Alembic revision, and marked when next opened.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ctx_kernel.kernel.errors import StoreError
from ctx_kernel.kernel.store import driver

# The number of the newest migration in kernel/store/migrations/versions.
HEAD_VERSION = 7
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# "ctxK" in ASCII; PRAGMA application_id is a signed 32-bit integer in the file header.
APPLICATION_ID = 0x6374784B
# Tables every ctx store has had since m001, with Alembic's own: how an unmarked ctx store is known.
_CTX_TABLES = frozenset(
    {"meta", "evidence", "proposal", "decision", "supersession", "audit", "alembic_version"}
)
_CTX_REVISION = re.compile(r"^m\d{3}_\w+$")

EMPTY, MARKED, UNMARKED = "empty", "marked", "unmarked"


def probe(path: str | Path) -> str:
    """What the file at ``path`` is, read without writing: EMPTY, MARKED or UNMARKED (an older ctx
    store); StoreError for anything else ctx must not touch."""
    target = Path(path)
    if not target.exists():
        return EMPTY
    try:
        conn = driver.dbapi.connect(
            target.resolve().as_uri() + "?mode=ro",
            uri=True,
            isolation_level=None,
            check_same_thread=False,
            timeout=driver.BUSY_TIMEOUT_MS / 1000,
        )
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            if app_id == APPLICATION_ID:
                return MARKED
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            revision = (
                conn.execute("SELECT version_num FROM alembic_version").fetchone()
                if "alembic_version" in tables
                else None
            )
        finally:
            conn.close()
    except driver.dbapi.DatabaseError as exc:
        raise database_error(target, exc) from exc
    if app_id != 0:
        raise StoreError(
            f"{target} is another application's SQLite database (application_id {app_id}): "
            "ctx will not touch it"
        )
    if not tables and version == 0:
        return EMPTY
    if tables >= _CTX_TABLES and revision is not None and _CTX_REVISION.match(str(revision[0])):
        return UNMARKED
    raise StoreError(f"{target} is a SQLite database but not a ctx store: ctx will not touch it")


def database_error(path: Path | None, exc: Exception) -> StoreError:
    """A driver error about the store file itself as one line for a person."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    store = f"store {path}" if path is not None else "the store"
    if name == "SQLITE_NOTADB" or "not a database" in text:
        return StoreError(f"{path or 'the store'} is not a SQLite database: ctx will not touch it")
    if name == "SQLITE_CORRUPT" or "malformed" in text:
        return StoreError(f"{store} is damaged ({text}): restore it from a backup")
    return StoreError(f"{store}: {text}")


def mark(conn: Any) -> None:
    """Set the ctx mark on a store's connection (a header write, outside any schema change)."""
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _alembic_config(connection: Any) -> Any:
    from alembic.config import Config  # noqa: PLC0415

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def upgrade(path: str | Path, revision: str = "head") -> None:
    """Apply every migration up to ``revision`` to the store at ``path`` (an empty file or a ctx store)."""
    from alembic import command  # noqa: PLC0415

    probe(path)
    engine = driver.make_engine(path)
    try:
        with engine.connect() as connection:
            command.upgrade(_alembic_config(connection), revision)
    finally:
        engine.dispose()
    conn = driver.connect(path, load_vec=False)
    try:
        mark(conn)
    finally:
        conn.close()


def revisions() -> list[str]:
    """Every migration's revision id, oldest first."""
    from alembic.script import ScriptDirectory  # noqa: PLC0415

    script = ScriptDirectory(str(MIGRATIONS_DIR))
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def ensure_current(conn: Any, path: str | Path) -> None:
    """Upgrade an older store in place; refuse a store written by a newer ctx."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == HEAD_VERSION:
        return
    if version > HEAD_VERSION:
        raise StoreError(
            f"store {path} has schema version {version}, newer than this ctx ({HEAD_VERSION}): upgrade ctx"
        )
    upgrade(path)
