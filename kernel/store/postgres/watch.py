"""How a PostgreSQL store wakes a reader at once: LISTEN for the notification every commit sends.

Each write transaction of the store ends with ``pg_notify('ctx_changes', ...)``, which the
server delivers at commit (never for a rolled-back transaction) to every session listening on
the channel. The watch listens on a connection of its own, so a review app blocks in
:meth:`NotifyWatch.wait` without holding the store's connection, and learns of another
reviewer's act within milliseconds instead of at its next poll.
"""

from __future__ import annotations

import threading
from collections.abc import Container

import psycopg
from psycopg import sql

CHANNEL = "ctx_changes"


class NotifyWatch:
    """LISTEN on ``CHANNEL`` over a dedicated autocommit connection."""

    def __init__(self, conninfo: str, *, ignore_pids: Container[int] = ()) -> None:
        # Notifications from these server processes (the watched store's own connections) are
        # the app's own acts, which it has already shown.
        self._ignore = ignore_pids
        self._conn = psycopg.connect(conninfo, autocommit=True)
        self._conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
        self._closed = threading.Event()

    def wait(self, timeout: float) -> bool:
        """Block until a commit's notification arrives or ``timeout`` passes; True on a commit."""
        if self._closed.is_set():
            return False
        changed = False
        try:
            # The first notification wakes the wait; the rest of a burst is drained at once.
            for wait, stop in ((timeout, 1), (0.0, None)):
                for note in self._conn.notifies(timeout=wait, stop_after=stop):
                    changed = changed or note.pid not in self._ignore
        except psycopg.Error:
            if self._closed.is_set():
                return False
            raise
        return changed

    def close(self) -> None:
        """Stop listening and close the connection."""
        self._closed.set()
        self._conn.close()
