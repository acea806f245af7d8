"""A team's database roles (``ctx admin``): who proposes, who ratifies, who only reads.

The grants themselves are SQL of the PostgreSQL backend (``store/postgres``); this module
refuses what has no meaning for the store at hand, before anything connects.
"""

from __future__ import annotations

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import RefusedError, UsageError
from ctx_kernel.kernel.store.base import Store, offered
from ctx_kernel.kernel.store.sqlite.watch import SQLITE_HAS_NO_ROLES

ROLES = ("agent", "reviewer", "auditor")
NEEDS_EXTRA = "ctx admin needs the PostgreSQL driver: pip install 'ctx-kernel[postgres]'"


def grant_script(location: paths.Location, role: str, login: str, *, create_login: bool = False) -> str:
    """The SQL that gives ``login`` its role on the server store at ``location``, to read and run."""
    if not paths.is_server_url(location):
        raise RefusedError(SQLITE_HAS_NO_ROLES)
    try:
        from ctx_kernel.kernel.store.postgres import admin  # noqa: PLC0415 - psycopg is an extra
    except ImportError as exc:
        raise UsageError(NEEDS_EXTRA) from exc
    return admin.grant_script(role, login, create_login=create_login)


def grant(
    store: Store, role: str, login: str, *, create_login: bool = False, password: str | None = None
) -> None:
    """Carry the grant out on the store's server, as the administrator the store connected as."""
    if role not in ROLES:
        raise UsageError(f"unknown role {role}: {', '.join(ROLES)}")
    if password is not None and not create_login:
        raise UsageError("a password goes with --create-login")
    offered(store.roles()).grant_role(role, login, create_login=create_login, password=password)
