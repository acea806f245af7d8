"""`ctx search` and `ctx recall` on a PostgreSQL store answer as on a SQLite one, through the CLI.

The same small corpus goes into a store of each backend with the same commands; ids differ, so
hits are compared by their text. Scores are the backends' own (BM25 in both, but over different
tokenisers), so only the order is compared.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx, CtxError
from ctx_kernel.kernel.store.postgres import roles

DECISIONS = [
    ("cache.sessions", "Keep user sessions in Redis with a 30 minute TTL", "Sessions must survive deploys"),
    ("db.engine", "Use PostgreSQL for the orders database", "The team already operates it"),
    ("db.migrations", "Write schema migrations with Alembic, one revision per change", None),
    ("api.errors", "Return RFC 7807 problem details for every API error", "Clients parse one shape"),
    ("jobs.queue", "Run background jobs on Celery workers with Redis as the broker", None),
    ("auth.tokens", "Sign API tokens with Ed25519 and expire them after one hour", "Short-lived tokens"),
]
# A decision that replaces the first one on its subject, so windows and supersession are exercised.
SUPERSEDING = ("db.engine", "Use PostgreSQL 18 with pgvector for the orders database", "Vectors in one place")
EVIDENCE = [
    "incident 42: the Redis session store evicted keys under memory pressure, users were logged out",
    "benchmark: PostgreSQL 18 answered the orders report in 40 ms, MySQL in 95 ms",
    "review: please move the retry logic out of `src/jobs/celery_app.py` before merging",
    "note: Alembic autogenerate missed the partial index on orders.status",
    "meeting: API clients want problem details (RFC 7807) instead of ad-hoc error JSON",
    "CI log: test_tokens.py failed, Ed25519 signature did not verify after rotation",
    "user: how long are API tokens valid? agent: one hour, see auth.tokens",
]
QUERIES = [
    "redis sessions",
    "orders database",
    "how are API tokens signed",
    "celery retry",
    "alembic migrations index",
    "error format for the API",
    "src/jobs/celery_app.py",
]


def _load(ctx) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Log, propose, ratify and embed the corpus; evidence texts by id."""
    ctx("init")
    texts = {ctx("log", text).strip(): text for text in EVIDENCE}
    for subject, text, rationale in DECISIONS:
        extra = ["--rationale", rationale] if rationale else []
        made = json.loads(ctx("propose", "--subject", subject, "--decision", text, *extra, "--json"))
        ctx("ratify", made["id"], "--reviewer", "postgres", "--yes")
    subject, text, rationale = SUPERSEDING
    made = json.loads(
        ctx("propose", "--subject", subject, "--decision", text, "--rationale", rationale, "--json")
    )
    ctx("ratify", made["id"], "--reviewer", "postgres", "--yes")
    ctx("reindex")
    return texts


def _answers(ctx, texts: dict[str, str]) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """What each query finds, by text, in search and in every recall mode."""
    found: dict[str, object] = {}
    for query in QUERIES:
        search = json.loads(ctx("search", query, "--json"))
        found[f"search {query}"] = (
            [d["decision"] for d in search["decisions"]],
            [e["text"] for e in search["evidence"]],
            all("[" in e["snippet"] for e in search["evidence"]),
        )
        for mode in ("keyword", "entity", "vector", "hybrid"):
            recalled = json.loads(ctx("recall", query, "--mode", mode, "--k", "3", "--json"))
            found[f"recall {mode} {query}"] = (
                [d["decision"] for d in recalled["decisions"]],
                [texts[e["id"]] for e in recalled["evidence"]],
            )
    return found


@pytest.mark.usefixtures("real_model")
def test_search_and_recall_find_the_same_hits_in_the_same_order_on_both_backends(
    pg_empty, cli, tmp_path: Path
) -> None:
    answers = {}
    for backend, location in (("sqlite", str(tmp_path / "ctx.db")), ("postgres", pg_empty.url())):

        def ctx(*args: str, location: str = location) -> str:
            result = cli("--db", location, *args, db=False)
            assert result.code == 0, result.err
            return result.out

        answers[backend] = _answers(ctx, _load(ctx))
    differing = {
        k: (v, answers["postgres"][k]) for k, v in answers["sqlite"].items() if answers["postgres"][k] != v
    }
    assert not differing
    # The corpus is not trivially empty: the first query finds the session decision both ways.
    decisions, evidence, bracketed = answers["sqlite"]["search redis sessions"]  # type: ignore[misc]
    assert decisions[0].startswith("Keep user sessions in Redis") and evidence and bracketed


