"""Writers waiting their turn: lock waits and command times with many processes writing one store.

--proposers processes each propose --each times, --loggers processes each log --each evidence
texts, and one ratifier ratifies (or rejects) pending proposals until the proposers are done, all
at once on a fresh store. Each process times every facade call (a whole command as an MCP server
or a long-running agent makes it, without interpreter start-up) and every wait for the write lock
(from asking for it to BEGIN IMMEDIATE succeeding). It runs twice, in the same way:

- ``busy``: SQLite's busy handler alone (the writer lock file is not used), as before;
- ``lock``: writers queue on the OS lock beside the store before BEGIN IMMEDIATE.

``run`` also takes a PostgreSQL store's URL (bench/pg_bench.py): there a lock wait is the time
from asking for a write transaction to holding it (the server's writer lock).

Lost writes are what the processes were told was stored but the store does not hold. The goal is
no lock wait over 1 s and a p99 command time under 1 s at 8 proposers on 2 cores.

    python bench/writers_bench.py [--proposers 8] [--loggers 2] [--each 200] [--modes busy,lock]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _instrument(mode: str) -> list[float]:
    """Record each transaction's wait for the write lock; in ``busy`` mode leave the lock file unused."""
    from ctx_kernel.kernel.store.sqlite.store import SQLiteStore
    from ctx_kernel.kernel.store.writelock import WriteLock

    waits: list[float] = []
    asked = [0.0]
    acquire, begin = WriteLock.acquire, SQLiteStore._begin

    def timed_acquire(self: WriteLock) -> bool:
        asked[0] = time.perf_counter()
        return False if mode == "busy" else acquire(self)

    def timed_begin(self: SQLiteStore) -> None:
        begin(self)
        waits.append(time.perf_counter() - asked[0])

    WriteLock.acquire = timed_acquire  # type: ignore[method-assign]
    SQLiteStore._begin = timed_begin  # type: ignore[method-assign]
    return waits


def _instrument_transactions() -> list[float]:
    """Record each outermost transaction's wait from asking for it to being inside it (any backend)."""
    from contextlib import contextmanager

    from ctx_kernel.kernel.store.postgres.store import PostgresStore

    waits: list[float] = []
    original = PostgresStore.transaction

    @contextmanager
    def timed(self: PostgresStore) -> Any:
        if self._in_tx:
            with original(self):
                yield
            return
        asked = time.perf_counter()
        with original(self):
            waits.append(time.perf_counter() - asked)
            yield

    PostgresStore.transaction = timed  # type: ignore[method-assign,assignment]
    return waits


def _location(db: str) -> str | Path:
    """A PostgreSQL URL stays text (a Path would collapse its ``//``); anything else is a file."""
    return db if "://" in db else Path(db)


