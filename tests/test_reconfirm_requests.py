"""An agent asks a person to re-confirm a current decision whose linked code changed: the request
over MCP and the CLI, a person's ratification that re-confirms it (the plan and refusals of ``ctx
reconfirm``), its rejection, and the audit replay that checks it. Real git repositories are built
here as in ``test_stale.py``."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from test_stale import Repo, assert_valid

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.errors import RefusedError, StalePlanError, UsageError


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """A repository with a store package; the working folder is its root."""
    made = Repo(tmp_path / "work")
    made.commit("Start", **{"kernel__store__base.py": "class Store: ...\n", "pyproject.toml": "[x]\n"})
    monkeypatch.chdir(made.root)
    return made


def _stale_decision(kernel: Ctx, repo: Repo) -> str:
    """A ratified decision governing kernel/store/**, made stale by Bo's commit."""
    found = kernel.propose("store.layout", "Keep one store module", links=["kernel/store/**"])
    decision = kernel.ratify(found.id, reviewer="alice").decision.id
    repo.commit("Edit the store", author="Bo", **{"kernel__store__base.py": "class Store: pass\n"})
    return decision


def _acts(kernel: Ctx) -> list[tuple[str, str]]:
    return [(e.action, e.target) for e in kernel.audit.events()]


def test_over_mcp_an_agent_asks_with_evidence_and_a_person_ratifies_it_as_a_reconfirmation(
    cli, repo, kernel, store_path, tmp_path
):
    from mcp import StdioServerParameters
    from mcp_support import CTX, Agent, error_text, text_of

    decision = _stale_decision(kernel, repo)
    env = {"CTX_CONFIG_DIR": str(tmp_path / "mcp-config"), "CTX_VECTORS": "off", "PATH": os.environ["PATH"]}
    params = StdioServerParameters(
        command=CTX, args=["mcp", "--db", str(store_path), "--agent", "claude"], env=env, cwd=str(repo.root)
    )
    with (tmp_path / "stderr.txt").open("w", encoding="utf-8") as errlog, Agent(params, errlog) as agent:
        logged = agent.call_json("log_evidence", {"text": "Bo's edit keeps one Store class in base.py"})
        assert not logged.is_error, logged.content
        evidence = logged.structured_content["id"]
        asked = agent.call_json(
            "propose_decision",
            {"reconfirms": decision, "rationale": "Still one store module", "evidence": [evidence]},
        )
        assert not asked.is_error, asked.content
        request = asked.structured_content
        assert_valid("proposal", request)
        assert request["reconfirms"] == decision and request["proposer"] == "claude"
        assert request["subject"] == "store.layout" and request["decision"] == "Keep one store module"
        assert request["supersedes"] == [] and request["evidence"] == [evidence]
        restated = agent.call_json("propose_decision", {"reconfirms": decision, "decision": "Keep two"})
        assert restated.is_error and "give no decision" in error_text(restated)
        listed = text_of(agent.call("list_pending", {}))
        assert f"asks a person to re-confirm {decision}" in listed
    queued = cli("queue")
    assert queued.code == 0 and "asks a person to re-confirm" in queued.out
    assert "may be stale: kernel/store/** changed in 1 commit" in queued.out and "by Bo" in queued.out
    shown = cli("show", request["id"])
    assert f"reconfirms: {decision}" in shown.out and "1 commit by Bo" in shown.out
    done = cli("ratify", request["id"], "--yes", "--reviewer", "alice", "--json")
    assert done.code == 0, done.err
    ratified = json.loads(done.out)
    assert_valid("ratification", ratified)
    assert ratified["decision"]["id"] == decision and ratified["reconfirmed"] is True
    assert ratified["superseded"] == [] and ratified["settled"] == []
    # No new decision, one new snapshot, the marker gone, the request resolved naming the decision.
    assert [d.id for d in kernel.decisions(include_closed=True)] == [decision]
    assert [s.act for s in kernel.store.snapshots_of(decision)] == ["ratified", "reconfirmed"]
    assert kernel.store.snapshots_of(decision)[-1].taken_by == "alice"
    assert "may be stale" not in cli("inject").out
    resolved = kernel.proposal(request["id"])
    assert (resolved.status, resolved.decision_id, resolved.resolved_by) == ("ratified", decision, "alice")
    assert _acts(kernel)[-4:] == [
        ("evidence.logged", evidence),
        ("proposal.created", request["id"]),
        ("decision.confirmed", decision),
        ("proposal.ratified", request["id"]),
    ]
    created, ratified_row = (
        e for e in kernel.audit.events() if e.target == request["id"] and e.action.startswith("proposal")
    )
    assert created.actor == "claude" and json.loads(created.after or "{}")["reconfirms"] == decision
    assert ratified_row.actor == "alice" and json.loads(ratified_row.after or "{}")["reconfirmed"] == decision
    verified = cli("audit", "verify")
    assert verified.code == 0, verified.err


def test_a_request_takes_the_decision_as_it_stands_and_only_a_current_one(cli, repo, kernel):
    decision = _stale_decision(kernel, repo)
    restated = cli("propose", "--reconfirm", decision, "--decision", "Keep two", "--agent", "claude")
    assert restated.code == 2 and "give no --decision" in restated.err and restated.out == ""
    linked = cli("propose", "--reconfirm", decision, "--link", "x/**", "--agent", "claude")
    assert linked.code == 2 and "give no --link" in linked.err
    with pytest.raises(UsageError, match="give no subject"):
        kernel.propose("store.layout", None, reconfirms=decision)
    unknown = cli("propose", "--reconfirm", "dc_00000000000000000000000000", "--agent", "claude")
    assert unknown.code == 2 and "no decision dc_00000000000000000000000000" in unknown.err
    kernel.ratify(kernel.propose("store.layout", "Split the store module").id, reviewer="alice")
    closed = cli("propose", "--reconfirm", decision, "--agent", "claude")
    assert closed.code == 1 and f"{decision} is not current (superseded)" in closed.err
    assert closed.out == "" and kernel.queue() == []
    by_handle = cli("propose", "--reconfirm", kernel.decisions()[0].id[-4:], "--agent", "claude")
    assert by_handle.code == 0, by_handle.err


def test_ratifying_a_request_is_refused_when_a_commit_lands_between_plan_and_carry_out(repo, kernel):
    decision = _stale_decision(kernel, repo)
    request = kernel.propose(None, None, reconfirms=decision, rationale="holds", proposer="claude")
    plan = kernel.plan_ratification(request.id)
    assert plan.reconfirmation is not None and plan.reconfirmation.stale is not None
    assert plan.supersedes == [] and plan.closes == [] and plan.settles == []
    assert plan.lines()[0].startswith(f"Re-confirms {decision} on store.layout, as claude asks")
    assert any("changed in 1 commit" in line for line in plan.lines())
    repo.commit("Another edit while the person reads", **{"kernel__store__base.py": "again\n"})
    with pytest.raises(StalePlanError, match=f"not ratified: {decision} changed since it was shown"):
        kernel.ratify(plan, reviewer="alice")
    assert kernel.proposal(request.id).status == "pending"
    assert [s.act for s in kernel.store.snapshots_of(decision)] == ["ratified"]
    kernel.ratify(kernel.plan_ratification(request.id), reviewer="alice")
    assert [s.act for s in kernel.store.snapshots_of(decision)] == ["ratified", "reconfirmed"]


def test_ratifying_a_request_is_refused_once_its_decision_is_no_longer_current(cli, repo, kernel):
    decision = _stale_decision(kernel, repo)
    request = kernel.propose(None, None, reconfirms=decision, proposer="claude")
    shown = kernel.plan_ratification(request.id)
    replacement = kernel.propose("store.layout", "Split the store module", proposer="claude")
    kernel.ratify(replacement.id, reviewer="bob", settle=[])  # leaves the request pending
    with pytest.raises(RefusedError, match=f"{decision} is not current"):
        kernel.ratify(shown, reviewer="alice")
    refused = cli("ratify", request.id, "--yes", "--reviewer", "alice")
    assert refused.code == 1 and f"{decision} is not current (superseded)" in refused.err
    assert kernel.proposal(request.id).status == "pending"
    assert [s.act for s in kernel.store.snapshots_of(decision)] == ["ratified"]
    assert cli("audit", "verify").code == 0


def test_ratifying_a_replacement_settles_a_pending_request(repo, kernel):
    decision = _stale_decision(kernel, repo)
    request = kernel.propose(None, None, reconfirms=decision, proposer="claude")
    replacement = kernel.propose("store.layout", "Split the store module", proposer="claude")
    done = kernel.ratify(replacement.id, reviewer="bob")
    assert done.settled == [request.id] and kernel.proposal(request.id).status == "rejected"


def test_reject_dismisses_a_request_and_keeps_it(cli, repo, kernel):
    decision = _stale_decision(kernel, repo)
    request = kernel.propose(None, None, reconfirms=decision, rationale="holds", proposer="claude")
    rejected = cli("reject", request.id, "--reason", "the split is coming", "--yes", "--reviewer", "alice")
    assert rejected.code == 0, rejected.err
    kept = kernel.proposal(request.id)
    assert (kept.status, kept.reconfirms) == ("rejected", decision)
    assert kept.resolution_note == "the split is coming"
    assert [s.act for s in kernel.store.snapshots_of(decision)] == ["ratified"]
    assert cli("stale", "--json").out.count(decision) == 1
    assert cli("audit", "verify").code == 0


def test_a_reconfirms_value_changed_around_ctx_fails_verify(cli, repo, kernel, store_path):
    decision = _stale_decision(kernel, repo)
    other = kernel.ratify(kernel.propose("store.other", "Keep it").id, reviewer="alice").decision.id
    request = kernel.propose(None, None, reconfirms=decision, proposer="claude")
    assert cli("audit", "verify").code == 0
    conn = sqlite3.connect(store_path)
    try:
        (trigger,) = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'proposal_resolve_once'"
        ).fetchone()
        with pytest.raises(sqlite3.DatabaseError, match="never edited"):
            conn.execute("UPDATE proposal SET reconfirms = ? WHERE id = ?", (other, request.id))
        conn.execute("DROP TRIGGER proposal_resolve_once")
        conn.execute("UPDATE proposal SET reconfirms = ? WHERE id = ?", (other, request.id))
        conn.execute(trigger)
        conn.commit()
    finally:
        conn.close()
    verified = cli("audit", "verify")
    assert verified.code == 1 and f"proposal {request.id} does not match audit row" in verified.err
    assert "(reconfirms differs)" in verified.err


def test_adr_export_writes_no_file_for_a_request(cli, repo, kernel, tmp_path):
    """A request restates its decision: as a proposed ADR it would come back as a second proposal."""
    decision = _stale_decision(kernel, repo)
    kernel.propose(None, None, reconfirms=decision, rationale="holds", proposer="claude")
    folder = tmp_path / "adrs"
    folder.mkdir()
    exported = cli("export", "adr", str(folder))
    assert exported.code == 0, exported.err
    (written,) = [path.read_text(encoding="utf-8") for path in folder.glob("0*.md")]
    assert decision in written and "Accepted" in written


def test_ratifying_a_request_settles_the_other_requests_for_the_same_decision(cli, repo, kernel):
    decision = _stale_decision(kernel, repo)
    first = kernel.propose(None, None, reconfirms=decision, proposer="claude")
    second = kernel.propose(None, None, reconfirms=decision, proposer="codex")
    replacement = kernel.propose("store.layout", "Split the store module", proposer="claude")
    plan = kernel.plan_ratification(first.id)
    assert [p.id for p in plan.settles] == [second.id]
    assert any(f"Closes proposal {second.id} by codex" in line for line in plan.lines())
    with pytest.raises(UsageError, match=f"not {replacement.id}"):
        kernel.plan_ratification(first.id, settle=[replacement.id])
    done = kernel.ratify(plan, reviewer="alice")
    assert done.settled == [second.id] and done.reconfirmed
    settled = kernel.proposal(second.id)
    assert settled.status == "rejected" and settled.resolution_note == (
        f"settled by {first.id}, which re-confirmed {decision}"
    )
    assert kernel.proposal(replacement.id).status == "pending"
    assert [s.act for s in kernel.store.snapshots_of(decision)] == ["ratified", "reconfirmed"]
    assert cli("audit", "verify").code == 0
