"""The bit vectors of a ``vec0`` table, kept in memory by a warm process for Hamming KNN.

sqlite-vec's KNN over bit vectors costs 11-12 ms at 100k rows for k = 100 (its cost grows
with k); numpy computes the same Hamming distances over an in-memory copy in a few
milliseconds, and finds the same candidates: those nearer than the k-th distance, then as
many of the rows at exactly that distance as fit, in the order sqlite-vec keeps ties (its
storage chunks in order and, within a chunk, the last slot first: its per-chunk selection
takes the last of equal minima, and merging keeps the earlier chunks' rows).

The copy is read from vec0's shadow tables (``<table>_chunks``: validity bitmap and rowids of
each storage chunk; ``<table>_vector_chunks00``: its packed vectors), a few megabytes per
100k rows, when a process asks for a KNN a second time (a one-shot ``ctx inject --query``
never does). Rows are only added at the end of storage, so new ones are read from the last
chunk held on; rows removed, or another model, mean a new copy.
"""

from __future__ import annotations

from typing import Any


class BitIndex:
    """Rowids, storage chunks and bits of one ``vec0`` table, in sqlite-vec's tie order."""

    def __init__(self, table: str) -> None:
        self.table = table
        self._asked = 0
        self._state: tuple[str | None, int, int] | None = None  # model, max rowid, storage chunks
        self._rowids: Any = None  # numpy int64
        self._chunks: Any = None  # numpy int64, ascending
        self._bits: Any = None  # numpy uint8, (rows, bytes per vector)

    def candidates(self, conn: Any, model: str | None, query: bytes, k: int) -> list[int] | None:
        """The rowids of the ``k`` nearest rows by Hamming distance to the sign bits of ``query``,
        or None when sqlite-vec should answer (first call, or inside a write transaction)."""
        self._asked += 1
        if self._asked == 1 or conn.in_transaction:
            # A one-shot process; or rows this connection may still roll back.
            return None
        import numpy as np  # noqa: PLC0415 - only a warm recall needs it

        top, stored = conn.execute(
            f"SELECT (SELECT coalesce(max(rowid), -1) FROM {self.table}_rowids), "
            f"(SELECT coalesce(max(chunk_id), 0) FROM {self.table}_chunks)"
        ).fetchone()
        state = (model, top, stored)
        if self._state != state:
            old = self._state
            if (
                old is not None
                and old[0] == model
                and top > old[1]
                and stored >= old[2]
                and len(self._chunks)
            ):
                # Rows added: read again from the last storage chunk held.
                keep = int(np.searchsorted(self._chunks, self._chunks[-1]))
                rowids, chunks, bits = _read(conn, self.table, int(self._chunks[-1]))
                self._rowids = np.concatenate([self._rowids[:keep], rowids])
                self._chunks = np.concatenate([self._chunks[:keep], chunks])
                self._bits = np.concatenate([self._bits[:keep], bits])
            else:
                self._rowids, self._chunks, self._bits = _read(conn, self.table, 0)
            self._state = state
        wanted = np.packbits(
            np.frombuffer(query, dtype="<f4") > 0, bitorder="little"
        )  # as vec_quantize_binary
        bits = self._bits
        if bits.shape[0] == 0 or bits.shape[1] != wanted.shape[0]:
            return None
        if bits.shape[1] % 8 == 0:
            distance = np.bitwise_count(bits.view("<u8") ^ wanted.view("<u8")).sum(axis=1, dtype=np.int32)
        else:
            distance = np.bitwise_count(bits ^ wanted).sum(axis=1, dtype=np.int32)
        if len(distance) <= k:
            return self._rowids.tolist()
        kth = np.partition(distance, k - 1)[k - 1]
        nearer = np.flatnonzero(distance < kth)
        tied = np.flatnonzero(distance == kth)[: k - len(nearer)]
        return self._rowids[np.concatenate([nearer, tied])].tolist()


def _read(conn: Any, table: str, first_chunk: int) -> tuple[Any, Any, Any]:
    """Rowids, storage chunks and bits of the valid slots of storage chunks from ``first_chunk`` on,
    chunks in order and each chunk's slots last first."""
    import numpy as np  # noqa: PLC0415

    rowid_parts, chunk_parts, bit_parts = [], [], []
    for chunk, size, validity, rowids, vectors in conn.execute(
        f"SELECT c.chunk_id, c.size, c.validity, c.rowids, v.vectors FROM {table}_chunks c "
        f"JOIN {table}_vector_chunks00 v ON v.rowid = c.chunk_id WHERE c.chunk_id >= ? ORDER BY c.chunk_id",
        (first_chunk,),
    ):
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[:size].astype(bool)
        slots = np.flatnonzero(valid)[::-1]
        rowid_parts.append(np.frombuffer(rowids, dtype="<i8")[slots])
        chunk_parts.append(np.full(len(slots), chunk, dtype=np.int64))
        bit_parts.append(np.frombuffer(vectors, dtype=np.uint8).reshape(size, -1)[slots])
    if not rowid_parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.uint8)
    return np.concatenate(rowid_parts), np.concatenate(chunk_parts), np.concatenate(bit_parts)
