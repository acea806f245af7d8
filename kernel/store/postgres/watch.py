"""How a PostgreSQL store wakes a reader at once: LISTEN for the notification every commit sends.

Each write transaction of the store ends with ``pg_notify('ctx_changes', ...)``, which the
server delivers at commit (never for a rolled-back transaction) to every session listening on
the channel. The watch listens on a connection of its own, so a review app blocks in
:meth:`NotifyWatch.wait` without holding the store's connection, and learns of another
reviewer's act within milliseconds instead of at its next poll.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Container
from typing import Any

import psycopg
from psycopg import sql

CHANNEL = "ctx_changes"
SLICE_SECONDS = 0.2


class NotifyWatch:
    """LISTEN on ``CHANNEL`` over a dedicated autocommit connection, reopened when it drops."""

    def __init__(
        self, connect: Callable[[], psycopg.Connection[Any]], *, ignore_pids: Container[int] = ()
    ) -> None:
        """Listen on a connection from ``connect`` (autocommit), which the watch owns."""
        # Notifications from these server processes (the watched store's own connections) are
        # the app's own acts, which it has already shown.
        self._ignore = ignore_pids
        self._connect = connect
        self._closed = threading.Event()
        self._conn: psycopg.Connection[Any] | None = None
        self._listen()

    def _listen(self) -> None:
        conn = self._connect()
        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
        self._conn = conn

    def wait(self, timeout: float) -> bool:
        """Block until a commit's notification arrives or ``timeout`` passes; True on a commit.

        A dropped connection (a server restart) is opened again, and that wait answers True:
        commits made meanwhile sent notifications no one heard. While the server is away the
        driver's StoreError comes out, once per wait.
        """
        if self._closed.is_set():
            return False
        if self._conn is None or self._conn.closed:
            self._listen()
            return True
        deadline = time.monotonic() + timeout
        try:
            while not self._closed.is_set():
                # Short slices, so close() from another thread never waits long for this one.
                left = max(0.0, min(SLICE_SECONDS, deadline - time.monotonic()))
                notes = list(self._conn.notifies(timeout=left, stop_after=1))
                if notes:
                    # The rest of a burst of commits is drained at once: one wake for all.
                    notes += self._conn.notifies(timeout=0.0)
                    if any(note.pid not in self._ignore for note in notes):
                        return True
                if time.monotonic() >= deadline:
                    return False
        except psycopg.OperationalError:
            if self._closed.is_set():
                return False
            self._conn.close()
            self._listen()
            return True
        return False

    def close(self) -> None:
        """Stop listening and close the connection."""
        self._closed.set()
        if self._conn is not None:
            self._conn.close()
