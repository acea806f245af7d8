"""Recall speed per store size, with the floors of its parts measured in the same run.

Sizes: ``10k`` (10k decisions + 10k evidence texts), ``100k`` (10k + 100k), ``1m`` (10k + 1M).
Each store is built once through the facade and cached (``CTX_BENCH_CACHE``, default a
``ctx-bench`` folder in the temp dir). Evidence comes from the realistic-evidence generator
when one is found (``CTX_BENCH_EVIDENCE_GENERATOR``, or ``shared/eval/realistic-evidence``
beside the repository), else from the template sentences below.

Vectors: every decision is embedded with the real model; so are the first ``--real``
evidence texts. The other evidence vectors are synthetic (a real vector plus noise,
renormalised): a quantised scan costs the same whatever the values, and embedding a
million 500-character texts takes days on two cores. Queries are always embedded for real.

For each size it prints p50/p95 of warm in-process recall per mode (query embedding
included), the CPU time of a hybrid recall (all threads: steadier than wall time on a shared
machine), of the query embedding alone, and the floors: a binary KNN over the evidence
vectors (sqlite-vec, k=100; then what a warm process runs instead: the bits held in memory
and the exact rescoring of recall's candidates), a plain FTS5 OR query of the query's words
over the evidence, and RRF of 3 lists of 100; then the recall of the exact top 10 by the
quantised search, and RSS.

    python bench/recall_bench.py [--sizes 10k,100k,1m] [--queries N] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.capture.ingest import EvidenceInput, Item
from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.recall.embeddings import chunks
from ctx_kernel.kernel.recall.engine import MODES, RECORDS_PER_CANDIDATE, VECTOR_CANDIDATES, fuse
from ctx_kernel.kernel.store.sqlite.fts import match_string

HERE = Path(__file__).resolve().parent
CORPUS_VERSION = 2
SIZES = {"10k": (10_000, 10_000), "100k": (10_000, 100_000), "1m": (10_000, 1_000_000)}
# A synthetic vector is a real one plus this much noise per dimension (cosine ~0.75 to it).
NOISE = 0.05

AREAS = (
    "auth api db cache deploy ci frontend mobile search storage observability security billing "
    "payments notifications email jobs queue events infra networking testing build release docs "
    "analytics ml data privacy compliance i18n"
).split()
TOPICS = (
    "tokens sessions retries timeouts pagination errors logging metrics tracing alerts migrations "
    "indexes backups replicas schema versioning caching invalidation rate-limits quotas webhooks "
    "secrets keys rotation encryption uploads thumbnails exports imports scheduling workers "
    "batching sharding partitioning locking idempotency validation serialization compression "
    "feature-flags rollouts rollbacks canaries environments dependencies linting formatting"
).split()
TOOLS = (
    "postgres redis kafka rabbitmq sqlite duckdb clickhouse elasticsearch opensearch s3 gcs minio "
    "nginx envoy traefik celery dramatiq rq temporal airflow prefect sentry prometheus grafana loki "
    "tempo jaeger otel datadog vault sops pydantic fastapi django flask httpx requests aiohttp "
    "sqlalchemy alembic pytest hypothesis playwright cypress vite webpack pnpm npm yarn ruff mypy "
    "black docker podman kubernetes helm terraform pulumi ansible argo flux github-actions gitlab"
).split()
VERBS_POS = ["Use", "Adopt", "Prefer", "Standardise on", "Enable", "Require", "Keep"]
VERBS_NEG = ["Avoid", "Do not use", "Disable", "Never use", "Remove", "Drop", "Forbid"]
REASONS = [
    "it halved p95 latency in the load test",
    "the team already operates it in production",
    "it removes a moving part from deploys",
    "auditors asked for it after the last review",
    "the old approach lost data during a failover",
    "it keeps local development identical to CI",
    "costs dropped by a third in the pilot",
    "the maintainers stopped shipping security fixes",
]
CHATTER = [
    "user: can you check why {tool} is slow on {topic}? agent: the {area} service retries {n} times",
    "CI log: job {area}-{topic} failed after {n}s, {tool} returned exit code {code}",
    "note: we discussed {topic} for {area}; {tool} looks promising but needs a spike",
    "review: please move the {topic} logic out of `{area}/{topic_ident}.py` before merging",
    "incident {n}: {area} {topic} degraded, {tool} queue depth hit {code}",
    "agent: I updated `{topic_ident}` in {area} to use {tool}; tests pass locally",
    "meeting notes: {area} team wants {tool} for {topic}, security wants a review first",
    "user: does {area} still use {tool}? agent: yes for {topic}, see the runbook",
]
QUERIES = [
    "how do we handle {topic} in {area}",
    "{tool} {topic}",
    "which tool do we use for {area} {topic}?",
    "is {tool} still allowed for {topic}",
    "what did we decide about {area} {topic}",
    "{area}.{topic}",
]


def cache_dir() -> Path:
    """Where built stores are kept between runs."""
    folder = Path(os.environ.get("CTX_BENCH_CACHE") or Path(tempfile.gettempdir()) / "ctx-bench")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _generator() -> Path | None:
    given = os.environ.get("CTX_BENCH_EVIDENCE_GENERATOR")
    found = Path(given) if given else HERE.parent.parent / "shared/eval/realistic-evidence/gen_evidence.py"
    return found if found.is_file() else None


def _decisions(rng: random.Random, count: int) -> list[tuple[str, str, str]]:
    subjects = [f"{a}.{t}" for a in AREAS for t in TOPICS]
    rng.shuffle(subjects)
    chosen = subjects[: max(1, count // 4)]
    decided = []
    for i in range(count):
        subject = chosen[i % len(chosen)] if i >= len(chosen) else chosen[i]
        area, topic = subject.split(".")
        tool = rng.choice(TOOLS)
        verb = rng.choice(VERBS_POS if rng.random() < 0.8 else VERBS_NEG)
        text = f"{verb} {tool} for {topic.replace('-', ' ')} in {area}; owners review it quarterly (rev {i})."
        decided.append((subject, text, f"Because {rng.choice(REASONS)}."))
    return decided


def _template_evidence(count: int) -> Iterator[EvidenceInput]:
    rng = random.Random(20261123)
    for i in range(count):
        area, topic, tool = rng.choice(AREAS), rng.choice(TOPICS), rng.choice(TOOLS)
        body = rng.choice(CHATTER).format(
            area=area,
            topic=topic.replace("-", " "),
            topic_ident=topic.replace("-", "_"),
            tool=tool,
            n=rng.randint(2, 900),
            code=rng.randint(1, 255),
        )
        yield EvidenceInput(f"{body} (#{i})", "conversation" if i % 3 else "log", "bench")


def _realistic_evidence(generator: Path, count: int) -> Iterator[EvidenceInput]:
    # The generator is prefix-stable: a longer file's first lines are this corpus.
    longer = [p for p in cache_dir().glob("evidence-*.jsonl") if int(p.stem.split("-")[1]) >= count]
    out = (
        min(longer, key=lambda p: int(p.stem.split("-")[1]))
        if longer
        else cache_dir() / f"evidence-{count}.jsonl"
    )
    if not out.exists():
        partial = out.with_suffix(".partial")
        subprocess.run(
            [sys.executable, str(generator), str(partial), str(count), "--stdlib-only"], check=True
        )
        partial.rename(out)
    with out.open(encoding="utf-8") as lines:
        for line, _ in zip(lines, range(count), strict=False):
            r = json.loads(line)
            yield EvidenceInput(
                r["text"], r["kind"], r.get("agent"), r.get("session"), (), r.get("source"), r.get("speaker")
            )


def build(path: Path, decisions: int, evidence: int, real: int) -> None:
    """Create the store at ``path`` through the facade, with real and synthetic vectors."""
    base = cache_dir() / f"decisions-v{CORPUS_VERSION}-{decisions}.db"
    if not base.exists():
        kernel, _ = Ctx.init(base.with_suffix(".building"))
        started = time.perf_counter()
        for subject, text, rationale in _decisions(random.Random(20261122), decisions):
            proposal = kernel.propose(subject, text, rationale=rationale, proposer="bench")
            kernel.ratify(proposal.id, reviewer="bench")
        kernel.close()
        base.with_suffix(".building").rename(base)
        base.with_suffix(".building.lock").unlink(missing_ok=True)
        print(f"  ratified {decisions} decisions in {time.perf_counter() - started:.0f} s", flush=True)
    shutil.copyfile(base, path)
    kernel = Ctx.open(path)
    started = time.perf_counter()
    generator = _generator()
    records = _realistic_evidence(generator, evidence) if generator else _template_evidence(evidence)
    kernel.log_many((Item(i, r) for i, r in enumerate(records, 1)), parallel=True)
    source = "realistic generator" if generator else "built-in templates"
    print(
        f"  logged {evidence} evidence texts ({source}) in {time.perf_counter() - started:.0f} s", flush=True
    )
    started = time.perf_counter()
    embedder, _ = kernel.prepare_vectors()
    assert embedder is not None, "the benchmark needs the model extra installed"
    store = kernel.store
    pool: list[np.ndarray] = []
    rng = np.random.default_rng(5)
    for kind, limit in (("decision", decisions), ("evidence", real)):
        for pieces, matrix in _real_vectors(store, embedder, kind, limit):
            pool += list(matrix)
            with store.transaction():
                triples = zip(pieces, matrix, strict=True)
                store.insert_vectors(kind, [(item, n, m.tobytes()) for (item, n), m in triples])
        while rows := store.pending_vectors(kind, 1024):
            base = np.stack([pool[j] for j in rng.integers(0, len(pool), len(rows))])
            noisy = base + rng.normal(0.0, NOISE, base.shape).astype("<f4")
            noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
            with store.transaction():
                store.insert_vectors(
                    kind,
                    [(item, 0, v.astype("<f4").tobytes()) for (item, _), v in zip(rows, noisy, strict=True)],
                )
    print(
        f"  vectors in {time.perf_counter() - started:.0f} s (real: {decisions} decisions, {real} evidence)"
    )
    kernel.close()


def _real_vectors(
    store, embedder, kind: str, limit: int
) -> Iterator[tuple[list[tuple[str, int]], np.ndarray]]:  # type: ignore[no-untyped-def]
    """``(item id, chunk number)`` and real vectors of the first ``limit`` rows of ``kind``, cached by
    row position (every size shares its first rows, not their ids)."""
    cached = cache_dir() / f"vectors-v{CORPUS_VERSION}-{kind}-{limit}-positions.npz"
    if cached.exists():
        saved = np.load(cached)
        ids = [item for item, _ in store.pending_vectors(kind, limit)]
        positions, numbers = saved["positions"].tolist(), saved["chunks"].tolist()
        yield [(ids[p], n) for p, n in zip(positions, numbers, strict=True)], saved["matrix"]
        return
    positions: list[int] = []
    numbers: list[int] = []
    parts: list[np.ndarray] = []
    done = 0
    while done < limit and (rows := store.pending_vectors(kind, min(256, limit - done))):
        pieces = [
            (done + r, item, i, p) for r, (item, text) in enumerate(rows) for i, p in enumerate(chunks(text))
        ]
        matrix = np.stack(
            [np.frombuffer(v, dtype="<f4") for v in embedder.embed_documents([p for *_, p in pieces])]
        )
        positions += [position for position, _, _, _ in pieces]
        numbers += [i for _, _, i, _ in pieces]
        parts.append(matrix)
        done += len(rows)
        yield [(item, i) for _, item, i, _ in pieces], matrix
    np.savez(cached, positions=np.array(positions), chunks=np.array(numbers), matrix=np.concatenate(parts))


def corpus(decisions: int, evidence: int, real: int = 500) -> Path:
    """The cached store of this size, built on first use."""
    path = cache_dir() / f"recall-v{CORPUS_VERSION}-{decisions}-{evidence}-{real}.db"
    if not path.exists():
        partial = path.with_suffix(".building")
        for leftover in path.parent.glob(partial.name + "*"):
            leftover.unlink()
        print(f"building {path.name} (once; reused afterwards)", flush=True)
        build(partial, decisions, evidence, real)
        for suffix in ("-wal", "-shm"):
            Path(str(partial) + suffix).unlink(missing_ok=True)
        partial.rename(path)
        Path(str(partial) + ".lock").unlink(missing_ok=True)
    return path


def queries(count: int, seed: int = 7) -> list[str]:
    """Deterministic queries over the corpus vocabulary."""
    rng = random.Random(seed)
    return [
        rng.choice(QUERIES).format(
            area=rng.choice(AREAS), topic=rng.choice(TOPICS).replace("-", " "), tool=rng.choice(TOOLS)
        )
        for _ in range(count)
    ]


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _timed(fn, items: list, cpu: list[float] | None = None) -> list[float]:  # type: ignore[no-untyped-def]
    """Wall time of ``fn`` on each item in ms; with ``cpu``, the process's CPU time is appended to it."""
    times = []
    for item in items:
        started, used = time.perf_counter(), time.process_time()
        fn(item)
        times.append((time.perf_counter() - started) * 1000)
        if cpu is not None:
            cpu.append((time.process_time() - used) * 1000)
    return times


