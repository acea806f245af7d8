"""Retrieval quality on the labelled set, with the real embedding model (no fake vectors)."""

from __future__ import annotations

from pathlib import Path

import labelled_eval as quality
import pytest

from ctx_kernel.kernel import Ctx

SET = Path(__file__).resolve().parent / "data" / "recall" / "recall_set.json"


@pytest.fixture(scope="module")
def scores(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> dict[str, quality.ModeScore]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTX_CACHE_DIR", str(model_cache))
        mp.setenv("CTX_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))
        for name in ("CTX_MODEL_DIR", "CTX_EMBEDDING_MODEL", "CTX_VECTORS"):
            mp.delenv(name, raising=False)
        kernel, _ = Ctx.init(tmp_path_factory.mktemp("quality") / "ctx.db")
        if kernel.embedding().embedder is None:
            kernel.close()
            pytest.skip("no embedding model: " + str(kernel.embedding().reason))
        ids = quality.load_set(kernel, SET)
        kernel.reindex()
        found = quality.evaluate(kernel, SET, ids)
        kernel.close()
    print("\n" + quality.table(found))
    return {s.mode: s for s in found}


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
