"""Storage backends behind the kernel facade; all SQL lives here.

:func:`open_store` and :func:`create_store` pick the backend from a store's location: a file
path, or ``sqlite:PATH``, is the embedded SQLite backend.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.store.base import Store
from ctx_kernel.kernel.store.sqlite import SQLiteStore

# A URL scheme of two or more letters ("C:" is a Windows drive, not a scheme). A Path collapses
# "postgresql://host" to "postgresql:/host", so one slash is enough to recognise a URL.
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/")
_POSTGRES = ("postgres", "postgresql")
_USE_SQLITE = "give a SQLite file path or sqlite:PATH"


def sqlite_path(location: str | Path) -> Path:
    """The SQLite file a location names; a UsageError for a location of another backend."""
    text = str(location)
    if text.startswith(paths.SQLITE_SCHEME):
        return paths.location_file(text)
    found = _SCHEME_RE.match(text)
    if found:
        scheme = found.group(1).lower()
        if scheme.split("+")[0] in _POSTGRES:
            # Not echoed: a database URL may hold a password.
            raise UsageError(f"PostgreSQL stores are not supported yet: {_USE_SQLITE}")
        raise UsageError(f"unknown store scheme {scheme}: {_USE_SQLITE}")
    return Path(location)


def open_store(location: str | Path) -> Store:
    """Open the existing store at ``location``, upgrading its schema when it is older than this ctx."""
    return SQLiteStore.open(sqlite_path(location))


def create_store(location: str | Path) -> Store:
    """Create (or upgrade) the store at ``location`` and open it."""
    return SQLiteStore.create(sqlite_path(location))


def display_location(location: str | Path) -> str:
    """A location as it may be printed: a server URL without its password or query (which may hold one)."""
    text = str(location)
    if text.startswith(paths.SQLITE_SCHEME) or not _SCHEME_RE.match(text):
        return text
    parts = urlsplit(text)
    user = f"{parts.username}@" if parts.username else ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"


def same_location(one: str | Path, other: str | Path) -> bool:
    """True when two locations name the same store (a file under two names included)."""
    try:
        first, second = sqlite_path(one), sqlite_path(other)
    except UsageError:
        return display_location(one) == display_location(other)
    if first.exists() and second.exists():
        return os.path.samefile(first, second)
    return first.resolve() == second.resolve()
