"""The PostgreSQL schema tests use the server fixtures of tests/pg_server.py (``pg_cluster``, ``pg``)."""
