"""A team on one PostgreSQL store: `ctx init --db URL` names it in the project's config for
everyone, `ctx admin grant-* --run` gives logins their roles, and an agent's login cannot ratify
through ctx itself (a separate process, as an agent's shell runs it)."""

from __future__ import annotations

import json
import secrets
import tomllib
from pathlib import Path

import pytest
from psycopg import sql

from ctx_kernel.kernel import Ctx, team
from ctx_kernel.kernel.errors import StoreError
from ctx_kernel.kernel.store.postgres import roles
from tests.conftest import run_ctx_process


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def with_password(url: str, password: str) -> str:
    scheme, rest = url.split("://", 1)
    user, at, host = rest.partition("@")
    return f"{scheme}://{user}:{password}@{host}" if at else url


def test_init_names_the_store_in_the_project_config_without_user_or_password(
    cli, pg_empty, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = with_password(pg_empty.url(), "never-kept-pw")
    created = cli("--db", url, "init", db=False)
    assert created.code == 0, created.err
    assert "never-kept-pw" not in created.out + created.err
    config = project / ".ctx" / "config.toml"
    named = tomllib.loads(config.read_text(encoding="utf-8"))["db"]
    assert named.startswith("postgresql:///") and pg_empty.name in named
    assert "never-kept-pw" not in config.read_text() and "postgres@" not in named
    assert "!config.toml" in (project / ".ctx" / ".gitignore").read_text()
    assert "PGPASSWORD" in created.err and "commit it" in created.err
    # A teammate's command anywhere in the project finds the store and connects with the libpq
    # environment (PGUSER, PGPASSWORD, ~/.pgpass, PGSERVICE); ctx init again changes nothing.
    monkeypatch.setenv("PGUSER", pg_empty.url().split("://", 1)[1].split("@", 1)[0])
    monkeypatch.chdir(project / "src")
    logged = cli("log", "found through the project config", db=False)
    assert logged.code == 0, logged.err
    assert cli("path", db=False).out.strip() == named
    monkeypatch.chdir(project)
    again = cli("init", db=False)
    assert again.code == 0 and again.out.startswith("already present"), again
    assert config.read_text().count("db = ") == 1
    # The project config never moves to another store silently, and the server is not touched.
    other = cli("--db", pg_empty.url().replace(pg_empty.name, "elsewhere"), "init", db=False)
    assert other.code == 2 and other.err.count("\n") == 1 and "already names another store" in other.err


def test_admin_runs_the_grants_as_the_owner_and_an_agent_cannot_grant(cli, pg, project: Path) -> None:
    login = f'team mate "{secrets.token_hex(3)}"; DROP TABLE audit; --'
    owner = pg.url()
    try:
        made = cli("--db", owner, "admin", "grant-agent", login, "--run", "--create-login", db=False)
        assert made.code == 0, made.err
        assert "is now an agent" in made.out
        with pg.connect(autocommit=True) as conn:
            assert conn.execute("SELECT to_regclass('audit')").fetchone() != (None,)
            promoted = cli("--db", owner, "admin", "grant-reviewer", login, "--run", db=False)
            assert promoted.code == 0, promoted.err
            groups = conn.execute(
                "SELECT array_agg(g.rolname::text) FROM pg_auth_members m JOIN pg_roles g "
                "ON g.oid = m.roleid JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = %s",
                (login,),
            ).fetchone()[0]
            assert groups == [roles.REVIEWER]
        again = cli("--db", owner, "admin", "grant-agent", login, "--run", "--create-login", db=False)
        assert again.code == 1 and again.err.count("\n") == 1 and "exists already" in again.err
        missing = cli("--db", owner, "admin", "grant-agent", "nobody_here", "--run", db=False)
        assert missing.code == 1 and "no role 'nobody_here' on the server" in missing.err
        # An agent's login may not hand out roles: the server refuses, one line, no password.
        agent = pg.url(roles.AGENT)
        refused = cli(
            "--db", agent, "admin", "grant-reviewer", "nobody_here", "--run", "--create-login", db=False
        )
        assert refused.code == 1 and refused.out == "" and refused.err.count("\n") == 1
        assert "refused the grant" in refused.err and pg.cluster.logins[roles.AGENT][1] not in refused.err
    finally:
        with pg.connect(autocommit=True) as conn:
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(login)))


