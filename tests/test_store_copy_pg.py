"""``ctx migrate`` between SQLite and PostgreSQL, both ways: the same store on either backend."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.errors import StoreError
from ctx_kernel.kernel.store import open_store
from tests.store_copy_support import fill, rows_at, rows_of


@pytest.fixture
def source(kernel: Ctx) -> Ctx:
    """The test's SQLite store, filled with every kind of row."""
    fill(kernel)
    return kernel


def _rows_at_url(url: str) -> dict[str, list[dict[str, Any]]]:
    store = open_store(url)
    try:
        return rows_of(store)
    finally:
        store.close()


def test_round_trip_sqlite_postgres_sqlite_gives_back_the_original(cli, source, store_path, pg, tmp_path):
    url = pg.url()
    there = cli("migrate", "--to", url, "--json")
    assert there.code == 0, there.err
    report = json.loads(there.out)
    assert report["target"].startswith("postgresql://") and report["resumed"] is False
    original = rows_at(store_path)
    assert _rows_at_url(url) == original
    verify = cli("--db", url, "audit", "verify", db=False)
    assert verify.code == 0, verify.err + verify.out
    back = tmp_path / "back" / "ctx.db"
    home = cli("--db", url, "migrate", "--to", f"sqlite:{back}", "--batch-size", "2", "--json", db=False)
    assert home.code == 0, home.err
    assert json.loads(home.out)["last_hash"] == report["last_hash"]
    assert rows_at(back) == original
    with Ctx.open(back, embedder=None) as copy:
        assert copy.audit.verify(state=True).ok
        assert copy.search("ledger postgres").evidence
    with Ctx.open(url, embedder=None) as server:
        assert server.search("ledger postgres").evidence  # the server's own index, rebuilt
        assert [p.id for p in server.queue()] == [p.id for p in source.queue()]


@pytest.mark.parametrize("stage", ["evidence", "proposal", "decision", "resolved", "audit"])
def test_ctrl_c_into_postgresql_then_the_same_command_finishes(source, store_path, pg, stage):
    def stop(now: str, done: int, total: int | None) -> None:
        if now == stage and done > 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        source.migrate(pg.url(), batch_size=3, progress=stop)
    assert source.migrate(pg.url(), batch_size=3).resumed
    assert _rows_at_url(pg.url()) == rows_at(store_path)


def _allow_connections(pg, allowed: bool) -> None:
    with psycopg.connect(pg.cluster.admin_uri, autocommit=True) as admin:
        admin.execute(
            psycopg.sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS {}").format(
                psycopg.sql.Identifier(pg.name), psycopg.sql.Literal(allowed)
            )
        )


def test_a_dropped_connection_between_batches_is_reopened_and_the_copy_goes_on(source, store_path, pg):
    def drop(now: str, done: int, total: int | None) -> None:
        if now in ("evidence", "decision", "audit") and done == 2:
            pg.drop_connections()

    assert not source.migrate(pg.url(), batch_size=2, progress=drop).resumed
    assert _rows_at_url(pg.url()) == rows_at(store_path)


def test_a_server_that_goes_away_mid_copy_is_one_error_and_the_next_run_finishes(source, store_path, pg):
    def down(now: str, done: int, total: int | None) -> None:
        if now == "decision" and done > 0:
            _allow_connections(pg, False)
            pg.drop_connections()

    try:
        with pytest.raises(StoreError) as lost:
            source.migrate(pg.url(), batch_size=2, progress=down)
    finally:
        _allow_connections(pg, True)
    assert "\n" not in lost.value.message
    assert source.migrate(pg.url(), batch_size=2).resumed
    assert _rows_at_url(pg.url()) == rows_at(store_path)
    with Ctx.open(pg.url(), embedder=None) as server:
        assert server.audit.verify(state=True).ok


def test_a_server_holding_another_store_is_refused(cli, source, pg):
    with Ctx.init(pg.url(), embedder=None)[0] as other:
        other.log("another team's note")
    before = _rows_at_url(pg.url())
    result = cli("migrate", "--to", pg.url())
    assert result.code == 1 and "holds another store" in result.err
    assert _rows_at_url(pg.url()) == before


def test_a_wrong_password_is_one_line_without_it(cli, source, pg):
    group = next(iter(pg.cluster.logins))
    url = pg.url(group)
    _login, password = pg.cluster.logins[group]
    if not pg.cluster.checks_passwords:
        pytest.skip("this server does not check passwords")
    wrong = url.replace(password, "not-the-password-x9")
    result = cli("migrate", "--to", wrong)
    assert result.code == 1 and result.out == ""
    assert result.err.count("\n") == 1 and "not-the-password-x9" not in result.err


def test_a_login_without_the_rights_to_copy_is_refused_without_its_password(cli, source, pg):
    for group, (_login, password) in pg.cluster.logins.items():
        result = cli("migrate", "--to", pg.url(group))
        assert result.code != 0, group
        assert result.err.count("\n") == 1 and password not in result.err + result.out


def test_vectors_go_to_postgresql_and_back_unchanged(source, store_path, pg, tmp_path):
    from tests.embedders import HashEmbedder

    with Ctx.open(store_path, embedder=HashEmbedder()) as embedded:
        embedded.prepare_vectors(backfill=10_000)
        assert embedded.migrate(pg.url()).vectors == 42 + 6
        original = [embedded.store.export_vectors(kind, None, 1000) for kind in ("decision", "evidence")]
    embedder = HashEmbedder()
    with Ctx.open(pg.url(), embedder=embedder) as server:
        _, status = server.prepare_vectors(backfill=10_000)
        assert status.state == "on" and embedder.calls == 0
        assert [
            server.store.export_vectors(kind, None, 1000) for kind in ("decision", "evidence")
        ] == original
        back = tmp_path / "back.db"
        assert server.migrate(str(back)).vectors == 42 + 6
    with Ctx.open(back, embedder=None) as copy:
        assert [copy.store.export_vectors(kind, None, 1000) for kind in ("decision", "evidence")] == original


def test_a_server_store_is_not_copied_onto_itself_under_another_spelling(cli, source, pg):
    url = pg.url()
    assert cli("migrate", "--to", url).code == 0
    before = _rows_at_url(url)
    spelled = url + ("&" if "?" in url else "?") + "application_name=ctx-copy"
    for to in (url, spelled):
        result = cli("--db", url, "migrate", "--to", to, db=False)
        assert result.code == 1 and "is this store itself" in result.err, result.err
    assert _rows_at_url(url) == before
