"""ctx on a PostgreSQL store, through the CLI and the facade: the same review as on SQLite, the
same refusal of a stale plan, and the human gate held by the database for an agent's login."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_adr_import import kernel_view

from ctx_kernel.kernel import Ctx, clock
from ctx_kernel.kernel.errors import StalePlanError
from ctx_kernel.kernel.store.postgres import roles
from ctx_kernel.kernel.store.postgres.store import NO_VAULT


@pytest.fixture
def store_url(pg_empty) -> str:
    """An empty database's URL; the tests create the store in it with `ctx init`."""
    return pg_empty.url()


def test_init_log_propose_ratify_reject_history_and_verify(store_url: str, cli, monkeypatch) -> None:
    def ctx(*args: str) -> str:
        result = cli("--db", store_url, *args, db=False)
        assert result.code == 0, result.err
        return result.out

    assert ctx("init").startswith("created postgresql://")
    assert ctx("init").startswith("already present, schema up to date: postgresql://")
    cited = ctx("log", "We benchmarked PostgreSQL for the team store").strip()
    first = json.loads(
        ctx(
            "propose", "--subject", "db.engine", "--decision", "Use PostgreSQL", "--evidence", cited, "--json"
        )
    )
    ratified = json.loads(ctx("ratify", first["id"], "--yes", "--json"))
    # On a server every act is the login's: the administrator's here.
    assert ratified["decision"]["ratified_by"] == "postgres"
    old_id = ratified["decision"]["id"]
    rejected = json.loads(ctx("propose", "--subject", "db.engine", "--decision", "Use SQLite", "--json"))
    ctx("reject", rejected["id"], "--reason", "one file cannot be shared", "--reviewer", "postgres", "--yes")
    # CTX_DB names the store as well as --db does.
    monkeypatch.setenv("CTX_DB", store_url)
    newer = json.loads(
        cli("propose", "--subject", "db.engine", "--decision", "Use PostgreSQL 18", "--json", db=False).out
    )
    assert cli("ratify", newer["id"], "--yes", db=False).code == 0

    current = json.loads(ctx("decisions", "--json"))["decisions"]
    assert [(d["subject"], d["decision"]) for d in current] == [("db.engine", "Use PostgreSQL 18")]
    assert current[0]["supersedes"] == [old_id]
    history = json.loads(ctx("history", "db.engine", "--json"))["decisions"]
    assert [d["decision"] for d in history] == ["Use PostgreSQL", "Use PostgreSQL 18"]
    assert history[0]["valid_until"] == history[1]["valid_from"]
    assert json.loads(ctx("queue", "--json"))["proposals"] == []
    verified = ctx("audit", "verify")
    assert verified.startswith("audit chain ok: 8 rows")


def test_encryption_is_refused_in_one_line_saying_why(store_url: str, cli) -> None:
    assert cli("--db", store_url, "init", db=False).code == 0
    for command in (["encrypt"], ["rekey"], ["init", "--encrypt"]):
        result = cli("--db", store_url, *command, db=False)
        assert result.code == 1, command
        assert result.err.strip() == f"ctx: error: {NO_VAULT}"
    assert cli("--db", store_url, "log", "still plain", db=False).code == 0


def test_a_stale_plan_is_refused_on_postgresql_as_on_sqlite(store_url: str) -> None:
    kernel, created = Ctx.init(store_url, embedder=None)
    assert created
    with kernel:
        kernel.ratify(kernel.propose("auth.tokens", "Use JWT").id, reviewer="carol")
        mine = kernel.propose("auth.tokens", "Use opaque ids in Redis")
        shown = kernel.plan_ratification(mine.id)
        assert [c.decision.decision for c in shown.closes] == ["Use JWT"]
        # A second reviewer, on another connection, ratifies a decision on the same subject first.
        with Ctx.open(store_url, embedder=None) as other:
            winner = other.ratify(other.propose("auth.tokens", "Use PASETO v4").id, reviewer="bob", settle=[])
        audit_rows = len(list(kernel.store.audit_rows()))
        with pytest.raises(StalePlanError) as stale:
            kernel.ratify(shown, reviewer="alice")
        assert winner.decision.id in stale.value.message and "bob" in stale.value.message
        assert len(list(kernel.store.audit_rows())) == audit_rows
        assert kernel.proposal(mine.id).status == "pending"
        again = kernel.plan_ratification(mine.id)
        assert kernel.ratify(again, reviewer="alice").superseded == [winner.decision.id]


def test_an_agent_login_proposes_but_the_database_refuses_its_ratification(pg, cli) -> None:
    Ctx.init(pg.url(), embedder=None)[0].close()
    agent = pg.url(roles.AGENT)
    cited = cli("--db", agent, "log", "the agent read the benchmark", db=False)
    assert cited.code == 0, cited.err
    queued = cli(
        "--db", agent, "propose", "--subject", "db.engine", "--decision", "Use PostgreSQL", "--json", db=False
    )
    assert queued.code == 0, queued.err
    proposal_id = json.loads(queued.out)["id"]
    refused = cli("--db", agent, "ratify", proposal_id, "--yes", db=False)
    assert refused.code == 1 and refused.out == ""
    assert refused.err.count("\n") == 1 and "may not do that" in refused.err
    assert pg.cluster.logins[roles.AGENT][1] not in refused.err
    reviewer = pg.url(roles.REVIEWER)
    assert cli("--db", reviewer, "ratify", proposal_id, "--yes", db=False).code == 0
    assert cli("--db", agent, "audit", "verify", db=False).code == 0


