"""`ctx admin grant-*` prints a script that a real server runs as written, for any login name; and
the change watch wakes on another session's commit notification, at once."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from psycopg import sql

from ctx_kernel.kernel.store.postgres import roles
from ctx_kernel.kernel.store.postgres.watch import CHANNEL, NotifyWatch

HOSTILE = "o\"brien'; DROP TABLE evidence; --"


def memberships(conn: psycopg.Connection, login: str) -> list[str]:
    row = conn.execute(
        "SELECT coalesce(array_agg(g.rolname::text ORDER BY g.rolname), '{}') FROM pg_auth_members m "
        "JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = %s",
        (login,),
    ).fetchone()
    return row[0]


@pytest.mark.parametrize(
    ("command", "group"), [("grant-agent", roles.AGENT), ("grant-reviewer", roles.REVIEWER)]
)
def test_the_printed_script_runs_on_the_server_for_a_hostile_name(cli, pg, command: str, group: str) -> None:
    printed = cli("--db", pg.url(), "admin", command, HOSTILE, "--create-login", db=False)
    assert printed.code == 0, printed.err
    assert 'DROP TABLE evidence; --" LOGIN' in printed.out  # inside a quoted identifier
    with pg.connect(autocommit=True) as owner:
        try:
            owner.execute(printed.out)  # what `psql -f` would run
            assert memberships(owner, HOSTILE) == [group]
            assert owner.execute("SELECT to_regclass('evidence')").fetchone() != (None,)
            regrant = cli("--db", pg.url(), "admin", "grant-auditor", HOSTILE, db=False)
            owner.execute(regrant.out)
            assert memberships(owner, HOSTILE) == [roles.AUDITOR]  # one group at a time
        finally:
            owner.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(HOSTILE)))


def test_a_printed_script_never_holds_a_password_or_the_urls(cli, pg) -> None:
    url = pg.url().replace("postgresql://", "postgresql://ctx_admin:s3cret-pw@", 1)
    printed = cli("--db", url, "admin", "grant-reviewer", "alice", "--create-login", db=False)
    assert printed.code == 0 and "s3cret" not in printed.out + printed.err
    refused = cli("--db", url, "admin", "grant-reviewer", "alice", "--password", db=False)
    assert refused.code == 2 and "--password goes with --run" in refused.err and refused.out == ""


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("pg_monitor", "reserved by PostgreSQL"),
        ("ctx_reviewer", "is reserved"),
        ("PUBLIC", "is reserved"),
        ("x" * 64, "at most 63 bytes"),
        ("alice\u202e", "U+202E"),
        ("bob\x1b[2J", "U+001B"),
        (" alice", "leading or trailing"),
    ],
)
def test_a_name_that_cannot_be_a_login_is_one_line(cli, name: str, expected: str) -> None:
    result = cli("--db", "postgresql://db.example/team", "admin", "grant-agent", name, db=False)
    assert result.code == 2 and result.out == ""
    assert result.err.count("\n") == 1 and expected in result.err and "Traceback" not in result.err


def test_a_sqlite_store_has_no_roles(cli, kernel) -> None:
    for command in ("grant-agent", "grant-reviewer", "grant-auditor"):
        for extra in ((), ("--run",)):
            result = cli("admin", command, "alice", *extra)
            assert result.code == 1 and result.out == ""
            assert result.err.count("\n") == 1 and "roles are a PostgreSQL feature" in result.err


def test_the_watch_wakes_on_another_sessions_commit_at_once(pg) -> None:
    watch = NotifyWatch(lambda: pg.connect(autocommit=True))
    try:
        assert watch.wait(0.05) is False
        with pg.connect(autocommit=True) as other:
            started = time.monotonic()
            timer = threading.Timer(0.2, lambda: other.execute("SELECT pg_notify(%s, 'pr_1')", (CHANNEL,)))
            timer.start()
            assert watch.wait(5.0) is True
            assert time.monotonic() - started < 1.0
            timer.join()
            # A rolled-back transaction notifies no one.
            with pytest.raises(psycopg.errors.RaiseException), other.transaction():
                other.execute("SELECT pg_notify(%s, 'pr_2')", (CHANNEL,))
                other.execute("DO $$ BEGIN RAISE EXCEPTION 'abandoned'; END $$")
            assert watch.wait(0.2) is False
    finally:
        watch.close()
    assert watch.wait(0.01) is False


def test_the_watch_ignores_its_own_stores_commits(pg) -> None:
    with pg.connect(autocommit=True) as own:
        watch = NotifyWatch(lambda: pg.connect(autocommit=True), ignore_pids={own.info.backend_pid})
        try:
            own.execute("SELECT pg_notify(%s, 'mine')", (CHANNEL,))
            assert watch.wait(0.3) is False
            with pg.connect(autocommit=True) as other:
                other.execute("SELECT pg_notify(%s, 'theirs')", (CHANNEL,))
            assert watch.wait(2.0) is True
        finally:
            watch.close()


def test_the_watch_listens_again_after_the_server_dropped_its_connection(pg) -> None:
    watch = NotifyWatch(lambda: pg.connect(autocommit=True))
    try:
        with pg.connect(autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (pg.name,),
            )
            # Commits may have gone unheard while it was away: the first wait says so.
            assert watch.wait(1.0) is True
            admin.execute("SELECT pg_notify(%s, 'after')", (CHANNEL,))
            assert watch.wait(2.0) is True
            assert watch.wait(0.1) is False
    finally:
        watch.close()
