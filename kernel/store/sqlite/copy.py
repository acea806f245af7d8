"""Mixed into the SQLite store: the bulk reads and faithful inserts that ``ctx migrate`` copies with.

Table and column names come from :data:`~ctx_kernel.kernel.store.rows.COPIED`, never from input.
Evidence and decisions are exported in rowid order (the order they were written, which the
vector backfill's high-water mark and "oldest first" rely on) and the cursor is the last row's
id, so no rowid leaves the backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctx_kernel.kernel.store.rows import COPIED, CopiedTable, sqlite_fields, sqlite_values
from ctx_kernel.kernel.store.shared import CHUNK_SLOTS, INDEX_KINDS

_CHUNK = 400  # keys per lookup: two bound values each stay under SQLite's 32,766 variables


class SQLiteCopy:
    """Export and restore of the copied tables and of the vectors."""

    _conn: Any

    def _q(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def count_rows(self, table: str) -> int:
        """How many rows a copied table holds."""
        spec = COPIED[table]
        return int(self._q(f"SELECT count(*) FROM {spec.name}")[0][0])

    def export_rows(self, table: str, after: Sequence[Any] | None, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` rows in export order, after the row whose cursor values are ``after``."""
        spec = COPIED[table]
        columns = ", ".join(spec.columns)
        if spec.order:
            order = ", ".join(spec.order)
            where = f"WHERE ({order}) > ({', '.join('?' * len(spec.order))})" if after is not None else ""
        else:
            order = "rowid"
            where = f"WHERE rowid > (SELECT rowid FROM {spec.name} WHERE id = ?)" if after is not None else ""
        rows = self._q(
            f"SELECT {columns} FROM {spec.name} {where} ORDER BY {order} LIMIT ?",
            [*(after or ()), limit],
        )
        return [_neutral(spec, row) for row in rows]

    def rows_by_key(self, table: str, keys: Sequence[Sequence[Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
        """The rows whose key values are among ``keys``, by key."""
        spec = COPIED[table]
        columns = ", ".join(spec.columns)
        key = ", ".join(spec.key)
        found: dict[tuple[Any, ...], dict[str, Any]] = {}
        wanted = [tuple(k) for k in keys]
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            tuples = ", ".join("(" + ", ".join("?" * len(spec.key)) + ")" for _ in chunk)
            rows = self._q(
                f"SELECT {columns} FROM {spec.name} WHERE ({key}) IN (VALUES {tuples})",
                [value for k in chunk for value in k],
            )
            for row in rows:
                record = _neutral(spec, row)
                found[tuple(record[c] for c in spec.key)] = record
        return found

    def restore_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """Insert exported rows as they are; triggers and constraints check them like any insert."""
        spec = COPIED[table]
        marks = ", ".join("?" * len(spec.columns))
        self._conn.executemany(
            f"INSERT INTO {spec.name} ({', '.join(spec.columns)}) VALUES ({marks})",
            [_stored(spec, row) for row in rows],
        )

    def export_vectors(
        self, kind: str, after: tuple[str, int] | None, limit: int
    ) -> list[tuple[str, int, bytes]]:
        """Stored ``(item id, chunk number, float32 bytes)`` in the order the items were written."""
        if kind not in INDEX_KINDS:
            raise ValueError(f"unknown index kind {kind!r}")
        if not self._q("SELECT 1 FROM sqlite_master WHERE name = ?", (f"vec_{kind}",)):
            return []
        start = -1
        if after is not None:
            owner = self._q(f"SELECT rowid FROM {kind} WHERE id = ?", (after[0],))
            start = owner[0][0] * CHUNK_SLOTS + after[1] if owner else -1
        rows = self._q(
            f"SELECT t.id, v.chunk_id % {CHUNK_SLOTS}, v.emb FROM {kind}_vector v "
            f"JOIN {kind} t ON t.rowid = v.owner_rowid WHERE v.chunk_id > ? ORDER BY v.chunk_id LIMIT ?",
            (start, limit),
        )
        return [(r[0], int(r[1]), bytes(r[2])) for r in rows]


def _neutral(spec: CopiedTable, row: Sequence[Any]) -> dict[str, Any]:
    return sqlite_fields(spec, dict(zip(spec.columns, row, strict=True)))


def _stored(spec: CopiedTable, row: dict[str, Any]) -> tuple[Any, ...]:
    return sqlite_values(spec, row.__getitem__)
