"""Whole-process wall time of the agents' hot-path commands (`ctx log`, `ctx propose`) and of a one-shot
`ctx recall`, median of N runs.

`ctx recall` is timed as this environment has it: run the bench from an environment without the model
extra to time recall with no model (it then ranks by keyword and entity and says vectors are off).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CTX = str(Path(sys.executable).parent / "ctx")


def _time(argv: list[str], env: dict[str, str], program: str = CTX) -> float:
    start = time.perf_counter()
    subprocess.run([program, *argv], env=env, check=True, capture_output=True)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    """Print median and p90 wall times in milliseconds."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--pending", type=int, default=500, help="pending proposals already queued")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "CTX_DB": str(Path(folder) / "ctx.db"), "CTX_AGENT": "bench"}
        subprocess.run([CTX, "init"], env=env, check=True, capture_output=True)
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from ctx_kernel.kernel import Ctx

        with Ctx.open(Path(env["CTX_DB"])) as kernel:
            for i in range(args.pending):
                kernel.propose(f"area{i % 40}.topic{i}", f"Decision number {i} about component {i * 7}")
        baseline = [_time(["-c", "pass"], env, sys.executable) for _ in range(args.runs)]
        timings = {
            "python -c pass (interpreter floor)": baseline,
            "ctx log TEXT": [_time(["log", f"evidence text number {i}"], env) for i in range(args.runs)],
            "ctx propose": [
                _time(["propose", "--subject", f"bench.s{i}", "--decision", f"Use option {i}"], env)
                for i in range(args.runs)
            ],
        }
        recall = ["recall", "which option did we choose for component 70?", "--k", "5"]
        vectors = json.loads(
            subprocess.run([CTX, *recall, "--json"], env=env, check=True, capture_output=True).stdout
        )["vectors"]
        timings[f"ctx recall (vectors {vectors['state']})"] = [_time(recall, env) for _ in range(args.runs)]
    print(f"{args.runs} runs each, {args.pending} pending proposals in the store")
    if vectors.get("note"):
        print(f"recall: {vectors['note']}")
    for name, values in timings.items():
        values.sort()
        p90 = values[int(0.9 * (len(values) - 1))]
        print(f"{name:45s} median {statistics.median(values):6.1f} ms   p90 {p90:6.1f} ms")


if __name__ == "__main__":
    main()
