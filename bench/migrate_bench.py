"""`ctx migrate --to` on a store of --rows evidence texts: wall time of a whole copy, and of a re-run.

Builds a store of --rows evidence texts (sentences of 20-60 words), 200 proposals and 100 ratified
decisions (each an audit row), then times the `ctx migrate` process copying it to a new SQLite
file (or to --to, e.g. a PostgreSQL URL of an empty database), and again on the finished copy
(every row compared, none written). Vectors are off, so the figures are the copy and the rebuild
of the keyword index, entity mentions and conflicts.

    python bench/migrate_bench.py [--rows 10000] [--to LOCATION]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORDS = (
    "ledger postgres migration session token cache queue broker index shard replica backup "
    "latency budget deploy rollback schema tenant audit vector model embedding review agent"
).split()


def _build(store: Path, rows: int) -> None:
    from ctx_kernel.kernel import Ctx
    from ctx_kernel.kernel.capture.ingest import EvidenceInput, Item

    rng = random.Random(7)
    kernel, _ = Ctx.init(store, embedder=None)
    with kernel:
        items = [
            Item(i, EvidenceInput(f"{i}: " + " ".join(rng.choices(WORDS, k=rng.randint(20, 60)))))
            for i in range(rows)
        ]
        kernel.log_many(items)
        for i in range(200):
            proposal = kernel.propose(f"area{i % 100}.choice", f"Use option {i} for area {i % 100}")
            if i < 100:
                kernel.ratify(proposal.id, reviewer="bench")


def _migrate(store: Path, to: str) -> tuple[float, dict[str, object]]:
    env = {**os.environ, "CTX_VECTORS": "off"}
    ctx = str(Path(sys.executable).parent / "ctx")
    started = time.perf_counter()
    done = subprocess.run(
        [ctx, "--db", str(store), "migrate", "--to", to, "--json"],
        capture_output=True,
        env=env,
        check=True,
    )
    return time.perf_counter() - started, json.loads(done.stdout)


def main() -> None:
    """Build the store, copy it, copy it again, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--to", help="the target (default: a new SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ctx-migrate-bench-") as folder:
        os.environ.setdefault("CTX_CONFIG_DIR", str(Path(folder) / "config"))
        store = Path(folder) / "source" / "ctx.db"
        started = time.perf_counter()
        _build(store, args.rows)
        print(f"built a store of {args.rows} evidence texts in {time.perf_counter() - started:.1f} s")
        to = args.to or f"sqlite:{Path(folder) / 'copy' / 'ctx.db'}"
        for run in ("copy", "re-run"):
            wall, report = _migrate(store, to)
            tables = report["tables"]
            assert isinstance(tables, list)
            rows = sum(t["rows"] for t in tables)
            copied = sum(t["copied"] for t in tables)
            print(
                f"{run}: {wall:.2f} s wall ({report['seconds']} s in the copy), "
                f"{copied} of {rows} rows written, {rows / wall:,.0f} rows/s"
            )


if __name__ == "__main__":
    main()
