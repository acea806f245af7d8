"""The served log on a team's server: an agent's login appends entries under its own name and can
never change, delete or fold them."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from mcp_support import Agent, server_params
from psycopg import errors

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.store.postgres import roles

DENIED = errors.InsufficientPrivilege


@pytest.fixture
def served_by_agent(pg, tmp_path: Path, model_cache: Path):
    """A decision an agent's `ctx mcp` (logged in as the agent) was served twice."""
    with Ctx.init(pg.url(), embedder=None)[0] as owner:
        proposal = owner.propose("db.engine", "Use PostgreSQL 16 for every service")
        decision = owner.ratify(proposal.id, reviewer=owner.login or "owner").decision.id
    env = {
        "CTX_CONFIG_DIR": str(tmp_path / "config"),
        "CTX_CACHE_DIR": str(model_cache),
        "CTX_VECTORS": "off",
    }
    with (
        (tmp_path / "err.txt").open("w") as errlog,
        Agent(server_params(pg.url(roles.AGENT), env, "--session", "s1"), errlog) as a,
    ):
        for _ in range(2):
            answer = a.call("get_decision", {"subject": "db.engine"})
            assert not answer.is_error and len(answer.content) == 1, answer.content
    return pg, decision


def test_an_agents_login_is_who_was_served(served_by_agent):
    pg, decision = served_by_agent
    with pg.connect(roles.AGENT, autocommit=True) as agent:
        login = agent.info.user
        rows = agent.execute("SELECT seq, agent, session, host, items FROM served ORDER BY seq").fetchall()
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [(1, login, "s1", "mcp"), (2, login, "s1", "mcp")]
    assert json.loads(rows[0][4])[0][:1] == [decision]
    with Ctx.open(pg.url(), embedder=None) as owner:
        report = owner.served.report(decision=decision)
        assert [e.seq for e in report.entries] == [1, 2]
        assert owner.audit.verify(state=True).served_entries == 2


def test_an_agents_login_cannot_change_delete_fold_or_speak_for_another(served_by_agent):
    pg, _ = served_by_agent
    with pg.connect(roles.AGENT, autocommit=True) as agent:
        with pytest.raises(DENIED, match="permission denied"):
            agent.execute("UPDATE served SET session = 'elsewhere' WHERE seq = 1")
        with pytest.raises(DENIED, match="permission denied"):
            agent.execute("DELETE FROM served WHERE seq = 1")
        with pytest.raises(DENIED, match="permission denied"):
            agent.execute(
                "INSERT INTO served_fold VALUES ('2026-01-01', 1, 2, 2, 2, 'r', 'p', 'l', 'now', 'k', 's')"
            )
        head = agent.execute("SELECT hash FROM served WHERE seq = 2").fetchone()[0]
        with pytest.raises(DENIED, match="acts as itself"):
            agent.execute(
                "INSERT INTO served VALUES "
                "(3, 'now', 'mcp', 'another-agent', 's9', 'get', 'r', '[]', 0, %s, 'h')",
                (head,),
            )
        assert agent.execute("SELECT count(*) FROM served").fetchone() == (2,)


def test_a_reviewer_deletes_only_what_a_fold_covers(served_by_agent):
    pg, _ = served_by_agent
    with pg.connect(roles.REVIEWER, autocommit=True) as reviewer:
        with pytest.raises(errors.IntegrityError, match="only once a signed fold covers it"):
            reviewer.execute("DELETE FROM served WHERE seq = 1")
        with pytest.raises(DENIED, match="permission denied"):
            reviewer.execute("UPDATE served SET session = 'x' WHERE seq = 1")
    with pg.connect(autocommit=True) as owner, pytest.raises(errors.IntegrityError, match="append-only"):
        owner.execute("UPDATE served SET session = 'x' WHERE seq = 1")


def test_only_a_reviewer_folds_and_the_folded_log_verifies(served_by_agent, monkeypatch):
    from ctx_kernel.kernel import clock
    from ctx_kernel.kernel.audit.service import AuditService
    from ctx_kernel.kernel.errors import CtxError

    pg, _ = served_by_agent
    AuditService.create_signing_key("a passphrase")
    later = clock.format_ts(clock.to_datetime(clock.now()) + timedelta(days=10))
    monkeypatch.setattr(clock, "now", lambda: later)
    with (
        Ctx.open(pg.url(roles.AGENT), embedder=None) as agent,
        pytest.raises(CtxError, match="permission denied"),
    ):
        agent.served.fold(older_than_days=1, passphrase="a passphrase")
    with Ctx.open(pg.url(roles.REVIEWER), embedder=None) as reviewer:
        (fold,) = reviewer.served.fold(older_than_days=1, passphrase="a passphrase")
    assert (fold["first_seq"], fold["last_seq"], fold["entries"]) == (1, 2, 2)
    with Ctx.open(pg.url(), embedder=None) as owner:
        report = owner.audit.verify(state=True)
        assert report.ok, report.problem
        assert owner.served.report().folded == 2
