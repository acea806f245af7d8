"""Every command an agent, a reviewer and an auditor runs, as each one's login on a real server.

What a role's job needs works; what it must not do is refused by the database in one line on
standard error, exit 1, nothing on standard output, and nothing written (every table as it was,
no file beside it). The guide's "A team on PostgreSQL" (docs/guide.md) holds the same table in words.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp_support import Agent, server_params
from psycopg import sql

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.store.postgres import connection, roles

AGENT, REVIEWER, AUDITOR = roles.AGENT, roles.REVIEWER, roles.AUDITOR
EVERYONE = frozenset(roles.GROUPS)
WRITERS = frozenset({AGENT, REVIEWER})
SIGNERS = frozenset({REVIEWER, AUDITOR})
PASSPHRASE = "a long passphrase for the role tests"


@dataclass(frozen=True)
class World:
    """The owner's store: evidence, current decisions and pending proposals on separate subjects."""

    evidence: str
    pending: dict[str, str]
    transcript: Path


@pytest.fixture
def world(pg, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.setenv("CTX_VECTORS", "off")  # vectors have their own test below
    monkeypatch.setenv("CTX_KEY_PASSPHRASE", PASSPHRASE)
    kernel, _ = Ctx.init(pg.url(), embedder=None)
    with kernel:
        cited = kernel.log("Redis already runs in production", agent="claude").id
        cache = kernel.propose("cache.backend", "Use `redis` for the HTTP response cache.", evidence=[cited])
        kernel.ratify(cache.id, reviewer="alice")
        kernel.ratify(kernel.propose("ops.vacuum", "Run the nightly vacuum job").id, reviewer="alice")
        pending = {
            "ratify": kernel.propose("ci.provider", "Build on GitHub Actions").id,
            "edit": kernel.propose("docs.format", "Write documentation in Markdown").id,
            "reject": kernel.propose("queue.broker", "Adopt RabbitMQ for background jobs").id,
            "withdraw": kernel.propose("api.style", "Version the public API in the URL path").id,
        }
    transcript = tmp_path / "session.jsonl"
    turn = {
        "type": "user",
        "message": {"role": "user", "content": "Why does the cache miss after a deploy?"},
        "sessionId": "s-roles",
        "uuid": "u-1",
        "timestamp": "2026-01-02T03:04:05Z",
    }
    transcript.write_text(json.dumps(turn) + "\n", encoding="utf-8")
    return World(cited, pending, transcript)


@dataclass(frozen=True)
class Command:
    argv: Callable[[World, Path], list[str]]
    allowed: frozenset[str]
    stdin: Callable[[World], bytes] = lambda _: b""


PERSON = ["--yes"]  # on a server the reviewer is the login
COMMANDS: dict[str, Command] = {
    "log": Command(lambda w, _: ["log", "the deploy flushed the cache"], WRITERS),
    "propose": Command(
        lambda w, _: ["propose", "--subject", "db.engine", "--decision", "Use PostgreSQL"], WRITERS
    ),
    # The owner's proposal: an agent's login withdraws only its own (test_pg_cli withdraws one).
    "withdraw": Command(lambda w, _: ["withdraw", w.pending["withdraw"]], frozenset({REVIEWER})),
    "queue": Command(lambda w, _: ["queue"], EVERYONE),
    "recall": Command(lambda w, _: ["recall", "redis cache"], EVERYONE),
    "search": Command(lambda w, _: ["search", "redis"], EVERYONE),
    "inject": Command(lambda w, _: ["inject", "--query", "cache"], EVERYONE),
    "show": Command(lambda w, _: ["show", w.evidence], EVERYONE),
    "decisions": Command(lambda w, _: ["decisions"], EVERYONE),
    "history": Command(lambda w, _: ["history", "cache.backend"], EVERYONE),
    "status": Command(lambda w, _: ["status"], EVERYONE),
    "doctor": Command(lambda w, _: ["doctor"], EVERYONE),
    "ratify": Command(lambda w, _: ["ratify", w.pending["ratify"], *PERSON], frozenset({REVIEWER})),
    "edit-and-ratify": Command(
        lambda w, _: ["ratify", w.pending["edit"], *PERSON, "--decision", "Write documentation in AsciiDoc"],
        frozenset({REVIEWER}),
    ),
    "reject": Command(
        lambda w, _: ["reject", w.pending["reject"], "--reason", "one broker is enough", *PERSON],
        frozenset({REVIEWER}),
    ),
    "retire": Command(
        lambda w, _: ["retire", "ops.vacuum", "--reason", "autovacuum does it", *PERSON],
        frozenset({REVIEWER}),
    ),
    "audit verify": Command(lambda w, _: ["audit", "verify"], EVERYONE),
    "audit export": Command(lambda w, tmp: ["audit", "export", "--out", str(tmp / "audit.jsonl")], SIGNERS),
    "audit checkpoint": Command(lambda w, _: ["audit", "checkpoint"], SIGNERS),
    "ingest transcript": Command(lambda w, _: ["ingest", "transcript", str(w.transcript)], WRITERS),
    "hook session-start": Command(
        lambda w, _: ["hook", "session-start"], EVERYONE, lambda w: b'{"session_id": "s-roles"}'
    ),
    "hook session-end": Command(
        lambda w, _: ["hook", "session-end"],
        WRITERS,
        lambda w: json.dumps({"session_id": "s-roles", "transcript_path": str(w.transcript)}).encode(),
    ),
    "reindex": Command(lambda w, _: ["reindex"], frozenset()),
}


def tables(pg) -> dict[str, Any]:
    """Every ctx table's rows, read as the owner: what a refused command must leave as it was."""
    with pg.connect(autocommit=True) as owner:
        return {
            table: sorted(
                map(str, owner.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table))).fetchall())
            )
            for table in roles.TABLES
        }


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "keys" not in p.parts)


