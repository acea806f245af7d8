"""`ctx reindex` and the vector backfill: whole rows written oldest first, progress once per window,
and an interrupted reindex carried on by the next instead of started over."""

from __future__ import annotations

import pytest
from embedders import HashEmbedder

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.capture.ingest import EvidenceInput, Item
from ctx_kernel.kernel.limits import META_REINDEX
from ctx_kernel.kernel.recall import backfill as vectorfill
from ctx_kernel.kernel.recall.embeddings import CHUNK_CHARS, MAX_CHUNKS, chunks

# More rows than one window, so a reindex writes several.
ROWS = vectorfill.WINDOW_ROWS * 2 + 37


def _texts(count: int) -> list[str]:
    long_one = ("A paragraph about retries and timeouts in the billing queue. " * 40).strip()
    assert len(long_one) > 2 * CHUNK_CHARS
    return [long_one + f" ({n})" if n % 7 == 0 else f"note {n} on kafka partitions" for n in range(count)]


def _store(store_path, embedder: HashEmbedder) -> Ctx:
    ctx, _ = Ctx.init(store_path, embedder=embedder)
    ctx.log_many(Item(n, EvidenceInput(text, "note", "bench")) for n, text in enumerate(_texts(ROWS), 1))
    return ctx


def _vector_rows(ctx: Ctx) -> tuple[int, int, int]:
    """(chunk rows, distinct chunk ids, rows of the KNN table) of the evidence vectors."""
    conn = ctx.store._conn
    rows, distinct = conn.execute("SELECT count(*), count(DISTINCT chunk_id) FROM evidence_vector").fetchone()
    knn = conn.execute("SELECT count(*) FROM vec_evidence").fetchone()[0]
    return rows, distinct, knn


def _expected_chunks() -> int:
    return sum(len(chunks(text)) for text in _texts(ROWS))


class Stop(Exception):
    """Raised from a progress callback, as Ctrl-C would land between two windows."""


def stop_after_first_window(done: int, total: int) -> None:
    if done > 0:
        raise Stop


def test_an_interrupted_reindex_carries_on_where_it_stopped(store_path):
    embedder = HashEmbedder()
    ctx = _store(store_path, embedder)
    with pytest.raises(Stop):
        ctx.reindex(progress=stop_after_first_window)
    assert ctx.store.get_meta(META_REINDEX) == embedder.model_id
    left = ctx.store.pending_vector_count("evidence")
    assert 0 < left < ROWS
    embedder.calls = 0
    seen: list[tuple[int, int]] = []
    report = ctx.reindex(progress=lambda done, total: seen.append((done, total)))
    assert report.resumed and report.evidence == ROWS
    assert seen[0] == (0, left) and seen[-1] == (left, left)
    # Only the rows left were embedded again: the first window's vectors were kept.
    assert embedder.calls == sum(len(chunks(text)) for text in _texts(ROWS)[ROWS - left :])
    rows, distinct, knn = _vector_rows(ctx)
    assert rows == distinct == knn == _expected_chunks()
    assert ctx.store.get_meta(META_REINDEX) is None and ctx.store.pending_vector_count("evidence") == 0
    again = ctx.reindex()
    assert not again.resumed and _vector_rows(ctx) == (rows, rows, rows)
    ctx.close()


def test_a_reindex_with_another_model_starts_over(store_path):
    ctx = _store(store_path, HashEmbedder())
    with pytest.raises(Stop):
        ctx.reindex(progress=stop_after_first_window)
    ctx.close()
    other = HashEmbedder(dim=32, model_id="test/hash-32")
    with Ctx.open(store_path, embedder=other) as ctx:
        report = ctx.reindex()
        assert not report.resumed and report.previous_model == "test/hash-64"
        assert other.calls == _expected_chunks()
        assert _vector_rows(ctx) == (_expected_chunks(),) * 3


def test_progress_is_reported_once_per_window(store_path):
    ctx = _store(store_path, HashEmbedder())
    seen: list[tuple[int, int]] = []
    ctx.reindex(progress=lambda done, total: seen.append((done, total)))
    windows = -(-ROWS // vectorfill.WINDOW_ROWS)
    assert [done for done, _ in seen] == [min(n * vectorfill.WINDOW_ROWS, ROWS) for n in range(windows + 1)]
    ctx.close()


def test_each_write_holds_whole_rows_oldest_first(store_path, monkeypatch):
    ctx = _store(store_path, HashEmbedder())
    monkeypatch.setattr(vectorfill, "WRITE_CHUNKS", 5)  # smaller than a long text's chunks
    writes: list[list[tuple[str, int]]] = []
    insert = ctx.store.insert_vectors

    def spy(kind, rows):
        writes.append([(item, n) for item, n, _ in rows])
        return insert(kind, rows)

    monkeypatch.setattr(ctx.store, "insert_vectors", spy)
    ctx.reindex()
    order = [r[0] for r in ctx.store._conn.execute("SELECT id FROM evidence ORDER BY rowid")]
    assert [item for write in writes for item, n in write if n == 0] == order
    expected = dict(zip(order, (len(chunks(text)) for text in _texts(ROWS)), strict=True))
    for write in writes:
        items = {item for item, _ in write}
        assert all(sorted(n for i, n in write if i == item) == list(range(expected[item])) for item in items)
        assert len(write) < 5 + MAX_CHUNKS
    ctx.close()
