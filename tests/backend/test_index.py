"""Contract: derived data (entity mentions, conflicts, vectors) keyed by item ids only."""

from __future__ import annotations

import math
import struct

from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.store.base import Store

from .support import decision, evidence

DIM = 8  # the smallest dimension a bit-quantised index holds (one byte)
LATER = "2026-02-01T00:00:00.000000Z"


def _vector(*values: float) -> bytes:
    padded = [*values, *[0.0] * (DIM - len(values))]
    norm = math.sqrt(sum(v * v for v in padded))
    return struct.pack(f"<{DIM}f", *(v / norm for v in padded))


def test_mentions_are_counted_and_listed_newest_first(store: Store) -> None:
    older, newer = evidence("uses redis"), evidence("redis again")
    with store.transaction():
        store.insert_evidence(older)
        store.insert_evidence(newer)
        store.add_mentions(older.id, ["redis"])
        store.add_mentions(newer.id, ["redis", "postgres"])
        store.add_mentions(newer.id, ["redis"])  # idempotent
    names = dict((name, entity) for entity, name in store.entity_names())
    assert set(names) == {"redis", "postgres"}
    redis = names["redis"]
    assert store.entity_counts([redis], "ev_") == {redis: 2}
    assert store.entity_counts([redis], "dc_") == {}
    assert store.entity_items([redis], "ev_", 10) == {redis: [newer.id, older.id]}
    assert store.entity_items([redis], "ev_", 1) == {redis: [newer.id]}
    assert store.entity_names(after=max(names.values())) == []


def test_entity_version_grows_with_new_entities(store: Store) -> None:
    before = store.entity_version()
    with store.transaction():
        store.add_mentions("ev_x", ["kafka"])
    grown = store.entity_version()
    with store.transaction():
        store.add_mentions("ev_y", ["kafka"])
    assert before < grown == store.entity_version()


def test_item_counts(store: Store) -> None:
    with store.transaction():
        store.insert_evidence(evidence("one"))
        store.insert_evidence(evidence("two"))
        store.insert_decision(decision("a", "one"))
    assert (store.item_count("evidence"), store.item_count("decision")) == (2, 1)


def test_conflicts_are_recorded_both_ways_and_listed_once(store: Store) -> None:
    a, b = decision("cache.a", "use redis"), decision("cache.b", "never use redis")
    with store.transaction():
        store.insert_decision(a)
        store.insert_decision(b)
        store.add_conflict(a.id, b.id, "redis", "use redis", "never use redis")
    assert store.conflicts_for(a.id) == [(b.id, "redis", "use redis", "never use redis")]
    assert store.conflicts_for(b.id) == [(a.id, "redis", "never use redis", "use redis")]
    assert len(store.current_conflict_pairs()) == 1
    assert [row[0] for row in store.conflicts_at([a.id], None)[a.id]] == [b.id]
    with store.transaction():
        store.clear_conflicts()
    assert store.conflicts_for(a.id) == [] and store.current_conflict_pairs() == []


def test_conflicts_at_keep_the_others_that_hold_then(store: Store) -> None:
    a, b = decision("cache.a", "use redis"), decision("cache.b", "never use redis")
    with store.transaction():
        store.insert_decision(a)
        store.insert_decision(b)
        store.add_conflict(a.id, b.id, "redis", "use redis", "never use redis")
        store.close_decision(b.id, LATER, "retired", "gone")
    assert store.conflicts_at([a.id], None) == {a.id: []}
    assert [row[0] for row in store.conflicts_at([a.id], "2026-01-15T00:00:00.000000Z")[a.id]] == [b.id]


def _indexed(store: Store) -> dict[str, str]:
    texts = {"east": "east", "north": "north", "northeast": "northeast"}
    ids = {}
    with store.transaction():
        store.create_vector_tables(DIM)
        for name, text in texts.items():
            record = evidence(text)
            store.insert_evidence(record)
            ids[name] = record.id
    return ids


def test_pending_vectors_name_items_oldest_first_until_embedded(store: Store) -> None:
    ids = _indexed(store)
    assert store.vector_tables_exist()
    assert store.pending_vectors("evidence", 10) == [(i, t) for t, i in ids.items()]
    assert store.pending_vector_count("evidence") == 3
    with store.transaction():
        added = store.insert_vectors("evidence", [(ids["east"], 0, _vector(1.0))])
    assert added == 1
    assert [i for i, _ in store.pending_vectors("evidence", 10)] == [ids["north"], ids["northeast"]]
    with store.transaction():  # a chunk stored already (by another process) is skipped
        assert store.insert_vectors("evidence", [(ids["east"], 0, _vector(1.0))]) == 0


def test_nearest_answers_item_ids_by_their_best_chunk(store: Store) -> None:
    ids = _indexed(store)
    with store.transaction():
        store.insert_vectors(
            "evidence",
            [
                (ids["east"], 0, _vector(1.0)),
                (ids["north"], 0, _vector(0.0, 1.0)),
                (ids["north"], 1, _vector(-1.0, 0.2)),  # a second chunk, far from east
                (ids["northeast"], 0, _vector(1.0, 1.0)),
            ],
        )
    found = store.nearest("evidence", _vector(1.0, 0.1), candidates=10, limit=10)
    assert [i for i, _ in found] == [ids["east"], ids["northeast"], ids["north"]]
    similarities = [s for _, s in found]
    assert similarities == sorted(similarities, reverse=True) and similarities[0] > 0.99
    assert store.nearest("evidence", _vector(1.0, 0.1), candidates=10, limit=1) == found[:1]
    assert store.nearest("decision", _vector(1.0), candidates=10, limit=10) == []


def test_dropped_vectors_are_pending_again(store: Store) -> None:
    ids = _indexed(store)
    with store.transaction():
        store.insert_vectors("evidence", [(i, 0, _vector(1.0)) for i in ids.values()])
    assert store.pending_vector_count("evidence") == 0
    with store.transaction():
        store.drop_vectors()
        store.create_vector_tables(DIM)
    assert store.pending_vector_count("evidence") == 3
    assert store.nearest("evidence", _vector(1.0), candidates=10, limit=10) == []


def test_rebuilding_the_text_index_forgets_mentions_and_keeps_search(store: Store) -> None:
    note, choice = evidence("redis keeps the sessions"), decision("cache.sessions", "keep sessions in redis")
    with store.transaction():
        store.insert_evidence(note)
        store.insert_decision(choice)
        store.add_mentions(note.id, ["redis"])
        store.add_mentions(choice.id, ["redis"])
    redis = dict((name, entity) for entity, name in store.entity_names())["redis"]
    with store.transaction():
        store.rebuild_text_index(evidence=False)
    assert store.entity_counts([redis], "dc_") == {} and store.entity_counts([redis], "ev_") == {redis: 1}
    with store.transaction():
        store.rebuild_text_index(evidence=True)
    assert store.entity_counts([redis], "ev_") == {}
    query = TextQuery(("sessions",))
    assert [i for i, _ in store.fts_evidence_ids(query, 10)] == [note.id]
    assert [i for i, _ in store.fts_decision_ids(query, 10)] == [choice.id]
