"""A warm process keeps what earlier recalls read (decision records and chains) and answers as a
fresh one would, also after changes by itself or by another connection."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from embedders import HashEmbedder, SignEmbedder

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.store.sqlite import vectors as sqlite_vectors

DIM = 24  # few bits: many rows tie at the k-th Hamming distance
WORDS = (
    "redis kafka postgres retries timeouts tokens sessions cache deploy wheels billing webhooks "
    "exports queue workers shards replicas backups alerts metrics traces logs schema migrations"
).split()


def _texts(rng: random.Random, count: int) -> list[str]:
    out: list[str] = []
    while len(out) < count:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5)))
        # Words whose buckets cancel out give a vector of zeros, which has no direction.
        if HashEmbedder(dim=DIM).embed_query(text).strip(b"\0"):
            out.append(text)
    return out


def _answers(ctx: Ctx, queries: list[str]) -> list[dict]:
    return [ctx.recall(q, k=20, mode="vector").to_dict() for q in queries]


def _cold_answers(path: Path, queries: list[str], embedder: HashEmbedder) -> list[dict]:
    # One recall per freshly opened store: nothing kept from an earlier recall.
    out = []
    for query in queries:
        with Ctx.open(path, embedder=embedder) as cold:
            out += _answers(cold, [query])
    return out


def _held_in_memory(ctx: Ctx, query: str) -> None:
    # Searched twice, each kind's vectors are loaded into memory on a thread of their own.
    for _ in range(2):
        ctx.recall(query, mode="vector")
    assert ctx.store.vectors_in_memory(30)


def _logged(store_path: Path, rng: random.Random, count: int, embedder: HashEmbedder) -> Ctx:
    # A new store holding ``count`` random texts, each embedded.
    ctx, _ = Ctx.init(store_path, embedder=embedder)
    for text in _texts(rng, count):
        ctx.log(text)
    ctx.reindex()
    return ctx


def _held_as(monkeypatch: pytest.MonkeyPatch, held: str) -> None:
    # A kind is held with its vectors (candidates rescored in memory) within EXACT_MEMORY, else as bits.
    if held == "bits":
        monkeypatch.setattr(sqlite_vectors, "EXACT_MEMORY", -1)


@pytest.mark.parametrize("held", ["exact", "bits"])
def test_a_warm_vector_recall_answers_as_a_fresh_one_before_and_after_new_rows(store_path, monkeypatch, held):
    # Fewer chunks than a recall's candidates: both the fresh process (sqlite-vec) and the warm one
    # (the copy in memory) score every chunk, so their answers must be equal, scores to the bit.
    _held_as(monkeypatch, held)
    rng = random.Random(5)
    embedder = HashEmbedder(dim=DIM)
    warm = _logged(store_path, rng, 60, embedder)
    queries = _texts(rng, 8)
    _held_in_memory(warm, queries[0])
    assert warm.store.vectors_held()["evidence"] == held
    assert _answers(warm, queries) == _cold_answers(store_path, queries, embedder)
    for text in _texts(rng, 40):  # new rows logged here...
        warm.log(text)
    with Ctx.open(store_path, embedder=embedder) as other:  # ...and by another connection
        for text in _texts(rng, 40):
            other.log(text)
        other.reindex()
    assert _answers(warm, queries) == _cold_answers(store_path, queries, embedder)
    warm.close()


def test_the_bits_in_memory_find_the_same_nearest_vectors_as_sqlite_vec(store_path, monkeypatch):
    # Sign vectors: cosine = 1 - 2 * Hamming / dim, so both searches must find the exact top by
    # cosine. Many rows tie; which of the tied ones is listed may differ, their similarities not.
    _held_as(monkeypatch, "bits")
    rng = random.Random(9)
    embedder = SignEmbedder(dim=64)
    warm = _logged(store_path, rng, 1500, embedder)  # more than one vec0 storage chunk (1024 rows)
    queries = _texts(rng, 12)

    def similarities(answers: list[dict]) -> list[list[float]]:
        return [[round(e["scores"]["vector"]["score"], 5) for e in a["evidence"]] for a in answers]

    _held_in_memory(warm, queries[0])
    assert warm.store.vectors_held()["evidence"] == "bits"
    expected = similarities(_cold_answers(store_path, queries, embedder))
    assert similarities(_answers(warm, queries)) == expected
    assert all(len(found) == 20 for found in expected)
    warm.close()


def _decide(ctx: Ctx, subject: str, text: str, supersedes: tuple[str, ...] = ()) -> str:
    proposal = ctx.propose(subject, text, proposer="agent", supersedes=supersedes)
    return ctx.ratify(proposal.id, reviewer="ann").decision.id


def test_a_warm_recall_sees_decisions_changed_here_and_by_another_connection(store_path):
    warm, _ = Ctx.init(store_path, embedder=None)
    old = _decide(warm, "db.driver", "Use psycopg 2 for PostgreSQL access.")
    assert [h.decision.id for h in warm.recall("psycopg PostgreSQL").decisions] == [old]
    with Ctx.open(store_path, embedder=None) as other:  # another connection supersedes it
        new = _decide(other, "db.driver", "Use psycopg 3 for all PostgreSQL access.", supersedes=(old,))
    found = warm.recall("psycopg PostgreSQL").decisions
    assert [h.decision.id for h in found] == [new]
    assert [(r.id, r.relation) for r in found[0].superseded] == [(old, "superseded")]
    warm.retire("db.driver", reviewer="ann", reason="moved to an ORM")  # and this connection retires it
    again = warm.recall("psycopg PostgreSQL")
    assert again.decisions == [] and {h.decision.id for h in again.closed} == {old, new}
    with Ctx.open(store_path, embedder=None) as cold:
        assert cold.recall("psycopg PostgreSQL").to_dict() == again.to_dict()
    warm.close()


def test_a_process_holding_every_decision_sees_each_change_by_another_connection(store_path):
    # From its second recall over unchanged decisions a process reads every decision at once and
    # keeps them while only evidence and proposals change.
    warm, _ = Ctx.init(store_path, embedder=None)
    first = _decide(warm, "db.driver", "Use psycopg 2 for PostgreSQL access.")
    _decide(warm, "db.pool", "Use pgbouncer in front of PostgreSQL.")
    queries = ["psycopg PostgreSQL", "pgbouncer PostgreSQL pool"]

    def same_as_fresh() -> list[dict]:
        answers = [warm.recall(q).to_dict() for q in queries]
        with Ctx.open(store_path, embedder=None) as cold:
            assert answers == [cold.recall(q).to_dict() for q in queries]
        return answers

    for _ in range(3):
        same_as_fresh()
    with Ctx.open(store_path, embedder=None) as other:
        other.log("psycopg 3 is faster for PostgreSQL bulk loads")  # evidence: decisions unchanged
        other.propose("db.driver", "Use asyncpg for PostgreSQL access.", proposer="agent")
    assert len(same_as_fresh()[0]["evidence"]) == 1
    with Ctx.open(store_path, embedder=None) as other:
        second = _decide(other, "db.driver", "Use psycopg 3 for PostgreSQL.", supersedes=(first,))
    for _ in range(3):  # the new decision, then held with every other one again
        answers = same_as_fresh()
    assert answers[0]["decisions"][0]["id"] == second
    assert [r["id"] for r in answers[0]["decisions"][0]["superseded"]] == [first]
    with Ctx.open(store_path, embedder=None) as other:
        other.retire("db.pool", reviewer="ann", reason="the driver pools connections")
    answers = same_as_fresh()
    assert all(h["subject"] != "db.pool" for h in answers[1]["decisions"])
    assert "db.pool" in {h["subject"] for h in answers[1]["closed"]}
    warm.close()


def test_a_query_whose_vector_is_all_zeros_is_no_vector_match(store_path):
    # Two words that fall in one bucket with opposite signs cancel out in the hash embedder.
    embedder = HashEmbedder(dim=DIM)
    pair = next(
        f"{a} {b}"
        for a in WORDS
        for b in WORDS
        if a < b and not embedder.embed_query(f"{a} {b}").strip(b"\0")
    )
    ctx, _ = Ctx.init(store_path, embedder=embedder)
    ctx.log("redis retries and kafka timeouts")
    ctx.reindex()
    assert ctx.recall(pair, mode="vector").evidence == []
    assert ctx.recall("redis retries", mode="vector").evidence != []
    ctx.close()


def test_the_entity_prefilter_of_a_warm_process_finds_what_scoring_every_name_finds(store_path, monkeypatch):
    from ctx_kernel.kernel.recall import entity_index

    rng = random.Random(11)
    ctx, _ = Ctx.init(store_path, embedder=None)
    for n in range(400):
        first, second = rng.sample(WORDS, 2)
        ctx.log(f"Touched `{first}_{second}_{n % 37}` and {first}.{second}.client in this change.")
    queries = [
        "redis_kafka_3",
        "postgres.retries.clinet",
        "tokens_sesions_12",
        "cache deploy",
        "shards_replica",
    ]
    expected = _entity_answers(ctx, queries)  # the first match of a process scores every name
    monkeypatch.setattr(entity_index, "PREFILTER_NAMES", 1)
    monkeypatch.setattr(entity_index, "CACHED_PHRASES", 0)  # score the phrases again, through the prefilter
    ctx.recall("warm up", mode="entity")
    assert _entity_answers(ctx, queries) == expected
    for n in range(400, 700):  # names added after the masks were built are merged into them
        first, second = rng.sample(WORDS, 2)
        ctx.log(f"Touched `{second}_{first}_{n % 41}` and {second}.{first}.server in this change.")
    with Ctx.open(store_path, embedder=None) as fresh:
        monkeypatch.setattr(entity_index, "PREFILTER_NAMES", 10**9)  # the fresh process scores every name
        grown = _entity_answers(fresh, queries)
    monkeypatch.setattr(entity_index, "PREFILTER_NAMES", 1)
    assert _entity_answers(ctx, queries) == grown
    ctx.close()


def _entity_answers(ctx: Ctx, queries: list[str]) -> list[dict]:
    # One query per fresh entity match: the recall's entity list is computed once per recall.
    return [ctx.recall(q, k=20, mode="entity").to_dict() for q in queries]


@pytest.mark.parametrize("held", ["exact", "bits"])
def test_the_copy_in_memory_starts_again_when_the_vectors_are_embedded_with_another_model(
    store_path, monkeypatch, held
):
    import struct

    from ctx_kernel.kernel.store.sqlite.store import SQLiteStore

    rng = random.Random(13)
    embedder = SignEmbedder(dim=64)
    ctx = _logged(store_path, rng, 400, embedder)
    store = ctx.store
    query = embedder.embed_query("redis retries timeouts")
    _held_as(monkeypatch, held)
    for _ in range(2):  # a second search loads the copy into memory
        store.nearest("evidence", query, 20, 5)
    assert store.vectors_in_memory(30)
    assert store.vectors_held() == {"evidence": held}

    def negated(vector: bytes) -> bytes:
        return struct.pack("<64f", *(-v for v in struct.unpack("<64f", vector)))

    # Another model (here: every vector turned around) re-embeds the store; 20 candidates of 400
    # rows, so a copy left from the first model would bring the wrong rows (and, held whole, the
    # wrong similarities).
    with store.transaction():
        store.drop_vectors()
        store.set_meta("vector_model", "test/turned")
        store.create_vector_tables(64)
        rows = store.pending_vectors("evidence", 1000)
        vectors = embedder.embed_documents([text for _, text in rows])
        turned = [(item, 0, negated(v)) for (item, _), v in zip(rows, vectors, strict=True)]
        store.insert_vectors("evidence", turned)
    fresh = SQLiteStore.open(store_path)
    try:
        expected = fresh.nearest("evidence", query, 20, 5)  # vec0: nothing held in memory
    finally:
        fresh.close()
    assert store.nearest("evidence", query, 20, 5) == expected  # from the vectors now stored
    for _ in range(2):
        store.nearest("evidence", query, 20, 5)
    assert store.vectors_in_memory(30)
    assert store.vectors_held() == {"evidence": held}
    assert store.nearest("evidence", query, 20, 5) == expected  # and from the new copy in memory
    ctx.close()


def test_a_warmed_process_matches_entity_names_added_after_it_warmed(store_path):
    ctx, _ = Ctx.init(store_path, embedder=None)
    ctx.log("Touched `billing_retry_queue` in this change.")
    ctx.warm()  # reads the entity names through a connection of its own
    ctx.log("Renamed `invoice_export_job` today.")
    asked = ("invoice_export_job", "billing_retry_queue")
    with Ctx.open(store_path, embedder=None) as fresh:
        expected = [fresh.recall(q, mode="entity").to_dict() for q in asked]
    assert [ctx.recall(q, mode="entity").to_dict() for q in asked] == expected
    assert all(answer["evidence"] for answer in expected)
    ctx.close()


class _GaussianEmbedder(HashEmbedder):
    """Random vectors seeded by the text (not normalised; "zero" texts get a vector of zeros):
    float32 sums of such vectors round differently in every order they are added in."""

    def _vector(self, text: str) -> bytes:
        import struct

        if text.startswith("zero"):
            return struct.pack(f"<{self.dim}f", *([0.0] * self.dim))
        rng = random.Random(text)
        return struct.pack(f"<{self.dim}f", *(rng.gauss(0.0, 3.0) for _ in range(self.dim)))


def test_candidates_rescored_in_memory_get_the_similarities_sqlite_vec_computes_to_the_bit(store_path):
    from ctx_kernel.kernel.store.sqlite.store import SQLiteStore

    embedder = _GaussianEmbedder(dim=384, model_id="test/gauss-384")
    ctx, _ = Ctx.init(store_path, embedder=embedder)
    texts = [f"text {n}" for n in range(300)] + ["zero one", "zero two"]
    for text in texts:
        ctx.log(text)
    ctx.reindex()
    store = ctx.store
    queries = [embedder.embed_query(f"query {n}") for n in range(20)]
    for _ in range(2):
        store.nearest("evidence", queries[0], 400, 10)
    assert store.vectors_in_memory(30)
    assert store.vectors_held() == {"evidence": "exact"}
    fresh = SQLiteStore.open(store_path)
    try:  # 400 candidates of 302 rows: sqlite-vec rescores every row in SQL
        expected = [fresh.nearest("evidence", q, 400, 300) for q in queries]
    finally:
        fresh.close()
    warm = [store.nearest("evidence", q, 400, 300) for q in queries]
    assert warm == expected
    assert all(len(found) == 300 for found in warm)  # the two rows of zeros match nothing
    # Texts logged one at a time after the copy was loaded are parts of one chunk each, and a
    # single candidate is rescored alone: numpy would sum a lone row's products pairwise.
    for n in range(300, 310):
        ctx.log(f"text {n}")
        ctx.reindex()
        store.nearest("evidence", queries[0], 1, 1)  # reads the new chunk into a part of its own
    many = [embedder.embed_query(f"question {n}") for n in range(200)]
    fresh = SQLiteStore.open(store_path)
    try:
        expected = [fresh.nearest("evidence", q, 400, 310) for q in queries]
        single = [fresh.nearest("evidence", q, 1, 1) for q in many]
    finally:
        fresh.close()
    assert [store.nearest("evidence", q, 400, 310) for q in queries] == expected
    assert [store.nearest("evidence", q, 1, 1) for q in many] == single
    ctx.close()


def test_a_kind_that_outgrows_its_vector_budget_is_held_as_bits_only(store_path, monkeypatch):
    rng = random.Random(21)
    embedder = HashEmbedder(dim=DIM)
    ctx = _logged(store_path, rng, 50, embedder)
    monkeypatch.setattr(sqlite_vectors, "EXACT_MEMORY", 60 * 4 * DIM)  # 60 chunks
    queries = _texts(rng, 6)
    _held_in_memory(ctx, queries[0])
    assert ctx.store.vectors_held()["evidence"] == "exact"
    assert _answers(ctx, queries) == _cold_answers(store_path, queries, embedder)
    for text in _texts(rng, 40):  # 90 chunks: within twice the budget, the vectors stay
        ctx.log(text)
    ctx.reindex()
    assert _answers(ctx, queries) == _cold_answers(store_path, queries, embedder)
    assert ctx.store.vectors_held()["evidence"] == "exact"
    for text in _texts(rng, 40):  # 130 chunks: past twice the budget, loaded again as bits only
        ctx.log(text)
    ctx.reindex()
    assert _answers(ctx, queries) == _cold_answers(store_path, queries, embedder)
    _held_in_memory(ctx, queries[0])
    assert ctx.store.vectors_held()["evidence"] == "bits"
    assert _answers(ctx, queries) == _cold_answers(store_path, queries, embedder)
    ctx.close()


def test_a_warm_recall_embeds_texts_logged_after_it_here_and_by_another_connection(store_path):
    # A warm process skips checking for rows without a vector while nothing was written: a text
    # logged here, or by another connection, is embedded by the next recall all the same.
    embedder = HashEmbedder(dim=DIM)
    warm, _ = Ctx.init(store_path, embedder=embedder)
    warm.log("redis retries timeouts")
    warm.reindex()
    for _ in range(2):
        assert warm.recall("redis retries", mode="vector").vectors.state == "on"
    here = warm.log("kafka webhooks exports").id
    found = warm.recall("kafka webhooks exports", mode="vector")
    assert here in [hit.evidence.id for hit in found.evidence]
    warm.recall("kafka webhooks", mode="vector")  # nothing written since: the check is skipped again
    with Ctx.open(store_path, embedder=embedder) as other:
        there = other.log("billing shards replicas").id
    found = warm.recall("billing shards replicas", mode="vector")
    assert there in [hit.evidence.id for hit in found.evidence]
    assert found.vectors.state == "on" and found.vectors.pending == 0
    warm.close()
