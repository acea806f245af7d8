"""`ctx reindex` beside the model's own floor, on the realistic evidence generator's texts.

For each count in --counts (default 1500,20000) it logs the generator's first COUNT records into a
fresh store with `ctx log --jsonl`, reads back the texts the store holds, and then, back to back:

- the floor: the model alone (fastembed, the same model folder ctx loads) over the same chunks
  (ctx's chunking), sorted by length, in batches of --floor-batch, on all cores, model loaded
  beforehand; in a process of its own;
- ctx: `ctx reindex --json` as a whole process: wall time, its CPU time, its peak RSS.

Every speed is printed with the floor of the same run and as a ratio to it, with the 1-minute
load average before each part (the machine may be shared; a busy one slows both sides).

The generator comes from --generator, else $CTX_BENCH_EVIDENCE_GENERATOR, else
../shared/eval/realistic-evidence/gen_evidence.py beside the repository; the bench stops and says
so when there is none.

With --floor-twice the floor is measured again after ctx and ctx compared with their mean, which
halves the effect of load that changes during the run.

    python bench/embed_bench.py [--counts 1500,20000] [--floor-batch 16] [--floor-twice] [--generator PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ctx_kernel.kernel.recall.embeddings import DOCUMENT_BATCH  # ctx's batch: the floor's by default

HERE = Path(__file__).resolve().parent
CTX = str(Path(sys.executable).parent / "ctx")
DEFAULT_GENERATOR = HERE.parent.parent / "shared" / "eval" / "realistic-evidence" / "gen_evidence.py"


def generator_path(given: str | None) -> Path:
    """The generator script, or exit saying where it was looked for."""
    chosen = given or os.environ.get("CTX_BENCH_EVIDENCE_GENERATOR")
    path = Path(chosen) if chosen else DEFAULT_GENERATOR
    if not path.is_file():
        sys.exit(
            f"embed_bench: the realistic evidence generator is absent ({path} is not a file); pass "
            "--generator PATH or set CTX_BENCH_EVIDENCE_GENERATOR to gen_evidence.py"
        )
    return path


def evidence_file(generator: Path, count: int, folder: Path) -> Path:
    """The generator's first ``count`` records (prefix-stable: a longer file's first lines are these)."""
    out = folder / f"evidence-{count}.jsonl"
    subprocess.run(
        [sys.executable, str(generator), str(out), str(count), "--stdlib-only"],
        check=True,
        capture_output=True,
    )
    return out


def load() -> float:
    return os.getloadavg()[0]


def run_measured(args: list[str], env: dict[str, str]) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of one child process, and its stdout."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(args, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)  # per-process CPU time and peak RSS
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            sys.exit(f"embed_bench: {' '.join(args[:3])} failed ({child.returncode}): {err.read().strip()}")
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read()


def floor_main(texts_file: Path, batch: int) -> None:
    """The floor, in this process: print the seconds of one sorted pass over the chunks as JSON."""
    from fastembed import TextEmbedding

    from ctx_kernel.kernel.recall import embeddings as embed

    model, folder, _ = embed.configured_model()
    folder = folder or embed.packaged_model_dir()
    if folder is None:
        sys.exit("embed_bench: no local model folder (install the model extra or set CTX_MODEL_DIR)")
    texts = json.loads(texts_file.read_text(encoding="utf-8"))
    pieces = sorted((piece for text in texts for piece in embed.chunks(text)), key=len)
    encoder = TextEmbedding(model_name=model, specific_model_path=str(folder))
    list(encoder.embed(["warm up"]))
    started = time.perf_counter()
    vectors = list(encoder.embed(pieces, batch_size=batch))
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "chunks": len(vectors)}))


def measure(count: int, generator: Path, folder: Path, floor_batch: int, floor_twice: bool) -> None:
    from ctx_kernel.kernel import Ctx

    work = folder / str(count)
    work.mkdir()
    store = work / ".ctx" / "ctx.db"
    env = {**os.environ, "CTX_DB": str(store), "CTX_CACHE_DIR": str(folder / "cache")}
    records = evidence_file(generator, count, work)
    subprocess.run([CTX, "init"], env=env, cwd=work, check=True, capture_output=True)
    logged = subprocess.run(
        [CTX, "log", "--jsonl", str(records)], env={**env, "CTX_VECTORS": "off"}, cwd=work,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if logged.returncode != 0:
        # The generator writes a NUL into about one record in 10,000, which ctx refuses (and says
        # so); the rest are logged and measured.
        print(f"note: {logged.stderr.strip().splitlines()[-1]}", flush=True)
    with Ctx.open(store, embedder=None) as kernel:
        texts = [text for _, text in kernel.store.pending_vectors("evidence", count + 1)]
    texts_file = work / "texts.json"
    texts_file.write_text(json.dumps(texts), encoding="utf-8")
    mean = sum(map(len, texts)) / len(texts)
    print(f"{len(texts):,} texts, mean {mean:.0f} characters", flush=True)

    floor_args = [sys.executable, __file__, "--floor", str(texts_file), "--floor-batch", str(floor_batch)]
    floors = [_floor(floor_args, env, len(texts), floor_batch, "floor")]
    before_ctx = load()
    wall, cpu, rss, out = run_measured([CTX, "reindex", "--json"], env)
    report = json.loads(out)
    if floor_twice:
        floors.append(_floor(floor_args, env, len(texts), floor_batch, "floor again"))
    floor_rate = sum(floors) / len(floors)
    which = "the mean of the floors before and after" if floor_twice else "the floor"
    inside, whole = len(texts) / report["seconds"], len(texts) / wall
    print(
        f"  ctx         {inside:7.2f} texts/s  = {inside / floor_rate:.0%} of {which} "
        f"({report['seconds']:.1f} s inside `ctx reindex`; load {before_ctx:.2f})\n"
        f"              {whole:7.2f} texts/s  = {whole / floor_rate:.0%} of {which} (whole process "
        f"{wall:.1f} s with start-up and model load; CPU/wall {cpu / wall:.2f}; peak RSS {rss:.0f} MiB)",
        flush=True,
    )


def _floor(args: list[str], env: dict[str, str], texts: int, batch: int, label: str) -> float:
    """Run the floor in a process of its own; print and return its texts/s."""
    before = load()
    wall, cpu, rss, out = run_measured(args, env)
    floor = json.loads(out)
    rate = texts / floor["seconds"]
    print(
        f"  {label:<11} {rate:7.2f} texts/s  ({floor['chunks']:,} chunks sorted by length, batch {batch}, "
        f"all cores: {floor['seconds']:.1f} s; CPU/wall {cpu / wall:.2f}; peak RSS {rss:.0f} MiB; "
        f"load {before:.2f})",
        flush=True,
    )
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--counts", default="1500,20000", help="texts per run, comma-separated")
    parser.add_argument(
        "--floor-batch", type=int, default=DOCUMENT_BATCH, help="the floor's batch size (default: ctx's)"
    )
    parser.add_argument(
        "--floor-twice", action="store_true", help="measure the floor before and after ctx (a noisy machine)"
    )
    parser.add_argument("--generator", help="gen_evidence.py of the realistic evidence generator")
    parser.add_argument("--floor", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor is not None:
        floor_main(args.floor, args.floor_batch)
        return
    generator = generator_path(args.generator)
    print(f"{os.cpu_count()} CPUs; floor and ctx measured back to back on the same texts", flush=True)
    with tempfile.TemporaryDirectory(prefix="ctx-embed-bench-") as folder:
        for count in (int(c) for c in args.counts.split(",")):
            measure(count, generator, Path(folder), args.floor_batch, args.floor_twice)


if __name__ == "__main__":
    main()
