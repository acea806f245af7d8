"""Recall through the MCP server: server start time, the first recall and later ones, and sizes.

Starts `ctx mcp` with the SDK's own stdio client on a copy of the recall benchmark's corpus
(1,000 decisions and 10,000 evidence texts by default, embedded with the real model; built once
and cached in bench/.cache), then prints:

- start: from spawning the process to the end of the `initialize` handshake, and to `tools/list`;
- the first `recall` sent right after the handshake (the model may still be loading), and the
  first one sent after the server has been idle for `--settle` seconds (model loaded in the
  background);
- later `recall` calls on one warm server (p50/p95 over `--queries` queries), in the default
  compact text form, then as many `inject_context` calls with a query (other queries);
- for comparison, the whole-process wall time of `ctx recall --json` in a shell;
- the served log's cost on the warm path, in process on the same store: a recall's p50 without
  and with its entry written (what `ctx mcp` does after each read), the entry's own p50/p95 (an
  upper bound of the time it holds the write lock), and the bytes on disk per served item;
- progressive disclosure for k = 1, 10 and 50: the bytes and ~tokens of the `recall` index
  (step 1), the `timeline` around its first hit (step 2) and that hit's `show` (step 3), beside
  the whole record of every hit; then `list_pending` and `inject_context`; each in the text form
  and in the JSON form (`format: "json"`, its structured content).

    python bench/mcp_bench.py [--decisions N] [--evidence N] [--queries N] [--starts N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from recall_bench import corpus, pct, queries

from ctx_kernel.kernel.demo import build_demo

CTX = str(Path(sys.executable).parent / "ctx")


def _params(db: Path) -> StdioServerParameters:
    return StdioServerParameters(command=CTX, args=["mcp", "--db", str(db)], env=dict(os.environ))


DEMO_QUESTION = "how do we keep users signed in?"
DISCLOSURE_K = (1, 10, 50)
OTHER_SIZED: list[tuple[str, str, dict[str, object]]] = [
    ("list_pending", "list_pending", {}),
    ("inject_context (default budget)", "inject_context", {}),
]
Size = tuple[str, int, int, int, int]  # label, hits, text bytes, JSON bytes, JSON + its text bytes


async def _sized(
    session: ClientSession, label: str, tool: str, arguments: dict[str, object]
) -> tuple[Size, dict]:
    """One call's sizes in both forms, and its JSON."""
    text = await session.call_tool(tool, arguments)
    full = await session.call_tool(tool, {**arguments, "format": "json"})
    if text.is_error or full.is_error:
        raise SystemExit(f"{tool} failed: {(text if text.is_error else full).content[0].text}")
    assert text.structured_content is None
    data = full.structured_content or {}
    hits = sum(len(data.get(section) or ()) for section in ("decisions", "closed", "evidence"))
    hits = hits if tool == "recall" else 0
    json_bytes = len(json.dumps(data, ensure_ascii=False).encode())
    text_bytes = len(text.content[0].text.encode())
    return (label, hits, text_bytes, json_bytes, json_bytes + len(full.content[0].text.encode())), data


async def _sizes(session: ClientSession, query: str) -> list[Size]:
    """Progressive disclosure per k: the index of k hits (step 1), the timeline around its first hit
    (step 2), that hit's whole record (step 3), and every hit's whole record for comparison; then
    the other sized answers."""
    out = []
    for k in DISCLOSURE_K:
        size, recalled = await _sized(
            session, f"k={k} step 1: recall index", "recall", {"query": query, "k": k}
        )
        out.append(size)
        ids = _hit_ids(recalled)
        if not ids:
            continue
        for label, tool, arguments in (
            (f"k={k} step 2: timeline around the first hit", "timeline", {"target": ids[0]}),
            (f"k={k} step 3: show the first hit", "show", {"id": ids[0]}),
        ):
            out.append((await _sized(session, label, tool, arguments))[0])
        every = [(await _sized(session, "", "show", {"id": hit}))[0] for hit in ids]
        out.append(
            (
                f"k={k} for comparison: show every hit",
                len(ids),
                *(sum(s[i] for s in every) for i in (2, 3, 4)),
            )
        )
    for label, tool, given in OTHER_SIZED:
        out.append((await _sized(session, label, tool, given))[0])
    return out


def _hit_ids(recalled: dict[str, object]) -> list[str]:
    """The ids of a recall's hits, decisions first."""
    ids = []
    for section in ("decisions", "closed", "evidence"):
        hits = recalled.get(section)
        if isinstance(hits, list):
            ids += [str(hit["id"]) for hit in hits]
    return ids


