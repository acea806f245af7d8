"""`ctx timeline` and the MCP `timeline` tool: what came before and after a record, in time order."""

from __future__ import annotations

import json

from ctx_kernel.kernel import Ctx


def _story(kernel: Ctx) -> dict[str, str]:
    note = kernel.log("Sessions expire mid-upload; the token is never refreshed.").id
    first = kernel.propose("auth.tokens", "Use JWT with refresh rotation", evidence=[note]).id
    old = kernel.ratify(first, reviewer="alice").decision.id
    rejected = kernel.propose("auth.tokens", "Keep tokens forever").id
    kernel.reject(rejected, reviewer="alice", reason="unsafe")
    second = kernel.propose("auth.tokens", "Opaque session ids stored server side").id
    new = kernel.ratify(second, reviewer="bob").decision.id
    kernel.propose("db.engine", "Use PostgreSQL")  # another subject: never on this timeline
    return {"note": note, "first": first, "old": old, "rejected": rejected, "second": second, "new": new}


def test_a_subject_is_told_in_the_order_things_happened(cli, kernel: Ctx) -> None:
    made = _story(kernel)
    told = json.loads(cli("timeline", "auth.tokens", "--json").out)
    assert told["subject"] == "auth.tokens" and told["focus"] is None
    events = [(e["event"], e["id"]) for e in told["entries"]]
    assert events == [
        ("logged", made["note"]),
        ("proposed", made["first"]),
        ("ratified", made["first"]),
        ("in force", made["old"]),
        ("proposed", made["rejected"]),
        ("rejected", made["rejected"]),
        ("proposed", made["second"]),
        ("ratified", made["second"]),
        ("superseded", made["old"]),
        ("in force", made["new"]),
    ]
    assert [e["at"] for e in told["entries"]] == sorted(e["at"] for e in told["entries"])
    assert (told["omitted_before"], told["omitted_after"]) == (0, 0)


def test_a_record_is_told_with_what_came_just_before_and_after(cli, kernel: Ctx) -> None:
    made = _story(kernel)
    handle = kernel.handles([made["rejected"]])[made["rejected"]]
    told = json.loads(cli("timeline", handle, "--around", "1", "--json").out)
    assert told["focus"] == made["rejected"]
    assert [(e["event"], e["id"], e["focus"]) for e in told["entries"]] == [
        ("in force", made["old"], False),
        ("proposed", made["rejected"], True),
        ("rejected", made["rejected"], True),
    ]
    focused = [e for e in told["entries"] if e["focus"]]
    assert focused and all(e["id"] == made["rejected"] for e in focused)
    assert (
        told["omitted_before"] == 3
        and told["omitted_before"] + len(told["entries"]) + told["omitted_after"] == 10
    )
    text = cli("timeline", handle, "--around", "1").out
    assert text.splitlines()[0] == "auth.tokens, oldest first:"
    assert any(line.startswith(">") and handle in line and "proposed" in line for line in text.splitlines())
    assert "3 earlier" in text


def test_nothing_to_tell_is_one_line(cli, kernel: Ctx) -> None:
    _story(kernel)
    for target, words in (("ci.runner", "nothing on ci.runner"), ("ZZZZ", "no record with an id")):
        result = cli("timeline", target)
        assert result.code != 0 and words in result.err and result.err.count("\n") == 1


def test_evidence_is_told_on_the_subject_of_the_first_proposal_citing_it(cli, kernel: Ctx) -> None:
    made = _story(kernel)
    told = json.loads(cli("timeline", made["note"], "--json").out)
    assert told["subject"] == "auth.tokens" and told["focus"] == made["note"]
    assert [e["id"] for e in told["entries"] if e["focus"]] == [made["note"]]
    uncited = kernel.log("A note nothing cites").id
    result = cli("timeline", uncited)
    assert result.code != 0 and f"no proposal cites {uncited}" in result.err
