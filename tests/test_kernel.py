"""Decision-kernel behaviour through the facade: supersession shapes, windows, retire, audit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx, RefusedError
from ctx_kernel.kernel.errors import NotFoundError, UsageError
from ctx_kernel.kernel.store.sqlite import driver


def _ratified(kernel: Ctx, subject: str, text: str, **kwargs):
    proposal = kernel.propose(subject, text, **kwargs)
    return kernel.ratify(proposal.id, reviewer="alice").decision


def test_logging_the_same_text_twice_returns_the_first_id(kernel: Ctx):
    first = kernel.log("pytest -n 4 flaked on payments", kind="log", agent="ci", tags=["ci", "flaky"])
    again = kernel.log("pytest -n 4 flaked on payments\r\n", agent="other")
    assert (first.duplicate, again.duplicate) == (False, True)
    assert again.id == first.id
    evidence = kernel.evidence(first.id)
    assert evidence.tags == ["ci", "flaky"] and evidence.agent == "ci"
    assert sum(e.action == "evidence.logged" for e in kernel.audit.events()) == 1


def test_subject_is_normalised(kernel: Ctx):
    proposal = kernel.propose("  Auth . Session Tokens ", "Rotate refresh tokens")
    assert proposal.subject == "auth.session-tokens"
    for bad in ["", "   ", "auth..tokens", ".auth", "auth.", "a/b!"]:
        with pytest.raises(UsageError):
            kernel.propose(bad, "x")


def test_ratify_supersedes_the_current_decision_atomically(kernel: Ctx):
    old = _ratified(kernel, "auth.tokens", "Use stateless JWTs")
    proposal = kernel.propose("auth.tokens", "Use JWT with refresh rotation")
    assert proposal.supersedes == [old.id]
    result = kernel.ratify(proposal.id, reviewer="bob")
    new = result.decision
    closed = kernel.decision(old.id)
    assert result.superseded == [old.id]
    assert closed.valid_until == new.valid_from and closed.closed_by == "superseded"
    assert closed.superseded_by == [new.id] and new.supersedes == [old.id]
    assert [d.id for d in kernel.decisions("auth.tokens")] == [new.id]
    assert [d.id for d in kernel.history("auth.tokens")] == [old.id, new.id]
    assert kernel.proposal(proposal.id).decision_id == new.id


def test_one_successor_replaces_several_decisions_across_subjects(kernel: Ctx):
    a = _ratified(kernel, "auth.passwords", "bcrypt cost 12")
    b = _ratified(kernel, "auth.sessions", "Server-side sessions in Redis")
    c = _ratified(kernel, "auth.mfa", "TOTP for admins")
    merged = kernel.ratify(
        kernel.propose(
            "auth", "Delegate authentication to the company IdP (OIDC)", supersedes=[a.id, b.id, c.id]
        ).id,
        reviewer="alice",
    )
    assert sorted(merged.superseded) == sorted([a.id, b.id, c.id])
    assert sorted(merged.decision.supersedes) == sorted([a.id, b.id, c.id])
    for old in (a, b, c):
        assert kernel.decision(old.id).valid_until == merged.decision.valid_from
    assert [d.subject for d in kernel.decisions("auth")] == ["auth"]
    assert {d.id for d in kernel.history("auth.mfa")} == {a.id, b.id, c.id, merged.decision.id}


def test_one_decision_split_into_two_successors(kernel: Ctx):
    whole = _ratified(kernel, "storage", "Everything in PostgreSQL")
    first = kernel.ratify(
        kernel.propose("storage.blobs", "Blobs in S3", supersedes=[whole.id]).id, reviewer="alice"
    ).decision
    second = kernel.ratify(
        kernel.propose("storage.rows", "Rows in PostgreSQL", supersedes=[whole.id]).id, reviewer="alice"
    ).decision
    closed = kernel.decision(whole.id)
    assert closed.valid_until == first.valid_from
    assert sorted(closed.superseded_by) == sorted([first.id, second.id])
    assert {d.subject for d in kernel.decisions()} == {"storage.blobs", "storage.rows"}


def test_retire_closes_a_window_with_no_successor(kernel: Ctx):
    decision = _ratified(kernel, "ci.runner", "Use Jenkins")
    retired = kernel.retire("ci.runner", reviewer="alice", reason="CI moved to the platform team")
    assert retired.id == decision.id and retired.closed_by == "retired" and retired.valid_until
    assert kernel.decisions("ci.runner") == []
    with pytest.raises(RefusedError):
        kernel.retire("ci.runner", reviewer="alice", reason="again")


def test_as_of_answers_with_the_decisions_valid_then(kernel: Ctx):
    old = _ratified(kernel, "db.driver", "psycopg 2")
    new = _ratified(kernel, "db.driver", "psycopg 3")
    assert [d.id for d in kernel.decisions(as_of=old.valid_from)] == [old.id]
    assert [d.id for d in kernel.decisions(as_of=new.valid_from)] == [new.id]
    assert kernel.decisions(as_of="2000-01-01") == []
    assert {d.id for d in kernel.decisions(include_closed=True)} == {old.id, new.id}


def test_near_duplicate_is_flagged_not_merged(kernel: Ctx):
    first = kernel.propose(
        "auth.tokens",
        "Replace JWTs with opaque session ids stored in Redis so admin sessions can be revoked immediately.",
    )
    second = kernel.propose(
        "auth.tokens",
        "Replace JWT with opaque session ids kept in Redis so that admin sessions can be revoked at once.",
    )
    other = kernel.propose("frontend.build", "Use Vite for the frontend build")
    assert second.near_duplicate_of == first.id and second.near_duplicate_score >= 82
    assert other.near_duplicate_of is None
    assert len(kernel.queue()) == 3


def test_amended_ratification_is_recorded(kernel: Ctx):
    proposal = kernel.propose("api.errors", "Return problem json")
    decision = kernel.ratify(proposal.id, reviewer="bob", decision="Return RFC 9457 problem+json").decision
    assert decision.amended and decision.decision == "Return RFC 9457 problem+json"
    event = next(e for e in kernel.audit.events() if e.action == "proposal.ratified")
    assert json.loads(event.after)["amended_from"] == "Return problem json"
    assert event.actor == "bob"


def test_resolved_proposals_refuse_further_changes(kernel: Ctx):
    proposal = kernel.propose("a", "x")
    kernel.reject(proposal.id, reviewer="alice", reason="no")
    for act in (
        lambda: kernel.ratify(proposal.id, reviewer="alice"),
        lambda: kernel.reject(proposal.id, reviewer="alice", reason="again"),
        lambda: kernel.withdraw(proposal.id, actor="agent"),
    ):
        with pytest.raises(RefusedError, match="rejected, not pending"):
            act()
    with pytest.raises(NotFoundError):
        kernel.ratify("pr_01JD0000000000000000000000", reviewer="alice")


def test_unknown_evidence_or_decision_is_refused(kernel: Ctx):
    with pytest.raises(NotFoundError):
        kernel.propose("a", "x", evidence=["ev_01JD0000000000000000000000"])
    with pytest.raises(NotFoundError):
        kernel.propose("a", "x", supersedes=["dc_01JD0000000000000000000000"])
    with pytest.raises(UsageError):
        kernel.propose("a", "x", supersedes=["ev_01JD0000000000000000000000"])
    assert kernel.queue() == [] and kernel.audit.events() == []


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE evidence SET text = 'rewritten'",
        "DELETE FROM evidence",
        "DELETE FROM decision",
        "UPDATE decision SET decision = 'rewritten'",
        "UPDATE decision SET valid_until = '2999-01-01T00:00:00.000000Z', closed_by = 'retired' "
        "WHERE valid_until IS NOT NULL",
        "DELETE FROM supersession",
        "DELETE FROM audit",
        "UPDATE audit SET actor = 'mallory'",
        "UPDATE proposal SET decision = 'rewritten'",
        "DELETE FROM proposal",
        "INSERT INTO decision (id, subject, decision, valid_from, ratified_by, ratified_at) "
        "VALUES ('dc_01JD0000000000000000000000', 'db.driver', 'second current', "
        "'2999-01-01T00:00:00.000000Z', 'x', 'x')",
        "INSERT INTO decision (id, subject, decision, valid_from, valid_until, closed_by, ratified_by, "
        "ratified_at) VALUES ('dc_01JD0000000000000000000000', 'db.driver', 'overlapping', "
        "'2000-01-01T00:00:00.000000Z', '2999-01-01T00:00:00.000000Z', 'retired', 'x', 'x')",
    ],
)
def test_database_itself_holds_the_invariants(kernel: Ctx, store_path: Path, sql: str):
    kernel.log("some evidence")
    _ratified(kernel, "db.driver", "psycopg 2")
    _ratified(kernel, "db.driver", "psycopg 3")
    kernel.reject(kernel.propose("x", "y").id, reviewer="a", reason="b")
    conn = driver.connect(store_path)
    with pytest.raises(driver.dbapi.DatabaseError):
        conn.execute(sql)
    conn.close()
    assert kernel.audit.verify().ok


def test_audit_verify_names_the_first_tampered_row(kernel: Ctx, store_path: Path, cli):
    kernel.log("one")
    kernel.log("two")
    kernel.propose("a", "b")
    assert kernel.audit.verify().ok and kernel.audit.verify().rows == 3
    conn = driver.connect(store_path)
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("UPDATE audit SET actor = 'mallory' WHERE seq = 2")
    conn.close()
    report = kernel.audit.verify()
    assert not report.ok and report.first_bad_seq == 2
    result = cli("audit", "verify")
    assert result.code == 1 and "row 2" in result.err


def test_store_is_found_by_walking_up(tmp_path: Path, cli, monkeypatch):
    project = tmp_path / "repo"
    (project / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(project)
    assert cli("init", db=False).code == 0
    assert (project / ".ctx" / "ctx.db").is_file()
    monkeypatch.chdir(project / "src" / "deep")
    logged = cli("log", "found from a sub folder", db=False)
    assert logged.code == 0
    with Ctx.open(project / ".ctx" / "ctx.db") as kernel:
        assert kernel.evidence(logged.out.strip()).text == "found from a sub folder"
    monkeypatch.setenv("CTX_DB", str(tmp_path / "elsewhere.db"))
    assert cli("queue", db=False).code == 1
