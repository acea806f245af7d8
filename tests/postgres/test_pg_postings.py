"""Keyword ranking from the full-text postings: the same answers, to the bit, as from the tsvectors.

The postings (schema.POSTINGS) are written by triggers in the transaction that writes a row, so
an agent's own evidence is searchable at once without any grant on them; the ranking read from
them must equal the BM25 that ``ts_rank_cd`` over each row's tsvector gives (the store falls back
to that for terms that are phrases, and the tests force it by hiding every term's lexeme).
"""

from __future__ import annotations

import dataclasses
import random

import psycopg
import pytest

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.store import open_store
from ctx_kernel.kernel.store.postgres import index, roles
from tests.backend.support import decision, evidence

WORDS = "cache caching cached redis deploy deploys deployment session tokens token api queue worker".split()
FILLER = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
QUERIES = [
    TextQuery(("cache",)),
    TextQuery(("caching", "redis")),
    TextQuery(("deploy", "session", "tokens")),
    TextQuery(("redis", "deploy"), mode="all"),
    TextQuery(("cache", "cached", "alpha")),  # two terms of one lexeme, and a common one
    TextQuery(("queue", "worker", "api", "token", "beta"), mode="all"),
    TextQuery(("nowhere",)),
]


def _text(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(FILLER) for _ in range(rng.randint(low, high))]
    words += [rng.choice(WORDS) for _ in range(rng.randint(0, 6))]
    rng.shuffle(words)
    return " ".join(words)


@pytest.fixture
def corpus(pg):
    """A store of 600 evidence texts and 120 decisions (40 of them closed) of random words."""
    Ctx.init(pg.url())[0].close()
    store = open_store(pg.url())
    rng = random.Random(11)
    with store.transaction():
        for i in range(600):
            store.insert_evidence(evidence(f"{i}: {_text(rng, 2, 60)}"))
        for i in range(120):
            made = decision(f"topic.{i} {_text(rng, 0, 2)}", _text(rng, 3, 20))
            made = dataclasses.replace(made, rationale=_text(rng, 0, 30) or None)
            store.insert_decision(made)
            if i % 3 == 0:
                store.close_decision(made.id, "2026-02-01T00:00:00.000000Z", "retired", None)
    store.close()
    return pg


def _answers(url: str) -> list[object]:
    store = open_store(url)
    try:
        out: list[object] = []
        for query in QUERIES:
            out.append(store.fts_evidence_ids(query, 25))
            out.append(store.fts_decision_ids(query, 25))
            out.append(store.fts_decision_ids(query, 25, current_only=True))
            then = store.search_decisions(query, 25, "2026-01-15T00:00:00Z")
            out.append([(d.id, score) for d, score in then])
        return out
    finally:
        store.close()


