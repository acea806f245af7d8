"""The binary-quantised vectors of a SQLite store held in memory, for a process that recalls often.

sqlite-vec's ``vec0`` scan pays a per-row cost inside the virtual table: about 1.4 ms at 10,000
chunks and 45 ms at a million on a 2-core machine. The same Hamming distances over a bit matrix
held in memory (48 bytes per chunk of a 384-dimension model: 48 MB at a million) take numpy
about 0.1 ms and 11 ms. Loading the matrix reads every chunk once (about 3.5 µs each), which a
one-shot process (``ctx recall`` from a shell) must not pay: the copy is loaded on a thread of
its own, from a connection of its own, once a kind of record is searched a second time, and
until it is ready searches use ``vec0``.

The copy stays exact without any signal from writers because vector rows are never changed:
texts are immutable, rows are never deleted, and chunks are embedded in rowid order (see
``pending_vectors``), so new rows are the ones above the highest chunk id seen. A re-embedding
with another model (``ctx reindex``) shows as a changed ``vector_model`` and starts the copy
again; the same model gives the same vectors. Candidates are always rescored with the exact float32
vectors read from the store, so the copy can only change which rows are considered.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# Chunks read per statement while loading (the loader checks for a stop between batches).
LOAD_BATCH = 65_536
# New chunks kept in small segments are merged into the main matrix past this many.
MERGE_TAIL = 65_536
# A kind is searched this many times before its copy is loaded: a one-shot process never is.
LOAD_AFTER = 2


class _Bits:
    """Chunk ids (ascending) and their bits as a (words, chunks) uint64 matrix."""

    def __init__(self, ids: NDArray[np.int64], words: NDArray[np.uint64]) -> None:
        self.ids = ids
        self.words = words

    @classmethod
    def from_rows(cls, rows: list[tuple[int, bytes]]) -> _Bits:
        import numpy as np  # noqa: PLC0415 - only a warm process needs it

        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        raw = np.frombuffer(b"".join(_padded(r[1]) for r in rows), dtype="<u8")
        return cls(ids, np.ascontiguousarray(raw.reshape(len(rows), -1).T))

    @classmethod
    def join(cls, parts: list[_Bits]) -> _Bits:
        import numpy as np  # noqa: PLC0415

        return cls(np.concatenate([p.ids for p in parts]), np.concatenate([p.words for p in parts], axis=1))

    def distances(self, query: NDArray[np.uint64]) -> NDArray[np.uint16]:
        """Hamming distance of every chunk to ``query`` (one row of bits at a time: no temporaries
        the size of the whole matrix)."""
        import numpy as np  # noqa: PLC0415

        total: NDArray[np.uint16] = np.bitwise_count(self.words[0] ^ query[0]).astype(np.uint16)
        for row in range(1, len(query)):
            total += np.bitwise_count(self.words[row] ^ query[row])
        return total


class VectorMirror:
    """The bits of one kind of record (``decision`` or ``evidence``) of one store file."""

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
        self._main: _Bits | None = None
        self._tail: list[_Bits] = []
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

    def candidates(self, conn: Any, query: bytes, count: int) -> list[int] | None:
        """Ids of the ``count`` chunks nearest ``query`` by Hamming distance over the bits, reading
        new chunks through ``conn``; None while the copy is not loaded (search ``vec0`` instead)."""
        table = f"{self._kind}_vector"
        high, model = conn.execute(
            f"SELECT (SELECT max(chunk_id) FROM {table}), (SELECT value FROM meta WHERE key = 'vector_model')"
        ).fetchone()
        with self._lock:
            if self._ready and model != self._model:
                self._restart()
            if not self._ready:
                self._asked += 1
                if self._asked >= LOAD_AFTER and self._loader is None and not self._stop.is_set():
                    self._loader = threading.Thread(
                        target=self._load, name=f"ctx-vectors-{self._kind}", daemon=True
                    )
                    self._loader.start()
                return None
            if (high or 0) > self._high:
                self._add(self._read(conn, self._high, None))
            parts = [p for p in (self._main, *self._tail) if p is not None and len(p.ids)]
        if not parts:
            return []
        return _nearest(parts, _query_bits(conn, query), count)

    def _restart(self) -> None:
        """Forget the copy (the vectors were re-embedded) and load it again on the next searches."""
        self._ready, self._model, self._high = False, None, 0
        self._main, self._tail, self._tail_size = None, [], 0
        self._asked = 0
        self._loader = None

    def _read(self, conn: Any, after: int, limit: int | None) -> list[tuple[int, bytes]]:
        sql = f"SELECT chunk_id, vec_quantize_binary(emb) FROM {self._kind}_vector WHERE chunk_id > ? "
        sql += "ORDER BY chunk_id" + (" LIMIT ?" if limit else "")
        params = (after, limit) if limit else (after,)
        return [(int(r[0]), bytes(r[1])) for r in conn.execute(sql, params).fetchall() if r[1] is not None]

    def _add(self, rows: list[tuple[int, bytes]]) -> None:
        """Append chunks above the highest held (under the lock)."""
        if not rows:
            return
        self._tail.append(_Bits.from_rows(rows))
        self._tail_size += len(rows)
        self._high = rows[-1][0]
        if self._tail_size > MERGE_TAIL or len(self._tail) > 32:
            self._main = _Bits.join([p for p in (self._main, *self._tail) if p is not None])
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
            parts: list[_Bits] = []
            after = 0
            while not self._stop.is_set():
                rows = self._read(conn, after, LOAD_BATCH)
                if not rows:
                    break
                parts.append(_Bits.from_rows(rows))
                after = rows[-1][0]
            conn.execute("COMMIT")
            if self._stop.is_set():
                return
            with self._lock:
                if self._loader is not threading.current_thread():
                    return  # restarted meanwhile: this copy may be of the old vectors
                self._main = _Bits.join(parts) if parts else None
                self._tail, self._tail_size = [], 0
                self._model, self._high, self._ready = model, after, True
        except Exception:
            with self._lock:
                if self._loader is threading.current_thread():
                    self._loader = None  # try again on a later search
        finally:
            conn.close()


def _query_bits(conn: Any, query: bytes) -> NDArray[np.uint64]:
    """The query's bits as sqlite-vec quantises them (the copy holds sqlite-vec's bits)."""
    import numpy as np  # noqa: PLC0415

    (bits,) = conn.execute("SELECT vec_quantize_binary(?)", (query,)).fetchone()
    return np.frombuffer(_padded(bytes(bits)), dtype="<u8")


def _padded(bits: bytes) -> bytes:
    """``bits`` with zero bytes up to a whole number of 64-bit words (the same on every side of a
    distance, so distances are unchanged)."""
    return bits + b"\0" * (-len(bits) % 8)


def _nearest(parts: list[_Bits], query: NDArray[np.uint64], count: int) -> list[int]:
    """The ``count`` chunk ids nearest ``query``; ties at the last distance go to the lower ids."""
    import numpy as np  # noqa: PLC0415

    if len(parts) == 1:
        distances, ids = parts[0].distances(query), parts[0].ids
    else:
        distances = np.concatenate([p.distances(query) for p in parts])
        ids = np.concatenate([p.ids for p in parts])
    if len(ids) <= count:
        every: list[int] = ids.tolist()
        return every
    # Distances are small integers: a histogram finds the cut without sorting a million of them.
    cumulative = np.cumsum(np.bincount(distances))
    cut = int(np.searchsorted(cumulative, count))
    below = np.flatnonzero(distances < cut)
    at = np.flatnonzero(distances == cut)[: count - len(below)]
    nearest: list[int] = ids[np.concatenate([below, at])].tolist()
    return nearest
