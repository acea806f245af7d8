"""The ``backend`` fixture: one fresh store per test for every backend the contract suite covers.

A backend joins the suite by adding a case to :func:`backend`: SQLite (a file per test) and
PostgreSQL (a fresh database per test, copied from the template of tests/pg_server.py; skipped
without a server). The tests talk to the :class:`Store` interface only; ``raw_execute`` and
``second_connection`` are the backend-specific hooks a contract test needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_server import SKIP_REASON, server_available

from ctx_kernel.kernel.store import create_store, open_store
from ctx_kernel.kernel.store.base import Store

from .support import Backend

BACKENDS = ["sqlite", "postgres"]


def _sqlite(tmp_path: Path) -> Backend:
    location = tmp_path / "contract.db"
    store = create_store(location)
    opened: list[Store] = []

    def raw_execute(sql: str, params: tuple[Any, ...]) -> None:
        with store.transaction():
            store._conn.execute(sql, params)  # type: ignore[attr-defined]

    def second_connection() -> Store:
        other = open_store(location)
        opened.append(other)
        return other

    return Backend("sqlite", store, raw_execute, second_connection, opened)


def _postgres(url: str) -> Backend:
    store = create_store(url)
    opened: list[Store] = []

    def raw_execute(sql: str, params: tuple[Any, ...]) -> None:
        with store.transaction():
            store._conn.execute(sql.replace("?", "%s"), params)  # type: ignore[attr-defined]

    def second_connection() -> Store:
        other = open_store(url)
        opened.append(other)
        return other

    return Backend("postgres", store, raw_execute, second_connection, opened)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """A fresh, empty store of each backend."""
    if request.param == "postgres":
        if not server_available():
            pytest.skip(SKIP_REASON)
        database = request.getfixturevalue("pg")
        made = _postgres(database.url())
    else:
        made = _sqlite(tmp_path)
    yield made
    for other in made.opened:
        other.close()
    made.store.close()


@pytest.fixture
def store(backend: Backend) -> Store:
    """The store of :func:`backend`, for tests that need no hook."""
    return backend.store