def _rss_mib() -> tuple[float, float]:
    current = 0.0
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            current = int(line.split()[1]) / 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return current, peak


def time_modes(kernel: Ctx, asked: list[str]) -> dict[str, tuple[float, float]]:
    """p50/p95 in ms of a warm recall per mode (and the hybrid's CPU time), then of the query embedding."""
    kernel.recall("warm up the model and caches")
    # On SQLite a second search loads the vectors' bits into memory on a thread of their own:
    # wait for it (a server searches its own index).
    started = time.perf_counter()
    kernel.recall("warm up the vector bits in memory")
    in_memory = getattr(kernel.store, "vectors_in_memory", None)
    if in_memory is not None:
        state = "loaded" if in_memory(600) else "NOT loaded"
        print(f"  vector bits {state} in memory after {time.perf_counter() - started:.1f} s", flush=True)
    out: dict[str, tuple[float, float]] = {}
    cpu: list[float] = []
    for mode in MODES:
        for query in queries(5, seed=len(mode)):  # other queries: pages and caches, not these answers
            kernel.recall(query, k=10, mode=mode)
        used = cpu if mode == "hybrid" else None
        times = _timed(lambda q, m=mode: kernel.recall(q, k=10, mode=m), asked, used)
        out[mode] = (pct(times, 0.5), pct(times, 0.95))
        if mode == "hybrid":
            out["hybrid CPU (threads)"] = (pct(cpu, 0.5), pct(cpu, 0.95))
    embedder = kernel.embedding().embedder
    assert embedder is not None
    times = _timed(embedder.embed_query, asked)
    out["(embed)"] = (pct(times, 0.5), pct(times, 0.95))
    return out


