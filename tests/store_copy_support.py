"""A store with every kind of row, and what two stores must share to be the same store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.capture.ingest import EvidenceInput, Item
from ctx_kernel.kernel.store.base import Store
from ctx_kernel.kernel.store.copy import IDENTITY_META
from ctx_kernel.kernel.store.rows import COPIED_TABLES


def fill(kernel: Ctx, evidence: int = 40) -> dict[str, str]:
    """Evidence, a superseded chain, a retired decision, proposals in every status, a near-duplicate."""
    note = kernel.log(
        "We agreed on JWT with refresh rotation for auth tokens.", agent="claude", session="s1"
    ).id
    chat = kernel.log("Opaque session ids are easier to revoke than JWT.", kind="conversation").id
    items = [
        Item(i, EvidenceInput(f"bulk note {i}: the ledger moves to postgres", tags=("bulk",)))
        for i in range(evidence)
    ]
    kernel.log_many(items)
    first = kernel.propose("auth.tokens", "Use JWT with refresh rotation", evidence=[note], proposer="claude")
    kernel.ratify(first.id, reviewer="alice")
    second = kernel.propose("auth.tokens", "Use opaque session ids", evidence=[chat], proposer="claude")
    kernel.ratify(second.id, reviewer="alice", decision="Use opaque session ids in Redis")
    build = kernel.propose("build.tool", "Use make for builds", proposer="claude")
    kernel.ratify(build.id, reviewer="alice")
    kernel.retire("build.tool", reviewer="alice", reason="moved to just")
    rejected = kernel.propose("db.engine", "Use MongoDB", proposer="claude").id
    kernel.reject(rejected, reviewer="alice", reason="we need SQL")
    withdrawn = kernel.propose("ci.provider", "Use Jenkins", proposer="claude").id
    kernel.withdraw(withdrawn, actor="claude", reason="changed my mind")
    pending = kernel.propose("auth.tokens", "Use PASETO v4 tokens", evidence=[note], proposer="claude").id
    duplicate = kernel.propose("auth.tokens", "Use PASETO v4 tokens!", proposer="gemini")
    assert duplicate.near_duplicate_of == pending
    kernel.ratify(
        kernel.propose("cache.layer", "Use Redis for caching", proposer="claude").id, reviewer="bob"
    )
    kernel.ratify(kernel.propose("queue.broker", "Use RabbitMQ", proposer="claude").id, reviewer="bob")
    governs = kernel.propose(
        "store.layout",
        "Keep one store module",
        proposer="claude",
        links=["kernel/store/**", "pyproject.toml"],
    )
    kernel.ratify(governs.id, reviewer="bob", review_every="90d")
    return {"note": note, "pending": pending, "duplicate": duplicate.id, "current": second.id}


def rows_of(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Every copied row of ``store``, table by table, in export order, and its identity meta."""
    found: dict[str, list[dict[str, Any]]] = {}
    for spec in COPIED_TABLES:
        rows: list[dict[str, Any]] = []
        after = None
        while batch := store.export_rows(spec.name, after, 1000):
            rows += batch
            after = tuple(batch[-1][c] for c in spec.cursor)
        found[spec.name] = rows
    found["meta"] = [{key: store.get_meta(key) for key in IDENTITY_META}]
    return found


def rows_at(location: str | Path) -> dict[str, list[dict[str, Any]]]:
    """:func:`rows_of` the store at ``location``."""
    with Ctx.open(Path(str(location).removeprefix("sqlite:")), embedder=None) as kernel:
        return rows_of(kernel.store)