def _from_tsvectors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the store rank every query from the tsvectors, as it ranks a phrase."""
    monkeypatch.setattr(index.PostgresIndex, "_lexemes", lambda self, terms: dict.fromkeys(terms))


def test_postings_rank_exactly_as_the_tsvectors(corpus, monkeypatch) -> None:
    from_postings = _answers(corpus.url())
    assert sum(len(found) for found in from_postings) > 300  # not a corpus that matches nothing
    _from_tsvectors(monkeypatch)
    assert _answers(corpus.url()) == from_postings  # ids, order and scores, to the bit


def test_a_phrase_term_is_ranked_from_the_tsvectors_beside_words(pg) -> None:
    Ctx.init(pg.url())[0].close()
    store = open_store(pg.url())
    try:
        with store.transaction():
            for text in ("the user_id column", "a user and an id", "user id user id", "id of the user"):
                store.insert_evidence(evidence(text))
        found = store.fts_evidence_ids(TextQuery(("user_id", "column")), 10)
        texts = {e.id: e.text for e in store.evidence_by_ids([item for item, _ in found]).values()}
        assert [texts[item] for item, _ in found] == ["the user_id column", "user id user id"]
    finally:
        store.close()


def test_an_agent_logs_searchable_evidence_but_cannot_touch_the_postings(pg) -> None:
    Ctx.init(pg.url())[0].close()
    agent = Ctx.open(pg.url(roles.AGENT))
    try:
        logged = agent.log("the billing worker retries declined cards twice")
        found = agent.recall("declined cards", mode="keyword")
        assert [hit.evidence.id for hit in found.evidence] == [logged.id]
    finally:
        agent.close()
    with pg.connect(roles.AGENT, autocommit=True) as conn:
        for statement in (
            "INSERT INTO evidence_posting VALUES ('card', 1, 0, 0, 0, 9, 1)",
            "UPDATE evidence_posting SET d = 99",
            "DELETE FROM evidence_posting",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    with pg.connect() as conn:
        assert conn.execute(
            "SELECT term, d FROM evidence_posting WHERE term IN ('declin', 'card') ORDER BY term"
        ).fetchall() == [("card", 1), ("declin", 1)]


def test_rebuilding_the_text_index_makes_lost_postings_again(corpus) -> None:
    before = _answers(corpus.url())
    with corpus.connect() as conn:
        conn.execute("DELETE FROM evidence_posting WHERE term IN ('cach', 'redi', 'deploy')")
        conn.execute("UPDATE decision_posting SET a = a + 5")
    assert _answers(corpus.url()) != before
    store = open_store(corpus.url())
    try:
        store.rebuild_text_index(evidence=True)
    finally:
        store.close()
    assert _answers(corpus.url()) == before


def test_evidence_copied_in_bulk_gets_its_postings(pg, monkeypatch) -> None:
    """A store filled by COPY (as a copy from another store fills it) ranks as one logged row by row."""
    Ctx.init(pg.url())[0].close()
    rng = random.Random(5)
    texts = [f"{i}: {_text(rng, 2, 40)}" for i in range(400)]
    with pg.connect() as conn:
        copy = "COPY evidence (id, content_hash, text, kind, created_at) FROM STDIN"
        with conn.cursor().copy(copy) as writing:
            for i, text in enumerate(texts):
                writing.write_row((f"ev_{i:04}", f"{i:064x}", text, "note", "2026-01-01T00:00:00Z"))
    queries = [TextQuery(("cache", "redis")), TextQuery(("deploy", "tokens"), mode="all")]
    store = open_store(pg.url())
    try:
        copied = [store.fts_evidence_ids(query, 30) for query in queries]
    finally:
        store.close()
    assert all(copied)
    _from_tsvectors(monkeypatch)
    store = open_store(pg.url())
    try:
        assert [store.fts_evidence_ids(query, 30) for query in queries] == copied
    finally:
        store.close()


def _postings(pg) -> list[tuple[object, ...]]:
    with pg.connect() as conn:
        return [
            *conn.execute("SELECT 'e', * FROM evidence_posting ORDER BY term, rowid").fetchall(),
            *conn.execute("SELECT 'd', * FROM decision_posting ORDER BY term, rowid").fetchall(),
        ]


def test_a_store_migrated_to_postgresql_searches_from_postings_made_from_its_rows(
    cli, kernel, pg, monkeypatch
) -> None:
    from tests.store_copy_support import fill

    fill(kernel, evidence=60)
    moved = cli("migrate", "--to", pg.url())
    assert moved.code == 0, moved.err
    copied = _postings(pg)
    store = open_store(pg.url())
    try:
        store.rebuild_text_index(evidence=True)
    finally:
        store.close()
    assert _postings(pg) == copied and len(copied) > 100  # what a rebuild from the rows gives
    queries = [TextQuery(("ledger", "postgres")), TextQuery(("jwt", "session", "redis"))]
    store = open_store(pg.url())
    try:
        found = [(store.fts_evidence_ids(q, 10), store.fts_decision_ids(q, 10)) for q in queries]
    finally:
        store.close()
    assert all(evidence and decisions for evidence, decisions in found[1:]) and found[0][0]
    _from_tsvectors(monkeypatch)
    store = open_store(pg.url())
    try:
        assert [(store.fts_evidence_ids(q, 10), store.fts_decision_ids(q, 10)) for q in queries] == found
    finally:
        store.close()
