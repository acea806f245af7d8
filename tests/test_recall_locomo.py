"""Evidence recall on a slice of a real LoCoMo conversation, with the real embedding model.

The data is not part of the repository: the tests skip when it is absent (set
CTX_LOCOMO_DIR, or keep ../shared/eval/locomo-dev next to the repository).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import locomo_eval as conversation_eval
import pytest

from ctx_kernel.kernel import Ctx

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("CTX_LOCOMO_DIR") or ROOT.parent / "shared" / "eval" / "locomo-dev")
QUESTIONS = 40

pytestmark = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"no LoCoMo data at {DATA.name} (set CTX_LOCOMO_DIR)"
)


@pytest.fixture(scope="module")
def tallies(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> dict[str, dict]:
    first = conversation_eval.load(DATA, QUESTIONS)[:1]
    folder = tmp_path_factory.mktemp("locomo")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTX_CACHE_DIR", str(model_cache))
        mp.setenv("CTX_CONFIG_DIR", str(folder / "config"))
        for name in ("CTX_MODEL_DIR", "CTX_EMBEDDING_MODEL", "CTX_VECTORS"):
            mp.delenv(name, raising=False)

        def open_store(name: str) -> Ctx:
            kernel, _ = Ctx.init(folder / f"{name}.db")
            if kernel.embedding().embedder is None:
                kernel.close()
                pytest.skip("no embedding model: " + str(kernel.embedding().reason))
            return kernel

        found = conversation_eval.evaluate(first, open_store, ("hybrid", "keyword", "plain-rrf"))
    print("\n" + conversation_eval.table(found))
    return found


def test_every_turn_is_logged_with_its_session_date():
    conv = conversation_eval.load(DATA)[0]
    assert len(conv.turns) > 100 and conv.questions
    assert all(when is not None and when.startswith("20") for _, _, _, when, _ in conv.turns)
    sessions = {session for *_, session in conv.turns}
    assert len(sessions) > 1 and all(s.startswith(f"{conv.sample_id}/session_") for s in sessions)
    assert all(q.category in conversation_eval.CATEGORIES for q in conv.questions)


@pytest.mark.usefixtures("real_model")
def test_hybrid_finds_the_answering_turn_more_often_than_keyword_alone(tallies):
    hybrid = tallies["hybrid"]["overall"]
    keyword = tallies["keyword"]["overall"]
    assert hybrid.n == QUESTIONS
    assert hybrid.row()[1] >= keyword.row()[1]
    assert hybrid.row()[1] >= tallies["plain-rrf"]["overall"].row()[1]
    assert hybrid.row()[1] >= 0.6


@pytest.mark.usefixtures("real_model")
def test_the_bench_prints_the_goals_beside_hybrid_against_keyword(tallies):
    lines = conversation_eval.goals(tallies).splitlines()
    hybrid, keyword = tallies["hybrid"]["overall"].row(), tallies["keyword"]["overall"].row()
    assert lines[0] == f"hybrid MRR@10 - keyword's: {hybrid[2] - keyword[2]:+.3f} (goal +0.06)"
    assert lines[2] == f"hybrid R@10:               {hybrid[1]:.3f} (goal 0.83)"
    assert lines[3].startswith("categories where hybrid's R@5 or MRR@10 is below keyword's: ")


def test_the_bench_refuses_a_missing_folder_in_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "locomo_quality.py"), "--data", str(tmp_path / "nowhere")],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode != 0
    assert done.stderr.strip().startswith("no LoCoMo data at") and "Traceback" not in done.stderr
