"""What a shell's Tab press reads from a store: its subjects and its pending proposals.

A shell starts ``ctx`` once per Tab press and waits for it, so these open the store alone, without
the facade's services (recall, the embedding model's settings, the decision kernel), read one short
list and close it. A store that cannot be opened completes nothing: a Tab press never prints an
error.
"""

from __future__ import annotations

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import CtxError
from ctx_kernel.kernel.store import open_store
from ctx_kernel.kernel.store.base import Store


def _open(db: str | None) -> Store | None:
    try:
        return open_store(paths.find_store(db))
    except CtxError:
        return None


def subjects(db: str | None, start: str) -> list[str]:
    """The subjects of decisions and pending proposals that begin with ``start``, in order."""
    store = _open(db)
    if store is None:
        return []
    try:
        return sorted(s for s in store.known_subjects() if s.startswith(start.lower()))
    finally:
        store.close()


def pending(db: str | None, start: str) -> list[tuple[str, str, str]]:
    """``(id, subject, decision)`` of the pending proposals whose id begins with ``start``, oldest first."""
    store = _open(db)
    if store is None:
        return []
    try:
        return sorted(p for p in store.pending_texts() if p[0].lower().startswith(start.lower()))
    finally:
        store.close()
