"""The PostgreSQL schema mirrors the SQLite one at head, and its recall columns and indexes work."""

from __future__ import annotations

import secrets
import sqlite3

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from ctx_kernel.kernel.store.postgres import roles, schema

from .pg_rows import decision, evidence

# SQLite tables that stand for something PostgreSQL does differently (FTS5, vec0) or not at all.
SQLITE_ONLY = ("alembic_version", "sqlite_", "evidence_fts", "decision_fts", "vec_")


def _sqlite_columns(path) -> dict[str, set[str]]:
    conn = sqlite3.connect(path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            name: {r[1] for r in conn.execute("SELECT * FROM pragma_table_info(?)", (name,))}
            for name in names
            if not name.startswith(SQLITE_ONLY)
        }
    finally:
        conn.close()


def test_tables_and_columns_match_the_sqlite_schema_at_head(pg, kernel, store_path):
    with pg.connect() as conn:
        rows = conn.execute(
            "SELECT table_name::text, column_name::text FROM information_schema.columns "
            "WHERE table_schema = 'public' AND table_name IN "
            "(SELECT tablename FROM pg_tables WHERE schemaname = 'public')"
        ).fetchall()
    postgres: dict[str, set[str]] = {}
    for table, column in rows:
        postgres.setdefault(table, set()).add(column)
    for table, extra in schema.POSTGRES_ONLY_COLUMNS.items():
        postgres[table] -= set(extra)
    for table in (*schema.POSTGRES_ONLY_TABLES, "alembic_version"):
        del postgres[table]
    assert postgres == _sqlite_columns(store_path)


def test_full_text_search_stems_and_splits_dotted_subjects(pg):
    with pg.connect() as conn:
        evidence(conn, "ev_1", "Caching decisions were revisited")
        decision(conn, "dc_1", subject="db.engine")
        found = conn.execute(
            "SELECT id FROM evidence WHERE search @@ websearch_to_tsquery('english', %s)", ("decision cache",)
        ).fetchall()
        assert found == [("ev_1",)]
        found = conn.execute(
            "SELECT id FROM decision WHERE search @@ websearch_to_tsquery('english', 'engine')"
        ).fetchall()
        assert found == [("dc_1",)]


def test_entity_names_match_by_trigram(pg):
    with pg.connect() as conn:
        conn.execute("INSERT INTO entity (name) VALUES ('postgresql'), ('redis')")
        found = conn.execute("SELECT name FROM entity WHERE name %% %s", ("postgres",)).fetchall()
        assert found == [("postgresql",)]


def test_vector_columns_take_their_dimension_when_a_model_is_chosen(pg):
    with pg.connect() as conn:
        for statement in schema.vector_statements(3):
            conn.execute(statement)
        decision(conn, "dc_1")
        rowid = conn.execute("SELECT rowid FROM decision").fetchone()[0]
        conn.execute(
            "INSERT INTO decision_vector VALUES (%s, %s, '[1,0,0]'), (%s, %s, '[0,1,0]')",
            (rowid * 16, rowid, rowid * 16 + 1, rowid),
        )
        nearest = conn.execute(
            f"SELECT chunk_id FROM decision_vector ORDER BY {schema.knn_order(3)} LIMIT 1", ("[0.9,0.1,0]",)
        ).fetchone()
        assert nearest == (rowid * 16,)
        with pytest.raises(psycopg.DataError, match="expected 3 dimensions"):
            conn.execute("INSERT INTO decision_vector VALUES (%s, %s, '[1,0]')", (rowid * 16 + 2, rowid))


@pytest.mark.parametrize("dim", [0, -1, schema.MAX_VECTOR_DIM + 1, True, "384"])
def test_a_vector_dimension_is_a_positive_integer(dim):
    with pytest.raises(ValueError, match="vector dimension"):
        schema.vector_statements(dim)


def test_the_schema_applies_as_an_owner_that_is_not_a_superuser(pg_cluster):
    suffix = secrets.token_hex(4)
    owner, password, database = f"ctx_owner_{suffix}", secrets.token_hex(16), f"ctx_owned_{suffix}"
    with psycopg.connect(pg_cluster.admin_uri, autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(owner), sql.Literal(password))
        )
        admin.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(owner))
        )
    try:
        # pgvector is not a trusted extension: a superuser installs it once per database.
        with psycopg.connect(make_conninfo(pg_cluster.admin_uri, dbname=database)) as admin:
            admin.execute("CREATE EXTENSION vector")
        with psycopg.connect(
            make_conninfo(pg_cluster.admin_uri, dbname=database, user=owner, password=password)
        ) as conn:
            for statement in [*schema.STATEMENTS, *roles.STATEMENTS]:
                conn.execute(statement)
            conn.commit()
            evidence(conn, "ev_1")
            with pytest.raises(psycopg.IntegrityError, match="append-only"):
                conn.execute("DELETE FROM evidence")
    finally:
        with psycopg.connect(pg_cluster.admin_uri, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(database)))
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(owner)))


def _version(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT version FROM ctx_change").fetchone()[0]


def test_the_change_counter_moves_when_a_writer_commits_not_before(pg):
    with pg.connect(autocommit=True) as reader, pg.connect() as writer:
        before = _version(reader)
        evidence(writer, "ev_1")
        # Written but not committed: a reader that refreshed now would miss the row.
        assert _version(reader) == before
        writer.commit()
        assert _version(reader) > before
        after = _version(reader)
        evidence(writer, "ev_2")
        writer.rollback()
        assert _version(reader) == after


def test_every_ctx_table_bumps_the_counter(pg):
    with pg.connect(autocommit=True) as conn:
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "WHERE t.tgname = c.relname || '_changed'"
            )
        }
        # The postings change only with the rows they are derived from, which bump it already.
        ctx_tables = {
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> ALL(%s)",
                ([*schema.POSTGRES_ONLY_TABLES, *schema.UNSIGNALLED_TABLES, "alembic_version"],),
            )
        }
    assert tables == ctx_tables == {*schema.CHANGED_TABLES, *schema.P008_CHANGED_TABLES}


def test_a_commit_notifies_listeners_with_the_table_written(pg):
    with pg.connect(autocommit=True) as listener, pg.connect(autocommit=True) as writer:
        listener.execute(f"LISTEN {schema.CHANGE_CHANNEL}")
        with writer.transaction():
            evidence(writer, "ev_1")
        notes = [(n.channel, n.payload, n.pid) for n in listener.notifies(timeout=5, stop_after=1)]
        assert notes == [(schema.CHANGE_CHANNEL, "evidence", writer.info.backend_pid)]


def test_an_agent_bumps_the_counter_it_may_not_write(pg):
    with pg.connect(roles.AGENT, autocommit=True) as agent:
        before = _version(agent)
        evidence(agent, "ev_1")
        assert _version(agent) == before + 1
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            agent.execute("UPDATE ctx_change SET version = 0")
