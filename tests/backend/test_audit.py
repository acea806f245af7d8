"""Contract: the audit log is one hash chain, appended atomically, that no writer can fork."""

from __future__ import annotations

import threading

import pytest

from ctx_kernel.kernel.chain import GENESIS_HASH, row_hash
from ctx_kernel.kernel.errors import RefusedError
from ctx_kernel.kernel.store.base import Store

from .support import Backend

AT = "2026-01-01T00:00:00.000000Z"


def _assert_one_chain(store: Store, count: int) -> None:
    rows = list(store.audit_rows())
    assert [r["seq"] for r in rows] == list(range(1, count + 1))
    previous = GENESIS_HASH
    for row in rows:
        assert row["prev_hash"] == previous
        fields = {k: row[k] for k in ("seq", "at", "actor", "action", "target", "before", "after")}
        assert row["hash"] == row_hash(previous, fields)
        previous = row["hash"]


def test_appends_link_each_row_to_the_one_before(store: Store) -> None:
    with store.transaction():
        first = store.append_audit(AT, "alice", "evidence.logged", "ev_1", None, {"a": 1})
        second = store.append_audit(AT, "alice", "proposal.created", "pr_1", {"b": 2}, None)
    with store.transaction():
        third = store.append_audit(AT, "bob", "proposal.ratified", "pr_1", None, None)
    assert (first.seq, first.prev_hash) == (1, GENESIS_HASH)
    assert second.prev_hash == first.hash and third.prev_hash == second.hash
    assert [r["hash"] for r in store.audit_rows()] == [first.hash, second.hash, third.hash]
    _assert_one_chain(store, 3)


def test_an_append_needs_a_transaction(store: Store) -> None:
    with pytest.raises(RuntimeError):
        store.append_audit(AT, "alice", "x", "y", None, None)


def test_a_rolled_back_append_leaves_the_chain_as_it_was(store: Store) -> None:
    with store.transaction():
        kept = store.append_audit(AT, "alice", "kept", "t", None, None)
    with pytest.raises(RuntimeError), store.transaction():
        store.append_audit(AT, "alice", "undone", "t", None, None)
        raise RuntimeError("stop")
    with store.transaction():
        with pytest.raises(RefusedError), store.savepoint():
            store.append_audit(AT, "alice", "undone in a step", "t", None, None)
            raise RefusedError("the step failed")
        after = store.append_audit(AT, "alice", "next", "t", None, None)
    assert after.prev_hash == kept.hash
    _assert_one_chain(store, 2)


@pytest.mark.parametrize(
    "sql",
    ["UPDATE audit SET actor = 'mallory' WHERE seq = ?", "DELETE FROM audit WHERE seq = ?"],
)
def test_the_audit_log_is_append_only(backend: Backend, sql: str) -> None:
    with backend.store.transaction():
        backend.store.append_audit(AT, "alice", "x", "y", None, None)
    with pytest.raises(RefusedError):
        backend.raw_execute(sql, (1,))
    _assert_one_chain(backend.store, 1)


def test_a_row_that_does_not_link_to_the_last_is_refused(backend: Backend) -> None:
    with backend.store.transaction():
        first = backend.store.append_audit(AT, "alice", "x", "y", None, None)
        backend.store.append_audit(AT, "alice", "x", "y", None, None)
    # A second writer that read the chain before the last append would link to ``first``.
    with pytest.raises(RefusedError):
        backend.raw_execute(
            "INSERT INTO audit (seq, at, actor, action, target, before, after, prev_hash, hash) "
            "VALUES (?, ?, 'mallory', 'x', 'y', NULL, NULL, ?, ?)",
            (3, AT, first.hash, "f" * 64),
        )
    _assert_one_chain(backend.store, 2)


def test_concurrent_appends_from_two_connections_never_fork(backend: Backend) -> None:
    writers = [backend.second_connection(), backend.second_connection()]
    appends = 40
    barrier = threading.Barrier(len(writers))
    failures: list[BaseException] = []

    def write(store: Store, name: str) -> None:
        try:
            barrier.wait()
            for i in range(appends):
                with store.transaction():
                    store.append_audit(AT, name, "x", f"{name}-{i}", None, {"i": i})
        except BaseException as exc:  # reported below: a thread's exception is otherwise lost
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(s, f"w{n}")) for n, s in enumerate(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    _assert_one_chain(backend.store, appends * len(writers))
