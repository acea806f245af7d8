"""Recall through the MCP server: server start time, the first recall and later ones.

Starts `ctx mcp` with the SDK's own stdio client on a copy of the recall benchmark's corpus
(1,000 decisions and 10,000 evidence texts by default, embedded with the real model; built once
and cached in bench/.cache), then prints:

- start: from spawning the process to the end of the `initialize` handshake, and to `tools/list`;
- the first `recall` sent right after the handshake (the model may still be loading), and the
  first one sent after the server has been idle for `--settle` seconds (model loaded in the
  background);
- later `recall` calls on one warm server (p50/p95 over `--queries` queries);
- how much of each round trip is the SDK client checking the result against the tool's output
  schema (client-side work that other MCP clients do differently);
- for comparison, the whole-process wall time of `ctx recall --json` in a shell.

    python bench/mcp_bench.py [--decisions N] [--evidence N] [--queries N] [--starts N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client, types
from recall_bench import corpus, pct, queries

CTX = str(Path(sys.executable).parent / "ctx")
OUTPUT = ["text"]  # the recall tool's format for later calls (--format)


def _params(db: Path) -> StdioServerParameters:
    return StdioServerParameters(command=CTX, args=["mcp", "--db", str(db)], env=dict(os.environ))


class TimedSession(ClientSession):
    """The SDK's client session, timing its own check of each result against the output schema."""

    validation_ms: list[float]

    async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
        """Validate as the SDK does, recording how long it took."""
        begun = time.perf_counter()
        await super().validate_tool_result(name, result)
        self.validation_ms.append((time.perf_counter() - begun) * 1000)


async def _one_server(db: Path, asked: list[str], settle: float) -> dict[str, object]:
    """Start one server; time the handshake, the first recall, and (when asked) later recalls."""
    started = time.perf_counter()
    async with stdio_client(_params(db)) as (read, write), TimedSession(read, write) as session:
        session.validation_ms = []
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
            # The first answer in full JSON, to check that vectors are on; later ones in OUTPUT.
            output = "json" if first is None else OUTPUT[0]
            result = await session.call_tool("recall", {"query": query, "k": 10, "format": output})
            took = (time.perf_counter() - begun) * 1000
            if result.is_error:
                raise SystemExit(f"recall failed: {result.content[0].text}")
            if first is None and (state := result.structured_content["vectors"]["state"]) != "on":
                raise SystemExit(f"vectors are {state}: the benchmark needs the model extra installed")
            if first is None:
                first = took
            else:
                later.append(took)
    checks = session.validation_ms
    return {
        "ready": ready * 1000,
        "listed": listed * 1000,
        "first": first,
        "later": later,
        "first_check": checks[0],
        "later_checks": checks[1:],
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
    parser.add_argument("--format", choices=("text", "json"), default="text", help="later recalls' format")
    args = parser.parse_args()
    OUTPUT[0] = args.format
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
        warm = anyio.run(_one_server, db, asked[2 * args.starts :], 0.0)
        shell = _shell_recall(db, asked[: args.starts])

    def row(label: str, values: list[float]) -> None:
        print(f"{label:52} {pct(values, 0.5):8.1f} {pct(values, 0.95):8.1f} {max(values):8.1f}")

    print(f"\n`ctx mcp` over stdio with the SDK client (ms)   {'p50':>8} {'p95':>8} {'max':>8}")
    starts = [*cold, *settled, warm]
    row(f"start: spawn to initialized ({len(starts)} starts)", [s["ready"] for s in starts])
    row("start: spawn to tools/list answered", [s["listed"] for s in starts])
    row(f"first recall right after initialize ({args.starts} starts)", [s["first"] for s in cold])
    row("  of which the client's output-schema check", [s["first_check"] for s in cold])
    row(f"first recall after {args.settle:g} s idle ({args.starts} starts)", [s["first"] for s in settled])
    row("  of which the client's output-schema check", [s["first_check"] for s in settled])
    row(f"later recalls, one server ({len(warm['later'])} queries, {args.format})", warm["later"])
    row("  of which the client's output-schema check", warm["later_checks"])
    row(f"for comparison: `ctx recall --json` process ({len(shell)})", shell)
    print(
        "\nThe output-schema check is the Python SDK client's own jsonschema validation of each result"
        "\n(compiled on the first call); other MCP clients validate differently or not at all."
    )


if __name__ == "__main__":
    main()
