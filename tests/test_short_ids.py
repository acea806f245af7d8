"""Ids may be abbreviated to any unique prefix, as git abbreviates commits, or named by their handle."""

from __future__ import annotations

import json
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
    with pytest.raises(NotFoundError, match="no proposal with an id starting or ending pr_zzzz"):
        kernel.show("pr_zzzz")
    with pytest.raises(UsageError, match="is a decision id, not a proposal id"):
        kernel.proposal("dc_0000")  # a decision prefix where a proposal is asked for


# -- handles: the end of an id, which lists print and every command takes --------------------


def _line_names(out: str) -> list[str]:
    """The first word of each record line of a human list (`ctx queue`, `ctx decisions`)."""
    return [line.split()[0] for line in out.splitlines() if line and not line.startswith(" ")]


def test_lists_print_handles_and_every_command_takes_them(cli, kernel: Ctx) -> None:
    evidence = kernel.log("Tokens leak through the referer header").id
    time.sleep(0.01)  # a later millisecond: the evidence's id starts differently from the proposals'
    made = [kernel.propose(f"auth.area{i}", f"Decide thing {i}", evidence=[evidence]).id for i in range(3)]
    listed = cli("queue")
    names = _line_names(listed.out)
    assert len(names) == 3 and all(4 <= len(n) <= 8 for n in names), listed.out
    handles = kernel.handles(made)
    assert names == [handles[i] for i in made]  # the queue is oldest first
    assert all(made_id.endswith(handles[made_id]) for made_id in made)
    # The handle names the record wherever an id is accepted, in any case, with or without the kind.
    shown = cli("show", handles[made[1]].lower())
    assert shown.code == 0 and f"id: {made[1]}" in shown.out
    assert f"id: {made[2]}" in cli("show", "pr_" + handles[made[2]]).out
    ratified = cli("ratify", handles[made[0]], "--yes", "--reviewer", "alice", "--json")
    assert ratified.code == 0, ratified.err
    decision = json.loads(ratified.out)["decision"]["id"]
    decisions = cli("decisions")
    assert _line_names(decisions.out) == [kernel.handles([decision])[decision]]
    retired = cli("retire", "auth.area0", "--reason", "gone", "--yes", "--reviewer", "alice")
    assert retired.code == 0, retired.err
    evidence_handle = kernel.handles([evidence])[evidence]
    proposed = cli("propose", "--subject", "auth.more", "--decision", "More", "--evidence", evidence_handle)
    assert proposed.code == 0, proposed.err
    assert kernel.queue("auth.more")[0].evidence == [evidence]
    # A bare start of an id (no kind) names it too, as the review app's copy of an id has none.
    assert f"id: {evidence}" in cli("show", evidence[3:13]).out


def test_a_handle_of_another_kind_is_named(cli, kernel: Ctx) -> None:
    decided = kernel.ratify(kernel.propose("db.engine", "Use PostgreSQL").id, reviewer="alice").decision
    handle = kernel.handles([decided.id])[decided.id]
    refused = cli("ratify", handle, "--yes", "--reviewer", "alice")
    assert refused.code != 0
    assert f"no proposal with an id starting or ending {handle}" in refused.err
    assert f"is the handle of decision {decided.id}" in refused.err
    assert refused.err.count("\n") == 1


def test_malformed_values_say_what_is_accepted(cli, kernel: Ctx) -> None:
    kernel.propose("auth.tokens", "Use JWT")
    for value in ("3WC", "pr_3W", "xx_3WCX", "3WC!", "U" * 5):
        result = cli("show", value)
        assert result.code == 2, (value, result)
        assert "malformed id" in result.err and "its handle" in result.err, result.err
        assert result.err.count("\n") == 1


def test_an_ambiguous_handle_lists_the_records_it_names(cli, kernel: Ctx, tmp_path) -> None:
    """Ids whose ends share four characters: the four name both, and each one's handle is longer."""
    lines = "".join(json.dumps({"text": f"note number {i}"}) + "\n" for i in range(6000))
    (tmp_path / "notes.jsonl").write_text(lines, encoding="utf-8")
    assert cli("log", "--jsonl", str(tmp_path / "notes.jsonl")).code == 0
    every = kernel.store.evidence_ids()
    by_end: dict[str, list[str]] = {}
    for record_id in every:
        by_end.setdefault(record_id[-4:], []).append(record_id)
    shared = next(ids_ for ids_ in by_end.values() if len(ids_) > 1)  # 6,000 ids: ~17 such pairs
    handles = kernel.handles(shared)
    assert all(len(handles[i]) >= 5 and i.endswith(handles[i]) for i in shared)
    assert len(set(handles.values())) == len(shared)
    result = cli("show", shared[0][-4:])
    assert result.code == 2 and "ambiguous" in result.err
    assert all(f"{i} ({handles[i]})" in result.err for i in shared[:5])
    assert f"id: {shared[0]}" in cli("show", handles[shared[0]]).out
    # Every record's handle names it alone.
    sample = every[::97]
    for record_id, handle in kernel.handles(sample).items():
        assert kernel.resolve_id(handle) == record_id
