"""Contract: full-text queries are words, answered best first with a higher-is-better relevance."""

from __future__ import annotations

import pytest

from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.store.base import Store

from .support import decision, evidence

LATER = "2026-02-01T00:00:00.000000Z"


def _words(text: str) -> TextQuery:
    query = TextQuery.from_text(text)
    assert query is not None
    return query


@pytest.fixture
def logged(store: Store) -> dict[str, str]:
    texts = {
        "strong": "retry retry retry the billing job with backoff",
        "weak": "a long note about many things, once mentioning retry among other words here",
        "other": "the cache is warmed at startup",
        "phrase": "billing retry policy",
    }
    ids = {}
    with store.transaction():
        for name, text in texts.items():
            record = evidence(text)
            store.insert_evidence(record)
            ids[name] = record.id
    return ids


def test_evidence_matches_come_best_first_with_falling_relevance(
    store: Store, logged: dict[str, str]
) -> None:
    found = store.fts_evidence_ids(_words("retry"), 10)
    assert found[0][0] == logged["strong"]
    assert {i for i, _ in found} == {logged["strong"], logged["weak"], logged["phrase"]}
    scores = [s for _, s in found]
    assert scores == sorted(scores, reverse=True)
    assert store.fts_evidence_ids(_words("retry"), 1) == found[:1]


def test_search_evidence_returns_records_relevance_and_snippets(store: Store, logged: dict[str, str]) -> None:
    found = store.search_evidence(_words("cache"), 10)
    assert [(e.id, "[cache]" in snippet) for e, _, snippet in found] == [(logged["other"], True)]


def test_all_mode_needs_every_term(store: Store, logged: dict[str, str]) -> None:
    every = TextQuery(("billing", "backoff"), mode="all")
    assert [i for i, _ in store.fts_evidence_ids(every, 10)] == [logged["strong"]]


def test_a_phrase_matches_adjacent_words_in_order(store: Store, logged: dict[str, str]) -> None:
    assert [i for i, _ in store.fts_evidence_ids(TextQuery(("billing retry",)), 10)] == [logged["phrase"]]
    assert store.fts_evidence_ids(TextQuery(("retry billing",)), 10) == []


@pytest.mark.parametrize("typed", ['"retry', "retry NOT", "NEAR(retry", "retry*", "text:retry", "retry AND"])
def test_query_syntax_is_searched_as_plain_words(store: Store, logged: dict[str, str], typed: str) -> None:
    found = {i for i, _ in store.fts_evidence_ids(_words(typed), 10)}
    assert logged["strong"] in found


@pytest.mark.parametrize(
    "term", ["retry:*", "!retry", "retry |", "(retry", "'retry'", "retry\\", "<-> retry", "retry & !"]
)
def test_a_term_holding_query_operators_is_still_a_word(
    store: Store, logged: dict[str, str], term: str
) -> None:
    # Past TextQuery.from_text, a caller may hand any text as a term: tsquery and FTS5 operators
    # in it must neither fail nor change what matches.
    assert {i for i, _ in store.fts_evidence_ids(TextQuery((term,)), 10)} == {
        logged["strong"],
        logged["weak"],
        logged["phrase"],
    }


def test_evidence_terms_are_counted_up_to_a_cap(store: Store, logged: dict[str, str]) -> None:
    assert store.evidence_term_counts(["retry", "absent"], 3) == {"retry": 3, "absent": 0}
    assert store.evidence_term_counts(["retry"], 2) == {"retry": 2}
    assert store.evidence_term_counts(["retry"], 100) == {"retry": 3}


def test_decision_search_respects_windows(store: Store) -> None:
    old = decision("db.engine", "use mysql for the orders database")
    new = decision("db.engine", "use postgres for the orders database", valid_from=LATER)
    with store.transaction():
        store.insert_decision(old)
        store.close_decision(old.id, LATER, "superseded", None)
        store.insert_decision(new)
    orders = _words("orders database")
    assert [d.id for d, _ in store.search_decisions(orders, 10)] == [new.id]
    assert [d.id for d, _ in store.search_decisions(orders, 10, "2026-01-15T00:00:00.000000Z")] == [old.id]
    assert {i for i, _ in store.fts_decision_ids(orders, 10)} == {old.id, new.id}
    assert [i for i, _ in store.fts_decision_ids(orders, 10, current_only=True)] == [new.id]
    best, _ = store.fts_decision_ids(_words("mysql"), 10)[0]
    assert best == old.id


def test_subjects_weigh_more_than_rationale(store: Store) -> None:
    named = decision("cache.redis", "keep sessions in memory")
    mentioned = decision("sessions.store", "keep sessions in memory, unlike redis")
    with store.transaction():
        store.insert_decision(named)
        store.insert_decision(mentioned)
    assert [i for i, _ in store.fts_decision_ids(_words("redis"), 10)] == [named.id, mentioned.id]
