"""The review app on a big queue: time to open with 10,000 pending proposals, and scrolling.

Runs the real app headless (Textual's test driver) at 100x30 over a cached store with
``--pending`` proposals and ``--decisions`` current decisions, and prints:

- the facade's ``review_queue()`` on its own;
- app start to the first screen with every row loaded;
- cursor moves and page moves, each until the next frame is drawn (mean and p95);
- the Audit screen's verdict: the chain recomputed and the tables replayed against it, as
  ``ctx audit verify`` does (it runs in a worker thread; the screen shows the log meanwhile).

The same figures for a queue of 100 are printed first: the difference is what the size costs
(the rest is Textual's own start-up and the test driver's per-key overhead).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ctx_kernel.kernel import Ctx
from ctx_kernel.tui.app import make_app
from ctx_kernel.tui.widgets.rows import RowList

CACHE = Path(__file__).resolve().parent / ".cache"
AREAS = ["auth", "db", "api", "frontend", "ci", "infra", "billing", "search", "mobile", "observability"]
VERBS = ["Use", "Avoid", "Adopt", "Keep", "Drop", "Require"]
THINGS = ["Redis", "Postgres", "Kafka", "gRPC", "GraphQL", "Vite", "Terraform", "OpenTelemetry", "S3", "JWT"]


def build(path: Path, decisions: int, pending: int) -> None:
    """A store with ``decisions`` ratified decisions and ``pending`` proposals (slow; cached)."""
    kernel, _ = Ctx.init(path, embedder=None)
    with kernel:
        for i in range(decisions):
            subject = f"{AREAS[i % len(AREAS)]}.topic{i}"
            text = f"{VERBS[i % len(VERBS)]} {THINGS[i % len(THINGS)]} for component {i}."
            proposal = kernel.propose(subject, text, proposer="seed")
            kernel.ratify(proposal.id, reviewer="bench")
        for i in range(pending):
            # Every third proposal targets a subject with a current decision.
            topic = i % decisions if i % 3 == 0 else decisions + i
            subject = f"{AREAS[topic % len(AREAS)]}.topic{topic}"
            text = f"{VERBS[(i + 1) % len(VERBS)]} {THINGS[(i * 7) % len(THINGS)]} in service {i} ({i * 31})."
            kernel.propose(subject, text, proposer=["claude", "codex", "gemini"][i % 3])
            if i % 1000 == 999:
                print(f"  built {i + 1} proposals", file=sys.stderr)


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values``."""
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


async def drive(path: Path, moves: int) -> dict[str, list[float]]:
    """Open the app, wait for the rows, then time cursor and page moves."""
    kernel = Ctx.open(path, embedder=None)
    started = time.perf_counter()
    app = make_app(kernel, "bench", poll=None)
    figures: dict[str, list[float]] = {"open": [], "down": [], "pagedown": []}
    async with app.run_test(size=(100, 30)) as pilot:
        rows = app.screen.query_one("#queue", RowList)
        while len(rows.keys) == 0:
            await asyncio.sleep(0.002)
        await pilot.pause()
        figures["open"].append((time.perf_counter() - started) * 1000)
        for key in ("down", "pagedown"):
            for _ in range(moves):
                start = time.perf_counter()
                await pilot.press(key)
                figures[key].append((time.perf_counter() - start) * 1000)
        app.exit()
    kernel.close()
    return figures


def cached_store(decisions: int, pending: int) -> Path:
    """The benchmark store for these sizes, built on first use."""
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"review-v1-{decisions}-{pending}.db"
    if not path.exists():
        print(f"building {path.name} (once; cached in bench/.cache)", file=sys.stderr)
        partial = path.with_suffix(".partial")
        for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
            leftover.unlink(missing_ok=True)
        build(partial, decisions, pending)
        partial.rename(path)
    return path


def report(path: Path, decisions: int, moves: int, runs: int) -> None:
    """Print the figures for one store."""
    with Ctx.open(path, embedder=None) as kernel:
        timings = []
        for _ in range(5):
            start = time.perf_counter()
            entries = kernel.review_queue()
            timings.append((time.perf_counter() - start) * 1000)
        verdicts = []
        for _ in range(3):
            start = time.perf_counter()
            verdict = kernel.audit.verify(state=True)
            verdicts.append((time.perf_counter() - start) * 1000)
        assert verdict.ok, verdict.problem
    print(f"\n{len(entries)} pending proposals, {decisions} current decisions")
    print(f"  review_queue() (facade)        median {statistics.median(timings):7.1f} ms")
    print(
        f"  {f'audit verdict ({verdict.rows} rows)':<30} median {statistics.median(verdicts):7.1f} ms  "
        "(Audit screen, worker thread)"
    )
    results = [asyncio.run(drive(path, moves)) for _ in range(runs)]
    opens = [r["open"][0] for r in results]
    print(
        f"  open app to queue shown (x{runs}) median {statistics.median(opens):7.1f} ms  max {max(opens):.1f}"
    )
    for key in ("down", "pagedown"):
        values = [v for r in results for v in r[key]]
        print(
            f"  {key:<8} to next frame         mean   {statistics.fmean(values):7.1f} ms  "
            f"p95 {percentile(values, 0.95):.1f}"
        )


def main() -> None:
    """Print the figures in milliseconds."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--decisions", type=int, default=1_000)
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    small = max(args.decisions // 10, 10)
    report(cached_store(small, 100), small, args.moves, args.runs)
    report(cached_store(args.decisions, args.pending), args.decisions, args.moves, args.runs)


if __name__ == "__main__":
    main()
