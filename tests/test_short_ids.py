"""Ids may be abbreviated to any unique prefix, as git abbreviates commits."""

from __future__ import annotations

import time

import pytest

from ctx_kernel.kernel import Ctx, ids
from ctx_kernel.kernel.errors import NotFoundError, UsageError


def _shortest_unique(full: str, others: list[str]) -> str:
    for end in range(3 + ids.MIN_ID_PREFIX, len(full) + 1):
        if not any(o.startswith(full[:end]) for o in others if o != full):
            return full[:end]
    return full


def test_a_unique_prefix_names_the_record_on_every_command(cli, kernel: Ctx) -> None:
    evidence = kernel.log("Sessions expire mid-upload").id
    proposals = []
    for i in range(3):
        time.sleep(0.01)  # an id starts with its creation time: ids of one millisecond share more
        proposals.append(kernel.propose(f"area{i}.topic", f"Decide thing {i}", evidence=[evidence]).id)
    short = _shortest_unique(proposals[1], proposals)
    assert len(short) <= 16
    shown = cli("show", short.lower())
    assert shown.code == 0 and f"id: {proposals[1]}" in shown.out
    ratified = cli("ratify", short, "--yes", "--reviewer", "alice")
    assert ratified.code == 0, ratified.err
    decision = kernel.proposal(proposals[1]).decision_id
    assert decision is not None
    assert f"id: {decision}" in cli("show", decision[:16]).out
    assert f"id: {evidence}" in cli("show", evidence[: 3 + ids.MIN_ID_PREFIX]).out


def test_an_ambiguous_prefix_lists_the_ids_it_matches(cli, kernel: Ctx) -> None:
    made = [kernel.propose(f"area{i}.topic", f"Decide thing {i}").id for i in range(3)]
    common = "pr_" + made[0][3 : 3 + ids.MIN_ID_PREFIX]
    assert all(i.startswith(common) for i in made)  # made within the same second
    result = cli("show", common)
    assert result.code == 2 and "ambiguous" in result.err
    assert all(i in result.err for i in made) and result.err.count("\n") == 1
    with pytest.raises(UsageError, match="ambiguous"):
        kernel.ratify(common, reviewer="alice")
    assert [kernel.proposal(i).status for i in made] == ["pending"] * 3


def test_prefixes_that_are_too_short_or_name_nothing(kernel: Ctx) -> None:
    kernel.propose("auth.tokens", "Use JWT")
    with pytest.raises(UsageError, match="malformed id"):
        kernel.show("pr_01")
    with pytest.raises(NotFoundError, match="no proposal with an id starting pr_ZZZZ"):
        kernel.show("pr_zzzz")
    with pytest.raises(UsageError, match="malformed id"):
        kernel.proposal("dc_0000")  # a decision prefix where a proposal is asked for
