"""Alembic environment: runs ctx's migrations on a connection handed over by kernel.store.migrate."""

from __future__ import annotations

from typing import Any

from alembic import context

config = context.config
options: dict[str, Any] = {}
# Only drafting a migration compares the store with the models; upgrading a store does not need
# them, and SQLModel costs about half a second to import (every `ctx init` would pay it).
if config.attributes.get("autogenerate"):
    import warnings

    from ctx_kernel.kernel.store.models import include_name, metadata

    # SQLite cannot reflect an index on an expression (the ids' ends, m008), so Alembic skips
    # comparing them; tests/test_migrations.py checks them instead.
    warnings.filterwarnings("ignore", "autogenerate skipping metadata-specified expression-based index")
    warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index")
    options = {"target_metadata": metadata, "include_name": include_name}
context.configure(
    connection=config.attributes["connection"],
    transaction_per_migration=True,
    render_as_batch=True,
    **options,
)
with context.begin_transaction():
    context.run_migrations()
