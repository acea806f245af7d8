"""The embedded default: a store in one SQLite file (sqlean with sqlite-vec), laid out as the
PostgreSQL backend is: store.py and index.py (the Store's ports), fts.py, vectors.py, watch.py,
copy.py (bulk export and restore), driver.py (the one connection factory), migrate.py and
migrations/ (Alembic). Nothing is imported here, so a host loads only the modules it uses."""