@pytest.mark.parametrize("role", roles.GROUPS)
@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_role_can_do_its_whole_job_and_the_database_refuses_the_rest(
    pg, world: World, cli, tmp_path: Path, role: str, name: str
) -> None:
    command = COMMANDS[name]
    login = pg.url(role)
    assert cli("--db", login, "keys", "init", db=False).code == 0
    argv = command.argv(world, tmp_path)
    before, files_before = tables(pg), files_under(tmp_path)
    done = cli("--db", login, *argv, stdin=command.stdin(world), db=False)
    assert "Traceback" not in done.err
    assert pg.cluster.logins[role][1] not in done.out + done.err  # the login's password
    if role in command.allowed:
        assert done.code == 0, done.err
        return
    assert done.code == 1, (done.out, done.err)
    assert done.out == ""
    assert done.err.count("\n") == 1 and done.err.startswith("ctx: error: "), done.err
    if name == "reindex":  # refused before the database is asked: see the test below
        assert "only their owner may do" in done.err, done.err
    else:
        assert "may not do that" in done.err, done.err
    assert tables(pg) == before
    assert files_under(tmp_path) == files_before


def test_reindex_names_the_owner_and_the_login_and_changes_nothing(pg, world: World, cli) -> None:
    with pg.connect(autocommit=True) as owner:
        name = owner.execute("SELECT current_user").fetchone()[0]
    for role in roles.GROUPS:
        login = pg.cluster.logins[role][0]
        refused = cli("--db", pg.url(role), "reindex", db=False)
        assert refused.err.strip() == (
            "ctx: error: `ctx reindex` alters and rebuilds the store's tables, which on a server only "
            f"their owner may do: ask {name} (the administrator) to run it; this login, {login}, is a {role}"
        )


def test_a_reviewers_ratification_records_its_conflicts_as_the_owners_does(pg, cli, tmp_path: Path) -> None:
    """p001 gave the reviewer INSERT on decision_conflict but not the UPDATE its upsert needs, so a
    ratification that contradicted a current decision was refused whole; recall showed no conflict."""
    views = []
    for location, ratifier in ((str(tmp_path / "ctx.db"), None), (pg.url(), REVIEWER)):
        Ctx.init(location, embedder=None)[0].close()
        reviewer = location if ratifier is None else pg.url(ratifier)
        agent = location if ratifier is None else pg.url(AGENT)
        ids = []
        for subject, text in (
            ("cache.backend", "Use `redis` for the HTTP response cache."),
            ("infra.datastores", "Never use redis in production; remove it from the stack."),
        ):
            proposed = cli("--db", agent, "propose", "--subject", subject, "--decision", text, db=False)
            assert proposed.code == 0, proposed.err
            person = PERSON if ratifier else [*PERSON, "--reviewer", "alice"]
            ratified = cli("--db", reviewer, "ratify", proposed.out.strip(), *person, "--json", db=False)
            assert ratified.code == 0, ratified.err
            ids.append(json.loads(ratified.out)["decision"]["id"])
        recalled = cli("--db", reviewer, "recall", "redis", "--mode", "keyword", "--json", db=False)
        assert recalled.code == 0, recalled.err
        hits = {hit["id"]: hit for hit in json.loads(recalled.out)["decisions"]}
        views.append(
            [[(c["subject"], c["why"]) for c in hits[decision_id]["conflicts"]] for decision_id in ids]
        )
        assert cli("--db", reviewer, "audit", "verify", db=False).code == 0
    assert views[0] == views[1]
    assert views[1][0] and views[1][1], views


