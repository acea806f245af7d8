"""Contract: evidence, proposals and decisions, and the invariants the database holds for them."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ctx_kernel.kernel import ids
from ctx_kernel.kernel.errors import RefusedError
from ctx_kernel.kernel.records import Decision
from ctx_kernel.kernel.store.base import Store

from .support import Backend, decision, evidence, proposal

EARLIER = "2026-01-01T00:00:00.000000Z"
LATER = "2026-02-01T00:00:00.000000Z"
LATEST = "2026-03-01T00:00:00.000000Z"


def test_evidence_round_trips(store: Store) -> None:
    logged = dataclasses.replace(evidence("we chose postgres", session="s1"), tags=["db"], source="chat")
    with store.transaction():
        store.insert_evidence(logged)
    assert store.get_evidence(logged.id) == logged
    assert store.evidence_by_ids([logged.id, "ev_unknown"]) == {logged.id: logged}
    assert store.get_evidence("ev_unknown") is None


def test_evidence_is_found_by_content_hash_and_a_second_copy_is_refused(store: Store) -> None:
    first = evidence("the same words")
    with store.transaction():
        store.insert_evidence(first)
    assert store.evidence_id_for_hash(first.content_hash) == first.id
    assert store.evidence_id_for_hash("0" * 64) is None
    with pytest.raises(RefusedError), store.transaction():
        store.insert_evidence(evidence("the same words"))
    assert store.evidence_ids() == [first.id]


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE evidence SET text = 'rewritten' WHERE id = ?",
        "UPDATE evidence SET kind = 'doc' WHERE id = ?",
        "DELETE FROM evidence WHERE id = ?",
    ],
)
def test_evidence_is_append_only(backend: Backend, sql: str) -> None:
    logged = evidence("kept forever")
    with backend.store.transaction():
        backend.store.insert_evidence(logged)
    with pytest.raises(RefusedError):
        backend.raw_execute(sql, (logged.id,))
    assert backend.store.get_evidence(logged.id) == logged


def test_evidence_order_and_lookups(store: Store) -> None:
    logged = [evidence(f"note {i}", session="s") for i in range(4)]
    with store.transaction():
        for item in logged:
            store.insert_evidence(item)
    ids = [e.id for e in logged]
    assert store.evidence_ids() == ids
    assert [e.id for e in store.list_evidence(2)] == ids[:1:-1]
    assert store.missing_evidence(["ev_x", ids[1], "ev_y"]) == ["ev_x", "ev_y"]
    assert store.ids_with_prefix(ids[2][:-3], 10) == [i for i in ids if i.startswith(ids[2][:-3])]
    assert store.evidence_neighbours([ids[1]]) == {ids[1]: [ids[0], ids[2]]}


def test_evidence_lists_newest_first_by_time_agent_and_kind(store: Store) -> None:
    logged = [
        evidence("old note", at=EARLIER),
        dataclasses.replace(evidence("a log line", at=LATER), kind="log"),
        dataclasses.replace(evidence("by claude", at=LATER), agent="claude"),
        dataclasses.replace(evidence("newest log", at=LATEST), kind="log", agent="claude"),
    ]
    with store.transaction():
        for item in logged:
            store.insert_evidence(item)
    ids = [e.id for e in logged]
    assert [e.id for e in store.list_evidence(10)] == ids[::-1]
    assert store.list_evidence(10)[-1] == logged[0]
    assert [e.id for e in store.list_evidence(10, since=LATER)] == ids[:0:-1]
    assert [e.id for e in store.list_evidence(10, agent="claude")] == [ids[3], ids[2]]
    assert [e.id for e in store.list_evidence(10, kind="log")] == [ids[3], ids[1]]
    assert [e.id for e in store.list_evidence(1, since=LATER, kind="log")] == [ids[3]]
    assert store.list_evidence(10, since="2027-01-01T00:00:00.000000Z") == []


def test_proposal_round_trips_with_its_citations(store: Store) -> None:
    cited = evidence("why")
    queued = proposal("db.engine", "use postgres", [cited.id])
    with store.transaction():
        store.insert_evidence(cited)
        store.insert_proposal(queued)
    assert store.get_proposal(queued.id) == queued
    assert store.list_proposals("pending") == [queued]
    assert store.pending_texts() == [(queued.id, "db.engine", "use postgres")]


def test_a_proposal_cannot_cite_unknown_evidence(store: Store) -> None:
    with pytest.raises(RefusedError), store.transaction():
        store.insert_proposal(proposal("db.engine", "use postgres", ["ev_unknown"]))


def test_proposals_list_oldest_first_by_status_and_subtree(store: Store) -> None:
    first, second, other = proposal("db", "a"), proposal("db.engine", "b"), proposal("dbx", "c")
    with store.transaction():
        for item in (first, second, other):
            store.insert_proposal(item)
        store.resolve_proposal(other.id, "rejected", LATER, "reviewer", None, None)
    assert [p.id for p in store.list_proposals(None)] == [first.id, second.id, other.id]
    assert [p.id for p in store.list_proposals("pending", subject="db")] == [first.id, second.id]
    assert [p.id for p in store.list_proposals("rejected")] == [other.id]
    assert [p.id for p in store.list_proposals(None, limit=2)] == [first.id, second.id]
    assert [p.id for p in store.list_proposals("pending", proposer="agent", limit=1)] == [first.id]
    assert store.list_proposals("pending", proposer="someone else") == []


def test_closed_proposals_are_those_rejected_or_withdrawn_on_exactly_the_subject(store: Store) -> None:
    queued = [proposal("db.engine", f"option {i}") for i in range(4)] + [proposal("db.engine.pool", "x")]
    with store.transaction():
        for item in queued:
            store.insert_proposal(item)
        store.resolve_proposal(queued[0].id, "rejected", LATER, "reviewer", "no", None)
        store.resolve_proposal(queued[1].id, "withdrawn", LATER, "agent", None, None)
        store.resolve_proposal(queued[3].id, "rejected", LATER, "reviewer", None, None)
        store.resolve_proposal(queued[4].id, "rejected", LATER, "reviewer", None, None)
    assert [p.id for p in store.closed_proposals("db.engine")] == [queued[0].id, queued[1].id, queued[3].id]
    assert [p.id for p in store.closed_proposals("db.engine", limit=2)] == [queued[1].id, queued[3].id]
    assert store.closed_proposals("db") == []


def test_a_proposal_is_resolved_once(backend: Backend) -> None:
    store = backend.store
    queued = proposal("db.engine", "use postgres")
    with store.transaction():
        store.insert_proposal(queued)
        store.resolve_proposal(queued.id, "rejected", LATER, "reviewer", "no", None)
    for status in ("ratified", "pending"):
        with pytest.raises(RefusedError), store.transaction():
            store.resolve_proposal(queued.id, status, LATEST, "other", None, None)
    with pytest.raises(RefusedError):
        backend.raw_execute("DELETE FROM proposal WHERE id = ?", (queued.id,))
    resolved = store.get_proposal(queued.id)
    assert resolved is not None and (resolved.status, resolved.resolved_by) == ("rejected", "reviewer")


def test_one_current_decision_per_subject(store: Store) -> None:
    first = decision("db.engine", "use postgres")
    with store.transaction():
        store.insert_decision(first)
    with pytest.raises(RefusedError), store.transaction():
        store.insert_decision(decision("db.engine", "use mysql", valid_from=LATER))
    assert store.current_decision("db.engine") == first
    assert store.current_decision("db.other") is None


def test_a_window_is_closed_once_and_successors_follow(store: Store) -> None:
    old, new = decision("db.engine", "use mysql"), decision("db.engine", "use postgres", valid_from=LATER)
    with store.transaction():
        store.insert_decision(old)
        store.close_decision(old.id, LATER, "superseded", None)
        store.insert_decision(new)
        store.link(old.id, new.id, LATER)
    with pytest.raises(RefusedError), store.transaction():
        store.close_decision(old.id, LATEST, "retired", "again")
    assert store.current_decision("db.engine") == store.get_decision(new.id)
    closed = store.get_decision(old.id)
    assert closed is not None and (closed.valid_until, closed.superseded_by) == (LATER, [new.id])
    assert [d.id for d in store.decisions("db.engine", include_closed=True)] == [old.id, new.id]
    assert [d.id for d in store.decisions("db", as_of="2026-01-15T00:00:00.000000Z")] == [old.id]
    assert [d.id for d in store.decisions()] == [new.id]
    assert [d.id for d in store.connected_decisions("db.engine")] == [old.id, new.id]
    assert [d.id for d in store.connected_decisions("db.engine", limit=1)] == [new.id]
    assert [d.id for d in store.decisions("db", include_closed=True, limit=1)] == [old.id]


def test_overlapping_windows_of_a_subject_are_refused(store: Store) -> None:
    old = decision("db.engine", "use mysql", valid_from=LATER)
    with store.transaction():
        store.insert_decision(old)
        store.close_decision(old.id, LATEST, "retired", "done")
    with pytest.raises(RefusedError), store.transaction():
        store.insert_decision(decision("db.engine", "earlier", valid_from="2026-01-01T00:00:00.000000Z"))


def _closed_row(store: Store, made: Decision, valid_from: str, valid_until: str) -> dict[str, Any]:
    """``made``'s exported row as another decision with the window ``[valid_from, valid_until)``."""
    row = store.rows_by_key("decision", [(made.id,)])[(made.id,)]
    return row | {
        "id": ids.new_id("dc"),
        "valid_from": valid_from,
        "ratified_at": valid_from,
        "valid_until": valid_until,
        "closed_by": "retired",
        "close_reason": "withdrawn at once",
    }


