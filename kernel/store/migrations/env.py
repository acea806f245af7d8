"""Alembic environment: runs ctx's migrations on a connection handed over by kernel.store.migrate."""

from __future__ import annotations

from alembic import context

from ctx_kernel.kernel.store.models import include_name, metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    transaction_per_migration=True,
    render_as_batch=True,
    include_name=include_name,
)
with context.begin_transaction():
    context.run_migrations()
