"""Tests of the PostgreSQL schema and roles against a real server."""
