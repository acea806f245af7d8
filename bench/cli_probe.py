"""Run one ctx command as its own process would, appending its write-lock waits and holds to a file.

Used by ``writers_bench.py --modes cli``: the command's whole process (interpreter start, imports,
work) runs as ``ctx`` runs it; the wait is from asking for the writer lock to being inside the
transaction, the hold from then to releasing the lock.

    python bench/cli_probe.py OUT.jsonl CTX-ARGUMENTS...
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def main() -> None:
    out, argv = Path(sys.argv[1]), sys.argv[2:]
    from ctx_kernel.kernel.store.sqlite.store import SQLiteStore
    from ctx_kernel.kernel.store.writelock import WriteLock

    waits: list[float] = []
    holds: list[float] = []
    marks: dict[str, float] = {}
    acquire, release, begin = WriteLock.acquire, WriteLock.release, SQLiteStore._begin

    def timed_acquire(self: WriteLock) -> Any:
        marks["asked"] = time.perf_counter()
        return acquire(self)

    def timed_begin(self: SQLiteStore) -> None:
        begin(self)
        marks["inside"] = time.perf_counter()
        waits.append(marks["inside"] - marks.get("asked", marks["inside"]))

    def timed_release(self: WriteLock) -> Any:
        if "inside" in marks:
            holds.append(time.perf_counter() - marks.pop("inside"))
        return release(self)

    WriteLock.acquire = timed_acquire  # type: ignore[method-assign]
    WriteLock.release = timed_release  # type: ignore[method-assign]
    SQLiteStore._begin = timed_begin  # type: ignore[method-assign]
    from ctx_kernel.kernel.hosts.cli import main as ctx_main

    code = 0
    try:
        ctx_main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    finally:
        with out.open("a", encoding="utf-8") as handle:
            handle.write(
                json.dumps(
                    {
                        "command": argv[2] if len(argv) > 2 else "",
                        "waits": waits,
                        "holds": holds,
                        "code": code,
                    }
                )
                + "\n"
            )
    sys.exit(code)


if __name__ == "__main__":
    main()
