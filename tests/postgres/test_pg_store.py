"""The PostgreSQL store through its public surfaces: opened by URL, one writer at a time, a
dropped connection survived, and every refusal one line that never shows a password."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.errors import RefusedError, StoreError
from ctx_kernel.kernel.store import create_store, open_store
from ctx_kernel.kernel.store.postgres import connection, migrate, roles, schema
from tests.backend.support import evidence, proposal

PASSWORD_PLACEHOLDER = "hunter2-never-shown"
HEAD = connection.HEAD_REVISION


def _without_password(url: str, password: str) -> str:
    return url.replace(f":{password}@", "@")


def _one_line(message: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message


@pytest.fixture
def libpq_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No password reaches libpq but the one a test gives (no ~/.pgpass, no PGPASSWORD)."""
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "no-pgpass"))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.delenv("PGSERVICE", raising=False)
    return monkeypatch


def test_a_url_without_a_password_connects_with_pgpassword(pg, libpq_env) -> None:
    if not pg.cluster.checks_passwords:
        pytest.skip("the server under test does not check passwords")
    login, password = pg.cluster.logins[roles.REVIEWER]
    url = _without_password(pg.url(roles.REVIEWER), password)
    assert password not in url
    with pytest.raises(StoreError) as refused:
        open_store(url)
    _one_line(refused.value.message)
    libpq_env.setenv("PGPASSWORD", password)
    store = open_store(url)
    try:
        assert store.location.startswith(f"postgresql://{login}@") and pg.name in store.location
        assert store.schema_version() == connection.HEAD_VERSION
    finally:
        store.close()


def test_a_pgpass_file_or_a_service_gives_what_the_url_leaves_out(pg, libpq_env, tmp_path: Path) -> None:
    if not pg.cluster.checks_passwords:
        pytest.skip("the server under test does not check passwords")
    login, password = pg.cluster.logins[roles.AUDITOR]
    parts = conninfo_to_dict(pg.uri(roles.AUDITOR))
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"*:*:*:{login}:{password}\n", encoding="utf-8")
    pgpass.chmod(0o600)
    libpq_env.setenv("PGPASSFILE", str(pgpass))
    store = open_store(_without_password(pg.url(roles.AUDITOR), password))
    store.close()
    pgpass.unlink()
    services = tmp_path / "pg_service.conf"
    fields = {"host": parts["host"], "port": parts.get("port"), "dbname": pg.name, "user": login}
    lines = [f"{key}={value}" for key, value in fields.items() if value] + [f"password={password}"]
    services.write_text("[ctxteam]\n" + "\n".join(lines) + "\n", encoding="utf-8")
    libpq_env.setenv("PGSERVICEFILE", str(services))
    store = open_store("postgresql:///?service=ctxteam")
    try:
        assert store.location == "postgresql:///?service=ctxteam"
        assert store.schema_version() == connection.HEAD_VERSION
    finally:
        store.close()


def test_a_wrong_password_is_one_line_that_never_shows_it(pg, libpq_env, cli) -> None:
    if not pg.cluster.checks_passwords:
        pytest.skip("the server under test does not check passwords")
    login, password = pg.cluster.logins[roles.REVIEWER]
    url = pg.url(roles.REVIEWER).replace(f":{password}@", f":{PASSWORD_PLACEHOLDER}@")
    with pytest.raises(StoreError) as refused:
        open_store(url)
    message = refused.value.message
    _one_line(message)
    assert PASSWORD_PLACEHOLDER not in message and pg.name in message and login in message
    result = cli("--db", url, "status", db=False)
    assert result.code == 1 and result.out == ""
    _one_line(result.err.strip())
    assert PASSWORD_PLACEHOLDER not in result.err and "password authentication failed" in result.err


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://ctx:{PASSWORD_PLACEHOLDER}@localhost:notaport/ctx",
        f"postgresql://ctx:{PASSWORD_PLACEHOLDER}@/ctx?sslmode=bogus&host=/nowhere",
        f"postgresql://ctx:{PASSWORD_PLACEHOLDER}@/ctx?host=/nowhere/at/all",
    ],
)
def test_a_bad_url_is_one_line_that_never_shows_its_password(url: str, cli) -> None:
    result = cli("--db", url, "status", db=False)
    assert result.code in (1, 2) and result.out == ""
    _one_line(result.err.strip())
    assert PASSWORD_PLACEHOLDER not in result.err


def _no_password(message: str, database) -> None:
    _one_line(message)
    for _, password in database.cluster.logins.values():
        assert password not in message