def test_a_window_closed_the_moment_it_opened_still_refuses_an_earlier_open_one(store: Store) -> None:
    # Both backends hold SQLite's rule: the empty window [LATER, LATER) counts as overlapping the
    # window that opens before it and never ends (an empty range overlaps nothing in PostgreSQL).
    instant = decision("db.engine", "use mysql", valid_from=LATER)
    with store.transaction():
        store.insert_decision(instant)
        store.close_decision(instant.id, LATER, "retired", "withdrawn at once")
    earlier = decision("db.engine", "use postgres", valid_from=EARLIER)
    with pytest.raises(RefusedError, match="overlap"), store.transaction():
        store.insert_decision(earlier)
    assert store.get_decision(earlier.id) is None
    assert [d.id for d in store.decisions("db.engine", include_closed=True)] == [instant.id]


def test_a_copied_window_closed_the_moment_it_opened_inside_another_is_refused(store: Store) -> None:
    around = decision("db.engine", "use mysql", valid_from=EARLIER)
    with store.transaction():
        store.insert_decision(around)
        store.close_decision(around.id, LATEST, "retired", "done")
    inside = _closed_row(store, around, LATER, LATER)
    with pytest.raises(RefusedError, match="overlap"), store.transaction():
        store.restore_rows("decision", [inside])
    assert store.get_decision(inside["id"]) is None
    # Closed the moment the other window opened, it only touches it: SQLite accepts it, so must all.
    at_start = _closed_row(store, around, EARLIER, EARLIER)
    with store.transaction():
        store.restore_rows("decision", [at_start])
    assert store.get_decision(at_start["id"]) is not None


