"""The vectors of a SQLite store held in memory, for a process that recalls often.

sqlite-vec's ``vec0`` scan pays a per-row cost inside the virtual table: about 1.4 ms at 10,000
chunks and 45 ms at a million on a 2-core machine. The same Hamming distances over a bit matrix
held in memory (48 bytes per chunk of a 384-dimension model: 48 MB at a million) take numpy
about 0.05 ms and 11 ms. Loading the matrix reads every chunk once (about 3.5 µs each), which a
one-shot process (``ctx recall`` from a shell) must not pay: the copy is loaded on a thread of
its own, from a connection of its own, once a kind of record is searched a second time, and
until it is ready searches use ``vec0``.

Candidates are rescored with the exact float32 vectors, so the copy can only change which rows
are considered. A kind whose vectors fit in :data:`EXACT_MEMORY` (50,000 chunks of a
384-dimension model) holds them too and rescores in memory, computing ``vec_distance_cosine`` as
sqlite-vec does (float32 products summed in order, the magnitudes' square roots in double): the
very numbers SQL would give, without its 0.7 ms for 200 candidates. A larger kind's candidates
are rescored in SQL.

The copy stays exact without any signal from writers because vector rows are never changed:
texts are immutable, rows are never deleted, and chunks are embedded in rowid order (see
``pending_vectors``), so new rows are the ones above the highest chunk id seen. A re-embedding
with another model (``ctx reindex``) shows as a changed ``vector_model`` and starts the copy
again; the same model gives the same vectors. A kind that grows past twice its budget is loaded
again, as bits only.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# Chunks read per statement while loading (the loader checks for a stop between batches).
LOAD_BATCH = 65_536
# New chunks kept in small segments are merged into the main matrix past this many.
MERGE_TAIL = 65_536
# A kind is searched this many times before its copy is loaded: a one-shot process never is.
LOAD_AFTER = 2
# A kind whose float32 vectors take at most this many bytes holds them beside its bits, and its
# candidates are rescored in memory.
EXACT_MEMORY = 75 * 2**20


class _Part:
    """Chunk ids (ascending), their bits as a (words, chunks) uint64 matrix and, for a kind whose
    vectors are held, their float32 vectors as a (chunks, dimensions) matrix."""

    def __init__(
        self,
        ids: NDArray[np.int64],
        words: NDArray[np.uint64],
        vectors: NDArray[np.float32] | None,
        magnitudes: NDArray[np.float32] | None,
        owners: NDArray[np.object_] | None,
    ) -> None:
        self.ids = ids
        self.words = words
        self.vectors = vectors
        self.magnitudes = magnitudes  # each vector's sum of squares, as sqlite-vec adds them
        self.owners = owners  # the id of each chunk's record

    @classmethod
    def from_rows(cls, rows: list[Row]) -> _Part:
        import numpy as np  # noqa: PLC0415 - only a warm process needs it

        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        raw = np.frombuffer(b"".join(_padded(r[1]) for r in rows), dtype="<u8")
        vectors = magnitudes = owners = None
        if rows and rows[0][2] is not None:
            floats = np.frombuffer(b"".join(r[2] or b"" for r in rows), dtype="<f4")
            vectors = floats.reshape(len(rows), -1)
            magnitudes = np.concatenate(
                [_in_order(vectors[i : i + 4096], vectors[i : i + 4096]) for i in range(0, len(rows), 4096)]
            )
            owners = np.empty(len(rows), dtype=np.object_)
            owners[:] = [r[3] for r in rows]
        return cls(ids, np.ascontiguousarray(raw.reshape(len(rows), -1).T), vectors, magnitudes, owners)

    @classmethod
    def join(cls, parts: list[_Part]) -> _Part:
        import numpy as np  # noqa: PLC0415

        vectors = magnitudes = owners = None
        if all(p.vectors is not None for p in parts):
            vectors = np.concatenate([p.vectors for p in parts if p.vectors is not None])
            magnitudes = np.concatenate([p.magnitudes for p in parts if p.magnitudes is not None])
            owners = np.concatenate([p.owners for p in parts if p.owners is not None])
        words = np.concatenate([p.words for p in parts], axis=1)
        return cls(np.concatenate([p.ids for p in parts]), words, vectors, magnitudes, owners)

    def distances(self, query: NDArray[np.uint64]) -> NDArray[np.uint16]:
        """Hamming distance of every chunk to ``query`` (one row of bits at a time: no temporaries
        the size of the whole matrix)."""
        import numpy as np  # noqa: PLC0415

        total: NDArray[np.uint16] = np.bitwise_count(self.words[0] ^ query[0]).astype(np.uint16)
        for row in range(1, len(query)):
            total += np.bitwise_count(self.words[row] ^ query[row])
        return total


class VectorMirror:
    """The bits (and, for a small kind, the vectors) of one kind of record (``decision`` or
    ``evidence``) of one store file."""

    def __init__(self, path: Path, kind: str, connect: Any) -> None:
        self._path = path
        self._kind = kind
        self._connect = connect  # path -> a connection with sqlite-vec loaded
        self._lock = threading.Lock()
        self._asked = 0
        self._loader: threading.Thread | None = None
        self._stop = threading.Event()
        self._ready = False
        self._model: str | None = None
        self._high = 0  # the highest chunk id held
        self._exact = False  # the vectors are held too (candidates are rescored here)
        self._main: _Part | None = None
        self._tail: list[_Part] = []
        self._tail_size = 0

    def close(self) -> None:
        """Stop a load in progress and wait for its thread."""
        self._stop.set()
        loader = self._loader
        if loader is not None and loader is not threading.current_thread():
            loader.join()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a load in progress; True when the copy is held."""
        loader = self._loader
        if loader is not None and loader is not threading.current_thread():
            loader.join(timeout)
        return self._ready

    def held(self) -> str | None:
        """What the copy holds: ``"exact"`` (the bits and the vectors), ``"bits"``, or None (not
        loaded)."""
        with self._lock:
            if not self._ready:
                return None
            return "exact" if self._exact else "bits"

    def search(self, conn: Any, query: bytes, count: int) -> Found | None:
        """The ``count`` chunks nearest ``query`` by Hamming distance over the bits, reading new
        chunks through ``conn``: rescored, most similar first, when the vectors are held, else in
        chunk order (the caller rescores them); None while no copy is held (search ``vec0``)."""
        table = f"{self._kind}_vector"
        high, model = conn.execute(
            f"SELECT (SELECT max(chunk_id) FROM {table}), (SELECT value FROM meta WHERE key = 'vector_model')"
        ).fetchone()
        with self._lock:
            if self._ready and model != self._model:
                self._restart()
            if self._ready and (high or 0) > self._high:
                self._add(self._read(conn, self._high, None, self._exact))
                if self._exact and self._vector_bytes() > 2 * EXACT_MEMORY:
                    self._restart()  # grown past its budget: the next load holds only bits
            if not self._ready:
                self._asked += 1
                if self._asked >= LOAD_AFTER and self._loader is None and not self._stop.is_set():
                    self._loader = threading.Thread(
                        target=self._load, name=f"ctx-vectors-{self._kind}", daemon=True
                    )
                    self._loader.start()
                return None
            parts = [p for p in (self._main, *self._tail) if p is not None and len(p.ids)]
        if not parts:
            return Found([], None, None)
        chosen = _nearest(parts, _query_bits(conn, query), count)
        ids = _gathered([part.ids[positions] for part, positions in chosen])
        held = [
            (part.vectors[at], part.magnitudes[at], part.owners[at])
            for part, at in chosen
            if part.vectors is not None and part.magnitudes is not None and part.owners is not None
        ]
        if len(held) < len(chosen):  # bits only: the caller rescores in SQL
            return Found(ids.tolist(), None, None)
        vectors, magnitudes, owners = (_gathered([h[n] for h in held]) for n in range(3))
        return _rescored(ids, vectors, magnitudes, owners, query)

    def _vector_bytes(self) -> int:
        """The bytes of the vectors held (under the lock)."""
        parts = (self._main, *self._tail)
        return sum(p.vectors.nbytes for p in parts if p is not None and p.vectors is not None)

    def _restart(self) -> None:
        """Forget the copy (the vectors were re-embedded, or outgrew memory) and load it again on
        the next searches."""
        self._ready, self._model, self._high = False, None, 0
        self._main, self._tail, self._tail_size = None, [], 0
        self._asked = 0
        self._loader = None

    def _read(self, conn: Any, after: int, limit: int | None, exact: bool) -> list[Row]:
        kind = self._kind
        if exact:  # the vectors too, and the id of each chunk's record
            sql = f"SELECT v.chunk_id, vec_quantize_binary(v.emb), v.emb, t.id FROM {kind}_vector v "
            sql += f"JOIN {kind} t ON t.rowid = v.owner_rowid "
        else:
            sql = f"SELECT v.chunk_id, vec_quantize_binary(v.emb), NULL, NULL FROM {kind}_vector v "
        sql += "WHERE v.chunk_id > ? ORDER BY v.chunk_id" + (" LIMIT ?" if limit else "")
        params = (after, limit) if limit else (after,)
        return [
            (int(r[0]), bytes(r[1]), None if r[2] is None else bytes(r[2]), r[3])
            for r in conn.execute(sql, params).fetchall()
            if r[1] is not None
        ]

    def _add(self, rows: list[Row]) -> None:
        """Append chunks above the highest held (under the lock)."""
        if not rows:
            return
        self._tail.append(_Part.from_rows(rows))
        self._tail_size += len(rows)
        self._high = rows[-1][0]
        if self._tail_size > MERGE_TAIL or len(self._tail) > 32:
            self._main = _Part.join([p for p in (self._main, *self._tail) if p is not None])
            self._tail, self._tail_size = [], 0

    def _load(self) -> None:
        """Read every chunk in batches on a connection of this thread's own (a daemon thread)."""
        try:
            conn = self._connect(self._path)
        except Exception:
            return  # the searches keep using vec0
        try:
            conn.execute("BEGIN")  # one snapshot: the model and the chunks agree
            row = conn.execute("SELECT value FROM meta WHERE key = 'vector_model'").fetchone()
            model = row[0] if row else None
            size = conn.execute(f"SELECT count(*), max(length(emb)) FROM {self._kind}_vector").fetchone()
            exact = (size[0] or 0) * (size[1] or 0) <= EXACT_MEMORY
            parts: list[_Part] = []
            after = 0
            while not self._stop.is_set():
                rows = self._read(conn, after, LOAD_BATCH, exact)
                if not rows:
                    break
                parts.append(_Part.from_rows(rows))
                after = rows[-1][0]
            conn.execute("COMMIT")
            if self._stop.is_set():
                return
            with self._lock:
                if self._loader is not threading.current_thread():
                    return  # restarted meanwhile: this copy may be of the old vectors
                self._main = _Part.join(parts) if parts else None
                self._tail, self._tail_size = [], 0
                self._exact = exact
                self._model, self._high, self._ready = model, after, True
        except Exception:
            with self._lock:
                if self._loader is threading.current_thread():
                    self._loader = None  # try again on a later search
        finally:
            conn.close()