def test_an_empty_database_is_not_a_store_until_init(pg_empty) -> None:
    with pytest.raises(StoreError, match=r"no ctx store in .*ctx init --db") as refused:
        open_store(pg_empty.url(roles.REVIEWER))
    _no_password(refused.value.message, pg_empty)
    store = create_store(pg_empty.url())
    try:
        assert store.schema_version() == connection.HEAD_VERSION
        assert store.integrity_check() == "ok"
    finally:
        store.close()


def test_a_database_of_another_application_is_never_touched(pg_empty) -> None:
    with pg_empty.connect(autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    for attempt in (create_store, open_store):
        with pytest.raises(
            StoreError, match="holds other tables but no ctx store: ctx will not touch it"
        ) as refused:
            attempt(pg_empty.url(roles.REVIEWER))
        _no_password(refused.value.message, pg_empty)
    with pg_empty.connect(autocommit=True) as conn:
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    assert tables == [("invoices",)]


@pytest.mark.parametrize(
    ("revision", "says"),
    [
        (
            "p000_before",
            rf"older than this ctx \({HEAD}\): the administrator must run `ctx init --db",
        ),
        ("p999_future", rf"newer than this ctx \({HEAD}\): upgrade ctx"),
        ("4a1b2c3d", "schema of another application"),
    ],
)
def test_opening_never_migrates_a_schema_of_another_version(pg, revision: str, says: str) -> None:
    with pg.connect(autocommit=True) as conn:
        conn.execute("UPDATE alembic_version SET version_num = %s", (revision,))
    with pytest.raises(StoreError, match=says) as refused:
        open_store(pg.url(roles.AGENT))
    _no_password(refused.value.message, pg)
    with pg.connect(autocommit=True) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == (revision,)


def test_two_inits_at_once_create_one_schema(pg_empty) -> None:
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def init() -> None:
        try:
            start.wait()
            Ctx.init(pg_empty.url(), embedder=None)[0].close()
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=init) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    with pg_empty.connect(autocommit=True) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [(HEAD,)]
        assert conn.execute("SELECT count(*) FROM meta WHERE key = 'store_id'").fetchone() == (1,)


def test_writers_queue_so_read_then_write_never_races(pg) -> None:
    first, second = open_store(pg.url()), open_store(pg.url())
    seen: list[str | None] = []

    def increment() -> None:
        with second.transaction():
            seen.append(second.get_meta("counter"))
            second.set_meta("counter", str(int(seen[-1] or 0) + 1))

    try:
        with first.transaction():
            first.set_meta("counter", "1")
            other = threading.Thread(target=increment)
            other.start()
            time.sleep(0.3)
            # The second writer waits for the lock before it reads anything.
            assert other.is_alive() and seen == []
        other.join(timeout=10)
        assert seen == ["1"] and first.get_meta("counter") == "2"
    finally:
        first.close()
        second.close()


def test_a_refused_write_keeps_nothing_and_says_why_in_one_line(pg) -> None:
    store = open_store(pg.url())
    try:
        queued = proposal("db.engine", "Use PostgreSQL")
        with store.transaction():
            store.insert_proposal(queued)
        with pytest.raises(RefusedError, match="resolved once") as refused, store.transaction():
            store.set_meta("during", "the refused transaction")
            store.resolve_proposal(queued.id, "rejected", queued.created_at, "alice", None, None)
            store.resolve_proposal(queued.id, "ratified", queued.created_at, "bob", None, None)
        _one_line(refused.value.message)
        assert store.get_meta("during") is None
        assert store.get_proposal(queued.id).status == "pending"
    finally:
        store.close()


def test_a_dropped_connection_is_reopened_between_transactions(pg) -> None:
    store = open_store(pg.url())
    try:
        logged = evidence("kept across a server restart")
        with store.transaction():
            store.insert_evidence(logged)
        pg.drop_connections()
        assert store.get_evidence(logged.id) == logged
        pg.drop_connections()
        with store.transaction():
            store.set_meta("after", "restart")
        assert store.get_meta("after") == "restart"
        # Inside a transaction the loss ends it, as any failure does: one line, nothing kept.
        with pytest.raises(StoreError) as lost, store.transaction():
            store.set_meta("lost", "yes")
            pg.drop_connections()
            store.set_meta("lost", "still")
        _one_line(lost.value.message)
        assert store.get_meta("lost") is None
    finally:
        store.close()


def test_a_snapshot_reads_one_state_while_another_connection_commits(pg) -> None:
    store, other = open_store(pg.url()), open_store(pg.url())
    try:
        with store.snapshot():
            before = store.evidence_ids()
            with other.transaction():
                other.insert_evidence(evidence("committed meanwhile"))
            assert store.evidence_ids() == before
        assert len(store.evidence_ids()) == len(before) + 1
    finally:
        store.close()
        other.close()