def test_the_owners_init_chooses_the_model_so_an_agents_login_embeds_what_it_logs(
    pg_empty, cli, real_model, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = cli("--db", pg_empty.url(), "init", db=False)
    assert created.code == 0, created.err
    status = json.loads(cli("--db", pg_empty.url(), "status", "--json", db=False).out)
    assert status["vector_model"] is not None, status
    with pg_empty.connect(autocommit=True) as owner:
        for statement in roles.grant_agent(pg_empty.cluster.logins[AGENT][0]):
            owner.execute(statement)
    agent = pg_empty.url(AGENT)
    logged = cli("--db", agent, "log", "The deploy script flushes every cache node at once", db=False)
    assert logged.code == 0, logged.err
    found = cli(
        "--db",
        agent,
        "recall",
        "why are caches empty after shipping?",
        "--mode",
        "vector",
        "--json",
        db=False,
    )
    assert found.code == 0, found.err
    answer = json.loads(found.out)
    assert answer["vectors"]["state"] == "on", answer["vectors"]
    assert [hit["id"] for hit in answer["evidence"]][:1] == [logged.out.strip()]
    with pg_empty.connect(autocommit=True) as owner:
        assert owner.execute("SELECT count(*) FROM evidence_vector").fetchone()[0] >= 1


def test_a_login_in_no_group_is_told_so_in_one_line(pg, cli) -> None:
    Ctx.init(pg.url(), embedder=None)[0].close()
    with pg.connect(autocommit=True) as owner:
        login = pg.cluster.logins[AUDITOR][0]
        owner.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(AUDITOR), sql.Identifier(login)))
    try:
        checked = cli("--db", pg.url(AUDITOR), "doctor", "--json", db=False)
        refused = cli("--db", pg.url(AUDITOR), "decisions", db=False)
    finally:
        with pg.connect(autocommit=True) as owner:
            for statement in roles.grant_auditor(login):
                owner.execute(statement)
    report = json.loads(checked.out)
    assert checked.code == 1 and not report["ok"]
    store = next(c for c in report["checks"] if c["name"] == "store")
    assert not store["ok"] and "this login is in no ctx group" in store["detail"], store
    assert refused.code == 1 and refused.err.count("\n") == 1 and "in no ctx group" in refused.err


@pytest.mark.parametrize("role", roles.GROUPS)
def test_doctor_checks_the_server_not_the_sqlite_driver(pg, cli, role: str, monkeypatch) -> None:
    monkeypatch.setenv("CTX_VECTORS", "off")
    Ctx.init(pg.url(), embedder=None)[0].close()
    checked = cli("--db", pg.url(role), "doctor", "--json", db=False)
    assert checked.code == 0, checked.out
    checks = {c["name"]: c for c in json.loads(checked.out)["checks"]}
    assert "driver" not in checks
    assert checks["server"]["detail"].startswith("PostgreSQL 1")
    assert [part.split()[0] for part in checks["extensions"]["detail"].split(", ")] == [
        "vector",
        "pg_trgm",
        "btree_gist",
    ]
    assert checks["role"]["detail"].startswith(f"{pg.cluster.logins[role][0]} is a {role}: ")
    assert checks["integrity"]["detail"] == "invariant check passed"


@pytest.mark.parametrize(("role", "writes"), [(AGENT, True), (AUDITOR, False)])
def test_mcp_tools_as_an_agents_and_an_auditors_login(
    pg, tmp_path: Path, model_cache: Path, role: str, writes: bool
) -> None:
    Ctx.init(pg.url(), embedder=None)[0].close()
    env = {
        "CTX_CONFIG_DIR": str(tmp_path / "config"),
        "CTX_CACHE_DIR": str(model_cache),
        "CTX_VECTORS": "off",
    }
    before = tables(pg)
    errlog_path = tmp_path / "stderr.txt"
    with (
        errlog_path.open("w", encoding="utf-8") as errlog,
        Agent(server_params(pg.url(role), env), errlog) as agent,
    ):
        logged = agent.call_json("log_evidence", {"text": "the cache misses after a deploy"})
        proposed = agent.call_json(
            "propose_decision", {"subject": "cache.warmup", "decision": "Warm the cache"}
        )
        for result in (logged, proposed):
            assert result.is_error is not writes, result.content
        if not writes:
            assert all("may not do that" in c.text for c in logged.content + proposed.content)
            assert tables(pg) == before
        else:
            pid = proposed.structured_content["id"]
            withdrawn = agent.call_json("withdraw_proposal", {"id": pid, "reason": "not yet"})
            assert not withdrawn.is_error, withdrawn.content
        for tool, arguments in (
            ("recall", {"query": "cache deploy"}),
            ("list_decisions", {}),
            ("list_pending", {}),
            ("inject_context", {}),
        ):
            read = agent.call_json(tool, arguments)
            assert not read.is_error, (tool, read.content)
    assert "Traceback" not in errlog_path.read_text(encoding="utf-8")


