"""Hybrid evidence recall: a question that names a day or a month, and the turns two away from a hit.

A question that names a day ("on 3 August, 2023", "August 3, 2023", "2023-08-03") prefers what
happened within a week of it (the evidence's own time, else when it was logged); one that names
a month ("in August 2023") what happened in that month. A strong hit
lends half its score to the turns next to it in its session and a quarter to those two away.
The store here has no vectors, so the keyword ranker alone decides what matches.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx


@pytest.fixture
def kernel(tmp_path: Path) -> Ctx:
    ctx, _ = Ctx.init(tmp_path / "ctx.db", embedder=None)
    yield ctx
    ctx.close()


def log(kernel: Ctx, text: str, when: str | None = None, session: str = "s") -> str:
    return kernel.log(text, kind="conversation", session=session, occurred_at=when, redact=False).id


@pytest.fixture
def bakes(kernel: Ctx) -> dict[str, str]:
    """The same words said in August and in March (the March one shorter, so it matches better),
    and a weaker match from another year."""
    ids = {
        "august": log(
            kernel,
            "Maya: I baked a lemon cake for the shelter, it took all afternoon",
            "2023-08-01T15:00:00Z",
            "a",
        ),
        "march": log(kernel, "Maya: I baked a lemon cake for the shelter", "2023-03-10T15:00:00Z", "b"),
    }
    log(kernel, "Maya: the shelter needs more volunteers on weekends", "2021-05-02T15:00:00Z", "c")
    return ids


def first(kernel: Ctx, query: str, **options: object) -> str:
    return kernel.recall(query, k=2, **options).evidence[0].evidence.id


@pytest.mark.parametrize(
    "day", ["on 3 August, 2023", "on August 3, 2023", "on 2023-08-03", "on the 3rd August 2023"]
)
def test_a_question_naming_a_day_prefers_what_happened_within_a_week_of_it(kernel, bakes, day):
    assert first(kernel, "What did Maya bake for the shelter?") == bakes["march"]  # without a day
    assert first(kernel, f"What did Maya bake for the shelter {day}?") == bakes["august"]


def test_a_day_further_than_a_week_gives_no_vote(kernel, bakes):
    assert first(kernel, "What did Maya bake for the shelter on 20 August, 2023?") == bakes["march"]
    assert first(kernel, "What did Maya bake for the shelter on 12 March, 2023?") == bakes["march"]


@pytest.mark.parametrize("month", ["in August 2023", "in August, 2023"])
def test_a_question_naming_a_month_prefers_what_happened_in_it(kernel, bakes, month):
    assert first(kernel, f"What did Maya bake for the shelter {month}?") == bakes["august"]
    assert first(kernel, "What did Maya bake for the shelter in September 2023?") == bakes["march"]


def test_a_day_that_does_not_exist_is_plain_words(kernel, bakes):
    assert first(kernel, "What did Maya bake for the shelter on 31 February, 2023?") == bakes["march"]


def test_only_hybrid_recall_reads_the_day(kernel, bakes):
    asked = "What did Maya bake for the shelter on 3 August, 2023?"
    assert first(kernel, asked, mode="keyword") == bakes["march"]


def test_evidence_without_a_time_of_its_own_counts_from_when_it_was_logged(kernel):
    logged = log(kernel, "Leo: the kiln firing schedule moved to Thursdays")
    day = kernel.show(logged).created_at[:10]
    log(kernel, "Leo: the kiln firing schedule is on the wiki now", "2001-01-01T00:00:00Z", "old")
    assert first(kernel, f"What happened to the kiln firing schedule on {day}?") == logged


def test_explain_names_the_day_vote(kernel, bakes, tmp_path, capsys):
    from ctx_kernel.kernel.hosts.cli import main

    kernel.close()
    with pytest.raises(SystemExit) as exit_info:
        main(["--db", str(tmp_path / "ctx.db"), "recall", "Maya bake shelter on 3 August, 2023", "--explain"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.count("+1: the question names a day or a month and this text happened then") == 1


def conversation(kernel: Ctx) -> dict[str, str]:
    """A question, two turns of small talk, then the answer, which shares no word with it."""
    ids = {"question": log(kernel, "Maya: where did you go for the anniversary trip?")}
    ids["aside"] = log(kernel, "Leo: hold on, the kettle")
    ids["back"] = log(kernel, "Leo: sorry, I am back")
    ids["answer"] = log(kernel, "Leo: Lisbon, we ate pastel de nata every morning")
    for n in range(8):
        log(kernel, f"Maya: unrelated small talk number {n} about gardening", session="other")
    return ids


def test_a_turn_two_away_from_a_strong_hit_gains_a_quarter_of_its_score(kernel):
    ids = conversation(kernel)
    found = {hit.evidence.id: hit.rrf for hit in kernel.recall("anniversary trip", k=10).evidence}
    assert found[ids["back"]] == pytest.approx(found[ids["question"]] * 2 * 0.25)  # the question kept half
    assert ids["answer"] not in found  # three away: nothing


def test_two_away_does_not_cross_into_another_session(kernel):
    log(kernel, "Maya: the anniversary trip was lovely", session="x")
    log(kernel, "Leo: agreed", session="x")
    other = log(kernel, "Maya: my cello lesson got moved", session="y")
    assert other not in [hit.evidence.id for hit in kernel.recall("anniversary trip", k=10).evidence]