async def _demo_sizes(query: str) -> list[Size]:
    """The sizes on the small store `ctx demo` builds (a realistic project, not a synthetic one)."""
    with tempfile.TemporaryDirectory() as folder:
        with build_demo(Path(folder) / "demo") as kernel:
            db = kernel.location
        async with stdio_client(_params(db)) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await _sizes(session, query)


async def _one_server(db: Path, asked: list[str], settle: float, sized: bool = False) -> dict[str, object]:
    """Start one server; time the handshake, the first recall, and (when asked) later recalls."""
    started = time.perf_counter()
    async with stdio_client(_params(db)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        ready = time.perf_counter() - started
        await session.list_tools()
        listed = time.perf_counter() - started
        if settle:
            await anyio.sleep(settle)
        later = []
        first = None
        for query in asked:
            begun = time.perf_counter()
            result = await session.call_tool("recall", {"query": query, "k": 10})
            took = (time.perf_counter() - begun) * 1000
            if result.is_error:
                raise SystemExit(f"recall failed: {result.content[0].text}")
            if first is None:
                first = took
            else:
                later.append(took)
        injected = []
        if sized:  # the warm server: `inject_context` with a query, on queries it has not seen
            for query in queries(len(asked), seed=29):
                begun = time.perf_counter()
                result = await session.call_tool("inject_context", {"query": query})
                injected.append((time.perf_counter() - begun) * 1000)
                if result.is_error:
                    raise SystemExit(f"inject_context failed: {result.content[0].text}")
        checked = await session.call_tool("recall", {"query": asked[0], "k": 1, "format": "json"})
        state = checked.structured_content["vectors"]["state"]
        if state != "on":
            raise SystemExit(f"vectors are {state}: the benchmark needs the model extra installed")
        sizes = await _sizes(session, asked[0]) if sized else []
    return {
        "ready": ready * 1000,
        "listed": listed * 1000,
        "first": first,
        "later": later,
        "injected": injected,
        "sizes": sizes,
    }


def _served_cost(db: Path, asked: list[str]) -> dict[str, float]:
    """A warm recall without and with its served-log entry, the entry alone, and bytes per item."""
    from ctx_kernel.kernel import Ctx
    from ctx_kernel.kernel.audit.served import served_items
    from ctx_kernel.kernel.hosts.operations import OPERATIONS, Caller
    from ctx_kernel.kernel.inputs import RecallArgs
    from ctx_kernel.kernel.store.sqlite import driver

    def disk() -> int:
        conn = driver.connect(db, load_vec=False)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        used = (
            conn.execute("PRAGMA page_count").fetchone()[0]
            - conn.execute("PRAGMA freelist_count").fetchone()[0]
        )
        size = used * conn.execute("PRAGMA page_size").fetchone()[0]
        conn.close()
        return int(size)

    operation = OPERATIONS["recall"]
    caller = Caller("bench", "bench", via="mcp")
    bare, entry, items = [], [], 0
    with Ctx.open(db) as kernel:
        kernel.warm()
        for query in asked[:5]:  # the recall code and caches warmed as in a server that has answered
            operation.answer(RecallArgs(query=query), operation.run(kernel, RecallArgs(query=query), caller))
        before = disk()
        for query in asked:
            args = RecallArgs(query=query, k=10)
            begun = time.perf_counter()
            result = operation.run(kernel, args, caller)
            operation.answer(args, result)
            bare.append((time.perf_counter() - begun) * 1000)
            begun = time.perf_counter()
            note = kernel.served.record(
                host="mcp", agent="bench", session="bench", operation="recall", arguments=args, result=result
            )
            entry.append((time.perf_counter() - begun) * 1000)
            if note is not None:
                raise SystemExit(note)
            items += len(served_items(kernel.store, result))
        after = disk()
        # The write alone: what holds the store's write lock (readers of a WAL file never wait for it).
        locked = []
        row = {"at": "2026-01-01T00:00:00.000000Z", "host": "mcp", "agent": "bench", "session": "bench"}
        row |= {"operation": "recall", "request": "0" * 64, "items": "[]", "missed": 0}
        for _ in asked:
            begun = time.perf_counter()
            with kernel.store.transaction():
                kernel.store.served().append_served(row)  # type: ignore[union-attr]
            locked.append((time.perf_counter() - begun) * 1000)
    logged = [b + e for b, e in zip(bare, entry, strict=True)]
    return {
        "without": pct(bare, 0.5),
        "with": pct(logged, 0.5),
        "entry p50": pct(entry, 0.5),
        "entry p95": pct(entry, 0.95),
        "entries": len(entry),
        "lock p50": pct(locked, 0.5),
        "lock max": max(locked),
        "items": items,
        "bytes per item": (after - before) / max(items, 1),
    }


def _shell_recall(db: Path, asked: list[str]) -> list[float]:
    env = {**os.environ, "CTX_DB": str(db)}
    times = []
    for query in asked:
        begun = time.perf_counter()
        subprocess.run([CTX, "recall", query, "--json"], env=env, check=True, capture_output=True)
        times.append((time.perf_counter() - begun) * 1000)
    return times


def main() -> None:
    """Build (or reuse) the corpus and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=1_000)
    parser.add_argument("--evidence", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100, help="later recalls on one warm server")
    parser.add_argument("--starts", type=int, default=5, help="server starts per first-recall figure")
    parser.add_argument(
        "--settle", type=float, default=3.0, help="idle seconds before a settled first recall"
    )
    args = parser.parse_args()
    source = corpus(args.decisions, args.evidence)
    asked = queries(args.queries + 2 * args.starts)
    with tempfile.TemporaryDirectory() as folder:
        # A copy: the server may write (conflict rules, vectors of new rows); the cache stays as built.
        db = Path(folder) / "ctx.db"
        shutil.copyfile(source, db)
        size = db.stat().st_size >> 20
        print(f"corpus: {args.decisions} decisions, {args.evidence} evidence texts ({size} MiB)")
        cold = [anyio.run(_one_server, db, [asked[i]], 0.0) for i in range(args.starts)]
        settled = [
            anyio.run(_one_server, db, [asked[args.starts + i]], args.settle) for i in range(args.starts)
        ]
        warm = anyio.run(_one_server, db, asked[2 * args.starts :], 0.0, True)
        shell = _shell_recall(db, asked[: args.starts])
        served = _served_cost(db, asked[2 * args.starts :])

    def row(label: str, values: list[float]) -> None:
        print(f"{label:52} {pct(values, 0.5):8.1f} {pct(values, 0.95):8.1f} {max(values):8.1f}")

    print(f"\n`ctx mcp` over stdio with the SDK client (ms)   {'p50':>8} {'p95':>8} {'max':>8}")
    starts = [*cold, *settled, warm]
    row(f"start: spawn to initialized ({len(starts)} starts)", [s["ready"] for s in starts])
    row("start: spawn to tools/list answered", [s["listed"] for s in starts])
    row(f"first recall right after initialize ({args.starts} starts)", [s["first"] for s in cold])
    row(f"first recall after {args.settle:g} s idle ({args.starts} starts)", [s["first"] for s in settled])
    row(f"later recalls, one server ({len(warm['later'])} queries)", warm["later"])
    row(f"later inject_context with a query ({len(warm['injected'])})", warm["injected"])
    row(f"for comparison: `ctx recall --json` process ({len(shell)})", shell)
    print(
        f"\nThe served log, warm recall in process ({served['entries']:.0f} queries, "
        f"load {os.getloadavg()[0]:.2f}): "
        f"p50 {served['without']:.2f} ms without the entry, {served['with']:.2f} ms with it "
        f"({served['with'] - served['without']:+.2f} ms); the entry alone p50 {served['entry p50']:.2f} ms, "
        f"p95 {served['entry p95']:.2f} ms; the write transaction alone p50 {served['lock p50']:.2f} ms, "
        f"max {served['lock max']:.2f} ms; {served['bytes per item']:.0f} bytes on disk per served item "
        f"({served['items']:.0f} items)"
    )
    demo = anyio.run(_demo_sizes, DEMO_QUESTION)
    for store, sizes in (
        (f"the {args.decisions}-decision corpus", warm["sizes"]),
        ("the ctx demo store", demo),
    ):
        heading = f"What an agent reads on {store} (bytes; ~tokens = bytes / 4)"
        columns = ("hits", "text", "~tokens", "~tok/hit", "json", "json+text")
        print(f"\n{heading:60} " + " ".join(f"{c:>{max(len(c), 8) if c != 'hits' else 5}}" for c in columns))
        for label, hits, text_bytes, json_bytes, wire_bytes in sizes:
            per_hit = f"{text_bytes / 4 / hits:8.0f}" if hits else f"{'':8}"
            print(
                f"{label:60} {hits or '':>5} {text_bytes:8,} {text_bytes // 4:8,} {per_hit} {json_bytes:8,} "
                f"{wire_bytes:9,}"
            )


if __name__ == "__main__":
    main()
