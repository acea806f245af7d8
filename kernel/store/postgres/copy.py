"""Mixed into the PostgreSQL store: the bulk reads and faithful inserts that ``ctx migrate`` copies with.

Rows cross backends as :data:`~ctx_kernel.kernel.store.rows.COPIED` declares them: lists as
lists, booleans as bools, times as ctx's canonical text. Here the times are ``timestamptz`` and
the lists ``jsonb``; each parameter is cast to its column's type, read from the catalog once, so
the copy does not depend on how the connection's adapters are set up. Evidence and decisions are
exported in ``rowid`` order (the order they were written) with the last row's id as the cursor;
vectors leave as little-endian float32 bytes, as :meth:`insert_vectors` takes them.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg import sql

from ctx_kernel.kernel.clock import format_ts
from ctx_kernel.kernel.store.rows import COPIED, CopiedTable
from ctx_kernel.kernel.store.shared import CHUNK_SLOTS, INDEX_KINDS


class PostgresCopy:
    """Export and restore of the copied tables and of the vectors.

    Reads go through the store's ``_q`` (a dropped connection is reopened, or named without its
    password); restores run inside the store's transaction, which does the same for a failure.
    """

    _conn: Any
    _changes: int
    _column_types: dict[str, dict[str, str]] | None = None

    def _q(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _read(self, query: sql.Composable, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._q(query.as_string(self._conn), list(params))

    def _types(self, table: str) -> dict[str, str]:
        """Each column's type name (``timestamp with time zone``, ``jsonb``, ...), from the catalog."""
        if self._column_types is None:
            rows = self._q(
                "SELECT table_name, column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = current_schema()"
            )
            types: dict[str, dict[str, str]] = {}
            for name, column, kind in rows:
                types.setdefault(name, {})[column] = kind
            self._column_types = types
        return self._column_types[table]

    def _placeholders(self, spec: CopiedTable, columns: Sequence[str]) -> list[sql.Composable]:
        types = self._types(spec.name)
        return [sql.SQL("%s::{}").format(sql.SQL(_CASTS.get(types[c], "text"))) for c in columns]

    def count_rows(self, table: str) -> int:
        """How many rows a copied table holds."""
        spec = COPIED[table]
        query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(spec.name))
        return int(self._read(query)[0][0])

    def export_rows(self, table: str, after: Sequence[Any] | None, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` rows in export order, after the row whose cursor values are ``after``."""
        spec = COPIED[table]
        name = sql.Identifier(spec.name)
        columns = sql.SQL(", ").join(map(sql.Identifier, spec.columns))
        order: sql.Composable
        if spec.order:
            order = sql.SQL(", ").join(map(sql.Identifier, spec.order))
            marks = sql.SQL(", ").join(self._placeholders(spec, spec.order))
            where = sql.SQL("WHERE ({}) > ({})").format(order, marks) if after is not None else sql.SQL("")
        else:
            order = sql.Identifier("rowid")
            where = (
                sql.SQL("WHERE rowid > (SELECT rowid FROM {} WHERE id = %s)").format(name)
                if after is not None
                else sql.SQL("")
            )
        query = sql.SQL("SELECT {} FROM {} {} ORDER BY {} LIMIT %s").format(columns, name, where, order)
        rows = self._read(query, [*(after or ()), limit])
        return [_neutral(spec, row) for row in rows]

    def rows_by_key(self, table: str, keys: Sequence[Sequence[Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
        """The rows whose key values are among ``keys``, by key."""
        spec = COPIED[table]
        wanted = [tuple(k) for k in keys]
        if not wanted:
            return {}
        one = sql.SQL("({})").format(sql.SQL(", ").join(self._placeholders(spec, spec.key)))
        query = sql.SQL("SELECT {} FROM {} WHERE ({}) IN ({})").format(
            sql.SQL(", ").join(map(sql.Identifier, spec.columns)),
            sql.Identifier(spec.name),
            sql.SQL(", ").join(map(sql.Identifier, spec.key)),
            sql.SQL(", ").join([one] * len(wanted)),
        )
        found: dict[tuple[Any, ...], dict[str, Any]] = {}
        for row in self._read(query, [value for k in wanted for value in k]):
            record = _neutral(spec, row)
            found[tuple(record[c] for c in spec.key)] = record
        return found

    def restore_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """Insert exported rows as they are; triggers and constraints check them like any insert."""
        spec = COPIED[table]
        if not rows:
            return
        query = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
            sql.Identifier(spec.name),
            sql.SQL(", ").join(map(sql.Identifier, spec.columns)),
            sql.SQL(", ").join(self._placeholders(spec, spec.columns)),
        )
        # One pipeline for the batch (psycopg's executemany), not a round trip per row.
        with self._conn.cursor() as cursor:
            cursor.executemany(query, [_stored(spec, row) for row in rows])
            self._changes += max(cursor.rowcount, 0)

    def export_vectors(
        self, kind: str, after: tuple[str, int] | None, limit: int
    ) -> list[tuple[str, int, bytes]]:
        """Stored ``(item id, chunk number, float32 bytes)`` in the order the items were written."""
        if kind not in INDEX_KINDS:
            raise ValueError(f"unknown index kind {kind!r}")
        table, vectors = sql.Identifier(kind), sql.Identifier(f"{kind}_vector")
        start = -1
        if after is not None:
            owner = self._read(sql.SQL("SELECT rowid FROM {} WHERE id = %s").format(table), (after[0],))
            start = owner[0][0] * CHUNK_SLOTS + after[1] if owner else -1
        rows = self._read(
            sql.SQL(
                "SELECT t.id, mod(v.chunk_id, {}), v.emb::real[] FROM {} v "
                "JOIN {} t ON t.rowid = v.owner_rowid WHERE v.chunk_id > %s ORDER BY v.chunk_id LIMIT %s"
            ).format(sql.Literal(CHUNK_SLOTS), vectors, table),
            (start, limit),
        )
        return [(r[0], int(r[1]), struct.pack(f"<{len(r[2])}f", *r[2])) for r in rows]


# Casts for parameters by column type; text for anything else.
_CASTS = {
    "timestamp with time zone": "timestamptz",
    "jsonb": "jsonb",
    "boolean": "boolean",
    "bigint": "bigint",
    "integer": "integer",
    "double precision": "double precision",
}


def _neutral(spec: CopiedTable, row: Sequence[Any]) -> dict[str, Any]:
    found = dict(zip(spec.columns, row, strict=True))
    for column, value in found.items():
        if isinstance(value, datetime):
            found[column] = format_ts(value)
    for column in spec.json_columns:
        if isinstance(found[column], str):  # the store's connection loads jsonb as JSON text
            found[column] = json.loads(found[column])
    for column in spec.bool_columns:
        found[column] = bool(found[column])
    return found


def _stored(spec: CopiedTable, row: dict[str, Any]) -> list[Any]:
    return [json.dumps(row[c]) if c in spec.json_columns else row[c] for c in spec.columns]
