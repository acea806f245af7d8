"""Filling the vector tables: ``ctx reindex`` and recall's backfill embed the rows that have none.

The newest embedded row is the high-water mark that says which rows still wait
(:meth:`Store.pending_vectors`), so vectors are written oldest row first and never a row in part.
A window of rows is read, embedded as one pass (the embedder sorts its texts by length), and
written in short transactions of whole rows, oldest first. An interruption loses at most the
window being embedded; the next run starts after the last row written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ctx_kernel.kernel.recall.embeddings import Embedder, chunks
from ctx_kernel.kernel.store.base import Store

# Rows embedded as one pass. Wider windows sort better (less padding) but lose more work when
# interrupted; at 256 realistic texts a window is about 10 s on two cores, and sorting within it
# pads about as little as sorting the whole store.
WINDOW_ROWS = 256
# Chunks written per transaction: each holds the store's writer lock (agents' `ctx log` waits
# for it) for a few milliseconds, not for the whole window.
WRITE_CHUNKS = 64


def backfill(
    store: Store,
    embedder: Embedder,
    limit: int,
    progress: Callable[[int], None] | None = None,
    window: int = WINDOW_ROWS,
) -> int:
    """Embed up to ``limit`` rows that have no vector yet (decisions first); returns how many.

    ``progress`` hears how many rows each window wrote, once the whole window is written: calls
    spaced by the embedding time, which is what a time-left estimate needs to measure.
    """
    done = 0
    for kind in (k for k in ("decision", "evidence") if store.embeds(k)):
        while done < limit:
            rows = store.pending_vectors(kind, min(window, limit - done))
            if not rows:
                break
            pieces = [(item, i, piece) for item, text in rows for i, piece in enumerate(chunks(text))]
            vectors = embedder.embed_documents([piece for _, _, piece in pieces])
            embedded = [(item, i, vector) for (item, i, _), vector in zip(pieces, vectors, strict=True)]
            if not _write(store, kind, embedder.model_id, embedded):
                return done  # the model changed under us (ctx reindex in another process)
            done += len(rows)
            if progress is not None:
                progress(len(rows))
    return done


def _write(store: Store, kind: str, model: str, embedded: Sequence[tuple[str, int, bytes]]) -> bool:
    """Store the vectors in transactions of whole rows, oldest first; False when the store's model
    is no longer ``model``."""
    start = 0
    while start < len(embedded):
        end = min(start + WRITE_CHUNKS, len(embedded))
        while end < len(embedded) and embedded[end][0] == embedded[end - 1][0]:
            end += 1  # a row's chunks go together: a row written in part would be skipped for good
        with store.transaction():
            if store.get_meta("vector_model") != model:
                return False
            store.insert_vectors(kind, embedded[start:end])
        start = end
    return True


def pending_total(store: Store) -> int:
    """Rows of both stores that still wait for a vector this login may write."""
    return sum(store.pending_vector_count(kind) for kind in ("decision", "evidence") if store.embeds(kind))
