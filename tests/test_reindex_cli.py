"""`ctx reindex` with the real model, stopped midway by a kill or Ctrl-C, then run again: it carries
on after the rows it wrote, and every row ends with its vectors, none twice."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.limits import META_REINDEX
from ctx_kernel.kernel.recall import backfill as vectorfill
from ctx_kernel.kernel.store.sqlite import driver

pytestmark = pytest.mark.usefixtures("real_model")
CTX = str(Path(sys.executable).parent / "ctx")
# Four windows of short texts: a few seconds of embedding, so there is a midway to stop at.
ROWS = vectorfill.WINDOW_ROWS * 4
TOPICS = "retries timeouts partitions tokens sessions migrations indexes backups quotas webhooks".split()


def _records() -> bytes:
    lines = [
        json.dumps({"text": f"note {n}: the {TOPICS[n % 10]} of service {n % 37} were discussed again"})
        for n in range(ROWS)
    ]
    return ("\n".join(lines) + "\n").encode()


def _embedded(store_path: Path) -> int:
    """Evidence rows with a vector, read beside the running reindex (WAL readers do not wait)."""
    conn = driver.connect(store_path, load_vec=False)
    try:
        row = conn.execute("SELECT count(DISTINCT owner_rowid) FROM evidence_vector").fetchone()
        return int(row[0])
    except driver.dbapi.OperationalError:
        return 0  # the table is being created
    finally:
        conn.close()


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["kill", "ctrl-c"])
def test_a_stopped_reindex_resumes_where_it_stopped(store_path, tmp_path, stop):
    env_args = ["--db", str(store_path)]
    assert subprocess.run([CTX, *env_args, "init"], capture_output=True, check=False).returncode == 0
    logged = subprocess.run(
        [CTX, *env_args, "log", "--jsonl", "-"], input=_records(), capture_output=True, check=False
    )
    assert logged.returncode == 0, logged.stderr
    first = subprocess.Popen([CTX, *env_args, "reindex"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while (done := _embedded(store_path)) == 0 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    first.send_signal(stop)
    _, err = first.communicate(timeout=60)
    assert 0 < done < ROWS, "the reindex should have been stopped midway"
    assert first.returncode == (-signal.SIGKILL if stop == signal.SIGKILL else 130), err
    with Ctx.open(store_path, embedder=None) as ctx:
        assert ctx.store.get_meta(META_REINDEX) is not None
        kept = ctx.store.pending_vector_count("evidence")
        assert 0 < kept <= ROWS - done

    second = subprocess.run([CTX, *env_args, "reindex", "--json"], capture_output=True, check=False)
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["resumed"] and report["evidence"] == ROWS
    with Ctx.open(store_path) as ctx:
        conn = ctx.store._conn
        rows, owners, chunk_ids = conn.execute(
            "SELECT count(*), count(DISTINCT owner_rowid), count(DISTINCT chunk_id) FROM evidence_vector"
        ).fetchone()
        assert rows == owners == chunk_ids == ROWS  # short texts: one chunk each, none twice
        assert conn.execute("SELECT count(*) FROM vec_evidence").fetchone()[0] == ROWS
        assert ctx.store.pending_vector_count("evidence") == 0
        assert ctx.store.get_meta(META_REINDEX) is None
        assert ctx.recall("partitions of service 5", mode="vector").vectors.state == "on"