def measure(path: Path, asked: list[str]) -> dict[str, tuple[float, float]]:
    """p50/p95 of each mode and of each floor, in ms."""
    kernel = Ctx.open(path)
    out = time_modes(kernel, asked)
    embedder = kernel.embedding().embedder
    assert embedder is not None
    vectors = [embedder.embed_query(q) for q in asked]
    store = kernel.store
    knn = "SELECT chunk_id FROM vec_evidence WHERE bits MATCH vec_quantize_binary(?) AND k = 100"
    times = _timed(lambda v: store._q(knn, (v,)), vectors)
    out["floor: KNN bits k=100"] = (pct(times, 0.5), pct(times, 0.95))
    # What recall runs instead in a warm process: the bits in memory, then exact rescoring.
    candidates = max(VECTOR_CANDIDATES, store.item_count("evidence") // RECORDS_PER_CANDIDATE)
    times = _timed(lambda v: store.nearest("evidence", v, candidates, 50), vectors)
    out[f"floor: in memory k={candidates}"] = (pct(times, 0.5), pct(times, 0.95))
    matches = [TextQuery.from_text(q, drop_stopwords=True) for q in asked]
    plain = "SELECT rowid FROM evidence_fts WHERE evidence_fts MATCH ? ORDER BY bm25(evidence_fts) LIMIT 50"
    times = _timed(lambda m: store._q(plain, (m,)), [match_string(m) for m in matches if m])
    out["floor: FTS5 OR"] = (pct(times, 0.5), pct(times, 0.95))
    lists = {
        name: [(f"id{random.Random(i).randrange(300)}-{j}", 1.0 / (j + 1), None) for j in range(100)]
        for i, name in enumerate(("keyword", "entity", "vector"))
    }
    times = _timed(lambda _: fuse(lists, 60), range(len(asked)))
    out["floor: RRF 3x100"] = (pct(times, 0.5), pct(times, 0.95))
    current, peak = _rss_mib()
    print(f"  RSS after the timed recalls {current:.0f} MiB (peak {peak:.0f} MiB)")
    _quantisation_recall(kernel, vectors[:30])
    kernel.close()
    return out


def _quantisation_recall(kernel: Ctx, vectors: list[bytes]) -> None:
    """Share of the exact top 10 that the binary KNN + exact rescoring finds (real decision vectors)."""
    store = kernel.store
    for kind in ("decision", "evidence"):
        rows = store._q(
            f"SELECT t.id, v.emb FROM {kind}_vector v JOIN {kind} t ON t.rowid = v.owner_rowid "
            "ORDER BY v.chunk_id"
        )
        owners = np.array([r[0] for r in rows])
        candidates = max(VECTOR_CANDIDATES, store.item_count(kind) // RECORDS_PER_CANDIDATE)  # as recall
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
        found = []
        for vector in vectors:
            sims = matrix @ np.frombuffer(vector, dtype="<f4")
            exact = list(dict.fromkeys(owners[np.argsort(-sims)[:200]].tolist()))[:10]
            approx = [owner for owner, _ in store.nearest(kind, vector, candidates, 10)]
            found.append(len(set(exact) & set(approx)) / 10)
        label = "real vectors" if kind == "decision" else "mostly synthetic vectors"
        share = statistics.mean(found)
        print(f"  quantised KNN + rescoring: recall of the exact top 10, {kind} ({label}): {share:.3f}")
        del matrix


def measure_inject(path: Path, runs: int) -> None:
    """Whole-process wall time of `ctx inject`, with and without a query."""
    ctx = shutil.which("ctx") or str(Path(sys.executable).parent / "ctx")
    env = {**os.environ, "CTX_DB": str(path)}
    for label, args in (("no query", []), ("--query", ["--query", "how do we handle retries in billing"])):
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run([ctx, "inject", *args], env=env, check=True, capture_output=True)
            times.append((time.perf_counter() - started) * 1000)
        p50, p95 = pct(times, 0.5), pct(times, 0.95)
        print(f"  whole-process `ctx inject {label}`, {runs} runs: p50 {p50:.0f} ms  p95 {p95:.0f} ms")
    measure_served_inject(path, runs)


def measure_served_inject(path: Path, runs: int) -> None:
    """Cold `ctx inject --query` run by a person (not logged) and by an agent (its block appended to
    the served log), interleaved on one copy of the store, beside the floor of a bare interpreter."""
    ctx = shutil.which("ctx") or str(Path(sys.executable).parent / "ctx")
    query = ["inject", "--query", "how do we handle retries in billing"]
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "ctx.db"
        shutil.copyfile(path, copy)
        person = {**os.environ, "CTX_DB": str(copy)}
        person.pop("CTX_AGENT", None)
        person.pop("CTX_SESSION", None)
        agent = {**person, "CTX_AGENT": "bench", "CTX_SESSION": "bench"}
        floor, unlogged, logged = [], [], []
        for _ in range(max(runs, 1)):
            for times, argv, env in (
                (floor, [sys.executable, "-c", "pass"], person),
                (unlogged, [ctx, *query], person),
                (logged, [ctx, *query], agent),
            ):
                started = time.perf_counter()
                subprocess.run(argv, env=env, check=True, capture_output=True)
                times.append((time.perf_counter() - started) * 1000)
        entry = [_cold_entry_ms(copy) for _ in range(max(runs, 1))]
    load = os.getloadavg()[0]
    print(f"  cold `ctx inject --query`, {runs} interleaved runs each (p50 ms), load {load:.2f}:")
    print(
        f"    floor `python -c pass` {pct(floor, 0.5):.0f}; a person's (not logged) {pct(unlogged, 0.5):.0f};"
    )
    print(
        f"    an agent's (served log entry written) {pct(logged, 0.5):.0f}: "
        f"{pct(logged, 0.5) - pct(unlogged, 0.5):+.1f} ms for the entry"
    )
    print(
        f"    the entry alone in a fresh process (its first, no digest known yet): "
        f"p50 {pct(entry, 0.5):.1f} ms, p95 {pct(entry, 0.95):.1f} ms"
    )


_COLD_ENTRY = """
import sys, time
from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.inputs import InjectArgs
with Ctx.open(sys.argv[1]) as kernel:
    args = InjectArgs(query="how do we handle retries in billing")
    block = kernel.inject(args.query)
    begun = time.perf_counter()
    note = kernel.served.record(
        host="shell", agent="bench", session="bench", operation="inject", arguments=args, result=block
    )
    print((time.perf_counter() - begun) * 1000 if note is None else note)
"""


def _cold_entry_ms(path: Path) -> float:
    """The served-log entry of one `ctx inject --query`, timed inside a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", _COLD_ENTRY, str(path)], check=True, capture_output=True, text=True
    )
    return float(done.stdout.strip())


def main() -> None:
    """Build (or reuse) each store and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10k,100k", help="comma-separated: 10k, 100k, 1m")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5, help="`ctx inject` runs (0 to skip)")
    parser.add_argument("--real", type=int, default=500, help="evidence texts embedded for real")
    args = parser.parse_args()
    sizes = [s.strip().lower() for s in args.sizes.split(",") if s.strip()]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        raise SystemExit(f"unknown size {unknown[0]!r}: use {', '.join(SIZES)}")
    if len(sizes) > 1:  # one process per size, so each resident-memory figure is its own
        for size in sizes:
            argv = [sys.executable, __file__, "--sizes", size, "--queries", str(args.queries)]
            subprocess.run([*argv, "--runs", str(args.runs), "--real", str(args.real)], check=True)
        return
    asked = queries(args.queries)
    for size in sizes:
        decisions, evidence = SIZES[size]
        path = corpus(decisions, evidence, args.real)
        print(
            f"\n{size}: {decisions} decisions + {evidence} evidence ({path.stat().st_size >> 20} MiB), "
            f"{len(asked)} queries, k=10, load {os.getloadavg()[0]:.2f}"
        )
        figures = measure(path, asked)
        print(f"  {'ms':24} {'p50':>7} {'p95':>7}")
        for name, (p50, p95) in figures.items():
            print(f"  {name:24} {p50:7.2f} {p95:7.2f}")
        if args.runs:
            measure_inject(path, args.runs)


if __name__ == "__main__":
    main()
