"""Tab completion's wall time: one `ctx` process per Tab press, as bash, zsh and fish start it.

A shell completes by running ``ctx`` with ``_CTX_COMPLETE`` set and reading the candidates it
prints, so each press pays for a Python process, the imports completion needs and, for subjects and
pending ids, a read of the store. The store holds 200 decisions and 100 pending proposals. Each
case runs a few times first (files in the page cache, bytecode written: warm), then ``--runs``
times, wall time and the process's CPU time (user + system, which other load disturbs less); the figures are
printed beside ``python -c pass`` (the interpreter's own start) measured in the same run, and with
``--imports`` the modules each case loads beyond that floor, slowest first (``python -X importtime``).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CTX = str(Path(sys.executable).parent / "ctx")
WARMUP = 3
# What a person presses Tab after, and what the shell passes as the words and the current word.
CASES = {
    "ctx <Tab> (command names)": "ctx ",
    "ctx qu<Tab>": "ctx qu",
    "ctx queue --<Tab> (options)": "ctx queue --",
    "ctx history auth.<Tab> (subjects)": "ctx history auth.",
    "ctx ratify pr_<Tab> (pending ids)": "ctx ratify pr_",
}


def _env(base: dict[str, str], words: str) -> dict[str, str]:
    return {
        **base,
        "_CTX_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
    }


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of one process."""
    cpu, start = _cpu(), time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return (time.perf_counter() - start) * 1000, (_cpu() - cpu) * 1000


def _runs(argv: list[str], env: dict[str, str], runs: int) -> tuple[list[float], list[float]]:
    for _ in range(WARMUP):
        _time(argv, env)
    timed = [_time(argv, env) for _ in range(runs)]
    return sorted(wall for wall, _ in timed), sorted(cpu for _, cpu in timed)


def _build(env: dict[str, str]) -> None:
    subprocess.run([CTX, "init"], env=env, check=True, capture_output=True)
    from ctx_kernel.kernel import Ctx

    with Ctx.open(Path(env["CTX_DB"]), embedder=None) as kernel:
        for i in range(300):
            made = kernel.propose(
                f"auth.area{i % 40}.topic{i}", f"Decision number {i} about component {i * 7}"
            )
            if i < 200:
                kernel.ratify(made.id, reviewer="bench")


def _imports(words: str, env: dict[str, str], top: int) -> list[str]:
    """The modules a completion spends most time importing (each its own time), from ``-X importtime``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", CTX],
        env=_env(env, words),
        check=True,
        capture_output=True,
        text=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, _cumulative, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        rows.append((int(own), name))
    rows.sort(reverse=True)
    total = sum(own for own, _ in rows) / 1000
    return [
        f"{len(rows)} modules, {total:.1f} ms in all",
        *(f"{own / 1000:7.1f} ms  {name}" for own, name in rows[:top]),
    ]


def main() -> None:
    """Print median, p90 and fastest wall times in milliseconds, each case beside the floor."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--imports", type=int, default=0, metavar="N", help="show each case's N slowest imports"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "CTX_DB": str(Path(folder) / "ctx.db"),
            "CTX_CONFIG_DIR": str(Path(folder) / "config"),
        }
        env.pop("_CTX_COMPLETE", None)
        # Warm means compiled too: an installed ctx has its bytecode written at install time, so a
        # PYTHONDONTWRITEBYTECODE in this shell would time the compiler on every press instead.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        _build(env)
        timings = {
            "python -c pass (interpreter floor)": _runs([sys.executable, "-c", "pass"], env, args.runs)
        }
        for name, words in CASES.items():
            timings[name] = _runs([CTX], _env(env, words), args.runs)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(
            f"{args.runs} runs each after {WARMUP} warm-up runs; "
            f"load average {load:.1f} on {os.cpu_count()} cores"
        )
        floor = statistics.median(timings["python -c pass (interpreter floor)"][0])
        print(f"{'':40s} {'wall: median':>13s} {'p90':>7s} {'fastest':>8s} {'over floor':>11s}   cpu: median")
        for name, (walls, cpus) in timings.items():
            median = statistics.median(walls)
            p90 = walls[int(0.9 * (len(walls) - 1))]
            over = f"+{median - floor:.1f}" if name in CASES else ""
            print(
                f"{name:40s} {median:13.1f} {p90:7.1f} {walls[0]:8.1f} {over:>11s}   "
                f"{statistics.median(cpus):11.1f}  (ms)"
            )
        if args.imports:
            for name, words in CASES.items():
                print(f"\n{name}: slowest imports (each module's own time)")
                for line in _imports(words, env, args.imports):
                    print("  " + line)


if __name__ == "__main__":
    main()