def test_data_version_moves_when_another_connection_commits(pg) -> None:
    store, other = open_store(pg.url()), open_store(pg.url())
    try:
        seen = store.data_version()
        assert store.data_version() == seen
        with other.transaction():
            other.insert_evidence(evidence("news"))
            assert store.data_version() == seen  # not before the commit
        assert store.data_version() != seen
        changes = store.change_count()
        with store.transaction():
            store.set_meta("a", "1")
            store.set_meta("b", "2")
        assert store.change_count() == changes + 2
    finally:
        store.close()
        other.close()


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        ("ALTER TABLE evidence DISABLE TRIGGER evidence_no_delete", "trigger evidence_no_delete is disabled"),
        ("DROP TRIGGER audit_linked ON audit", "trigger audit_linked is missing"),
        (
            "CREATE OR REPLACE FUNCTION ctx_refuse() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN RETURN OLD; END $$",
            "function ctx_refuse differs from its definition",
        ),
        # p003's trigger and function are checked as p001's are.
        (
            "ALTER TABLE decision DISABLE TRIGGER decision_windows_apart",
            "trigger decision_windows_apart is disabled",
        ),
        ("DROP TRIGGER decision_windows_apart ON decision", "trigger decision_windows_apart is missing"),
        (
            "CREATE OR REPLACE FUNCTION ctx_decision_no_overlap() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN RETURN NEW; END $$",
            "function ctx_decision_no_overlap differs from its definition",
        ),
        (
            "ALTER TABLE decision DROP CONSTRAINT decision_window_order, "
            "ADD CONSTRAINT decision_window_order "
            "CHECK (valid_until IS NULL OR valid_until >= valid_from) NOT VALID",
            "constraint decision_window_order is not validated",
        ),
    ],
)
def test_integrity_check_and_audit_verify_find_a_disabled_invariant(
    pg, cli, tamper: str, problem: str
) -> None:
    Ctx.init(pg.url(), embedder=None)[0].close()
    assert cli("--db", pg.url(), "audit", "verify", db=False).code == 0
    with pg.connect(autocommit=True) as owner:
        owner.execute(tamper)
    store = open_store(pg.url())
    try:
        assert problem in store.integrity_check()
    finally:
        store.close()
    verified = cli("--db", pg.url(), "audit", "verify", db=False)
    assert verified.code == 1 and f"schema: {problem}" in verified.out + verified.err
    doctor = cli("--db", pg.url(), "doctor", "--json", db=False)
    integrity = next(c for c in json.loads(doctor.out)["checks"] if c["name"] == "integrity")
    assert doctor.code == 1 and problem in integrity["detail"]
    assert "administrator" in integrity["fix"] and "backup" not in integrity["fix"]


def test_the_head_revision_is_the_last_migration_and_creates_the_whole_schema(pg) -> None:
    assert migrate.revisions()[-1] == connection.HEAD_REVISION
    assert int(connection.HEAD_REVISION[1:4]) == connection.HEAD_VERSION
    store = open_store(pg.url())
    try:
        objects = {
            (kind, name): (table, definition) for kind, name, table, definition in store.schema_objects()
        }
    finally:
        store.close()
    table, definition = objects[("trigger", "audit_linked")]
    assert table == "audit" and "BEFORE INSERT ON public.audit" in (definition or "")
    assert ("constraint", "decision_no_overlap") in objects and ("index", "ux_decision_current") in objects
    assert {("table", name) for name in (*roles.TABLES, *schema.POSTGRES_ONLY_TABLES)} <= objects.keys()
    assert ("function", "ctx_audit_append") in objects


def test_a_writer_gives_up_in_one_line_when_another_holds_the_lock_too_long(pg, monkeypatch) -> None:
    from ctx_kernel.kernel.store.postgres import store as backend

    monkeypatch.setattr(
        backend, "_TAKE_WRITER_LOCK", backend._TAKE_WRITER_LOCK.replace(backend.LOCK_WAIT, "200ms")
    )
    store = open_store(pg.url())
    try:
        with pg.connect() as other:
            other.execute(backend.WRITER_LOCK)  # a writer that never commits
            with (
                pytest.raises(StoreError, match="stayed locked by another writer") as refused,
                store.transaction(),
            ):
                store.set_meta("never", "written")
            _one_line(refused.value.message)
        with store.transaction():
            # The bound was for the lock alone: the rest of the transaction has the server's setting.
            assert store._one("SHOW lock_timeout") == ("0",)
            store.set_meta("after", "the other writer left")
        assert store.get_meta("never") is None and store.get_meta("after") == "the other writer left"
    finally:
        store.close()
