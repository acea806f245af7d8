"""PostgreSQL's tables after every revision are the models' (kernel/store/models.py), but for what
kernel/store/postgres/declared.py lists, and a new revision's DDL is drafted from the models."""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, Text, create_engine
from sqlalchemy.pool import NullPool

from ctx_kernel.kernel.store import models
from ctx_kernel.kernel.store.postgres import declared, migrate


def _copy(metadata: MetaData) -> MetaData:
    copied = MetaData()
    for table in metadata.tables.values():
        table.to_metadata(copied)
    return copied


def _stamp(name: str) -> Column[Any]:
    column = models._stamp()
    column.name = name
    return column


@pytest.fixture
def bind(pg) -> Iterator[Any]:
    """A SQLAlchemy connection to a database at head, as drafting uses one."""
    engine = create_engine("postgresql+psycopg://", creator=pg.connect, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            yield connection
    finally:
        engine.dispose()


def test_every_table_after_the_revisions_is_the_models(pg):
    with pg.connect() as conn:
        assert declared.column_differences(conn) == []


def test_the_models_declare_postgresql_types_where_sqlite_s_differ():
    evidence = models.metadata.tables["evidence"].columns
    assert declared.model_family(evidence["created_at"]) == "timestamptz"
    assert declared.model_family(evidence["tags"]) == "jsonb"
    assert declared.model_family(models.metadata.tables["decision"].columns["amended"]) == "boolean"
    assert declared.model_family(models.metadata.tables["evidence_vector"].columns["emb"]) == "vector"
    # The audit hash covers the time's exact text: it stays text on both.
    assert declared.model_family(models.metadata.tables["audit"].columns["at"]) == "text"


def test_a_column_added_to_the_database_and_not_the_models_fails(pg):
    with pg.connect() as conn:
        conn.execute("ALTER TABLE proposal ADD COLUMN reviewed_at timestamptz")
        conn.execute("ALTER TABLE entity ALTER COLUMN name DROP NOT NULL")
        assert set(declared.column_differences(conn)) == {
            "entity.name: nullable here, not in the models",
            "proposal.reviewed_at: a column here the models do not declare",
        }


def test_a_column_added_to_the_models_and_not_the_database_fails(pg):
    wanted = _copy(models.metadata)
    wanted.tables["proposal"].append_column(_stamp("reviewed_at"))
    wanted.tables["entity"].append_column(Column("weight", Integer))
    wanted.tables["meta"].c.value.type = Integer()
    Table("evidence_review", wanted, Column("evidence_id", Text, primary_key=True))
    with pg.connect() as conn:
        assert set(declared.column_differences(conn, wanted)) == {
            "meta.value: text here, integer in the models",
            "entity.weight: a column the models declare, missing here",
            "proposal.reviewed_at: a column the models declare, missing here",
            "evidence_review: a table the models declare, missing here",
        }


def test_nothing_is_drafted_at_head(bind):
    assert declared.drafted_statements(bind) == []


def test_a_model_column_is_drafted_in_postgresql_s_type(bind):
    wanted = _copy(models.metadata)
    wanted.tables["proposal"].append_column(_stamp("reviewed_at"))
    wanted.tables["proposal"].append_column(Column("tags", models._list().type, nullable=False))
    drafted = declared.drafted_statements(bind, wanted)
    assert drafted == [
        "ALTER TABLE proposal ADD COLUMN reviewed_at TIMESTAMP WITH TIME ZONE",
        "ALTER TABLE proposal ADD COLUMN tags JSONB NOT NULL",
    ]
    with bind.connection.driver_connection.transaction():
        for statement in drafted:
            bind.connection.driver_connection.execute(statement)
        assert declared.column_differences(bind.connection.driver_connection, wanted) == []


def test_draft_writes_the_next_revision(pg, tmp_path: Path):
    folder = tmp_path / "migrations"
    shutil.copytree(migrate.MIGRATIONS_DIR, folder, ignore=shutil.ignore_patterns("__pycache__"))
    head = migrate.revisions()[-1]
    drafted = migrate.draft("Nothing new", pg.url(), folder)
    assert drafted.name == f"p{int(head[1:4]) + 1:03d}_nothing_new.py"
    module = ast.parse(drafted.read_text(encoding="utf-8"))
    assigned = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in module.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    assert assigned["down_revision"] == head
    assert assigned["STATEMENTS"] == []
    assert migrate.revisions(folder)[-1] == drafted.stem
