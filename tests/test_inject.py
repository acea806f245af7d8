"""`ctx inject`: the session-start block, its sections, its budget and its determinism."""

from __future__ import annotations

import json

import pytest
from test_json_schemas import assert_valid
from test_recall import hashed, world  # noqa: F401 - fixtures

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.recall.inject import count_tokens


def test_the_block_has_every_section_in_order(cli, world):  # noqa: F811
    result = cli("inject")
    assert result.code == 0, result.err
    out = result.out
    headings = [
        "## Current decisions",
        "## Superseded: do not apply",
        "## Conflicts needing attention",
        "## Proposals awaiting review",
        "## Evidence (unratified",
    ]
    positions = [out.index(h) for h in headings]
    assert positions == sorted(positions)
    new = world["new"]
    assert f"`{new.id}` **{new.subject}** (since {new.valid_from[:10]})" in out
    assert f"`{world['old'].id}`" in out.split("## Superseded")[1].split("##")[0]
    assert world["pending"].id in out.split("## Proposals")[1]
    assert world["note"] in out.split("## Evidence")[1]
    assert world["build"].id not in out  # retired: neither current nor superseded


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
    if sum(block.omitted.values()):
        assert f"did not fit the budget of {budget} tokens" in block.markdown


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
        assert item["id"] in document["markdown"]
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
