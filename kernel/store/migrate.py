"""Schema migrations, run with Alembic over the connection factory.

Every migration sets ``PRAGMA user_version`` to its number inside its own transaction,
so opening a store only reads one pragma to know whether it is current; Alembic (and
SQLAlchemy, ~0.5 s to import) loads only when a store must be created or upgraded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel.errors import StoreError

# The number of the newest migration in kernel/migrations/versions.
HEAD_VERSION = 6
MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def _alembic_config(connection: Any) -> Any:
    from alembic.config import Config  # noqa: PLC0415

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def upgrade(path: str | Path, revision: str = "head") -> None:
    """Apply every migration up to ``revision`` to the store at ``path``."""
    from alembic import command  # noqa: PLC0415

    from kernel.driver import make_engine  # noqa: PLC0415

    engine = make_engine(path)
    try:
        with engine.connect() as connection:
            command.upgrade(_alembic_config(connection), revision)
    finally:
        engine.dispose()


def revisions() -> list[str]:
    """Every migration's revision id, oldest first."""
    from alembic.script import ScriptDirectory  # noqa: PLC0415

    script = ScriptDirectory(str(MIGRATIONS_DIR))
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def ensure_current(conn: Any, path: str | Path) -> None:
    """Upgrade an older store in place; refuse a store written by a newer ctx."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == HEAD_VERSION:
        return
    if version > HEAD_VERSION:
        raise StoreError(
            f"store {path} has schema version {version}, newer than this ctx ({HEAD_VERSION}): upgrade ctx"
        )
    upgrade(path)