def _worker(role: str, index: int, each: int, db: str, mode: str, out: str, start: Any, done: Any) -> None:
    from ctx_kernel.kernel import Ctx, CtxError

    waits = _instrument_transactions() if mode == "postgres" else _instrument(mode)
    report: dict = {"commands": [], "errors": [], "ids": [], "ratified": []}
    rng = random.Random(index)
    try:
        kernel = Ctx.open(_location(db))
        start.wait(timeout=120)

        def timed(call: Callable[[], Any]) -> Any:
            began = time.perf_counter()
            try:
                return call()
            except CtxError as exc:
                report["errors"].append(str(exc))
                return None
            finally:
                report["commands"].append(time.perf_counter() - began)

        if role == "proposer":
            for k in range(each):
                made = timed(
                    lambda k=k: kernel.propose(
                        f"team{index}.area{k % 20}",
                        f"writer {index} option {k}: use component {rng.randrange(10**6)}",
                        rationale="measured in the benchmark",
                        proposer=f"agent-{index}",
                    )
                )
                if made is not None:
                    report["ids"].append(made.id)
        elif role == "logger":
            for k in range(each):
                text = f"logger {index} note {k}: latency {rng.random():.6f} ms"
                logged = timed(lambda text=text: kernel.log(text))
                if logged is not None:
                    report["ids"].append(logged.id)
        else:
            while True:
                finished = done.is_set()
                for proposal in kernel.queue():
                    if rng.random() < 0.7:
                        result = timed(lambda p=proposal: kernel.ratify(p.id, reviewer="bench"))
                        if result is not None:
                            report["ratified"].append([proposal.id, result.decision.id])
                    else:
                        timed(lambda p=proposal: kernel.reject(p.id, reviewer="bench", reason="no"))
                if finished:
                    break
                time.sleep(0.01)
        kernel.close()
    except BaseException:
        report["errors"].append(traceback.format_exc())
    report["waits"] = waits
    Path(out).write_text(json.dumps(report))


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def run(mode: str, proposers: int, loggers: int, each: int, url: str | None = None) -> dict:
    """One run on a fresh store (a temporary SQLite file, or the empty PostgreSQL store at ``url``
    in mode ``postgres``); the figures of every process together."""
    from ctx_kernel.kernel import Ctx

    mp = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as folder:
        db: str | Path = url if url is not None else Path(folder) / ".ctx" / "ctx.db"
        Ctx.init(db)[0].close()
        roles = [("proposer", i) for i in range(proposers)] + [("logger", 100 + i) for i in range(loggers)]
        start, done = mp.Barrier(len(roles) + 2), mp.Event()
        outs = {(role, i): Path(folder) / f"{role}{i}.json" for role, i in [*roles, ("ratifier", 999)]}
        procs = {
            key: mp.Process(target=_worker, args=(*key, each, str(db), mode, str(out), start, done))
            for key, out in outs.items()
        }
        for proc in procs.values():
            proc.start()
        start.wait(timeout=120)
        began = time.perf_counter()
        for key, proc in procs.items():
            if key[0] != "ratifier":
                proc.join()
        done.set()
        procs[("ratifier", 999)].join()
        wall = time.perf_counter() - began
        reports = {key: json.loads(out.read_text()) for key, out in outs.items()}
        kernel = Ctx.open(db, embedder=None)
        try:
            store: Any = kernel.store  # rows read as the store holds them, past the facade
            proposals = {r[0] for r in store._q("SELECT id FROM proposal")}
            evidence = {r[0] for r in store._q("SELECT id FROM evidence")}
            decisions = {tuple(r) for r in store._q("SELECT proposal_id, id FROM decision")}
        finally:
            kernel.close()
    told = [(key[0], i) for key, r in reports.items() for i in r["ids"]]
    lost = sum(1 for role, i in told if i not in (proposals if role == "proposer" else evidence))
    ratified = [tuple(pair) for r in reports.values() for pair in r["ratified"]]
    lost += sum(1 for pair in ratified if pair not in decisions)
    commands = [t for r in reports.values() for t in r["commands"]]
    waits = [t for r in reports.values() for t in r["waits"]]
    return {
        "mode": mode,
        "wall": wall,
        "commands": commands,
        "waits": waits,
        "errors": [e for r in reports.values() for e in r["errors"]],
        "lost": lost,
        "ratified": len(ratified),
    }


PROBE = Path(__file__).resolve().parent / "cli_probe.py"


def _cli_worker(role: str, index: int, each: int, db: str, out: str, lines: str | None) -> list[float]:
    """Run whole ``ctx`` processes (through cli_probe.py) one after another; each one's wall time."""
    import subprocess

    rng = random.Random(index)
    walls: list[float] = []

    def ctx(*args: str) -> subprocess.CompletedProcess[str]:
        began = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(PROBE), out, "--db", db, *args], capture_output=True, text=True, check=False
        )
        walls.append(time.perf_counter() - began)
        return done

    if role == "proposer":
        for k in range(each):
            ctx(
                "propose",
                "--subject",
                f"team{index}.area{k % 20}",
                "--decision",
                f"writer {index} option {k}: use component {rng.randrange(10**6)}",
                "--agent",
                f"agent-{index}",
            )
    elif role == "logger":
        for k in range(each):
            ctx("log", f"logger {index} note {k}: latency {rng.random():.6f} ms")
    elif role == "importer" and lines is not None:
        ctx("log", "--jsonl", lines)
    else:  # the ratifier: until the proposers are done (their output file stops growing)
        for _ in range(each):
            listed = ctx("queue", "--json")
            pending = json.loads(listed.stdout or '{"proposals": []}')["proposals"]
            for proposal in pending[:3]:
                ctx("ratify", proposal["id"], "--yes", "--no-settle", "--reviewer", "bench")
    return walls


