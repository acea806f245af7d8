"""Evidence recall on LoCoMo conversations: R@5, R@10 and MRR@10 per category for each mode.

python bench/locomo_quality.py [--data DIR] [--questions N]

DIR holds LoCoMo .json files; without --data, $CTX_LOCOMO_DIR, else ../shared/eval/locomo-dev
next to the repository. Every turn is logged as evidence with its session date, one store
per conversation, with the real embedding model.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import locomo_eval as conversation_eval

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.errors import CtxError

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "eval" / "locomo-dev"


def main() -> None:
    """Load every conversation into its own temporary store and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="folder of LoCoMo .json files")
    parser.add_argument("--questions", type=int, help="at most this many questions per conversation")
    parser.add_argument("--systems", default=",".join(conversation_eval.SYSTEMS), help="comma-separated")
    args = parser.parse_args()
    data = args.data or Path(os.environ.get("CTX_LOCOMO_DIR") or DEFAULT_DATA)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = sorted(set(systems) - set(conversation_eval.SYSTEMS))
    if unknown:
        raise SystemExit(f"unknown system {unknown[0]!r}: use {', '.join(conversation_eval.SYSTEMS)}")
    if not data.is_dir():
        raise SystemExit(f"no LoCoMo data at {data}: pass --data DIR or set CTX_LOCOMO_DIR")
    try:
        conversations = conversation_eval.load(data, args.questions)
    except CtxError as exc:
        raise SystemExit(str(exc)) from None
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:

        def open_store(name: str) -> Ctx:
            (Path(folder) / name).mkdir()
            kernel, _ = Ctx.init(Path(folder) / name / "ctx.db")
            resolution = kernel.embedding()
            if resolution.embedder is None:
                kernel.close()
                raise SystemExit(f"no embedding model: {resolution.reason}")
            return kernel

        tallies = conversation_eval.evaluate(
            conversations, open_store, systems, lambda line: print(line, file=sys.stderr)
        )
    print(f"LoCoMo evidence recall, {data.name}, categories 1-4 ({time.perf_counter() - started:.0f} s)\n")
    print(conversation_eval.table(tallies))
    if {"hybrid", "keyword"} <= tallies.keys():
        print(f"\n{conversation_eval.goals(tallies)}")
    print(f"\nload: {Path('/proc/loadavg').read_text().strip() if Path('/proc/loadavg').exists() else 'n/a'}")


if __name__ == "__main__":
    main()
