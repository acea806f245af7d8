"""The PostgreSQL side of recall: full-text search, entities, conflicts and vectors."""

from __future__ import annotations

from typing import Any

from ctx_kernel.kernel.records import Evidence
from ctx_kernel.kernel.vault.sealing import Vault


class PostgresIndex:
    """Mixed into the PostgreSQL store: every query the recall and index code needs.

    The store provides ``_conn`` (a psycopg connection in autocommit mode; transactions are
    explicit), ``_q``/``_one`` (run a statement with ``%s`` placeholders), ``_evidence`` (an
    Evidence from an evidence row), ``vault`` and ``is_sealed``. On that connection timestamptz
    values load as ctx's canonical text (``...Z``) and jsonb as JSON text, as SQLite returns them.
    """

    _conn: Any

    def _q(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> tuple[Any, ...] | None:
        raise NotImplementedError

    def _evidence(self, row: tuple[Any, ...]) -> Evidence:
        raise NotImplementedError

    def is_sealed(self) -> bool:
        raise NotImplementedError

    def vault(self) -> Vault | None:
        raise NotImplementedError