def test_a_raw_insert_of_an_empty_window_inside_another_is_refused(backend: Backend) -> None:
    around = decision("db.engine", "use mysql", valid_from=EARLIER)
    with backend.store.transaction():
        backend.store.insert_decision(around)
    with pytest.raises(RefusedError):
        backend.raw_execute(
            "INSERT INTO decision (id, subject, decision, valid_from, valid_until, closed_by, ratified_by, "
            "ratified_at) VALUES (?, 'db.engine', 'use sqlite', ?, ?, 'retired', 'reviewer', ?)",
            (ids.new_id("dc"), LATER, LATER, LATER),
        )
    assert [d.id for d in backend.store.decisions("db.engine", include_closed=True)] == [around.id]


def test_windows_that_only_touch_are_accepted_even_when_empty(store: Store) -> None:
    before = decision("db.engine", "use mysql", valid_from=EARLIER)
    with store.transaction():
        store.insert_decision(before)
        store.close_decision(before.id, LATER, "retired", "done")
    # Empty windows at the instant the first one ends, then a window opening at that instant.
    touching = [_closed_row(store, before, LATER, LATER), _closed_row(store, before, LATER, LATER)]
    after = decision("db.engine", "use postgres", valid_from=LATER)
    with store.transaction():
        store.restore_rows("decision", touching)
        store.insert_decision(after)
    assert len(store.decisions("db.engine", include_closed=True)) == 4
    assert store.current_decision("db.engine") == after


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE decision SET decision = 'rewritten' WHERE id = ?",
        "UPDATE decision SET subject = 'elsewhere' WHERE id = ?",
        "DELETE FROM decision WHERE id = ?",
    ],
)
def test_kernel_rows_are_immutable(backend: Backend, sql: str) -> None:
    kept = decision("db.engine", "use postgres")
    with backend.store.transaction():
        backend.store.insert_decision(kept)
    with pytest.raises(RefusedError):
        backend.raw_execute(sql, (kept.id,))
    assert backend.store.get_decision(kept.id) == kept