# A chunk as read: its id, its bits and, for a kind whose vectors are held, its vector and the
# id of its record.
Row = tuple[int, bytes, bytes | None, str | None]


class Found(NamedTuple):
    """Chunk ids nearest a query, with their similarities and their records' ids (None: rescore
    them and look the ids up)."""

    chunk_ids: list[int]
    similarities: list[float] | None
    owners: list[str] | None


def _gathered(arrays: list[Any]) -> Any:
    import numpy as np  # noqa: PLC0415

    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)  # (_nearest gives one at least)


def _rescored(
    ids: NDArray[np.int64],
    vectors: NDArray[np.float32],
    magnitudes: NDArray[np.float32],
    owners: NDArray[np.object_],
    query: bytes,
) -> Found | None:
    """``ids`` most similar first (ties: lower id first), by ``1 - vec_distance_cosine`` computed
    as sqlite-vec computes it (float32 products summed in order, the magnitudes' square roots in
    double); a vector of zeros has no direction and is left out. None when the query's dimensions
    are not the vectors' (SQL reports that)."""
    import numpy as np  # noqa: PLC0415

    vector = np.frombuffer(query, dtype="<f4")
    if vectors.shape[1] != len(vector):
        return None
    dot = _in_order(vectors, vector).astype(np.float64)
    own = float(_in_order(vector[None, :], vector)[0])
    with np.errstate(invalid="ignore", divide="ignore"):
        distance = (1.0 - dot / (np.sqrt(magnitudes.astype(np.float64)) * np.sqrt(own))).astype(np.float32)
    similarity = 1.0 - distance.astype(np.float64)
    keep = ~np.isnan(similarity)
    similarity, ids, owners = similarity[keep], ids[keep], owners[keep]
    order = np.lexsort((ids, -similarity))
    return Found(ids[order].tolist(), similarity[order].tolist(), owners[order].tolist())


