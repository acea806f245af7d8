"""Handles at scale: how short a name each record gets in a store of 100,000 records, and its cost.

A handle is the shortest end of an id (four characters or more) that no other id ends with
(kernel/ids.py). The store is built through the facade as agents build theirs: evidence logged in
batches of 500 (`ctx log --jsonl`), proposals one by one, some of them ratified. Prints the share
of records whose handle is at most 4 to 8 characters, the longest, and the time to work out the
handles of a 50-record list and to resolve one handle, beside the floor of one indexed lookup.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.capture.ingest import EvidenceInput, Item


def _build(path: Path, records: int, proposals: int) -> Ctx:
    ctx, _ = Ctx.init(path, embedder=None)
    evidence = records - proposals
    items = (
        Item(i + 1, EvidenceInput(f"note {i}: the retry helper backs off after timeout {i % 97}"))
        for i in range(evidence)
    )
    ctx.log_many(items, redact=False)
    for i in range(proposals):
        made = ctx.propose(f"area{i % 50}.topic{i}", f"Decision number {i} about component {i * 7}")
        if i % 3 == 0:
            ctx.ratify(made.id, reviewer="bench")
    return ctx


def _timed(call, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    """Print the handle-length distribution and the timings."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument(
        "--proposals", type=int, default=3_000, help="of the records, proposals (a third ratified)"
    )
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    os.environ["CTX_VECTORS"] = "off"
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        ctx = _build(Path(folder) / "ctx.db", args.records, args.proposals)
        built = time.perf_counter() - start
        store = ctx.store
        every = [
            *store.evidence_ids(),
            *(p.id for p in store.list_proposals(None)),
            *(d.id for d in ctx.decisions(include_closed=True)),
        ]
        names = ctx.handles(every)
        lengths = Counter(len(name) for name in names.values())
        total = len(names)
        print(f"{total:,} records (built in {built:.1f} s, load {os.getloadavg()[0]:.1f})")
        for limit in range(4, 9):
            share = sum(n for length, n in lengths.items() if length <= limit) / total
            print(f"  handle of at most {limit} characters: {share:8.4%}")
        print(f"  longest handle: {max(lengths)} characters; distribution {dict(sorted(lengths.items()))}")
        sample = every[:: max(1, total // 50)][:50]
        floor = _timed(lambda: store.ids_ending([sample[0][-4:]]), args.runs)
        listing = _timed(lambda: ctx.handles(sample), args.runs)
        some = names[sample[len(sample) // 2]]
        resolving = _timed(lambda: ctx.resolve_id(some), args.runs)
        print(f"  one indexed lookup of an end (floor)   median {statistics.median(floor):6.3f} ms")
        print(
            f"  handles of a 50-record list            median {statistics.median(listing):6.3f} ms "
            f"({statistics.median(listing) / statistics.median(floor):.1f}x the floor)"
        )
        print(
            f"  resolve one handle                     median {statistics.median(resolving):6.3f} ms "
            f"({statistics.median(resolving) / statistics.median(floor):.1f}x the floor)"
        )
        ctx.close()


if __name__ == "__main__":
    main()