def test_a_p001_store_is_upgraded_by_its_owner_only_and_then_a_reviewer_records_conflicts(
    pg_empty, cli
) -> None:
    from ctx_kernel.kernel.store.postgres import migrate

    migrate.upgrade(pg_empty.url(), "p001_initial")
    with pg_empty.connect(autocommit=True) as owner:
        for statement in roles.grant_agent(pg_empty.cluster.logins[AGENT][0]):
            owner.execute(statement)
    refused = cli("--db", pg_empty.url(AGENT), "init", db=False)
    assert refused.code == 1 and refused.out == "" and refused.err.count("\n") == 1, refused.err
    assert "must be owner" in refused.err
    with pg_empty.connect(autocommit=True) as owner:
        assert owner.execute("SELECT version_num FROM alembic_version").fetchone() == ("p001_initial",)
    upgraded = cli("--db", pg_empty.url(), "init", db=False)
    assert upgraded.code == 0, upgraded.err
    with pg_empty.connect(autocommit=True) as owner:
        version = owner.execute("SELECT version_num FROM alembic_version").fetchone()
        assert version == (connection.HEAD_REVISION,)
        for statement in roles.grant_reviewer(pg_empty.cluster.logins[REVIEWER][0]):
            owner.execute(statement)
    reviewer = pg_empty.url(REVIEWER)
    for subject, text in (
        ("cache.backend", "Use `redis` for the HTTP response cache."),
        ("infra.datastores", "Never use redis in production; remove it from the stack."),
    ):
        proposed = cli("--db", reviewer, "propose", "--subject", subject, "--decision", text, db=False)
        assert cli("--db", reviewer, "ratify", proposed.out.strip(), *PERSON, db=False).code == 0
    with pg_empty.connect(autocommit=True) as owner:
        assert owner.execute("SELECT count(*) FROM decision_conflict").fetchone() == (2,)


def test_doctor_names_a_login_that_reads_by_direct_grants_but_is_in_no_group(pg, cli, monkeypatch) -> None:
    monkeypatch.setenv("CTX_VECTORS", "off")
    Ctx.init(pg.url(), embedder=None)[0].close()
    login = pg.cluster.logins[AUDITOR][0]
    with pg.connect(autocommit=True) as owner:
        owner.execute(sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(AUDITOR), sql.Identifier(login)))
        owner.execute(
            sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(sql.Identifier(login))
        )
    try:
        checked = cli("--db", pg.url(AUDITOR), "doctor", "--json", db=False)
    finally:
        with pg.connect(autocommit=True) as owner:
            owner.execute(
                sql.SQL("REVOKE SELECT ON ALL TABLES IN SCHEMA public FROM {}").format(sql.Identifier(login))
            )
            for statement in roles.grant_auditor(login):
                owner.execute(statement)
    role = next(c for c in json.loads(checked.out)["checks"] if c["name"] == "role")
    assert checked.code == 1 and not role["ok"], role
    assert role["detail"].startswith(f"{login} is in none of ctx_agent, ctx_reviewer, ctx_auditor")
    assert role["fix"].endswith(f"GRANT {AGENT} TO {login}")


@pytest.mark.parametrize("role", roles.GROUPS)
def test_after_the_conflict_rules_change_every_role_still_reads_what_was_recorded(
    pg, world: World, cli, role: str
) -> None:
    """Detecting conflicts again by new rules clears the table, which only the owner may do (at
    `ctx reindex`); until then every login answers with the conflicts recorded."""
    with pg.connect(autocommit=True) as owner:
        owner.execute("UPDATE meta SET value = 'an older rules version' WHERE key = 'conflict_rules'")
    before = tables(pg)
    for argv in (["inject"], ["recall", "redis"], ["hook", "session-start"]):
        done = cli("--db", pg.url(role), *argv, db=False)
        assert done.code == 0 and "error" not in done.err, (argv, done.err)
    assert tables(pg) == before
