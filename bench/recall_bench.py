"""Recall speed at 10k decisions and 100k evidence texts, with the real embedding model.

Builds a deterministic corpus through the facade (cached under bench/.cache, since
embedding 110k texts takes minutes), then prints p50/p95 of warm in-process recall per
mode (query embedding included), the recall of the binary-quantised vector search against
exact search, and the whole-process wall time of `ctx inject`.

    python bench/recall_bench.py [--decisions N] [--evidence N] [--queries N]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from kernel import Ctx
from kernel.recall import MODES

HERE = Path(__file__).resolve().parent
CORPUS_VERSION = 1

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


def _corpus(
    rng: random.Random, decisions: int, evidence: int
) -> tuple[list[tuple[str, str, str]], list[str]]:
    subjects = [f"{a}.{t}" for a in AREAS for t in TOPICS]
    rng.shuffle(subjects)
    chosen = subjects[: max(1, decisions // 4)]
    decided = []
    for i in range(decisions):
        subject = chosen[i % len(chosen)] if i >= len(chosen) else chosen[i]
        area, topic = subject.split(".")
        tool = rng.choice(TOOLS)
        verb = rng.choice(VERBS_POS if rng.random() < 0.8 else VERBS_NEG)
        text = f"{verb} {tool} for {topic.replace('-', ' ')} in {area}; owners review it quarterly (rev {i})."
        decided.append((subject, text, f"Because {rng.choice(REASONS)}."))
    logs = []
    for i in range(evidence):
        area, topic, tool = rng.choice(AREAS), rng.choice(TOPICS), rng.choice(TOOLS)
        template = rng.choice(CHATTER)
        logs.append(
            template.format(
                area=area,
                topic=topic.replace("-", " "),
                topic_ident=topic.replace("-", "_"),
                tool=tool,
                n=rng.randint(2, 900),
                code=rng.randint(1, 255),
            )
            + f" (#{i})"
        )
    return decided, logs


def build(path: Path, decisions: int, evidence: int) -> None:
    """Create the corpus store at ``path`` through the facade and embed everything."""
    rng = random.Random(20261122)
    decided, logs = _corpus(rng, decisions, evidence)
    kernel, _ = Ctx.init(path)
    started = time.perf_counter()
    for subject, text, rationale in decided:
        proposal = kernel.propose(subject, text, rationale=rationale, proposer="bench")
        kernel.ratify(proposal.id, reviewer="bench")
    print(f"ratified {len(decided)} decisions in {time.perf_counter() - started:.0f} s", flush=True)
    started = time.perf_counter()
    for i, body in enumerate(logs):
        kernel.log(body, kind="conversation" if i % 3 else "log", agent="bench")
    print(f"logged {len(logs)} evidence texts in {time.perf_counter() - started:.0f} s", flush=True)
    last = [time.perf_counter()]

    def progress(done: int, total: int) -> None:
        if time.perf_counter() - last[0] > 30 or done == total:
            last[0] = time.perf_counter()
            print(f"  embedded {done}/{total}", flush=True)

    report = kernel.reindex(progress=progress)
    rate = (decisions + evidence) / report.seconds
    print(f"embedded {decisions + evidence} texts in {report.seconds:.0f} s ({rate:.0f}/s)", flush=True)
    kernel.close()


def corpus(decisions: int, evidence: int) -> Path:
    """The cached corpus store of this size, built on first use."""
    cache = HERE / ".cache"
    path = cache / f"corpus-v{CORPUS_VERSION}-{decisions}-{evidence}.db"
    if not path.exists():
        cache.mkdir(exist_ok=True)
        partial = path.with_suffix(".building")
        for leftover in cache.glob(partial.name + "*"):
            leftover.unlink()
        print(f"building {path.name} (once; reused afterwards)", flush=True)
        build(partial, decisions, evidence)
        for suffix in ("-wal", "-shm"):
            Path(str(partial) + suffix).unlink(missing_ok=True)
        partial.rename(path)
    return path


def queries(count: int) -> list[str]:
    rng = random.Random(7)
    out = []
    for _ in range(count):
        out.append(
            rng.choice(QUERIES).format(
                area=rng.choice(AREAS), topic=rng.choice(TOPICS).replace("-", " "), tool=rng.choice(TOOLS)
            )
        )
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure_recall(path: Path, queries: list[str]) -> None:
    """p50/p95 of warm recall per mode."""
    kernel = Ctx.open(path)
    kernel.recall("warm up the model and caches")
    print(f"\nwarm in-process recall, k=10, {len(queries)} queries (ms):")
    print(f"{'mode':8} {'p50':>7} {'p95':>7} {'max':>7}")
    for mode in MODES:
        times = []
        for query in queries:
            started = time.perf_counter()
            kernel.recall(query, k=10, mode=mode)
            times.append((time.perf_counter() - started) * 1000)
        print(f"{mode:8} {pct(times, 0.5):7.1f} {pct(times, 0.95):7.1f} {max(times):7.1f}")
    embedder = kernel.embedding().embedder
    assert embedder is not None
    times = []
    for query in queries:
        started = time.perf_counter()
        embedder.embed_query(query)
        times.append((time.perf_counter() - started) * 1000)
    print(f"{'(embed)':8} {pct(times, 0.5):7.1f} {pct(times, 0.95):7.1f} {max(times):7.1f}")
    _quantisation_recall(kernel, queries[:30])
    kernel.close()


def _quantisation_recall(kernel: Ctx, queries: list[str]) -> None:
    """How many of the exact top 10 evidence neighbours the binary KNN + rescoring finds."""
    store = kernel.store
    rows = store._q("SELECT owner_rowid, emb FROM evidence_vector ORDER BY chunk_id")
    owners = np.array([r[0] for r in rows])
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), -1)
    embedder = kernel.embedding().embedder
    assert embedder is not None
    found = []
    for query in queries:
        vector = np.frombuffer(embedder.embed_query(query), dtype="<f4")
        exact = owners[np.argsort(-(matrix @ vector))[:10]]
        approx = [owner for owner, _ in store.nearest("evidence", vector.tobytes(), 100, 10)]
        found.append(len(set(exact) & set(approx)) / 10)
    share = statistics.mean(found)
    print(f"\nbinary KNN (100 candidates) + exact rescoring: recall@10 vs exact search = {share:.3f}")


def measure_inject(path: Path, runs: int) -> None:
    """Whole-process wall time of `ctx inject`, with and without a query."""
    ctx = shutil.which("ctx") or str(Path(sys.executable).parent / "ctx")
    env = {**os.environ, "CTX_DB": str(path)}
    print(f"\nwhole-process `ctx inject` wall time, {runs} runs (ms):")
    for label, args in (("no query", []), ("--query", ["--query", "how do we handle retries in billing"])):
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run([ctx, "inject", *args], env=env, check=True, capture_output=True)
            times.append((time.perf_counter() - started) * 1000)
        print(f"{label:9} p50 {pct(times, 0.5):7.0f}  p95 {pct(times, 0.95):7.0f}")


def main() -> None:
    """Build (or reuse) the corpus and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=10_000)
    parser.add_argument("--evidence", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    path = corpus(args.decisions, args.evidence)
    size = path.stat().st_size >> 20
    print(f"corpus: {args.decisions} decisions, {args.evidence} evidence texts ({size} MiB)")
    measure_recall(path, queries(args.queries))
    measure_inject(path, args.runs)


if __name__ == "__main__":
    main()
