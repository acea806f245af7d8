"""`ctx inject`: the session-start block, its sections, its budget and its determinism."""

from __future__ import annotations

import json

import pytest
from test_json_schemas import assert_valid
from test_recall import hashed, world  # noqa: F401 - fixtures

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.limits import MAX_BUDGET, MAX_INJECT_CHARS
from ctx_kernel.kernel.recall.inject import count_tokens


def test_the_block_has_every_section_in_order(cli, hashed, world):  # noqa: F811
    result = cli("inject")
    assert result.code == 0, result.err
    out = result.out
    headings = [
        "## Current decisions",
        "## Superseded: do not apply",
        "## Conflicts (ask a person)",
        "## Proposals (not in force)",
        "## Evidence (unratified)",
    ]
    positions = [out.index(h) for h in headings]
    assert positions == sorted(positions)
    new = world["new"]
    handle = hashed.handles(getattr(value, "id", value) for value in world.values())
    assert f"- `{handle[new.id]}` {new.subject}: {new.decision}" in out
    assert f"`{handle[world['old'].id]}`" in out.split("## Superseded")[1].split("##")[0]
    assert f"`{handle[world['pending'].id]}`" in out.split("## Proposals")[1]
    assert f"`{handle[world['note']]}`" in out.split("## Evidence")[1]
    assert handle[world["build"].id] not in out  # retired: neither current nor superseded
    assert "## Also current" not in out  # everything fit: no index


def test_without_a_query_every_current_decision_is_listed_newest_first(hashed, world):  # noqa: F811
    block = hashed.inject()
    listed = [item["id"] for item in block.items["decisions"]]
    current = sorted(hashed.decisions(), key=lambda d: (d.valid_from, d.id), reverse=True)
    assert listed == [d.id for d in current]


def test_a_query_puts_the_relevant_decision_first(hashed, world):  # noqa: F811
    block = hashed.inject("which database is primary?")
    assert block.items["decisions"][0]["id"] == world["db"].id


def test_conflicts_are_listed_once_per_pair(hashed, world):  # noqa: F811
    pairs = [{c["id"], c["other_id"]} for c in hashed.inject().items["conflicts"]]
    assert {world["cache"].id, world["infra"].id} in pairs
    assert len(pairs) == len({frozenset(p) for p in pairs})


@pytest.mark.parametrize("budget", [200, 250, 300, 400, 600, 1000, 5000])
def test_the_budget_is_never_exceeded(hashed, world, budget):  # noqa: F811
    for i in range(30):
        p = hashed.propose(f"area{i}.topic", f"Use tool number {i} for topic {i} " + "x" * (i * 7))
        hashed.ratify(p.id, reviewer="ann")
    block = hashed.inject(budget=budget)
    assert block.tokens == count_tokens(block.markdown) <= budget
    kept = sum(len(v) for v in block.items.values())
    assert kept >= 1
    assert len(block.markdown) <= MAX_INJECT_CHARS
    others = sum(n for name, n in block.omitted.items() if name != "decisions")
    if others:
        assert f"_{others} more items did not fit the budget of {budget} tokens" in block.markdown
    assert block.omitted["decisions"] == len(hashed.decisions()) - len(block.items["decisions"])


def test_the_block_is_deterministic(cli, world):  # noqa: F811
    first = cli("inject", "--query", "session tokens")
    second = cli("inject", "--query", "session tokens")
    assert first.code == 0 and first.out == second.out


def test_json_validates_and_matches_the_markdown(cli, world):  # noqa: F811
    result = cli("inject", "--format", "json", "--budget", "400")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert_valid("inject", document)
    assert document["tokens"] <= 400
    for item in document["decisions"]:
        assert f"`{item['id'][-4:]}`" in document["markdown"]
    assert all(e["ratified"] is False for e in document["evidence"])
    assert "4" in document["token_counting"]


def test_an_empty_store_says_so(kernel: Ctx):
    block = kernel.inject()
    assert "No ratified decisions yet." in block.markdown
    assert block.tokens <= block.budget


def test_counting_is_per_line_rounded_up():
    assert count_tokens("abcd") == 2  # 4 characters and the newline
    assert count_tokens("abc") == 1
    assert count_tokens("abc\nabc") == 2


