"""The one SQLite connection factory that every part of ctx goes through.

sqlite-vec is a loadable extension, and many Python builds ship a stdlib ``sqlite3``
without ``enable_load_extension``. We use the stdlib module where it can load
extensions and otherwise the ``sqlean.py`` wheel, a drop-in DB-API module built
with extension loading on Linux, macOS and Windows. The SQLAlchemy engine used by
migrations is built from the same factory and the same module.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ctx_kernel.kernel.store.base import BackendCheck

BUSY_TIMEOUT_MS = 30_000
MMAP_BYTES = 256 * 1024 * 1024


def _pick_module() -> ModuleType:
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    import sqlean  # noqa: PLC0415 - only needed where the stdlib cannot load extensions

    return cast("ModuleType", sqlean)


dbapi: ModuleType = _pick_module()


def _vec_extension_path() -> str:
    # `import sqlite_vec` also imports numpy (~100 ms); the hot path only needs the path.
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("sqlite-vec is not installed")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def connect(path: str | Path, *, load_vec: bool = True) -> Any:
    """Open a connection in autocommit mode with ctx's pragmas (WAL, busy timeout, foreign keys)."""
    conn = dbapi.connect(
        str(path), isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    if str(path) != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    # Vector scans read the whole KNN table; memory-mapped reads halve their cost.
    conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    if load_vec:
        conn.enable_load_extension(True)
        conn.load_extension(_vec_extension_path())
        conn.enable_load_extension(False)
    return conn


def make_engine(path: str | Path) -> Any:
    """A SQLAlchemy engine whose connections come from :func:`connect`."""
    from sqlalchemy import create_engine, event  # noqa: PLC0415 - heavy, migrations only

    engine = create_engine("sqlite://", creator=lambda: connect(path), module=dbapi)

    # The DB-API module never opens transactions itself here (isolation_level=None), so
    # SQLAlchemy must emit BEGIN for DDL to be transactional (SQLAlchemy's SQLite docs).
    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def check_extensions() -> str:
    """Open an in-memory database, load sqlite-vec and return its version; StoreError when it cannot."""
    from ctx_kernel.kernel.errors import StoreError  # noqa: PLC0415

    try:
        conn = connect(":memory:")
        try:
            return str(conn.execute("SELECT vec_version()").fetchone()[0])
        finally:
            conn.close()
    except Exception as exc:
        raise StoreError(f"{dbapi.__name__} cannot load sqlite-vec: {exc}") from exc


def doctor_checks() -> list[BackendCheck]:
    """`ctx doctor`'s check of the SQLite driver: it loads sqlite-vec (name, ok, detail, fix)."""
    from ctx_kernel.kernel.errors import StoreError  # noqa: PLC0415
    from ctx_kernel.kernel.store.base import BackendCheck  # noqa: PLC0415

    try:
        version = check_extensions()
    except StoreError as exc:
        return [
            BackendCheck("driver", False, exc.message, "pip install --force-reinstall sqlean.py sqlite-vec")
        ]
    return [BackendCheck("driver", True, f"{dbapi.__name__} loads sqlite-vec {version}", None)]
