"""Storage backends behind the kernel facade; all SQL lives here.

:func:`open_store` and :func:`create_store` pick the backend from a store's location: a file
path, or ``sqlite:PATH``, is the embedded SQLite backend; a ``postgresql://`` (or ``postgres://``)
URL is a shared PostgreSQL database (kernel/store/postgres/), whose driver loads only then.
Each backend's modules load on a store's first open, so a shell's Tab press, which reads a SQLite
file's short lists through :mod:`ctx_kernel.kernel.store.sqlite.peek`, loads neither.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import UsageError

if TYPE_CHECKING:
    from ctx_kernel.kernel.store.base import Store
    from ctx_kernel.kernel.store.postgres.store import PostgresStore

_USE_SQLITE = "give a SQLite file path, sqlite:PATH or postgresql://host/dbname"
_POSTGRES_FORM = "postgresql://[user@]host[:port]/dbname"


def sqlite_path(location: str | Path) -> Path:
    """The SQLite file a location names; a UsageError for a location of another backend."""
    text = str(location)
    if text.startswith(paths.SQLITE_SCHEME):
        return paths.location_file(text)
    scheme = paths.url_scheme(text)
    if scheme is not None:
        if paths.is_server_url(text):
            # Not echoed: a database URL may hold a password.
            raise UsageError(f"a PostgreSQL store is named {_POSTGRES_FORM} (libpq's form, no driver name)")
        raise UsageError(f"unknown store scheme {scheme}: {_USE_SQLITE}")
    return Path(location)


def postgres_url(location: str | Path) -> str | None:
    """The PostgreSQL URL a location is, or None for any other location."""
    text = str(location)
    scheme = paths.url_scheme(text)
    if scheme not in paths.SERVER_SCHEMES:
        return None
    if not isinstance(location, str) or not text[len(scheme) :].startswith("://"):
        # A Path collapsed "//" (and any "//" after it): what the URL said is lost.
        raise UsageError(f"a PostgreSQL URL must reach ctx as text, {_POSTGRES_FORM}")
    return text


def _postgres() -> type[PostgresStore]:
    try:
        from ctx_kernel.kernel.store.postgres.store import PostgresStore  # noqa: PLC0415
    except ImportError as exc:  # psycopg is the optional `postgres` extra
        raise UsageError("a PostgreSQL store needs the driver: install ctx[postgres]") from exc
    return PostgresStore


def open_store(location: str | Path) -> Store:
    """Open the existing store at ``location``: a SQLite file is upgraded when older than this ctx;
    a PostgreSQL schema never is (its administrator runs ``ctx init --db``)."""
    url = postgres_url(location)
    if url is not None:
        return _postgres().open(url)
    from ctx_kernel.kernel.store.sqlite.store import SQLiteStore  # noqa: PLC0415 - on first open

    return SQLiteStore.open(sqlite_path(location))


def create_store(location: str | Path) -> Store:
    """Create (or upgrade) the store at ``location`` and open it."""
    url = postgres_url(location)
    if url is not None:
        return _postgres().create(url)
    from ctx_kernel.kernel.store.sqlite.store import SQLiteStore  # noqa: PLC0415 - on first open

    return SQLiteStore.create(sqlite_path(location))


def display_location(location: str | Path) -> str:
    """A location as it may be printed: a server URL without its password or query (which may hold one)."""
    text = str(location)
    if paths.url_scheme(text) is None:
        return text
    if postgres_url_text(text):
        try:
            from ctx_kernel.kernel.store.postgres.connection import describe  # noqa: PLC0415

            return describe(text)
        except (ImportError, UsageError):  # no driver, or a URL it cannot read: read it plainly below
            pass
    parts = urlsplit(text)
    user = f"{parts.username}@" if parts.username else ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"


def postgres_url_text(text: str) -> bool:
    """True when ``text`` is written as a PostgreSQL URL (whether or not it is a valid one)."""
    return paths.url_scheme(text) in paths.SERVER_SCHEMES


def same_location(one: str | Path, other: str | Path) -> bool:
    """True when two locations name the same store (a file under two names included)."""
    try:
        first, second = sqlite_path(one), sqlite_path(other)
    except UsageError:
        return display_location(one) == display_location(other)
    if first.exists() and second.exists():
        return os.path.samefile(first, second)
    return first.resolve() == second.resolve()
