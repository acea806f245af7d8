"""Contract: the served log is one hash chain of its own, append-only but for signed folds."""

from __future__ import annotations

import json

import pytest

from ctx_kernel.kernel.chain import GENESIS_HASH, row_hash
from ctx_kernel.kernel.errors import RefusedError
from ctx_kernel.kernel.store.base import Store, offered
from ctx_kernel.kernel.store.served import SERVED_FIELDS

from .support import Backend

DC = "dc_01J00000000000000000000AAA"


def _entry(session: str, at: str = "2026-01-01T00:00:00.000000Z") -> dict:
    return {
        "at": at,
        "host": "mcp",
        "agent": "claude",
        "session": session,
        "operation": "get",
        "request": "0" * 64,
        "items": json.dumps([[DC, "1" * 64, "current"]]),
        "missed": 0,
    }


def test_entries_link_and_are_found_by_session_agent_time_and_item(store: Store) -> None:
    log = offered(store.served())
    with store.transaction():
        first = log.append_served(_entry("a"))
        second = log.append_served(_entry("b", "2026-01-02T00:00:00.000000Z"))
    assert (first["seq"], first["prev_hash"]) == (1, GENESIS_HASH)
    assert second["prev_hash"] == first["hash"] == row_hash(GENESIS_HASH, first, SERVED_FIELDS)
    assert log.served_head() == (2, second["hash"])
    assert [r["session"] for r in log.served_rows(session="b")] == ["b"]
    assert [r["session"] for r in log.served_rows(until="2026-01-01T12:00:00.000000Z")] == ["a"]
    assert [r["seq"] for r in log.served_rows(item=DC)] == [1, 2]
    assert log.served_rows(item=DC[:-1] + "_") == []  # an id is matched whole, "_" is no wildcard
    assert log.served_counts([DC]) == {DC: (2, ["a", "b"])}


def test_the_database_refuses_to_change_delete_or_fork(backend: Backend) -> None:
    store = backend.store
    log = offered(store.served())
    with store.transaction():
        row = log.append_served(_entry("a"))
    with pytest.raises(RefusedError):
        backend.raw_execute("UPDATE served SET session = 'x' WHERE seq = 1", ())
    with pytest.raises(RefusedError):
        backend.raw_execute("DELETE FROM served WHERE seq = 1", ())
    with pytest.raises(RefusedError):
        backend.raw_execute(
            "INSERT INTO served (seq, at, host, agent, session, operation, request, items, missed, "
            "prev_hash, hash) VALUES (2, 'x', 'mcp', 'claude', NULL, 'get', 'r', '[]', 0, ?, ?)",
            (GENESIS_HASH, "2" * 64),
        )
    assert [r["hash"] for r in log.served_rows()] == [row["hash"]]


def test_a_fold_lets_the_entries_it_covers_go(store: Store) -> None:
    log = offered(store.served())
    with store.transaction():
        rows = [log.append_served(_entry(s)) for s in ("a", "b", "c")]
    fold = {
        "day": "2026-01-01",
        "first_seq": 1,
        "last_seq": 2,
        "entries": 2,
        "items": 2,
        "merkle_root": "3" * 64,
        "prev_hash": GENESIS_HASH,
        "last_hash": rows[1]["hash"],
        "folded_at": "2026-06-01T00:00:00.000000Z",
        "key_id": "k",
        "signature": "s",
    }
    with store.transaction():
        log.fold_served(fold)
    assert [r["seq"] for r in log.served_rows()] == [3]
    assert log.served_folds() == [fold]
    with store.transaction():
        fourth = log.append_served(_entry("d"))
    assert fourth["prev_hash"] == rows[2]["hash"]