def run_cli(proposers: int, loggers: int, each: int, import_lines: int) -> dict:
    """Whole ``ctx`` processes writing one fresh store at once: proposers, loggers, a ratifier and
    one ``ctx log --jsonl`` import; every write's lock wait and hold, and every command's wall time."""
    from concurrent.futures import ThreadPoolExecutor

    from ctx_kernel.kernel import Ctx

    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / ".ctx" / "ctx.db"
        Ctx.init(db)[0].close()
        out = Path(folder) / "locks.jsonl"
        lines = Path(folder) / "import.jsonl"
        rng = random.Random(7)
        with lines.open("w", encoding="utf-8") as handle:
            for k in range(import_lines):
                words = " ".join(rng.choice(_WORDS) for _ in range(70))
                handle.write(json.dumps({"text": f"imported record {k}: {words}"}) + "\n")
        roles = [("proposer", i) for i in range(proposers)] + [("logger", 100 + i) for i in range(loggers)]
        roles += [("importer", 500), ("ratifier", 999)]
        began = time.perf_counter()
        with ThreadPoolExecutor(len(roles)) as pool:
            futures = [
                pool.submit(
                    _cli_worker, role, i, each, str(db), str(out), str(lines) if role == "importer" else None
                )
                for role, i in roles
            ]
            walls = [t for f in futures for t in f.result()]
        wall = time.perf_counter() - began
        records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return {
        "wall": wall,
        "commands": walls,
        "waits": [w for r in records for w in r["waits"]],
        "holds": [(h, r["command"]) for r in records for h in r["holds"]],
        "errors": [r for r in records if r["code"] not in (0, 1)],
    }


_WORDS = (
    "the deploy cache flushed after release token refresh failed on upload session expired while "
    "agent retried migration index rebuilt queue drained reviewer approved benchmark showed latency"
).split()


def main() -> None:
    """Print p50/p99/max lock wait and command time, errors and lost writes per mode."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--proposers", type=int, default=8)
    parser.add_argument("--loggers", type=int, default=2)
    parser.add_argument("--each", type=int, default=200, help="commands per proposer and per logger")
    parser.add_argument(
        "--modes",
        default="busy,lock",
        help="busy (before), lock (after), cli (whole ctx processes), or several",
    )
    parser.add_argument("--cli-each", type=int, default=15, help="cli mode: commands per proposer and logger")
    parser.add_argument(
        "--import-lines", type=int, default=5000, help="cli mode: lines of the --jsonl import"
    )
    args = parser.parse_args()
    print(
        f"{args.proposers} proposers and {args.loggers} loggers x {args.each} commands, 1 ratifier; "
        "facade calls in separate processes; the machine may be shared and noisy"
    )
    for mode in args.modes.split(","):
        if mode == "cli":
            _print_cli(run_cli(args.proposers, args.loggers, args.cli_each, args.import_lines), args)
            continue
        result = run(mode, args.proposers, args.loggers, args.each)
        waits, commands = result["waits"], result["commands"]
        label = {"busy": "before (busy handler)", "lock": "after (OS writer lock)"}.get(mode, mode)
        print(f"\n{label}: {len(commands)} commands, {len(waits)} transactions in {result['wall']:.1f} s")
        for name, values in (("lock wait", waits), ("command time", commands)):
            print(
                f"  {name:13s} p50 {_percentile(values, 0.5) * 1000:7.1f} ms   "
                f"p99 {_percentile(values, 0.99) * 1000:7.1f} ms   "
                f"max {max(values, default=0) * 1000:7.1f} ms"
            )
        print(f"  over 1 s: {sum(w > 1 for w in waits)} waits, {sum(c > 1 for c in commands)} commands")
        print(f"  errors {len(result['errors'])}   lost writes {result['lost']}")
        for error in result["errors"][:3]:
            print("   ", error.strip().splitlines()[-1])


def _print_cli(result: dict, args: argparse.Namespace) -> None:
    waits, commands, holds = result["waits"], result["commands"], result["holds"]
    print(
        f"\nwhole ctx processes: {args.proposers} proposers and {args.loggers} loggers x {args.cli_each}, "
        f"a ratifier, one ctx log --jsonl of {args.import_lines} lines: {len(commands)} commands, "
        f"{len(waits)} transactions in {result['wall']:.1f} s"
    )
    for name, values in (
        ("lock wait", waits),
        ("lock hold", [h for h, _ in holds]),
        ("command time", commands),
    ):
        print(
            f"  {name:13s} p50 {_percentile(values, 0.5) * 1000:7.1f} ms   "
            f"p99 {_percentile(values, 0.99) * 1000:7.1f} ms   max {max(values, default=0) * 1000:7.1f} ms"
        )
    longest = sorted(holds, reverse=True)[:3]
    print("  longest holds: " + ", ".join(f"{command} {h * 1000:.0f} ms" for h, command in longest))
    print(f"  crashed commands {len(result['errors'])}")


if __name__ == "__main__":
    main()