def _in_order(vectors: NDArray[np.float32], other: NDArray[np.float32]) -> NDArray[np.float32]:
    """Each row of ``vectors`` times ``other`` (a vector, or rows of the same shape), the products
    summed in float32 from the first dimension to the last, as sqlite-vec's C loop adds them.

    The products are laid out one dimension per row, so numpy reduces across rows: one vector
    add per dimension, in order (a reduction along a row would sum pairwise, in another order).
    """
    import numpy as np  # noqa: PLC0415

    right = other.T if other.ndim == 2 else other[:, None]
    products = np.multiply(vectors.T, right, order="C")
    if products.shape[1] == 1:  # one column is contiguous, and numpy would sum it pairwise
        one: NDArray[np.float32] = np.cumsum(products[:, 0], dtype=np.float32)[-1:]
        return one
    summed: NDArray[np.float32] = np.add.reduce(products, axis=0, dtype=np.float32)
    return summed


def _query_bits(conn: Any, query: bytes) -> NDArray[np.uint64]:
    """The query's bits as sqlite-vec quantises them (the copy holds sqlite-vec's bits)."""
    import numpy as np  # noqa: PLC0415

    (bits,) = conn.execute("SELECT vec_quantize_binary(?)", (query,)).fetchone()
    return np.frombuffer(_padded(bytes(bits)), dtype="<u8")


