"""Where ctx's files live: the per-project store and the per-user config."""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ctx_kernel.kernel.errors import StoreError, UsageError

STORE_DIR = ".ctx"
STORE_FILE = "ctx.db"


SQLITE_SCHEME = "sqlite:"
# A database server's URL (postgresql://..., postgres+driver://...): the store is not a file, and
# the text goes to the backend as it is (a Path would collapse its "//").
_SERVER_URL = re.compile(r"^(postgres|postgresql)(\+[A-Za-z0-9.-]+)?://", re.IGNORECASE)


def is_server_url(location: str | Path) -> bool:
    """True when a location is a server's URL (text such as ``postgresql://host/db``), not a file."""
    return isinstance(location, str) and _SERVER_URL.match(location) is not None


def without_password(url: str) -> str:
    """A server URL as it may be shown: any password (in the authority or ``?password=``) left out."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        netloc = f"{userinfo.split(':', 1)[0]}@{hostport}"
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "password"]
    query = urlencode(kept, safe="/")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def location_file(location: str) -> Path:
    """The file a store location names: ``sqlite:PATH`` and a plain path both name PATH (``~``
    expanded); other schemes pass through for the store to name the ones it does not support."""
    return Path(location.removeprefix(SQLITE_SCHEME)).expanduser()


def location(chosen: str) -> Path | str:
    """A store location as given: a server's URL stays text; anything else names a file."""
    return chosen if is_server_url(chosen) else location_file(chosen)


def find_store(explicit: str | None = None, start: Path | None = None) -> Path | str:
    """``--db``, then ``CTX_DB``, then the nearest ``.ctx/ctx.db`` walking up from ``start``
    (a server's URL is returned as text)."""
    chosen = explicit or os.environ.get("CTX_DB")
    if chosen:
        return location(chosen)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / STORE_DIR / STORE_FILE
        if candidate.is_file():
            return candidate
    raise StoreError(f"no ctx store in {here} or any parent folder: run `ctx init` first")


def enclosing_store(folder: Path) -> Path | None:
    """The store file a command run in ``folder`` would use before a new one is made there, if any."""
    try:
        found = find_store(None, folder)
    except StoreError:
        return None
    return found if isinstance(found, Path) else None


# Written beside a new store: the database stays local, signed audit checkpoints may be committed.
STORE_GITIGNORE = """\
# ctx: the store stays out of git (its evidence may hold private text; a binary file merges badly).
# Share decisions with `ctx export adr`; commit checkpoints/ to anchor the audit log.
*
!.gitignore
!checkpoints/
!checkpoints/**
"""


def keep_out_of_git(store: Path) -> bool:
    """Write the store folder's .gitignore for a default ``.ctx/`` store; True when written."""
    if store.parent.name != STORE_DIR:
        return False
    ignore = store.parent / ".gitignore"
    if ignore.exists():
        return False
    ignore.write_text(STORE_GITIGNORE, encoding="utf-8")
    return True


def init_target(explicit: str | None = None, start: Path | None = None) -> Path | str:
    """Where ``ctx init`` creates the store: ``--db``, ``CTX_DB``, else ``./.ctx/ctx.db``."""
    chosen = explicit or os.environ.get("CTX_DB")
    if chosen:
        return location(chosen)
    return (start or Path.cwd()).resolve() / STORE_DIR / STORE_FILE


def checkpoints_dir(store: Path | str) -> Path:
    """Where signed audit checkpoints are kept: ``checkpoints/`` beside the store file; for a store
    on a server, a folder of its own in the user's config folder (named by the URL shown without a
    password, so the same store always finds its checkpoints)."""
    if is_server_url(str(store)):
        digest = hashlib.sha256(without_password(str(store)).encode("utf-8")).hexdigest()[:16]
        return config_dir() / "servers" / digest / "checkpoints"
    return Path(store).parent / "checkpoints"


def config_dir() -> Path:
    """The user's ctx config folder (``CTX_CONFIG_DIR`` overrides the platform default)."""
    override = os.environ.get("CTX_CONFIG_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_config_dir  # noqa: PLC0415 - only read when needed

    return Path(user_config_dir("ctx", appauthor=False))


def keys_dir() -> Path:
    """Where the audit signing key lives: ``keys/`` in the user's config folder."""
    return config_dir() / "keys"


def load_config() -> dict[str, Any]:
    """The user's ``config.toml`` as a dict (empty when there is none)."""
    path = config_dir() / "config.toml"
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc


def configured_reviewer() -> str | None:
    """The reviewer's name from ``CTX_REVIEWER`` or ``reviewer`` in config.toml."""
    name = os.environ.get("CTX_REVIEWER") or load_config().get("reviewer")
    return str(name).strip() if name and str(name).strip() else None
