"""What a shared store adds for a team: the live change watch and the role grants.

Mixed into :class:`~ctx_kernel.kernel.store.postgres.store.PostgresStore`; it uses the store's
URL (``_url``) and its connection (``_conn``), the administrator's when ``ctx admin`` runs.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ctx_kernel.kernel.store.postgres import admin, connection
from ctx_kernel.kernel.store.postgres.watch import NotifyWatch


class TeamMixin:
    """``watch_changes`` and ``grant_role`` of the Store protocol, on PostgreSQL."""

    _url: str
    _conn: psycopg.Connection[Any]

    def watch_changes(self) -> NotifyWatch:
        """LISTEN on a connection of its own; the notifications of this store's own connection
        (acts the app has shown already) do not wake it."""
        return NotifyWatch(lambda: connection.connect(self._url), ignore_pids={self._conn.info.backend_pid})

    def grant_role(self, role: str, login: str, *, create_login: bool, password: str | None) -> None:
        """Make ``login`` a member of ``role``'s group, on this (the administrator's) connection."""
        admin.run_grant(self._conn, role, login, create_login=create_login, password=password)
