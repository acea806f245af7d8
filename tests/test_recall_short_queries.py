"""Short and keyword-less queries find decisions in the demo store, through the CLI.

Decisions are filed under terse subjects (``db.driver``, ``auth.tokens``); a query in plain
words gains their short forms (kernel/recall/vocabulary.py) for keyword and entity matching.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture
def demo(tmp_path: Path, cli) -> Path:
    result = cli("demo", "--path", str(tmp_path / "demo"), "--no-review", db=False)
    assert result.code == 0, result.err
    return tmp_path / "demo" / ".ctx" / "ctx.db"


def subjects(cli, db: Path, *args: str) -> list[str]:
    result = cli("--db", str(db), "recall", *args, "--json", db=False)
    assert result.code == 0, result.err
    return [hit["subject"] for hit in json.loads(result.out)["decisions"]]


@pytest.mark.usefixtures("real_model")
def test_database_finds_the_postgresql_driver_decisions_with_vectors_on(cli, demo):
    found = subjects(cli, demo, "database")
    assert {"db.driver", "db.ingest"} <= set(found)
    assert "testing.integration" in found  # it says "database" in its own words


def test_database_finds_them_by_keyword_and_entity_alone(cli, demo, monkeypatch):
    monkeypatch.setenv("CTX_VECTORS", "off")
    for mode in ("hybrid", "keyword", "entity"):
        assert {"db.driver", "db.ingest"} <= set(subjects(cli, demo, "database", "--mode", mode)), mode


@pytest.mark.usefixtures("real_model")
def test_inject_for_database_lists_the_driver_decision(cli, demo):
    result = cli("--db", str(demo), "inject", "--query", "database", db=False)
    assert result.code == 0, result.err
    current = result.out.split("## Current decisions", 1)[1].split("##", 1)[0]
    assert "Use psycopg 3 for all PostgreSQL access" in current
    assert "` db.ingest: " in current


def test_a_paraphrase_finds_the_decision_its_subject_names_without_vectors(cli, demo, monkeypatch):
    monkeypatch.setenv("CTX_VECTORS", "off")
    assert subjects(cli, demo, "keep users signed in")[0] == "auth.tokens"
    assert subjects(cli, demo, "how do people log in")[0] == "auth.tokens"


def test_a_query_keeps_its_own_words(cli, demo, monkeypatch):
    monkeypatch.setenv("CTX_VECTORS", "off")
    assert subjects(cli, demo, "Vite dev server", "--mode", "keyword")[0] == "frontend.build"
