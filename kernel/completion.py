"""What a shell's Tab press reads from a store: its subjects and its pending proposals.

A shell starts ``ctx`` once per Tab press and waits for it, so these read one short list and
nothing else: a SQLite file through :mod:`~ctx_kernel.kernel.store.sqlite.peek` (one plain
connection, no store object, nothing upgraded), a PostgreSQL store through the store alone,
without the facade's services. A store that cannot be read completes nothing: a Tab press never
prints an error.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import CtxError
from ctx_kernel.kernel.store import open_store, postgres_url, sqlite_path
from ctx_kernel.kernel.store.sqlite import peek

if TYPE_CHECKING:
    from ctx_kernel.kernel.store.base import Store

T = TypeVar("T")


def _read(
    db: str | None, from_file: Callable[[Path], list[T]], from_store: Callable[[Store], list[T]]
) -> list[T]:
    try:
        location = paths.find_store(db)
        if postgres_url(location) is None:
            return from_file(sqlite_path(location))
        store = open_store(location)
    except CtxError:
        return []
    try:
        return from_store(store)
    finally:
        store.close()


def subjects(db: str | None, start: str) -> list[str]:
    """The subjects of decisions and pending proposals that begin with ``start``, in order."""
    found = _read(db, peek.subjects, lambda store: store.known_subjects())
    return sorted(s for s in found if s.startswith(start.lower()))


def pending(db: str | None, start: str) -> list[tuple[str, str, str]]:
    """``(id, subject, decision)`` of the pending proposals whose id begins with ``start``, oldest first."""
    found = _read(db, peek.pending, lambda store: store.pending_texts())
    return sorted(p for p in found if p[0].lower().startswith(start.lower()))