def test_an_auditor_login_reads_and_every_write_is_one_line(pg, cli) -> None:
    kernel, _ = Ctx.init(pg.url(), embedder=None)
    with kernel:
        kernel.ratify(kernel.propose("db.engine", "Use PostgreSQL").id, reviewer="alice")
    auditor = pg.url(roles.AUDITOR)
    shown = cli("--db", auditor, "decisions", db=False)
    assert shown.code == 0 and "Use PostgreSQL" in shown.out
    assert cli("--db", auditor, "audit", "verify", db=False).code == 0
    for command in (["log", "an auditor writes nothing"], ["propose", "--subject", "a.b", "--decision", "x"]):
        refused = cli("--db", auditor, *command, db=False)
        assert refused.code == 1 and refused.out == "", command
        assert refused.err.count("\n") == 1 and "may not do that" in refused.err
        assert "Traceback" not in refused.err


def test_ctx_log_and_propose_on_postgresql_load_neither_alembic_nor_sqlalchemy(pg) -> None:
    Ctx.init(pg.url(), embedder=None)[0].close()
    code = (
        "import sys\n"
        "from ctx_kernel.kernel.hosts.cli import main\n"
        "for argv in (['log', 'a hot path'], ['propose', '--subject', 'a.b', '--decision', 'x']):\n"
        "    try:\n"
        "        main(['--db', sys.argv[1], *argv])\n"
        "    except SystemExit as exc:\n"
        "        assert not exc.code, exc.code\n"
        "heavy = ('sqlalchemy', 'alembic', 'sqlmodel', 'pydantic', 'fastembed', 'mcp', 'textual')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, pg.url()], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


ADRS = Path(__file__).resolve().parent.parent / "data" / "adr"


@pytest.mark.parametrize("style", ["nygard", "madr"])
def test_an_adr_import_builds_the_same_kernel_as_on_sqlite(
    pg, tmp_path: Path, style: str, monkeypatch
) -> None:
    # A superseded ADR that nothing replaces is retired now: the same moment on both stores.
    monkeypatch.setattr(clock, "now", lambda: "2026-06-01T00:00:00.000000Z")
    views = []
    for location in (tmp_path / "ctx.db", pg.url()):
        kernel, _ = Ctx.init(location, embedder=None)
        with kernel:
            report = kernel.import_adrs(ADRS / style, reviewer="alice")
            assert report.decisions
            again = kernel.import_adrs(ADRS / style, reviewer="alice")
            assert again.decisions == [] and again.proposals == []
            assert kernel.audit.verify(state=True).ok
            views.append(
                (
                    kernel_view(kernel),
                    sorted((p.subject, p.status) for p in kernel.store.list_proposals(status=None)),
                )
            )
    assert views[0] == views[1]


def test_on_a_server_every_act_is_the_logins_and_another_name_is_refused(pg, cli) -> None:
    """A reviewer cannot ratify in another's name, nor an agent propose, log or withdraw as another."""
    Ctx.init(pg.url(), embedder=None)[0].close()
    agent, reviewer = pg.url(roles.AGENT), pg.url(roles.REVIEWER)
    agent_login, reviewer_login = pg.cluster.logins[roles.AGENT][0], pg.cluster.logins[roles.REVIEWER][0]

    def one_line_refusal(*args: str, db: str) -> str:
        done = cli("--db", db, *args, db=False)
        assert done.code == 1 and done.out == "" and done.err.count("\n") == 1, done
        assert "Traceback" not in done.err
        return done.err

    for args in (
        ("propose", "--subject", "db.engine", "--decision", "Use PostgreSQL", "--agent", reviewer_login),
        ("log", "a note in another's name", "--agent", "alice"),
    ):
        assert f"you act as your login '{agent_login}'" in one_line_refusal(*args, db=agent)
    queued = cli(
        "--db", agent, "propose", "--subject", "db.engine", "--decision", "Use PostgreSQL", "--json", db=False
    )
    mine = json.loads(queued.out)
    assert mine["proposer"] == agent_login
    err = one_line_refusal("ratify", mine["id"], "--yes", "--reviewer", "bob", db=reviewer)
    assert f"you act as your login '{reviewer_login}', not as the reviewer 'bob'" in err
    theirs = json.loads(
        cli(
            "--db",
            reviewer,
            "propose",
            "--subject",
            "ci.cache",
            "--decision",
            "Cache pip",
            "--json",
            db=False,
        ).out
    )
    assert theirs["proposer"] == reviewer_login
    one_line_refusal("withdraw", theirs["id"], db=agent)
    ratified = json.loads(cli("--db", reviewer, "ratify", mine["id"], "--yes", "--json", db=False).out)
    assert ratified["decision"]["ratified_by"] == reviewer_login
    withdrawn = cli("--db", reviewer, "withdraw", theirs["id"], "--json", db=False)
    assert json.loads(withdrawn.out)["resolved_by"] == reviewer_login
    with pg.connect() as owner:
        actors = owner.execute("SELECT action, actor FROM audit ORDER BY seq").fetchall()
    assert actors == [
        ("proposal.created", agent_login),
        ("proposal.created", reviewer_login),
        ("proposal.ratified", reviewer_login),
        ("proposal.withdrawn", reviewer_login),
    ]
    assert cli("--db", agent, "audit", "verify", db=False).code == 0
