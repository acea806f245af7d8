"""The kernel's random operation sequences (tests/test_properties.py) on a PostgreSQL store."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test
from pg_server import Database
from psycopg import sql

from ctx_kernel.kernel import Ctx
from tests.test_properties import KernelMachine


class PostgresKernelMachine(KernelMachine):
    """The same model and rules, each example on its own database copied from an initialised one."""

    cluster: Any = None
    source: str | None = None

    def open_copy(self) -> tuple[Ctx, Any]:
        assert self.cluster is not None and self.source is not None
        self.database = f"ctx_props_{secrets.token_hex(6)}"
        self.cluster.admin(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(self.database), sql.Identifier(self.source)
            )
        )
        copy = Database(self.cluster, self.database)
        return Ctx.open(copy.url()), psycopg.connect(copy.uri(), autocommit=True)

    def teardown(self) -> None:
        self.conn.close()
        self.kernel.close()
        self.cluster.admin(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(self.database)))


@pytest.fixture
def initialised(pg) -> Iterator[None]:
    """A database that ``Ctx.init`` has made a store, as the examples' template."""
    Ctx.init(pg.url())[0].close()
    PostgresKernelMachine.cluster, PostgresKernelMachine.source = pg.cluster, pg.name
    try:
        yield
    finally:
        PostgresKernelMachine.cluster = PostgresKernelMachine.source = None


def test_kernel_state_machine_on_postgresql(initialised) -> None:
    run_state_machine_as_test(
        PostgresKernelMachine,
        settings=settings(
            max_examples=15,
            stateful_step_count=25,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
