"""The audit log's hash chain: each row's hash covers the previous hash and the row itself."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from ctx_kernel.kernel.records import Record
from ctx_kernel.kernel.spec import Sha256, Spec

GENESIS_HASH = "0" * 64
HASHED_FIELDS = ("seq", "at", "actor", "action", "target", "before", "after")


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept: the one serialisation that is hashed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def row_hash(prev_hash: str, row: Mapping[str, Any], hashed: Sequence[str] = HASHED_FIELDS) -> str:
    """sha256 over the previous hash and the canonical JSON of the row's hashed fields."""
    body = canonical_json({field: row[field] for field in hashed})
    return hashlib.sha256((prev_hash + body).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChainReport(Record):
    """``ctx audit verify``: the recomputed chain."""

    ok: bool
    rows: int
    last_hash: Sha256
    first_bad_seq: int | None = None
    problem: Annotated[
        str | None, Spec(description="The first problem: the chain, a signed head, the schema, a table.")
    ] = None
    problems: Annotated[
        tuple[str, ...], Spec(description="Every problem found (the chain's first only).")
    ] = ()
    checkpoints: Annotated[
        int,
        Spec(
            ge=0, description="Signed heads (checkpoints and export manifests) the chain was checked against."
        ),
    ] = 0
    checkpoint_seq: Annotated[
        Annotated[int, Spec(ge=1)] | None, Spec(description="The latest signed head's row.")
    ] = None
    notes: Annotated[
        tuple[str, ...], Spec(description="What this store's log cannot prove (rows from an earlier ctx).")
    ] = ()
    served_entries: Annotated[
        int,
        Spec(ge=0, description="Entries of the served log checked (those not folded into daily digests)."),
    ] = 0


def _broken(rows: int, last_hash: str, seq: int, problem: str) -> ChainReport:
    return ChainReport(False, rows, last_hash, seq, problem, (problem,))


def verify_chain(
    rows: Iterable[Mapping[str, Any]],
    start_hash: str = GENESIS_HASH,
    hashed: Sequence[str] = HASHED_FIELDS,
    what: str = "row",
) -> ChainReport:
    """Recompute every hash in order and name the first row (``what``) that does not match."""
    prev = start_hash
    count = 0
    expected_seq: int | None = None
    for row in rows:
        count += 1
        seq = row["seq"]
        if expected_seq is not None and seq != expected_seq:
            return _broken(count, prev, seq, f"{what} {seq} follows {what} {expected_seq - 1}")
        if row["prev_hash"] != prev:
            return _broken(count, prev, seq, f"{what} {seq} does not link to the {what} before")
        if row_hash(prev, row, hashed) != row["hash"]:
            return _broken(count, prev, seq, f"{what} {seq} was altered (hash mismatch)")
        prev = row["hash"]
        expected_seq = seq + 1
    return ChainReport(True, count, prev)
