"""Links, snapshots and re-confirmation on PostgreSQL: the same staleness as on SQLite, worked out
from the asker's git checkout, and the database refusing an agent login's snapshot or confirmation."""

from __future__ import annotations

import json

import psycopg
import pytest
from psycopg import errors
from test_stale import Repo

from ctx_kernel.kernel import Ctx, clock
from ctx_kernel.kernel.store.postgres import roles


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Repo:
    made = Repo(tmp_path / "work")
    made.commit("Start", **{"kernel__store__base.py": "class Store: ...\n"})
    monkeypatch.chdir(made.root)
    return made


def test_stale_and_reconfirm_on_a_server_store(pg, cli, repo) -> None:
    Ctx.init(pg.url(), embedder=None)[0].close()
    agent, reviewer = pg.url(roles.AGENT), pg.url(roles.REVIEWER)
    queued = cli(
        "--db", agent, "propose", "--subject", "store.layout", "--decision", "One store module",
        "--link", "kernel/store/**", "--json", db=False,
    )  # fmt: skip
    assert queued.code == 0, queued.err
    ratified = cli("--db", reviewer, "ratify", json.loads(queued.out)["id"], "--yes", "--json", db=False)
    assert ratified.code == 0, ratified.err
    decision = json.loads(ratified.out)["decision"]["id"]
    repo.commit("Edit", author="Bo", **{"kernel__store__base.py": "class Store: pass\n"})
    # Whoever asks works it out from their own checkout: the agent sees the marker too.
    report = json.loads(cli("--db", agent, "stale", "--json", db=False).out)
    (item,) = report["stale"]
    assert (
        item["commits"] == 1 and item["authors"] == ["Bo"] and report["head"] == repo.git("rev-parse", "HEAD")
    )
    assert "may be stale" in cli("--db", agent, "inject", db=False).out
    refused = cli("--db", agent, "reconfirm", decision, "--yes", db=False)
    assert refused.code == 1 and refused.out == "" and refused.err.count("\n") == 1
    assert "Traceback" not in refused.err
    done = cli("--db", reviewer, "reconfirm", decision, "--yes", db=False)
    assert done.code == 0, done.err
    assert json.loads(cli("--db", agent, "stale", "--json", db=False).out)["stale"] == []
    assert cli("--db", reviewer, "audit", "verify", db=False).code == 0


def test_an_agent_login_cannot_write_a_snapshot_or_link_anothers_proposal(pg) -> None:
    kernel, _ = Ctx.init(pg.url(), embedder=None)
    with kernel:
        mine = kernel.propose("store.layout", "One store module", links=["kernel/**"])
        decision = kernel.ratify(mine.id, reviewer="postgres").decision.id
        other = kernel.propose("db.engine", "Use PostgreSQL").id
    with pg.connect(roles.AGENT, autocommit=True) as agent:
        login = agent.info.user
        with pytest.raises(errors.InsufficientPrivilege):
            agent.execute(
                "INSERT INTO decision_snapshot (decision_id, taken_at, taken_by, act) "
                "VALUES (%s, %s, %s, 'reconfirmed')",
                (decision, clock.now(), login),
            )
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
            agent.execute(
                "SELECT ctx_audit_append(%s, %s, 'decision.confirmed', %s, NULL, '{}')",
                (clock.now(), login, decision),
            )
        with pytest.raises(errors.InsufficientPrivilege, match="its own pending proposals"):
            agent.execute("INSERT INTO proposal_link VALUES (%s, '../../etc/passwd')", (other,))
        for statement in ("UPDATE proposal_link SET pattern = 'x'", "DELETE FROM decision_snapshot"):
            with pytest.raises(psycopg.Error):
                agent.execute(statement)
    with (
        pg.connect(roles.REVIEWER, autocommit=True) as reviewer,
        pytest.raises(errors.InsufficientPrivilege, match="acts as itself"),
    ):
        reviewer.execute(
            "INSERT INTO decision_snapshot (decision_id, taken_at, taken_by, act) "
            "VALUES (%s, %s, 'someone else', 'reconfirmed')",
            (decision, clock.now()),
        )
    with pg.connect(autocommit=True) as owner, pytest.raises(psycopg.Error, match="append-only"):
        owner.execute("DELETE FROM decision_snapshot")


def test_an_agent_login_asks_to_reconfirm_and_only_a_reviewer_login_carries_it_out(pg, cli, repo) -> None:
    Ctx.init(pg.url(), embedder=None)[0].close()
    agent, reviewer = pg.url(roles.AGENT), pg.url(roles.REVIEWER)
    queued = cli(
        "--db", agent, "propose", "--subject", "store.layout", "--decision", "One store module",
        "--link", "kernel/store/**", "--json", db=False,
    )  # fmt: skip
    ratified = cli("--db", reviewer, "ratify", json.loads(queued.out)["id"], "--yes", "--json", db=False)
    decision = json.loads(ratified.out)["decision"]["id"]
    repo.commit("Edit", author="Bo", **{"kernel__store__base.py": "class Store: pass\n"})
    posing = cli("--db", agent, "propose", "--reconfirm", decision, "--agent", "someone", db=False)
    assert posing.code != 0 and posing.out == ""
    asked = cli(
        "--db", agent, "propose", "--reconfirm", decision, "--rationale", "still one module", "--json",
        db=False,
    )  # fmt: skip
    assert asked.code == 0, asked.err
    request = json.loads(asked.out)
    with pg.connect(roles.AGENT, autocommit=True) as login:
        assert request["proposer"] == login.info.user and request["reconfirms"] == decision
        # Nor can the agent's login resolve the request around ctx.
        with pytest.raises(psycopg.Error):
            login.execute(
                "UPDATE proposal SET status = 'ratified', resolved_by = %s, decision_id = %s WHERE id = %s",
                (login.info.user, decision, request["id"]),
            )
    refused = cli("--db", agent, "ratify", request["id"], "--yes", db=False)
    assert refused.code == 1 and refused.out == "" and refused.err.count("\n") == 1
    assert "Traceback" not in refused.err
    with Ctx.open(pg.url(), embedder=None) as owner:
        assert owner.proposal(request["id"]).status == "pending"
        assert [s.act for s in owner.store.snapshots_of(decision)] == ["ratified"]
    done = cli("--db", reviewer, "ratify", request["id"], "--yes", "--json", db=False)
    assert done.code == 0, done.err
    assert json.loads(done.out)["reconfirmed"] is True
    assert json.loads(cli("--db", agent, "stale", "--json", db=False).out)["stale"] == []
    with Ctx.open(pg.url(), embedder=None) as owner:
        assert [s.act for s in owner.store.snapshots_of(decision)] == ["ratified", "reconfirmed"]
        assert [d.id for d in owner.decisions(include_closed=True)] == [decision]
        resolved = owner.proposal(request["id"])
        assert resolved.status == "ratified" and resolved.decision_id == decision
    assert cli("--db", reviewer, "audit", "verify", db=False).code == 0
