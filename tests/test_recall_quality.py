"""Retrieval quality on the labelled set, with the real embedding model (no fake vectors), on each
backend: SQLite, and PostgreSQL where a server can be had (tests/pg_server.py)."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import labelled_eval as quality
import pytest

from ctx_kernel.kernel import Ctx

SET = Path(__file__).resolve().parent / "data" / "recall" / "recall_set.json"
BACKENDS = ["sqlite", "postgres"]
# How far PostgreSQL's recall@5 and MRR may fall from SQLite's, per mode (the same rankers over
# the same rows; only full-text tokenising and stemming differ between FTS5 and PostgreSQL).
TOLERANCE = 0.02
Scores = dict[str, quality.ModeScore]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> Iterator[Callable[..., Scores]]:
    """Scores per mode of one backend, measured once per module: call with the backend's name
    (and, for PostgreSQL, the server)."""
    found: dict[str, Scores] = {}
    made: list[tuple[object, str]] = []

    def scores(backend: str, cluster: object = None) -> Scores:
        if backend in found:
            return found[backend]
        if backend == "sqlite":
            location: str | Path = tmp_path_factory.mktemp("quality") / "ctx.db"
        else:
            from pg_server import Database
            from psycopg import sql

            name = f"ctx_quality_{secrets.token_hex(4)}"
            cluster.admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))  # type: ignore[attr-defined]
            made.append((cluster, name))
            location = Database(cluster, name).url()  # type: ignore[arg-type]
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("CTX_CACHE_DIR", str(model_cache))
            mp.setenv("CTX_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))
            for variable in ("CTX_MODEL_DIR", "CTX_EMBEDDING_MODEL", "CTX_VECTORS"):
                mp.delenv(variable, raising=False)
            kernel, _ = Ctx.init(location)
            try:
                if kernel.embedding().embedder is None:
                    pytest.skip("no embedding model: " + str(kernel.embedding().reason))
                ids = quality.load_set(kernel, SET)
                kernel.reindex()
                measured = quality.evaluate(kernel, SET, ids)
            finally:
                kernel.close()
        print(f"\n{backend}\n" + quality.table(measured))
        found[backend] = {s.mode: s for s in measured}
        return found[backend]

    yield scores
    from psycopg import sql

    for cluster, name in made:
        cluster.admin(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))  # type: ignore[attr-defined]


@pytest.fixture(params=BACKENDS)
def scores(request: pytest.FixtureRequest, evaluated: Callable[..., Scores]) -> Scores:
    """The scores of each backend."""
    if request.param == "postgres":
        return evaluated("postgres", request.getfixturevalue("pg_cluster"))
    return evaluated("sqlite")


def test_the_labelled_set_is_big_enough():
    import json

    data = json.loads(SET.read_text(encoding="utf-8"))
    assert len(data["decisions"]) >= 200
    assert len({d["subject"] for d in data["decisions"]}) >= 20
    assert sum(len(d["supersedes"]) for d in data["decisions"]) >= 30
    assert len(data["conflicts"]) >= 5
    assert len(data["evidence"]) >= 300
    assert len(data["queries"]) >= 60


@pytest.mark.usefixtures("real_model")
def test_hybrid_beats_every_single_ranker(scores):
    hybrid = scores["hybrid"]
    for mode in ("keyword", "entity", "vector"):
        single = scores[mode]
        assert hybrid.decision_mrr > single.decision_mrr, mode
        assert hybrid.decision_recall >= single.decision_recall, mode
        assert hybrid.evidence_mrr > single.evidence_mrr, mode
        assert hybrid.evidence_recall >= single.evidence_recall, mode


@pytest.mark.usefixtures("real_model")
def test_hybrid_quality_floor(scores):
    assert scores["hybrid"].decision_recall >= 0.9
    assert scores["hybrid"].decision_mrr >= 0.85


@pytest.mark.usefixtures("real_model")
def test_no_superseded_decision_ever_ranks_as_current(scores):
    assert all(s.superseded_as_current == 0 for s in scores.values())


@pytest.mark.usefixtures("real_model")
def test_postgres_scores_within_a_hair_of_sqlite_on_every_mode(
    evaluated: Callable[..., Scores], pg_cluster: object
) -> None:
    lite, pg = evaluated("sqlite"), evaluated("postgres", pg_cluster)
    for mode, mine in pg.items():
        for measure in ("decision_recall", "decision_mrr", "evidence_recall", "evidence_mrr"):
            gap = getattr(lite[mode], measure) - getattr(mine, measure)
            assert gap <= TOLERANCE, f"{mode} {measure}: PostgreSQL {gap:.3f} below SQLite"