def _many(kernel: Ctx, count: int, words: int = 12) -> list:
    """``count`` current decisions on subjects of their own, each text ``words`` words long."""
    made = []
    for i in range(count):
        text = f"Team {i} uses tool{i} for topic{i}. " + " ".join(f"reason{i}x{j}" for j in range(words))
        made.append(kernel.ratify(kernel.propose(f"area{i % 7}.topic{i}", text).id, reviewer="ann").decision)
    return made


def _index_lines(markdown: str) -> list[str]:
    section = markdown.split("## Also current (not shown above)\n", 1)[1]
    return [line for line in section.split("\n\n", 1)[0].splitlines() if line]


def test_what_does_not_fit_is_named_in_an_index_at_the_end(cli, hashed):  # noqa: F811
    made = _many(hashed, 40)
    result = cli("inject", "--json", "--budget", "600")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert_valid("inject", document)
    assert document["tokens"] == count_tokens(document["markdown"]) <= 600
    shown = [item["id"] for item in document["decisions"]]
    named = [entry["id"] for entry in document["index"]]
    assert shown and named and not set(shown) & set(named)
    assert set(shown) | set(named) == {d.id for d in made}  # every current decision, once
    handles = hashed.handles(d.id for d in made)
    by_id = {d.id: d for d in made}
    assert _index_lines(document["markdown"]) == [f"- `{handles[i]}` {by_id[i].subject}" for i in named]
    assert document["omitted"]["decisions"] == len(named)
    # One step away: the handle a line gives is what `ctx show` takes.
    shown_record = cli("show", document["index"][0]["handle"], "--json")
    assert json.loads(shown_record.out)["record"]["id"] == named[0]


def test_an_index_too_long_to_fit_says_how_many_more_and_how_to_list_them(cli, hashed):  # noqa: F811
    made = _many(hashed, 150, words=4)
    result = cli("inject", "--json", "--budget", "300")
    document = json.loads(result.out)
    assert document["tokens"] <= 300
    left = len(made) - len(document["decisions"]) - len(document["index"])
    assert left > 0 and document["index"]
    assert document["markdown"].endswith(f"_{left} more current decisions: `ctx decisions` lists them._\n")
    assert document["omitted"]["decisions"] == len(document["index"]) + left


def test_the_block_never_exceeds_its_character_cap(cli, hashed, store_path):  # noqa: F811
    for i in range(60):
        text = f"Decision {i}, " + "with a long considered explanation of the choice, " * 12
        hashed.ratify(hashed.propose(f"area.topic{i}", text).id, reviewer="ann")
        hashed.propose(f"area.topic{i}", f"Change topic {i} " + "again and again " * 20, proposer="bot")
    for args in (("inject", "--budget", str(MAX_BUDGET)), ("hook", "session-start", "--budget", "20000")):
        result = cli(*args)
        assert result.code == 0, result.err
        assert (
            len(result.out)
            <= MAX_INJECT_CHARS
            < len(hashed.inject(budget=MAX_BUDGET, max_chars=None).markdown)
        )
        assert "## Also current (not shown above)" in result.out
    document = json.loads(cli("inject", "--json", "--budget", str(MAX_BUDGET)).out)
    assert document["max_chars"] == MAX_INJECT_CHARS and len(document["markdown"]) <= MAX_INJECT_CHARS


def test_hidden_characters_count_against_the_budget(hashed):  # noqa: F811
    hashed.ratify(hashed.propose("area.topic", "Use tool 1.").id, reviewer="ann")
    for i in range(5):
        hashed.log(f"note {i}: " + "\u200b" * 20 + " end", redact=False)
    for budget in (200, 300):
        block = hashed.inject(budget=budget)
        assert "\u200b" not in block.markdown and "## Evidence" in block.markdown
        assert block.tokens == count_tokens(block.markdown) <= budget


def test_a_small_store_delivers_the_answer_within_1200_tokens(cli, hashed):  # noqa: F811
    made = _many(hashed, 40)
    target = made[7]
    found = json.loads(cli("inject", "--json", "--budget", "1200", "--query", "which tool for topic7").out)
    assert target.id in [item["id"] for item in found["decisions"]]
    hook = cli("hook", "session-start", "--budget", "1200")
    assert hook.code == 0, hook.err
    handles = hashed.handles(d.id for d in made)
    assert all(f"`{handles[d.id]}` {d.subject}" in hook.out for d in made)  # each in full or in the index