def test_links_are_permanent_and_move_forward_in_time(backend: Backend) -> None:
    store = backend.store
    old, new = decision("a", "old"), decision("b", "new", valid_from=LATER)
    with store.transaction():
        store.insert_decision(old)
        store.insert_decision(new)
    with pytest.raises(RefusedError), store.transaction():
        store.link(new.id, old.id, LATER)  # the successor would start first
    with pytest.raises(RefusedError), store.transaction():
        store.link(old.id, old.id, LATER)
    with store.transaction():
        store.link(old.id, new.id, LATER)
    with pytest.raises(RefusedError):
        backend.raw_execute("DELETE FROM supersession WHERE old_id = ?", (old.id,))
    assert store.link_rows("supersession") == [(old.id, new.id, LATER)]


def test_ancestry_and_chains_follow_links(store: Store) -> None:
    a = decision("x.a", "first")
    b = decision("x.b", "second", valid_from=LATER)
    c = decision("x.c", "third", valid_from=LATEST)
    lone = decision("y", "alone")
    with store.transaction():
        for item in (a, b, c, lone):
            store.insert_decision(item)
        store.link(a.id, b.id, LATER)
        store.link(b.id, c.id, LATEST)
    assert store.is_ancestor(c.id, a.id)  # linking c -> a would close a cycle
    assert store.is_ancestor(a.id, a.id)
    assert not store.is_ancestor(a.id, c.id)
    assert not store.is_ancestor(lone.id, a.id)
    assert sorted(store.chain_ids(b.id)) == sorted([a.id, b.id, c.id])
    chains = store.chains_of([c.id, lone.id])
    assert sorted(chains[c.id]) == sorted([a.id, b.id, c.id]) and chains[lone.id] == [lone.id]


def test_meta_values(store: Store) -> None:
    with store.transaction():
        store.set_meta("k", "one")
        store.set_meta("k", "two")
    assert store.get_meta("k") == "two"
    with store.transaction():
        store.delete_meta("k")
    assert store.get_meta("k") is None


def test_a_failed_transaction_leaves_nothing(store: Store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.insert_evidence(evidence("gone"))
        raise RuntimeError("stop")
    assert store.evidence_ids() == []


def test_a_failed_savepoint_keeps_the_rest_of_the_transaction(store: Store) -> None:
    kept = evidence("kept")
    with store.transaction():
        store.insert_evidence(kept)
        with pytest.raises(RefusedError), store.savepoint():
            store.insert_evidence(evidence("kept"))
    assert store.evidence_ids() == [kept.id]


def test_another_connection_sees_commits(backend: Backend) -> None:
    other = backend.second_connection()
    before = other.data_version()
    logged = evidence("news")
    with backend.store.transaction():
        backend.store.insert_evidence(logged)
    assert other.data_version() != before
    assert other.get_evidence(logged.id) == logged


def test_a_subtree_is_matched_literally_and_listed_in_byte_order(store: Store) -> None:
    # LIKE's wildcards and the escape character are ordinary characters of a subject; the order is
    # byte order whatever the database's locale (which may sort case and punctuation otherwise).
    subjects = ["a_b", "a_b.x", "axb.x", "a%", "a%.y", "ab.y", "a\\b", "a\\b.z", "B.x", "b-x", "b.x", "b_x"]
    made = {subject: decision(subject, f"on {subject}") for subject in subjects}
    with store.transaction():
        for item in made.values():
            store.insert_decision(item)
            store.insert_proposal(proposal(item.subject, f"on {item.subject} again"))
    assert [d.subject for d in store.decisions()] == sorted(subjects)
    for root, expected in {"a_b": ["a_b", "a_b.x"], "a%": ["a%", "a%.y"], "a\\b": ["a\\b", "a\\b.z"]}.items():
        assert [d.subject for d in store.decisions(root)] == expected
        assert sorted(p.subject for p in store.list_proposals("pending", subject=root)) == expected
