"""The review app's one door to the kernel: every call goes through the facade, one at a time."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import TypeVar

from ctx_kernel.kernel.facade import Ctx

T = TypeVar("T")


def utc_now() -> datetime:
    """The wall clock in UTC."""
    return datetime.now(UTC)


class Backend:
    """Serialises facade calls from the app's thread workers.

    A store holds one SQLite connection and one transaction flag, so two workers must never
    use it at once (a read would run inside another worker's write transaction).
    """

    def __init__(
        self,
        ctx: Ctx,
        reviewer: str,
        now: Callable[[], datetime] = utc_now,
        *,
        reviewer_confirmed: bool = True,
        watch: bool = False,
    ) -> None:
        self._ctx = ctx
        self._lock = threading.Lock()
        self.reviewer = reviewer
        # False when the name is only the login name: the first act asks the person to confirm it.
        self.reviewer_confirmed = reviewer_confirmed
        self.now = now
        self._prefetched: dict[str, Future[object]] = {}
        # Taken before any screen reads, so a commit landing between the first read and the
        # first poll still counts as a change.
        self._seen_version = ctx.data_version()
        # Opened as early, for the same reason: the app's live view waits on it (wait_for_change).
        self._watch = ctx.watch_changes() if watch else None
        self._closed = False

    def confirm_reviewer(self, name: str) -> None:
        """Record acts as ``name`` from now on (the person confirmed or corrected it)."""
        self.reviewer = name
        self.reviewer_confirmed = True

    def run(self, call: Callable[[Ctx], T]) -> T:
        """Run ``call`` with the facade, waiting for any other call to finish first."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the review app has closed")
            return call(self._ctx)

    def close(self) -> None:
        """Wait for the call in flight, then refuse new ones: the owner may now close the store."""
        with self._lock:
            self._closed = True
        if self._watch is not None:
            self._watch.close()

    @property
    def watching(self) -> bool:
        """Whether :meth:`wait_for_change` can still wake (the app is open and watches the store)."""
        return self._watch is not None and not self._closed

    def wait_for_change(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; True when another connection committed meanwhile.

        SQLite answers after ``timeout`` from ``data_version``; PostgreSQL wakes the moment
        another reviewer's or an agent's commit notifies. It never touches the facade's
        connection, so it runs beside any call.
        """
        if self._watch is None or self._closed:
            return False
        return self._watch.wait(timeout)

    def prefetch(self, name: str, call: Callable[[Ctx], object]) -> None:
        """Start ``call`` now, in a thread, so its result is ready when a screen asks (``take``)."""
        future: Future[object] = Future()

        def run() -> None:
            try:
                future.set_result(self.run(call))
            except BaseException as exc:  # handed to whoever takes the result
                future.set_exception(exc)

        self._prefetched[name] = future
        threading.Thread(target=run, name=f"ctx-prefetch-{name}", daemon=True).start()

    def take(self, name: str) -> Future[object] | None:
        """The prefetched result of ``name`` (once), or None."""
        return self._prefetched.pop(name, None)

    def changed(self) -> bool:
        """Whether another process committed since the last check (False while a call holds the store)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if self._closed:
                return False
            version = self._ctx.data_version()
        finally:
            self._lock.release()
        changed, self._seen_version = version != self._seen_version, version
        return changed
