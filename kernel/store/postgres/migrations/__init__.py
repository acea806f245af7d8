"""Alembic revisions of the PostgreSQL store (p001, p002, ...), apart from SQLite's m-revisions."""
