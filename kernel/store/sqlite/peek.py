"""A SQLite store's short lists read with one connection and no store object, for a Tab press.

Opening a :class:`SQLiteStore` loads the whole backend (its rows, indexes, migrations and the
records they build), which is most of what a shell waits for on each Tab press. These read the
same statements as the store on a plain connection: nothing is upgraded or marked, no extension is
loaded, and a file that is missing, locked past a moment or not a ctx store gives an empty list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctx_kernel.kernel.store import lists
from ctx_kernel.kernel.store.sqlite import driver

BUSY_MS = 200  # a Tab press answers with nothing rather than wait on a long write


def _rows(path: Path, statement: str) -> list[Any]:
    if not path.is_file():  # connecting would create an empty file
        return []
    try:
        conn = driver.dbapi.connect(str(path), isolation_level=None, timeout=BUSY_MS / 1000)
    except driver.dbapi.Error:
        return []
    try:
        return list(conn.execute(statement).fetchall())
    except driver.dbapi.Error:
        return []
    finally:
        conn.close()


def subjects(path: Path) -> list[str]:
    """Every subject a decision or a pending proposal in the file is on."""
    return [row[0] for row in _rows(path, lists.KNOWN_SUBJECTS)]


def pending(path: Path) -> list[tuple[str, str, str]]:
    """``(id, subject, decision)`` of every pending proposal in the file."""
    return [(row[0], row[1], row[2]) for row in _rows(path, lists.PENDING_TEXTS)]
