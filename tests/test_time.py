"""Timestamps: one fixed-width format, a stated range, and time compared as time, never as text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bad_input import assert_one_line_error

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.store.sqlite import driver

OUT_OF_RANGE = ["0999-06-01", "0001-01-01", "1969-12-31", "1969-12-31T23:59:59Z", "1970-01-01T00:30:00+01:00"]


@pytest.mark.parametrize("when", OUT_OF_RANGE)
@pytest.mark.parametrize("command", [("decisions",), ("decisions", "--json"), ("search", "postgres")])
def test_a_date_before_1970_is_refused(cli, kernel: Ctx, command, when):
    kernel.ratify(kernel.propose("db.engine", "Use PostgreSQL 16").id, reviewer="alice")
    line = assert_one_line_error(cli(*command, "--as-of", when), 2)
    assert "out of range" in line and "1970-01-01 to 9999-12-31" in line


@pytest.mark.parametrize(
    ("when", "seen"), [("1970-01-01", False), ("1970-01-01T00:00:00Z", False), ("9999-12-31", True)]
)
def test_the_ends_of_the_range_are_accepted(cli, kernel: Ctx, when, seen):
    kernel.ratify(kernel.propose("db.engine", "Use PostgreSQL 16").id, reviewer="alice")
    result = cli("decisions", "--as-of", when, "--json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert len(document["as_of"]) == len("2026-01-01T00:00:00.000000Z")
    assert bool(document["decisions"]) is seen


def test_evidence_time_before_1970_is_a_rejected_line(cli, kernel: Ctx):
    lines = [{"text": "an old note", "created_at": "0999-01-01T00:00:00Z"}, {"text": "a new note"}]
    result = cli("log", "--jsonl", "-", stdin="\n".join(json.dumps(x) for x in lines).encode())
    assert result.code == 1
    assert "line 1: created_at:" in result.out and "out of range" in result.out
    assert "added 1," in result.out


def test_a_stored_unpadded_year_never_dates_a_ratification(cli, kernel: Ctx, store_path: Path):
    """A store written before the fixed-width format may hold ``999-...``, which sorts after 2026 as text:
    ratifying over it is refused in one line, instead of dating the new decision in year 999."""
    conn = driver.connect(store_path, load_vec=False)
    conn.execute(
        "INSERT INTO decision (id, subject, decision, valid_from, ratified_by, ratified_at) "
        "VALUES ('dc_01JD0000000000000000000000', 'db.engine', 'Use MySQL 8', "
        "'999-01-01T00:00:00.000000Z', 'alice', '999-01-01T00:00:00.000000Z')"
    )
    conn.close()
    proposal = kernel.propose("db.engine", "Use PostgreSQL 16")
    line = assert_one_line_error(cli("ratify", proposal.id, "--yes", "--reviewer", "alice"), 1)
    assert "'999-01-01T00:00:00.000000Z'" in line and "malformed time" in line
    assert kernel.proposal(proposal.id).status == "pending"
    assert [d.id for d in kernel.decisions(include_closed=True)] == ["dc_01JD0000000000000000000000"]
