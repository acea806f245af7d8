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
        kernel: Ctx,
        reviewer: str,
        now: Callable[[], datetime] = utc_now,
        *,
        reviewer_confirmed: bool = True,
    ) -> None:
        self._kernel = kernel
        self._lock = threading.Lock()
        self.reviewer = reviewer
        # False when the name is only the login name: the first act asks the person to confirm it.
        self.reviewer_confirmed = reviewer_confirmed
        self.now = now
        self._prefetched: dict[str, Future[object]] = {}
        # Taken before any screen reads, so a commit landing between the first read and the
        # first poll still counts as a change.
        self._seen_version = kernel.data_version()
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
            return call(self._kernel)

    def close(self) -> None:
        """Wait for the call in flight, then refuse new ones: the owner may now close the store."""
        with self._lock:
            self._closed = True

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
            version = self._kernel.data_version()
        finally:
            self._lock.release()
        changed, self._seen_version = version != self._seen_version, version
        return changed
