"""The served log's rows, the same statements on both backends: entries appended to their own hash
chain, read by session, agent, time or item, and folded into signed daily digests.

An entry holds ids and content digests, never texts (``items`` is compact JSON), so it costs a
few hundred bytes whatever was served. Its hash covers the previous entry's hash and its fields
(:data:`SERVED_FIELDS`, :func:`ctx_kernel.kernel.chain.row_hash`); the database refuses an entry
that does not link to the last one, any update, and a deletion no fold covers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctx_kernel.kernel.chain import GENESIS_HASH, row_hash
from ctx_kernel.kernel.store.rows import FOLD_COLUMNS, SERVED_COLUMNS, SERVED_FIELDS
from ctx_kernel.kernel.store.shared import SharedRows

__all__ = ["FOLD_COLUMNS", "SERVED_COLUMNS", "SERVED_FIELDS", "SharedServed"]


_INSERT_SERVED = (
    f"INSERT INTO served ({', '.join(SERVED_COLUMNS)}) VALUES ({', '.join('?' * len(SERVED_COLUMNS))})"
)
_INSERT_FOLD = (
    f"INSERT INTO served_fold ({', '.join(FOLD_COLUMNS)}) VALUES ({', '.join('?' * len(FOLD_COLUMNS))})"
)


def _naming(item: str) -> str:
    """A LIKE pattern (escaped with backslashes) for the ``items`` of entries that name ``item``."""
    escaped = item.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f'%"{escaped}"%'


class SharedServed(SharedRows):
    """The served log's statements, mixed into a store that offers the capability."""

    def served_head(self) -> tuple[int, str]:
        """``(seq, hash)`` of the last entry (or of the last fold when every entry is folded);
        ``(0, genesis)`` when there is neither."""
        row = self._select_one("SELECT seq, hash FROM served ORDER BY seq DESC LIMIT 1")
        if row is None:
            row = self._select_one(
                "SELECT last_seq, last_hash FROM served_fold ORDER BY last_seq DESC LIMIT 1"
            )
        return (int(row[0]), str(row[1])) if row else (0, GENESIS_HASH)

    def append_served(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Append an entry (every field but ``seq`` and the hashes) after the last one; inside a
        transaction, so the last entry read is still the last when this one is written."""
        seq, prev = self.served_head()
        row = {**entry, "seq": seq + 1}
        row["prev_hash"] = prev
        row["hash"] = row_hash(prev, row, SERVED_FIELDS)
        self._write(_INSERT_SERVED, tuple(row[c] for c in SERVED_COLUMNS))
        return row

    def served_rows(
        self,
        *,
        session: str | None = None,
        agent: str | None = None,
        until: str | None = None,
        item: str | None = None,
    ) -> list[dict[str, Any]]:
        """Entries in order, those of ``session``, ``agent``, written up to ``until``, naming ``item``."""
        where, params = [], []
        if session is not None:
            where.append("session = ?")
            params.append(session)
        if agent is not None:
            where.append("agent = ?")
            params.append(agent)
        if until is not None:
            where.append("at <= ?")
            params.append(until)
        if item is not None:
            where.append(f"items LIKE ?{self.sql_dialect.like_escape}")
            params.append(_naming(item))
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._select(f"SELECT {', '.join(SERVED_COLUMNS)} FROM served{clause} ORDER BY seq", params)
        return [dict(zip(SERVED_COLUMNS, r, strict=True)) for r in rows]

    def served_folds(self) -> list[dict[str, Any]]:
        """Every fold, oldest first."""
        rows = self._select(f"SELECT {', '.join(FOLD_COLUMNS)} FROM served_fold ORDER BY first_seq")
        return [dict(zip(FOLD_COLUMNS, r, strict=True)) for r in rows]

    def fold_served(self, fold: dict[str, Any]) -> None:
        """Keep a signed fold and delete the entries it covers (inside a transaction)."""
        self._write(_INSERT_FOLD, tuple(fold[c] for c in FOLD_COLUMNS))
        self._write("DELETE FROM served WHERE seq BETWEEN ? AND ?", (fold["first_seq"], fold["last_seq"]))

    def served_counts(self, ids: Sequence[str]) -> dict[str, tuple[int, list[str]]]:
        """For each id: how many entries name it, and the sessions (or agents) they went to."""
        out: dict[str, tuple[int, list[str]]] = {}
        for item in ids:
            naming = f"items LIKE ?{self.sql_dialect.like_escape}"
            rows = self._select(
                f"SELECT coalesce(session, agent) FROM served WHERE {naming} ORDER BY seq", (_naming(item),)
            )
            out[item] = (len(rows), list(dict.fromkeys(str(r[0]) for r in rows)))
        return out
