"""Alembic environment: runs the PostgreSQL revisions on a connection handed over by postgres.migrate."""

from __future__ import annotations

from alembic import context

context.configure(connection=context.config.attributes["connection"], transaction_per_migration=True)
with context.begin_transaction():
    context.run_migrations()
