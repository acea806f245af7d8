"""Where ctx's files live: the per-project store and the per-user config."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from ctx_kernel.kernel.errors import StoreError, UsageError

STORE_DIR = ".ctx"
STORE_FILE = "ctx.db"


SQLITE_SCHEME = "sqlite:"


def location_file(location: str) -> Path:
    """The file a store location names: ``sqlite:PATH`` and a plain path both name PATH (``~``
    expanded); other schemes pass through for the store to name the ones it does not support."""
    return Path(location.removeprefix(SQLITE_SCHEME)).expanduser()


def find_store(explicit: str | None = None, start: Path | None = None) -> Path:
    """``--db``, then ``CTX_DB``, then the nearest ``.ctx/ctx.db`` walking up from ``start``."""
    chosen = explicit or os.environ.get("CTX_DB")
    if chosen:
        return location_file(chosen)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / STORE_DIR / STORE_FILE
        if candidate.is_file():
            return candidate
    raise StoreError(f"no ctx store in {here} or any parent folder: run `ctx init` first")


def enclosing_store(folder: Path) -> Path | None:
    """The store a command run in ``folder`` would use before a new one is made there, if any."""
    try:
        return find_store(None, folder)
    except StoreError:
        return None


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


def init_target(explicit: str | None = None, start: Path | None = None) -> Path:
    """Where ``ctx init`` creates the store: ``--db``, ``CTX_DB``, else ``./.ctx/ctx.db``."""
    chosen = explicit or os.environ.get("CTX_DB")
    if chosen:
        return location_file(chosen)
    return (start or Path.cwd()).resolve() / STORE_DIR / STORE_FILE


def checkpoints_dir(store: Path) -> Path:
    """Where signed audit checkpoints are kept: ``checkpoints/`` beside the store file."""
    return store.parent / "checkpoints"


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