@pytest.mark.usefixtures("real_model")
def test_an_agent_embeds_what_it_logs_once_the_owner_has_chosen_the_model(pg) -> None:
    owner, _ = Ctx.init(pg.url())
    owner.reindex()  # the owner adopts the model and sets the vector dimension
    owner.close()
    agent = Ctx.open(pg.url(roles.AGENT))
    try:
        logged = agent.log("billing retries back off exponentially, capped at five minutes")
        found = agent.recall("how long do we wait between payment attempts", mode="vector")
        assert [hit.evidence.id for hit in found.evidence] == [logged.id]
        assert found.vectors.state == "on"
    finally:
        agent.close()
    with pg.connect() as conn:
        assert conn.execute("SELECT count(*) FROM evidence_vector").fetchone() == (1,)


@pytest.mark.usefixtures("real_model")
def test_an_agent_embeds_evidence_and_leaves_decisions_to_a_persons_login(pg) -> None:
    """A pending decision does not stop an agent's backfill: its evidence is embedded, the decision
    waits for a reviewer's process, which embeds it."""
    owner, _ = Ctx.init(pg.url())
    owner.reindex()
    owner.close()
    with Ctx.open(pg.url(roles.REVIEWER), embedder=None) as reviewer:
        reviewer.ratify(
            reviewer.propose("billing.retries", "Back off exponentially").id, reviewer=reviewer.login
        )
    with Ctx.open(pg.url(roles.AGENT)) as agent:
        logged = agent.log("payment attempts wait longer each time, five minutes at most")
        found = agent.recall("how long between payment attempts", mode="vector")
        assert [hit.evidence.id for hit in found.evidence] == [logged.id]
        assert not found.decisions  # no vector for it yet: found by keyword and entity only
    with pg.connect() as conn:
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM evidence_vector), (SELECT count(*) FROM decision_vector)"
        )
        assert counts.fetchone() == (1, 0)
    with Ctx.open(pg.url(roles.REVIEWER)) as reviewer:
        found = reviewer.recall("how long between payment attempts", mode="vector")
        assert [hit.decision.subject for hit in found.decisions] == ["billing.retries"]


@pytest.mark.usefixtures("real_model")
def test_an_agent_cannot_set_the_vector_dimension_but_still_recalls_by_keyword(pg) -> None:
    Ctx.init(pg.url(), embedder=None)[0].close()  # no model at the owner's init: none chosen yet
    agent = Ctx.open(pg.url(roles.AGENT))
    try:
        logged = agent.log("the session cache lives in redis")
        found = agent.recall("session cache", mode="hybrid")
        assert [hit.evidence.id for hit in found.evidence] == [logged.id]
        with pytest.raises(CtxError) as refused:
            agent.recall("session cache", mode="vector")
        message = str(refused.value)
        assert "vectors are off" in message and "\n" not in message
        assert pg.cluster.logins[roles.AGENT][1] not in message  # never the login's password
    finally:
        agent.close()
    with pg.connect() as conn:
        assert conn.execute("SELECT to_regclass('ix_evidence_vector_knn')").fetchone() == (None,)


def test_leaving_a_common_term_out_first_never_changes_the_ranking(pg, monkeypatch) -> None:
    import random

    from ctx_kernel.kernel.language.query import TextQuery
    from ctx_kernel.kernel.store import open_store
    from ctx_kernel.kernel.store.postgres import fts, index
    from tests.backend.support import evidence

    Ctx.init(pg.url())[0].close()
    store = open_store(pg.url())
    rng = random.Random(7)
    filler = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    with store.transaction():
        for i in range(1500):
            words = [rng.choice(filler) for _ in range(rng.randint(3, 30))]
            for word, share in (("deploy", 0.7), ("cache", 0.08), ("redis", 0.02)):
                words += [word] * (rng.random() < share) * rng.randint(1, 3)
            rng.shuffle(words)
            store.insert_evidence(evidence(f"{i}: " + " ".join(words)))
    queries = [
        TextQuery(terms) for terms in (("deploy", "redis"), ("deploy", "cache", "redis"), ("cache", "deploy"))
    ]
    ranked, narrowed = fts.ranked_postings, []

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        narrowed.append(len(args) > 6 and args[6] is not None)
        return ranked(*args, **kwargs)

    monkeypatch.setattr(fts, "ranked_postings", spy)
    pruned = [store.fts_evidence_ids(query, 20) for query in queries]
    assert any(narrowed)  # the common term was left out of a first ranking
    monkeypatch.setattr(index, "_PRUNE_FROM", 10**9)
    store.close()
    store = open_store(pg.url())  # no counts remembered from before
    try:
        assert [store.fts_evidence_ids(query, 20) for query in queries] == pruned
    finally:
        store.close()
    assert all(len(found) == 20 for found in pruned)