def _padded(bits: bytes) -> bytes:
    """``bits`` with zero bytes up to a whole number of 64-bit words (the same on every side of a
    distance, so distances are unchanged)."""
    return bits + b"\0" * (-len(bits) % 8)


def _nearest(parts: list[_Part], query: NDArray[np.uint64], count: int) -> list[tuple[_Part, Any]]:
    """The positions in each part of the ``count`` chunks nearest ``query``; ties at the last
    distance go to the lower ids."""
    import numpy as np  # noqa: PLC0415

    if sum(len(p.ids) for p in parts) <= count:
        return [(p, slice(None)) for p in parts]
    if len(parts) == 1:
        distances = parts[0].distances(query)
    else:
        distances = np.concatenate([p.distances(query) for p in parts])
    # Distances are small integers: a histogram finds the cut without sorting a million of them.
    cumulative = np.cumsum(np.bincount(distances))
    cut = int(np.searchsorted(cumulative, count))
    below = np.flatnonzero(distances < cut)
    at = np.flatnonzero(distances == cut)[: count - len(below)]
    chosen = np.concatenate([below, at])
    out, start = [], 0
    for part in parts:
        end = start + len(part.ids)
        inside = chosen[(chosen >= start) & (chosen < end)] - start
        if len(inside):
            out.append((part, inside))
        start = end
    return out
