"""How a SQLite store tells a reader that another connection committed: ``PRAGMA data_version``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

# Roles live in a server; a SQLite store is one file, and its permissions decide who writes.
SQLITE_HAS_NO_ROLES = (
    "roles are a PostgreSQL feature: this store is a SQLite file, whose file permissions decide who "
    "may write (`ctx migrate --to postgresql://...` moves it to a shared server)"
)


class DataVersionWatch:
    """Reads ``data_version`` on a connection of its own once per ``wait`` (microseconds).

    ``data_version`` changes when any *other* connection commits, so the watch's own connection
    sees the commits of the store it watches as well as everyone else's.
    """

    def __init__(self, connect: Callable[[], Any]) -> None:
        self._conn = connect()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._seen = self._version()

    def _version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def wait(self, timeout: float) -> bool:
        """Sleep ``timeout`` seconds (less when closed), then say whether anyone committed since."""
        if self._closed.wait(timeout):
            return False
        with self._lock:
            if self._closed.is_set():
                return False
            version = self._version()
        changed, self._seen = version != self._seen, version
        return changed

    def close(self) -> None:
        """Close the connection; a ``wait`` in progress returns False."""
        self._closed.set()
        with self._lock:
            self._conn.close()
