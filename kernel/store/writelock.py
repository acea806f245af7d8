"""A blocking OS file lock beside the store that writers take before ``BEGIN IMMEDIATE``.

SQLite's busy handler sleeps and retries (sleeps of up to 100 ms), so under contention a writer
that keeps waking at the wrong moment can wait for seconds while others get in. A writer blocked
on an OS lock waits in the kernel instead and wakes as soon as the holder lets go (on Windows,
``msvcrt.locking`` retries once a second). Readers never take this lock. Where the lock file
cannot be opened (a read-only folder, say), writers fall back to SQLite's busy handler alone.

The stdlib calls are used directly: portalocker would add an ``importlib.metadata`` import
(about 50 ms) to ``ctx log`` and ``ctx propose``, the agents' hot path.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)  # msvcrt locks bytes from the current position
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
                return
            except OSError:
                continue  # LK_LOCK gives up after ten one-second tries; keep waiting in line

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def lock_path(db_path: Path) -> Path:
    """The lock file of a store: ``<store file>.lock`` beside it."""
    return db_path.with_name(db_path.name + ".lock")


class WriteLock:
    """The store's writer lock for one connection (its own open file, so threads exclude each other too)."""

    def __init__(self, db_path: Path) -> None:
        self.path = lock_path(db_path)
        self._fd: int | None = None
        self._usable = str(db_path) != ":memory:"
        self.held = False

    def acquire(self) -> bool:
        """Wait for the lock; False when no lock file can be used here (SQLite's busy handler decides)."""
        if self._fd is None:
            if not self._usable:
                return False
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:
                self._usable = False
                return False
        try:
            _lock(self._fd)
        except OSError:  # a file system without locks (some network mounts)
            self.close()
            self._usable = False
            return False
        self.held = True
        return True

    def release(self) -> None:
        """Let the next writer in; a no-op when not held."""
        if self.held and self._fd is not None:
            self.held = False
            _unlock(self._fd)

    def close(self) -> None:
        """Release and close the lock file."""
        self.release()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