def test_an_agent_login_proposes_but_cannot_ratify_through_ctx(pg, tmp_path: Path) -> None:
    """`ctx ratify` run by an agent's shell with the agent's login: refused by the database."""
    owner = pg.url()
    assert run_ctx_process("--db", owner, "init", cwd=tmp_path).returncode == 0
    login, password = pg.cluster.logins[roles.AGENT]
    agent = pg.url().replace(pg.url().split("://", 1)[1].split("@", 1)[0] + "@", f"{login}@", 1)
    env = {"PGPASSWORD": password, "CTX_CONFIG_DIR": str(tmp_path / "config")}
    proposed = run_ctx_process(
        "--db",
        agent,
        "propose",
        "--subject",
        "db.engine",
        "--decision",
        "Use PostgreSQL",
        env=env,
        cwd=tmp_path,
    )
    assert proposed.returncode == 0, proposed.stderr.decode()
    proposal_id = proposed.stdout.decode().strip()
    ratify = run_ctx_process("--db", agent, "ratify", proposal_id, "--yes", env=env, cwd=tmp_path)
    err = ratify.stderr.decode()
    assert ratify.returncode == 1 and ratify.stdout == b""
    assert err.count("\n") == 1 and err.startswith("ctx: error: ") and "Traceback" not in err
    assert "may not do that" in err and password not in err
    for act in (("reject", proposal_id, "--reason", "no"), ("retire", "db.engine", "--reason", "no")):
        refused = run_ctx_process("--db", agent, *act, "--yes", env=env, cwd=tmp_path)
        assert refused.returncode != 0 and refused.stderr.decode().count("\n") == 1
    shown = run_ctx_process("--db", owner, "show", proposal_id, "--json", cwd=tmp_path)
    assert json.loads(shown.stdout)["record"]["status"] == "pending"
    verified = run_ctx_process("--db", owner, "audit", "verify", cwd=tmp_path)
    assert verified.returncode == 0, verified.stderr.decode()


def test_a_login_created_with_a_password_connects_with_it_and_the_server_keeps_a_hash(pg) -> None:
    if not pg.cluster.checks_passwords:
        pytest.skip("this server does not check passwords")
    login = f"dev_{secrets.token_hex(3)}"
    try:
        with Ctx.open(pg.url(), embedder=None) as admin:
            team.grant(admin.store, "reviewer", login, create_login=True, password="correct horse battery")
        with pg.connect(autocommit=True) as owner:
            stored = owner.execute(
                "SELECT rolpassword FROM pg_authid WHERE rolname = %s", (login,)
            ).fetchone()[0]
        assert stored.startswith("SCRAM-SHA-256$") and "correct horse" not in stored
        url = pg.url().replace(pg.url().split("://", 1)[1].split("@", 1)[0] + "@", f"{login}@", 1)
        with pytest.raises(StoreError, match="password authentication failed"):
            Ctx.open(url.replace(f"{login}@", f"{login}:wrong@", 1), embedder=None)
        with Ctx.open(
            url.replace(f"{login}@", f"{login}:correct%20horse%20battery@", 1), embedder=None
        ) as alice:
            alice.ratify(alice.propose("db.engine", "Use PostgreSQL").id, reviewer=login)
    finally:
        with pg.connect(autocommit=True) as owner:
            owner.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(login)))
            owner.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(login)))


def test_the_hooks_and_mcp_find_the_team_store_through_the_project_config(
    pg, cli, project: Path, tmp_path: Path, model_cache: Path
) -> None:
    """Nothing names the store but the committed .ctx/config.toml; agents connect as their login."""
    from mcp import StdioServerParameters

    from tests.mcp_support import CTX, Agent

    assert cli("--db", pg.url(), "init", db=False).code == 0
    with Ctx.open(pg.url(), embedder=None) as owner:
        owner.ratify(owner.propose("db.engine", "Use PostgreSQL for the team store").id, reviewer="alice")
    login, password = pg.cluster.logins[roles.AGENT]
    agent_env = {"PGUSER": login, "PGPASSWORD": password, "CTX_CONFIG_DIR": str(tmp_path / "config")}
    payload = json.dumps({"hook_event_name": "SessionStart", "cwd": str(project / "src")}).encode()
    hook = run_ctx_process("hook", "session-start", env=agent_env, stdin=payload, cwd=tmp_path)
    assert hook.returncode == 0, hook.stderr.decode()
    assert "Use PostgreSQL for the team store" in hook.stdout.decode()
    params = StdioServerParameters(
        command=CTX,
        args=["mcp"],
        env={**agent_env, "CTX_CACHE_DIR": str(model_cache)},
        cwd=project / "src",
    )
    with (tmp_path / "mcp.err").open("w") as errlog, Agent(params, errlog) as agent:
        result = agent.call_json(
            "propose_decision", {"subject": "ci.cache", "decision": "Cache pip downloads"}
        )
        assert not result.is_error, result.content
        proposed = result.structured_content
        assert proposed is not None
    assert "Traceback" not in (tmp_path / "mcp.err").read_text()
    with Ctx.open(pg.url(), embedder=None) as owner:
        assert owner.proposal(proposed["id"]).status == "pending"
