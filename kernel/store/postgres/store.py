"""The PostgreSQL backend: a shared team store on one database, every write in one transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from ctx_kernel.kernel.errors import RefusedError, StoreError
from ctx_kernel.kernel.store.postgres.index import PostgresIndex

# pg_advisory_xact_lock(int, int) keys: "ctxK" (the SQLite store's application_id), then 1 for
# the writer lock. The two-key form never collides with the single-key locks of schema.py.
_WRITER_LOCK = "SELECT pg_advisory_xact_lock(1668577355, 1)"


class PostgresStore(PostgresIndex):
    """A ctx store in one PostgreSQL database."""

    def __init__(self, location: str, conn: psycopg.Connection[Any]) -> None:
        self.location = location
        self._conn = conn
        self._in_tx = False

    @classmethod
    def create(cls, url: str) -> PostgresStore:
        """Create (or upgrade) the schema in the database at ``url`` and open it."""
        return cls.open(url)

    @classmethod
    def open(cls, url: str) -> PostgresStore:
        """Open the ctx store in the database at ``url``."""
        return cls(url, psycopg.connect(url, autocommit=True))

    def close(self) -> None:
        """Release the connection."""
        self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN, the writer lock, ... COMMIT; nested calls join the outer transaction."""
        if self._in_tx:
            yield
            return
        self._in_tx = True
        try:
            with self._conn.transaction():
                self._conn.execute(_WRITER_LOCK)
                yield
        except psycopg.IntegrityError as exc:
            raise RefusedError(f"refused by the store: {exc}") from exc
        except psycopg.OperationalError as exc:
            raise StoreError(f"the store: {exc}") from exc
        finally:
            self._in_tx = False

    def _q(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        return self._conn.execute(sql, params).fetchall()

    def _one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> tuple[Any, ...] | None:
        return self._conn.execute(sql, params).fetchone()
