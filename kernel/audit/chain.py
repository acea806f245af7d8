"""The audit log's hash chain: each row's hash covers the previous hash and the row itself."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

GENESIS_HASH = "0" * 64
HASHED_FIELDS = ("seq", "at", "actor", "action", "target", "before", "after")


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept: the one serialisation that is hashed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def row_hash(prev_hash: str, row: Mapping[str, Any]) -> str:
    """sha256 over the previous hash and the canonical JSON of the row's hashed fields."""
    body = canonical_json({field: row[field] for field in HASHED_FIELDS})
    return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChainReport:
    """The result of recomputing an audit chain."""

    ok: bool
    rows: int
    last_hash: str
    first_bad_seq: int | None = None
    problem: str | None = None
    problems: tuple[str, ...] = ()
    checkpoints: int = 0
    checkpoint_seq: int | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``schemas/audit-verify.schema.json``)."""
        return {
            "ok": self.ok,
            "rows": self.rows,
            "last_hash": self.last_hash,
            "first_bad_seq": self.first_bad_seq,
            "problem": self.problem,
            "problems": list(self.problems) or ([self.problem] if self.problem else []),
            "checkpoints": self.checkpoints,
            "checkpoint_seq": self.checkpoint_seq,
            "notes": list(self.notes),
        }


def verify_chain(rows: Iterable[Mapping[str, Any]], start_hash: str = GENESIS_HASH) -> ChainReport:
    """Recompute every hash in order and name the first row that does not match."""
    prev = start_hash
    count = 0
    expected_seq: int | None = None
    for row in rows:
        count += 1
        seq = row["seq"]
        if expected_seq is not None and seq != expected_seq:
            return ChainReport(False, count, prev, seq, f"row {seq} follows row {expected_seq - 1}")
        if row["prev_hash"] != prev:
            return ChainReport(False, count, prev, seq, f"row {seq} does not link to the row before")
        if row_hash(prev, row) != row["hash"]:
            return ChainReport(False, count, prev, seq, f"row {seq} was altered (hash mismatch)")
        prev = row["hash"]
        expected_seq = seq + 1
    return ChainReport(True, count, prev)
