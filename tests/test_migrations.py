"""The migrated schema is exactly what the models and migrations declare, from every starting version."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Integer, Text

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.store import driver, migrate, rows
from ctx_kernel.kernel.store.models import include_name, metadata


def _names(conn, kind: str) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = ?", (kind,))}


def test_revisions_are_named_and_ordered():
    assert migrate.revisions() == [
        "m001_initial",
        "m002_fts",
        "m003_sources",
        "m004_recall",
        "m005_provenance",
        "m006_vault",
        "m007_adr_fields",
    ]
    assert len(migrate.revisions()) == migrate.HEAD_VERSION


def test_migrated_schema_matches_models(kernel: Ctx, store_path: Path):
    engine = driver.make_engine(store_path)
    with engine.connect() as connection:
        diffs = compare_metadata(
            MigrationContext.configure(connection, opts={"include_name": include_name}), metadata
        )
    engine.dispose()
    assert diffs == []


@pytest.mark.parametrize(
    "row_map", [rows.EVIDENCE, rows.PROPOSAL, rows.DECISION, rows.AUDIT], ids=lambda m: m.table
)
def test_each_record_table_holds_exactly_its_records_fields(row_map: rows.RowMap):
    table = metadata.tables[row_map.table]
    assert set(table.columns.keys()) == set(row_map.columns)
    for name in row_map.json_columns:
        assert isinstance(table.columns[name].type, Text)
        assert table.columns[name].server_default.arg.text == "'[]'"
    for name in row_map.bool_columns:
        assert isinstance(table.columns[name].type, Integer)


def test_rows_are_read_by_name_when_a_table_gains_a_column(kernel: Ctx, store_path: Path):
    kernel.log("the billing service moved to Postgres")
    proposed = kernel.propose("db.billing", "Use Postgres", rationale="JSONB")
    conn = driver.connect(store_path, load_vec=False)
    try:
        for table in ("evidence", "proposal", "decision"):
            conn.execute(f"ALTER TABLE {table} ADD COLUMN later TEXT DEFAULT 'not a field'")
    finally:
        conn.close()
    with Ctx.open(store_path) as reopened:
        assert reopened.proposal(proposed.id) == proposed
        found, _score, _snippet = reopened.search("billing").evidence[0]
        assert found.text == "the billing service moved to Postgres"


def test_migrated_schema_objects(kernel: Ctx, store_path: Path):
    conn = driver.connect(store_path)
    tables = _names(conn, "table")
    assert {
        "meta",
        "evidence",
        "proposal",
        "proposal_evidence",
        "decision",
        "decision_evidence",
        "supersession",
        "audit",
        "evidence_fts",
        "decision_fts",
        "alembic_version",
    } <= tables
    assert _names(conn, "trigger") == {
        "evidence_no_update",
        "evidence_no_delete",
        "evidence_fts_insert",
        "proposal_resolve_once",
        "proposal_no_delete",
        "decision_no_overlap",
        "decision_close_once",
        "decision_no_delete",
        "decision_fts_insert",
        "supersession_forward_in_time",
        "supersession_no_update",
        "supersession_no_delete",
        "audit_linked",
        "audit_no_update",
        "audit_no_delete",
    }
    assert {"ux_decision_current", "ix_decision_subject", "ix_proposal_status", "ix_supersession_new"} <= (
        _names(conn, "index")
    )
    fts_sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'evidence_fts'").fetchone()[0]
    assert "porter unicode61 remove_diacritics 2" in fts_sql
    foreign = {(r[2], r[3]) for r in conn.execute("PRAGMA foreign_key_list(supersession)")}
    assert foreign == {("decision", "old_id"), ("decision", "new_id")}
    assert conn.execute("PRAGMA user_version").fetchone()[0] == migrate.HEAD_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("SELECT version_num FROM alembic_version").fetchone()[0] == "m007_adr_fields"
    conn.close()


@pytest.mark.parametrize("start", migrate.revisions()[:-1])
def test_upgrade_from_every_earlier_version(tmp_path: Path, start: str):
    """A store left at an older version, with data in it, upgrades on open and keeps everything."""
    path = tmp_path / "old.db"
    migrate.upgrade(path, start)
    conn = driver.connect(path)
    conn.execute(
        "INSERT INTO evidence (id, content_hash, text, kind, tags, created_at) "
        "VALUES ('ev_01JD0000000000000000000000', ?, 'legacy note about postgres', 'note', '[]', "
        "'2025-01-01T00:00:00.000000Z')",
        ("a" * 64,),
    )
    conn.execute(
        "INSERT INTO decision (id, subject, decision, valid_from, ratified_by, ratified_at) "
        "VALUES ('dc_01JD0000000000000000000000', 'db.engine', 'Use PostgreSQL 16', "
        "'2025-01-01T00:00:00.000000Z', 'alice', '2025-01-01T00:00:00.000000Z')"
    )
    conn.close()

    with Ctx.open(path) as kernel:
        assert [d.subject for d in kernel.decisions()] == ["db.engine"]
        found = kernel.search("postgres postgresql")
        assert [e.id for e, _, _ in found.evidence] == ["ev_01JD0000000000000000000000"]
        assert [d.id for d, _ in found.decisions] == ["dc_01JD0000000000000000000000"]
        proposal = kernel.propose("db.engine", "Use PostgreSQL 17")
        assert proposal.supersedes == ["dc_01JD0000000000000000000000"]
    conn = driver.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == migrate.HEAD_VERSION
    conn.close()


def test_store_from_newer_ctx_is_refused(kernel: Ctx, store_path: Path):
    kernel.close()
    conn = driver.connect(store_path)
    conn.execute(f"PRAGMA user_version = {migrate.HEAD_VERSION + 1}")
    conn.close()
    from ctx_kernel.kernel.errors import StoreError

    with pytest.raises(StoreError, match="newer than this ctx"):
        Ctx.open(store_path)


# -- the ctx mark: PRAGMA application_id ----------------------------------------------------------


def _pragma(path: Path, name: str) -> int:
    conn = driver.connect(path, load_vec=False)
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def test_a_new_store_is_marked(cli, store_path: Path):
    assert cli("init").code == 0
    assert _pragma(store_path, "application_id") == migrate.APPLICATION_ID == 0x6374784B


@pytest.mark.parametrize("start", [*migrate.revisions()[:-1], "head"])
def test_a_store_made_before_the_mark_opens_and_is_marked(tmp_path: Path, start: str):
    """Stores from before the mark are known by their tables and Alembic revision, then marked."""
    path = tmp_path / "old.db"
    migrate.upgrade(path, start)
    conn = driver.connect(path, load_vec=False)
    conn.execute("PRAGMA application_id = 0")
    conn.execute(
        "INSERT INTO decision (id, subject, decision, valid_from, ratified_by, ratified_at) "
        "VALUES ('dc_01JD0000000000000000000000', 'db.engine', 'Use PostgreSQL 16', "
        "'2025-01-01T00:00:00.000000Z', 'alice', '2025-01-01T00:00:00.000000Z')"
    )
    conn.close()
    with Ctx.open(path) as kernel:
        assert [d.subject for d in kernel.decisions()] == ["db.engine"]
    assert _pragma(path, "application_id") == migrate.APPLICATION_ID
    assert _pragma(path, "user_version") == migrate.HEAD_VERSION


def _foreign_tables(conn) -> None:
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users (name) VALUES ('ada')")


def _foreign_with_version(conn) -> None:
    _foreign_tables(conn)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")  # a name ctx also uses
    conn.execute("PRAGMA user_version = 3")


def _foreign_app_id(conn) -> None:
    _foreign_tables(conn)
    conn.execute("PRAGMA application_id = 1179402563")  # another application's mark


FOREIGN = {"tables": _foreign_tables, "user-version": _foreign_with_version, "app-id": _foreign_app_id}


@pytest.mark.parametrize("make", FOREIGN.values(), ids=FOREIGN.keys())
@pytest.mark.parametrize("args", [("log", "hello"), ("init",), ("decisions",), ("queue",)])
def test_another_applications_database_is_never_touched(cli, tmp_path: Path, make, args):
    other = tmp_path / "other_app.db"
    conn = driver.dbapi.connect(str(other))
    make(conn)
    conn.commit()
    conn.close()
    before = other.read_bytes()

    result = cli("--db", str(other), *args, db=False)
    assert result.code == 1 and result.out == "" and "Traceback" not in result.err
    [line] = result.err.splitlines()
    assert "other_app.db" in line and "ctx will not touch it" in line
    assert other.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("other_app")) == ["other_app.db"]


def test_a_marked_store_of_another_application_is_refused(tmp_path: Path):
    """The mark decides: a file with ctx's tables but another application's id is not opened."""
    path = tmp_path / "lookalike.db"
    migrate.upgrade(path)
    conn = driver.connect(path, load_vec=False)
    conn.execute("PRAGMA application_id = 1179402563")
    conn.close()
    from ctx_kernel.kernel.errors import StoreError

    with pytest.raises(StoreError, match="another application's SQLite database"):
        Ctx.open(path)


def test_upgrade_to_adr_fields_keeps_records_without_inventing_titles(tmp_path: Path):
    """A store at m006 gains title and deciders: old rows have none, and the triggers still guard them."""
    path = tmp_path / "old.db"
    migrate.upgrade(path, "m006_vault")
    conn = driver.connect(path)
    conn.execute(
        "INSERT INTO decision "
        "(id, subject, decision, valid_from, ratified_by, ratified_at, source, adr_number) "
        "VALUES ('dc_01JD0000000000000000000000', 'db.engine', 'Use PostgreSQL 16', "
        "'2025-01-01T00:00:00.000000Z', 'alice', '2025-01-01T00:00:00.000000Z', '0001-db.md', 1)"
    )
    conn.execute(
        "INSERT INTO decision (id, subject, decision, valid_from, ratified_by, ratified_at) "
        "VALUES ('dc_01JD0000000000000000000001', 'cache.store', 'Use Redis', "
        "'2025-01-01T00:00:00.000000Z', 'alice', '2025-01-01T00:00:00.000000Z')"
    )
    conn.execute(
        "INSERT INTO proposal (id, subject, decision, proposer, created_at) VALUES "
        "('pr_01JD0000000000000000000000', 'ui.framework', 'Use Elm', 'agent', '2025-01-01T00:00:00.000000Z')"
    )
    conn.close()

    with Ctx.open(path) as kernel:
        decision = kernel.decision("dc_01JD0000000000000000000000")
        assert (decision.title, decision.deciders, decision.source) == (None, [], "0001-db.md")
        [proposal] = kernel.queue()
        assert (proposal.title, proposal.deciders) == (None, [])
        titled = kernel.propose("db.engine", "Use PostgreSQL 17", title="Upgrade PostgreSQL")
        assert kernel.ratify(titled.id, reviewer="bob").decision.title == "Upgrade PostgreSQL"
    conn = driver.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 7
        with pytest.raises(driver.dbapi.IntegrityError, match="only has its window closed"):
            # A close is allowed; a close that also renames is not.
            conn.execute(
                "UPDATE decision SET title = 'Renamed', valid_until = '2025-06-01T00:00:00.000000Z', "
                "closed_by = 'retired' WHERE id = 'dc_01JD0000000000000000000001'"
            )
        with pytest.raises(driver.dbapi.IntegrityError, match="resolved once"):
            conn.execute(
                "UPDATE proposal SET deciders = '[\"x\"]', status = 'rejected' "
                "WHERE id = 'pr_01JD0000000000000000000000'"
            )
    finally:
        conn.close()
