"""Bulk evidence capture: whole-process wall time of `ctx log --jsonl` and `ctx ingest transcript`.

Writes a JSON Lines file and a Claude Code session transcript of --lines lines each (text of
realistic sizes: short chat turns, paragraphs, stack traces, diffs, some secrets), then times,
on a fresh store and without vectors:

- `ctx log --jsonl FILE` (every record new), and again on the same file (every record a duplicate);
- `ctx ingest transcript FILE` (every turn new), and again.

The target is 2,000 evidence records per second or more on a 2-core machine. With --reindex it
also times `ctx reindex`, which embeds the new evidence afterwards with the real model.

    python bench/ingest_bench.py [--lines 50000] [--reindex]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CTX = str(Path(sys.executable).parent / "ctx")
WORDS = (
    "cache redis token refresh session migration schema index query latency retry queue worker "
    "deploy rollback feature flag config service endpoint handler request response timeout "
    "postgres sqlite vector embedding recall decision proposal evidence review subject audit"
).split()
TRACE = (
    'Traceback (most recent call last):\n  File "app/server.py", line {n}, in handle\n'
    "    response = self.dispatch(request)\nKeyError: 'user_id'\n"
)
DIFF = (
    "diff --git a/app/auth.py b/app/auth.py\n-    def refresh(self, token):\n"
    "+    def refresh(self, token, *, max_age={n}):\n"
)


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def body(rng: random.Random, number: int) -> str:
    """Mostly short turns and paragraphs, some traces and diffs, one in fifty with a secret."""
    roll = rng.random()
    if roll < 0.45:
        text = sentence(rng, rng.randint(4, 25))
    elif roll < 0.85:
        text = " ".join(sentence(rng, rng.randint(8, 30)) for _ in range(rng.randint(3, 12)))
    elif roll < 0.93:
        text = TRACE.format(n=rng.randint(1, 900)) * rng.randint(1, 4)
    else:
        text = DIFF.format(n=rng.randint(1, 900)) * rng.randint(1, 20)
    if number % 50 == 0:
        text += f" export AWS_ACCESS_KEY_ID=AKIA{rng.randrange(16**16):016X}"
    return f"{text} (#{number})"


def write_jsonl(path: Path, lines: int, rng: random.Random) -> int:
    size = 0
    with path.open("w", encoding="utf-8") as out:
        for number in range(lines):
            record = {"text": body(rng, number), "source": f"notes/{number // 100}.md#L{number % 100 + 1}"}
            if number % 3 == 0:
                record["tags"] = ["bench"]
            line = json.dumps(record) + "\n"
            size += len(line)
            out.write(line)
    return size


def write_transcript(path: Path, lines: int, rng: random.Random) -> int:
    session = "5d0c7a1e-2b3f-4c5d-8e9f-0a1b2c3d4e5f"
    size = 0
    with path.open("w", encoding="utf-8") as out:
        for number in range(lines):
            stamp = f"2025-06-01T{number // 3600 % 24:02d}:{number // 60 % 60:02d}:{number % 60:02d}.000Z"
            base = {"sessionId": session, "timestamp": stamp, "cwd": "/home/dev/shop", "uuid": f"u{number}"}
            if number % 2 == 0:
                record = {**base, "type": "user", "message": {"role": "user", "content": body(rng, number)}}
            else:
                content = [{"type": "text", "text": body(rng, number)}]
                record = {**base, "type": "assistant", "message": {"role": "assistant", "content": content}}
            line = json.dumps(record) + "\n"
            size += len(line)
            out.write(line)
    return size


def timed(*args: str) -> tuple[float, str]:
    start = time.perf_counter()
    result = subprocess.run([CTX, *args], capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"ctx {' '.join(args)} failed: {result.stderr.strip()}")
    return elapsed, result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000, help="lines in each input file")
    parser.add_argument("--reindex", action="store_true", help="also time `ctx reindex` (embeds everything)")
    args = parser.parse_args()
    rng = random.Random(7)
    work = Path(tempfile.mkdtemp(prefix="ctx-ingest-bench-"))
    try:
        jsonl, transcript = work / "records.jsonl", work / "session.jsonl"
        jsonl_mb = write_jsonl(jsonl, args.lines, rng) / 1e6
        transcript_mb = write_transcript(transcript, args.lines, rng) / 1e6
        store = str(work / "ctx.db")
        timed("--db", store, "init")
        print(
            f"inputs: {args.lines} lines each; "
            f"records.jsonl {jsonl_mb:.1f} MB, session.jsonl {transcript_mb:.1f} MB"
        )
        for label, command in (
            ("ctx log --jsonl (new)", ("log", "--jsonl", str(jsonl), "--json")),
            ("ctx log --jsonl (rerun)", ("log", "--jsonl", str(jsonl), "--json")),
            ("ctx ingest transcript (new)", ("ingest", "transcript", str(transcript), "--json")),
            ("ctx ingest transcript (rerun)", ("ingest", "transcript", str(transcript), "--json")),
        ):
            seconds, out = timed("--db", store, *command)
            report = json.loads(out)
            records = report["added"] + report["duplicates"]
            print(
                f"{label:31s} {seconds:6.2f} s  {records / seconds:8.0f} records/s  "
                f"(added {report['added']}, duplicates {report['duplicates']}, "
                f"rejected {report['rejected_count']}, redacted {report['redacted']})"
            )
        print(f"store size: {Path(store).stat().st_size / 1e6:.1f} MB")
        if args.reindex:
            seconds, _ = timed("--db", store, "reindex")
            print(f"{'ctx reindex (vectors after)':31s} {seconds:6.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
