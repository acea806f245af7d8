"""Revision p003 on a store created before it: its owner's ``ctx init`` upgrades it, from then on a
window closed the moment it opened is refused where SQLite refuses it, and the integrity check names
the pairs written before."""

from __future__ import annotations

import pytest

from ctx_kernel.kernel.errors import RefusedError
from ctx_kernel.kernel.store import open_store
from ctx_kernel.kernel.store.postgres import connection, migrate, roles
from tests.backend.support import decision

from . import pg_rows

INSTANT = "2026-02-01T00:00:00.000000Z"
EARLIER = "2026-01-01T00:00:00.000000Z"


def _revision(pg_empty) -> str:
    with pg_empty.connect(autocommit=True) as owner:
        return str(owner.execute("SELECT version_num FROM alembic_version").fetchone()[0])


def test_a_p002_store_is_upgraded_by_its_owner_and_then_refuses_an_empty_window(pg_empty, cli) -> None:
    migrate.upgrade(pg_empty.url(), target="p002_role_grants")
    with pg_empty.connect(autocommit=True) as owner:
        for statement in roles.grant_agent(pg_empty.cluster.logins[roles.AGENT][0]):
            owner.execute(statement)
    # At p002 the empty window overlaps nothing: PostgreSQL takes what SQLite refuses.
    with pg_empty.connect(autocommit=True) as owner:
        pg_rows.decision(owner, "dc_instant", subject="db.old", valid_from=INSTANT, valid_until=INSTANT)
        pg_rows.decision(owner, "dc_open", subject="db.old", valid_from=EARLIER)

    for command in (["status"], ["log", "a note"]):
        told = cli("--db", pg_empty.url(roles.AGENT), *command, db=False)
        assert told.code == 1 and told.out == "" and told.err.count("\n") == 1, told.err
        assert "the administrator must run `ctx init --db <url>` to upgrade it" in told.err
        assert f"older than this ctx ({connection.HEAD_REVISION})" in told.err
    refused = cli("--db", pg_empty.url(roles.AGENT), "init", db=False)
    assert refused.code == 1 and refused.out == "" and refused.err.count("\n") == 1, refused.err
    assert _revision(pg_empty) == "p002_role_grants"

    upgraded = cli("--db", pg_empty.url(), "init", db=False)
    assert upgraded.code == 0, upgraded.err
    assert _revision(pg_empty) == connection.HEAD_REVISION

    store = open_store(pg_empty.url())
    try:
        # The pair written before p003 stays, and the check names it for the administrator.
        problem = "decisions dc_instant and dc_open on db.old have overlapping windows"
        assert store.integrity_check() == problem
        instant = decision("db.engine", "use mysql", valid_from=INSTANT)
        with store.transaction():
            store.insert_decision(instant)
            store.close_decision(instant.id, INSTANT, "retired", "withdrawn at once")
        with pytest.raises(RefusedError, match="must not overlap"), store.transaction():
            store.insert_decision(decision("db.engine", "use postgres", valid_from=EARLIER))
        assert [d.id for d in store.decisions("db.engine", include_closed=True)] == [instant.id]
    finally:
        store.close()
    assert cli("--db", pg_empty.url(roles.AGENT), "status", db=False).code == 0
    verified = cli("--db", pg_empty.url(), "audit", "verify", db=False)
    assert verified.code == 1 and f"schema: {problem}" in verified.out + verified.err
