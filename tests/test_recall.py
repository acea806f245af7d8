"""Recall through the facade and the CLI: rankers, fusion, windows, contradiction expansion, vectors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from embedders import HashEmbedder
from hypothesis import given, settings
from hypothesis import strategies as st
from test_json_schemas import assert_valid

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.recall.engine import fuse
from ctx_kernel.kernel.recall.expansion import SUPERSEDED_WARNING


def decide(kernel: Ctx, subject: str, text: str, rationale: str | None = None):
    proposal = kernel.propose(subject, text, rationale=rationale, proposer="agent")
    return kernel.ratify(proposal.id, reviewer="ann").decision


@pytest.fixture
def hashed(store_path: Path) -> Ctx:
    """A store whose vectors come from the deterministic test embedder."""
    ctx, _ = Ctx.init(store_path, embedder=HashEmbedder())
    yield ctx
    ctx.close()


@pytest.fixture
def world(hashed: Ctx) -> dict[str, object]:
    old = decide(hashed, "auth.session-tokens", "Store opaque session ids in Redis.")
    new = decide(
        hashed, "auth.session-tokens", "Issue JWT access tokens with refresh rotation; drop Redis sessions."
    )
    cache = decide(hashed, "cache.backend", "Use `redis` for the HTTP response cache.")
    infra = decide(hashed, "infra.datastores", "Never use redis in production; remove it from the stack.")
    db = decide(hashed, "db.primary", "PostgreSQL 16 is the primary database; SQLite only in unit tests.")
    build = decide(hashed, "build.tool", "Use make for builds.")
    hashed.retire("build.tool", reviewer="ann", reason="moved to just")
    pending = hashed.propose("auth.session-tokens", "Use PASETO v4 tokens instead of JWT.", proposer="gemini")
    note = hashed.log("user: logins expire after five minutes\nagent: the refresh_token_ttl is 300 s").id
    return {
        "old": old,
        "new": new,
        "cache": cache,
        "infra": infra,
        "db": db,
        "build": build,
        "pending": pending,
        "note": note,
    }


# -- fusion -------------------------------------------------------------------------------------


def test_rrf_orders_by_summed_reciprocal_ranks_and_keeps_raw_scores():
    fused = fuse(
        {
            "keyword": [("a", 9.0, None), ("b", 5.0, None)],
            "vector": [("b", 0.9, None), ("c", 0.8, None)],
        },
        60,
    )
    assert [item for item, _, _ in fused] == ["b", "a", "c"]
    b_scores = fused[0][2]
    assert b_scores["keyword"].rank == 2 and b_scores["keyword"].score == 5.0
    assert b_scores["vector"].rank == 1 and b_scores["entity"] is None
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)


def test_rrf_ties_break_by_id_so_answers_are_deterministic():
    fused = fuse({"keyword": [("z", 1.0, None)], "entity": [("a", 1.0, None)]}, 60)
    assert [item for item, _, _ in fused] == ["a", "z"]


# -- the answer's shape -------------------------------------------------------------------------


def test_decisions_and_evidence_stay_separate(world, hashed):
    found = hashed.recall("refresh tokens")
    assert all(hit.decision.id.startswith("dc_") for hit in found.decisions)
    assert all(hit.evidence.id.startswith("ev_") for hit in found.evidence)
    assert world["note"] in [hit.evidence.id for hit in found.evidence]
    data = found.to_dict()
    assert set(data) >= {"decisions", "evidence"}
    assert all(item["label"] == "unratified" and item["ratified"] is False for item in data["evidence"])


def test_recall_json_validates_and_carries_windows_and_sources(cli, world, store_path):
    result = cli("recall", "redis sessions", "--json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert_valid("recall", document)
    top = document["decisions"][0]
    assert {"id", "current", "valid_from", "valid_until", "source"} <= set(top)
    assert top["source"]["kind"] == "proposal"
    assert all(e["source"]["kind"] == "note" for e in document["evidence"])


# -- superseded decisions -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "entity", "vector"])
def test_a_superseded_decision_is_never_presented_as_current(world, hashed, mode):
    found = hashed.recall("opaque session ids stored in Redis", mode=mode)
    ids = [hit.decision.id for hit in found.decisions]
    assert world["old"].id not in ids
    assert all(hit.decision.current for hit in found.decisions)
    successor = next(hit for hit in found.decisions if hit.decision.id == world["new"].id)
    chain = {r.id: r for r in successor.superseded}
    assert chain[world["old"].id].warning == SUPERSEDED_WARNING
    assert chain[world["old"].id].current is False
    assert world["new"].id in chain[world["old"].id].why


def test_a_match_on_an_old_decision_surfaces_its_successor(world, hashed):
    found = hashed.recall("opaque session ids", mode="keyword")
    top = found.decisions[0]
    assert top.decision.id == world["new"].id
    assert top.via == world["old"].id
    assert top.superseded[0].matched is True


def test_a_retired_decision_is_reported_closed_not_current(world, hashed):
    found = hashed.recall("make builds", mode="keyword")
    assert world["build"].id not in [hit.decision.id for hit in found.decisions]
    closed = {c.decision.id: c for c in found.closed}
    assert "retired" in closed[world["build"].id].why
    assert "do not apply" in closed[world["build"].id].why


def test_as_of_answers_with_the_decision_valid_then(world, hashed):
    found = hashed.recall("session tokens", as_of=world["old"].valid_from, mode="keyword")
    hit = next(h for h in found.decisions if h.decision.subject == "auth.session-tokens")
    assert hit.decision.id == world["old"].id
    later = {r.id: r for r in hit.superseded}
    assert later[world["new"].id].relation == "later"


def test_as_of_before_anything_was_decided_finds_no_decision(world, hashed):
    found = hashed.recall("redis", as_of="2001-01-01", mode="keyword")
    assert found.decisions == []


# -- contradictions ----------------------------------------------------------------------------


def test_conflicting_current_decisions_on_related_subjects_are_surfaced_both_ways(world, hashed):
    found = hashed.recall("redis", mode="keyword")
    by_id = {hit.decision.id: hit for hit in found.decisions}
    cache = by_id[world["cache"].id]
    assert world["infra"].id in {r.id for r in cache.conflicts}
    reason = next(r.why for r in cache.conflicts if r.id == world["infra"].id)
    assert "redis" in reason and "Never use redis" in reason
    infra = by_id[world["infra"].id]
    assert world["cache"].id in {r.id for r in infra.conflicts}


def test_agreeing_decisions_are_not_conflicts(hashed):
    a = decide(hashed, "cache.backend", "Use `redis` for the response cache.")
    b = decide(hashed, "queue.broker", "Use redis streams as the job queue.")
    found = hashed.recall("redis", mode="keyword")
    for hit in found.decisions:
        assert hit.conflicts == [], (a, b)


def test_a_negation_far_from_the_shared_name_takes_no_stance(hashed):
    decide(hashed, "db.driver", "Use `psycopg` for PostgreSQL; asyncpg speed is not needed outside ingest.")
    decide(hashed, "db.ingest", "Use `asyncpg` for the bulk ingest path.")
    found = hashed.recall("ingest", mode="keyword")
    assert all(hit.conflicts == [] for hit in found.decisions)


@pytest.mark.parametrize(
    ("mine", "theirs"),
    [
        ("Enable sticky sessions on the load balancer.", "Disable sticky sessions everywhere."),
        ("Allow anonymous reads of `public_docs`.", "Deny anonymous reads of `public_docs`."),
        ("Tests must run against `postgres`.", "Tests never touch `postgres`; use fakes."),
        ("Require `mypy` in CI.", "Forbid `mypy` in CI, it is too slow."),
        ("Include `vendor/` in the wheel.", "Exclude `vendor/` from the wheel."),
        ("Add `orjson` to the dependencies.", "Remove `orjson` from the dependencies."),
        ("Use `celery` for background jobs.", "Do not use `celery` for background jobs."),
    ],
)
def test_opposing_polarity_pairs_conflict(hashed, mine, theirs):
    first = decide(hashed, "team.alpha.policy", mine)
    second = decide(hashed, "team.beta.policy", theirs)
    found = hashed.recall(mine, mode="keyword")
    hit = next(h for h in found.decisions if h.decision.id == first.id)
    assert [r.id for r in hit.conflicts] == [second.id]


def test_pending_proposals_that_would_supersede_a_hit_are_surfaced(world, hashed):
    found = hashed.recall("JWT refresh rotation", mode="keyword")
    hit = next(h for h in found.decisions if h.decision.id == world["new"].id)
    assert [p.id for p in hit.pending] == [world["pending"].id]
    assert "gemini" in hit.pending[0].why and hit.pending[0].current is False


def test_a_pending_proposal_on_another_subject_is_surfaced_only_where_it_supersedes(world, hashed):
    across = hashed.propose(
        "identity.tokens", "Move token issuing to the identity service.", supersedes=[world["new"].id]
    )
    hashed.propose("db.primary", "Use PostgreSQL 17 as the primary database.")
    found = hashed.recall("JWT refresh rotation", mode="keyword")
    hit = next(h for h in found.decisions if h.decision.id == world["new"].id)
    assert [p.id for p in hit.pending] == [world["pending"].id, across.id]  # oldest first
    assert all(not h.pending for h in found.decisions if h.decision.id != world["new"].id)


# -- rankers --------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["session tokens", "authn", "sesion-tokens", "auth tokens"])
def test_entity_ranker_finds_a_subject_named_loosely(world, hashed, query):
    found = hashed.recall(query, mode="entity")
    assert found.decisions and found.decisions[0].decision.subject == "auth.session-tokens"
    assert found.decisions[0].scores["entity"] is not None or found.decisions[0].via


def test_entity_ranker_finds_identifiers_in_evidence(world, hashed):
    found = hashed.recall("refresh token ttl", mode="entity")
    assert [h.evidence.id for h in found.evidence] == [world["note"]]
    assert "refresh_token_ttl" in found.evidence[0].scores["entity"].detail


@pytest.mark.parametrize(
    "query", ['"auth NOT', "NEAR(x", "x*", "redis AND OR", "col:value", "^start", "a - b", "'; DROP TABLE"]
)
def test_any_text_is_a_valid_query(world, hashed, query):
    hashed.recall(query)


def test_every_hit_explains_itself(cli, world):
    result = cli("recall", "redis", "--explain", "--mode", "keyword")
    assert result.code == 0, result.err
    explained = [line for line in result.out.splitlines() if "explain:" in line]
    assert explained and all("keyword #" in line and "(bm25 " in line for line in explained)
    assert "explain: keyword #1 (bm25" in result.out or "matched the query" in result.out


def test_a_raw_score_threshold_cuts_a_rankers_hits(world, hashed):
    everything = hashed.recall("redis", mode="keyword")
    scores = sorted(h.scores["keyword"].score for h in everything.decisions if h.scores["keyword"])
    cut = hashed.recall("redis", mode="keyword", min_scores={"keyword": scores[-1]})
    kept = [h for h in cut.decisions if h.scores["keyword"]]
    assert kept and all(h.scores["keyword"].score >= scores[-1] for h in kept)
    assert len(kept) < len([h for h in everything.decisions if h.scores["keyword"]])


# -- vectors --------------------------------------------------------------------------------------


def test_rows_are_embedded_later_and_found_by_keyword_meanwhile(store_path):
    ctx, _ = Ctx.init(store_path, embedder=None)
    ev = ctx.log("the deploy pipeline caches wheels between runs").id
    found = ctx.recall("deploy wheels")
    assert found.vectors.state == "off" and found.vectors.pending == 1
    assert [h.evidence.id for h in found.evidence] == [ev]
    ctx.close()
    embedder = HashEmbedder()
    ctx = Ctx.open(store_path, embedder=embedder)
    found = ctx.recall("deploy wheels", mode="vector")
    assert found.vectors.state == "on" and embedder.calls == 1
    assert [h.evidence.id for h in found.evidence] == [ev]
    ctx.close()


def test_logging_does_not_embed(hashed):
    embedder = hashed.embedding().embedder
    hashed.log("a note")
    hashed.propose("x.y", "z")
    assert embedder.calls == 0


def test_changing_the_model_turns_vectors_off_until_reindex(store_path):
    ctx, _ = Ctx.init(store_path, embedder=HashEmbedder())
    ctx.log("kafka topics are partitioned by tenant id")
    assert ctx.recall("kafka").vectors.state == "on"
    ctx.close()
    other = HashEmbedder(dim=32, model_id="test/hash-32")
    ctx = Ctx.open(store_path, embedder=other)
    status = ctx.recall("kafka").vectors
    assert status.state == "off" and "ctx reindex" in status.note and "test/hash-64" in status.note
    with pytest.raises(Exception, match="vectors"):
        ctx.recall("kafka", mode="vector")
    seen: list[tuple[int, int]] = []
    report = ctx.reindex(progress=lambda done, total: seen.append((done, total)))
    assert report.previous_model == "test/hash-64" and report.model == "test/hash-32"
    assert seen[-1] == (1, 1)
    assert ctx.recall("kafka", mode="vector").vectors.state == "on"
    ctx.close()


def test_vectors_off_is_said_once_and_recall_still_answers(cli, world, monkeypatch):
    monkeypatch.setenv("CTX_VECTORS", "off")
    result = cli("recall", "redis")
    assert result.code == 0
    assert result.err.count("vectors are off") == 1
    assert "cache.backend" in result.out


def test_vector_mode_without_vectors_is_refused(cli, world, monkeypatch):
    monkeypatch.setenv("CTX_VECTORS", "off")
    result = cli("recall", "redis", "--mode", "vector")
    assert result.code == 1 and result.out == ""
    assert result.err.startswith("ctx: error: vector mode needs vectors")


def test_a_missing_model_directory_is_explained(cli, world, monkeypatch, tmp_path):
    monkeypatch.setenv("CTX_MODEL_DIR", str(tmp_path / "nowhere"))
    result = cli("recall", "redis")
    assert result.code == 0
    assert "has no model.onnx" in result.err


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["recall", ""], "query"),
        (["recall", "   "], "query"),
        (["recall", "!!!"], "no words"),
        (["recall", "x", "--k", "0"], "--k"),
        (["recall", "x", "--mode", "magic"], "--mode"),
        (["recall", "x", "--as-of", "yesterday-ish"], "date"),
        (["recall", "x", "--rrf-k", "0"], "--rrf-k"),
        (["recall", "x", "--min", "vector"], "--min"),
        (["recall", "x", "--min", "vector=high"], "--min"),
        (["recall", "x", "--min", "magic=1"], "unknown ranker"),
        (["inject", "--budget", "10"], "--budget"),
        (["inject", "--format", "xml"], "--format"),
        (["inject", "--query", ""], "query"),
    ],
)
def test_bad_recall_input_is_one_line_and_exit_2(cli, world, args, message):
    result = cli(*args)
    assert result.code == 2, result
    assert result.out == ""
    assert len(result.err.strip().splitlines()) == 1
    assert result.err.startswith("ctx: error:") and message in result.err


def test_the_facade_and_the_cli_default_to_the_same_rrf_constant(cli):
    import inspect

    from ctx_kernel.kernel.limits import DEFAULT_RRF_K

    assert inspect.signature(Ctx.recall).parameters["rrf_k"].default == DEFAULT_RRF_K
    help_text = " ".join(cli("recall", "--help").out.split())
    assert (
        "Reciprocal rank fusion constant (decisions, and evidence in single-ranker modes;"
        f" hybrid evidence fuses normalised scores). [default: {DEFAULT_RRF_K};" in help_text
    )


def test_keyword_search_over_many_texts_keeps_the_rarest_terms_within_its_budget(store_path, monkeypatch):
    from ctx_kernel.kernel.recall import engine

    ctx, _ = Ctx.init(store_path, embedder=None)
    for n in range(30):
        ctx.log(f"deploy note {n}: the deploy went out on time")
    rare = ctx.log("deploy of the kafka consumer stalled on a rebalance").id
    other = ctx.log("the kafka topic retention is seven days").id
    asked = "kafka deploy"
    everything = [h.evidence.id for h in ctx.recall(asked, mode="keyword", k=50).evidence]
    assert len(everything) == 32  # under the budget every term is ranked
    monkeypatch.setattr(engine, "KEYWORD_POSTINGS", 10)  # kafka: 2 texts fit, deploy: 31 do not
    found = [h.evidence.id for h in ctx.recall(asked, mode="keyword", k=50).evidence]
    assert sorted(found) == sorted([rare, other])
    monkeypatch.setattr(engine, "KEYWORD_POSTINGS", 1)  # the rarest term is always kept
    assert [h.evidence.id for h in ctx.recall(asked, mode="keyword", k=50).evidence] == found
    ctx.close()


def test_an_evidence_hit_shows_the_words_asked_for_in_brackets_by_their_stems(kernel):
    filler = " ".join(f"word{n}" for n in range(40))
    text = f"{filler} we rotated the signing keys after the incident, {filler} then rotation again"
    logged = kernel.log(text).id
    hit = kernel.recall("key rotation", mode="keyword").evidence[0]
    assert hit.evidence.id == logged
    # Porter stems, as the index matches: "rotated" and "keys" are the query's "rotation" and "key".
    assert "we [rotated] the signing [keys] after" in hit.snippet
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    assert len(hit.snippet.split()) <= 24 + 2
    phrase = kernel.recall('"signing keys" incident', mode="keyword").evidence[0]
    assert "the [signing] [keys] after the [incident]" in phrase.snippet
    plain = kernel.log("short note: the cache is warm (see runbook).").id
    found = {h.evidence.id: h.snippet for h in kernel.recall("cache runbook", mode="keyword").evidence}
    assert found[plain] == "short note: the [cache] is warm (see [runbook])."


def test_a_snippet_splits_words_as_the_index_does_in_ascii_and_in_other_scripts(kernel):
    # Underscores and punctuation separate words; accents fold away ("Café" is "cafe"); the text
    # keeps its own spelling around the brackets.
    ascii_text = kernel.log("renamed retry_queue to rotation_queue; rotation.policy stays").id
    found = {h.evidence.id: h.snippet for h in kernel.recall("rotation queue", mode="keyword").evidence}
    assert found[ascii_text] == "renamed retry_[queue] to [rotation]_[queue]; [rotation].policy stays"
    accented = kernel.log("Das Café rotiert die Schlüssel; rotation täglich — ÉCOLE_cafe").id
    found = {h.evidence.id: h.snippet for h in kernel.recall("cafe rotation", mode="keyword").evidence}
    assert found[accented] == "Das [Café] rotiert die Schlüssel; [rotation] täglich — ÉCOLE_[cafe]"


def test_a_large_stores_evidence_vectors_searched_by_a_worker_give_the_same_answers(store_path, monkeypatch):
    # Past SEARCH_ASIDE evidence texts a worker searches their vectors beside the keyword ranking.
    from ctx_kernel.kernel.recall import engine

    ctx, _ = Ctx.init(store_path, embedder=HashEmbedder())
    decide(ctx, "cache.backend", "Use `redis` for the HTTP response cache.", rationale="fast and simple")
    decide(ctx, "infra.datastores", "Never use redis in production; remove redis from the stack.")
    for turn in range(6):
        ctx.log(f"turn {turn}: the redis cache evicted sessions again", session="s1")
    ctx.log("a note about redis latency and the response cache")
    ctx.reindex()
    asked = ["redis cache", "redis sessions in production", "response cache latency"]
    here = [ctx.recall(q).to_dict() for q in asked]
    ctx.close()
    monkeypatch.setattr(engine, "SEARCH_ASIDE", 0)
    with Ctx.open(store_path, embedder=HashEmbedder()) as aside:
        assert [aside.recall(q).to_dict() for q in asked] == here
    assert all(answer["evidence"] and answer["decisions"] for answer in here)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("aZ9_-. \t\n/@éΣς\u0130ﬁ")), max_size=12), max_size=20))
def test_entity_names_normalised_at_once_each_get_their_own_form(names):
    # The entity index normalises every name a cold recall reads in one pass.
    from ctx_kernel.kernel.language import entities

    assert entities.normalise_many(names) == [entities.normalise(name) for name in names]
