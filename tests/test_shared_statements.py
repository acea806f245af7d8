"""Statements both backends share are written once, in SQLite's form, and each dialect reads them its way."""

from __future__ import annotations

from ctx_kernel.kernel.store.postgres.store import POSTGRES
from ctx_kernel.kernel.store.sqlite.store import SQLITE


def test_sqlite_runs_a_shared_statement_as_written():
    statement = "SELECT id FROM decision WHERE subject LIKE ? AND note = '50%'"
    assert SQLITE.sql(statement) is statement


def test_postgresql_gets_its_placeholders_and_a_literal_percent_kept():
    statement = "SELECT id FROM decision WHERE subject LIKE ? AND note = '50%' LIMIT ?"
    translated = "SELECT id FROM decision WHERE subject LIKE %s AND note = '50%%' LIMIT %s"
    assert POSTGRES.sql(statement) == translated


def test_a_list_binds_value_by_value_in_sqlite_and_as_one_array_in_postgresql():
    assert SQLITE.among("id", ["a", "b"]) == ("id IN (?,?)", ["a", "b"])
    assert POSTGRES.among("id", ("a", "b")) == ("id = ANY(?)", [["a", "b"]])


def test_long_lists_are_cut_where_a_statement_binds_them_value_by_value():
    ids = [f"dc_{i}" for i in range(1_201)]
    assert [len(chunk) for chunk in SQLITE.chunks(ids)] == [500, 500, 201]
    assert [len(chunk) for chunk in POSTGRES.chunks(ids)] == [1_201]
    assert list(SQLITE.chunks([])) == list(POSTGRES.chunks([])) == []
