"""A warm process answers KNN from an in-memory copy of the bit vectors: the same answers as sqlite-vec."""

from __future__ import annotations

import random
from pathlib import Path

from embedders import HashEmbedder

from ctx_kernel.kernel import Ctx

DIM = 24  # few bits: many rows tie at the k-th Hamming distance
WORDS = (
    "redis kafka postgres retries timeouts tokens sessions cache deploy wheels billing webhooks "
    "exports queue workers shards replicas backups alerts metrics traces logs schema migrations"
).split()


def _texts(rng: random.Random, count: int) -> list[str]:
    out: list[str] = []
    while len(out) < count:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5)))
        # Words whose buckets cancel out give a vector of zeros, which has no direction.
        if HashEmbedder(dim=DIM).embed_query(text).strip(b"\0"):
            out.append(text)
    return out


def _answers(ctx: Ctx, queries: list[str]) -> list[dict]:
    return [ctx.recall(q, k=20, mode="vector").to_dict() for q in queries]


def _cold_answers(path: Path, queries: list[str]) -> list[dict]:
    # A new process asks sqlite-vec on its first KNN of each store: one recall per open store.
    out = []
    for query in queries:
        with Ctx.open(path, embedder=HashEmbedder(dim=DIM)) as cold:
            out += _answers(cold, [query])
    return out


def test_warm_knn_finds_what_sqlite_vec_finds_before_and_after_new_rows(store_path):
    rng = random.Random(5)
    warm, _ = Ctx.init(store_path, embedder=HashEmbedder(dim=DIM))
    for text in _texts(rng, 1100):  # more than one vec0 storage chunk (1024 rows)
        warm.log(text)
    warm.reindex()
    queries = _texts(rng, 8)
    warm.recall(queries[0], mode="vector")
    assert _answers(warm, queries) == _cold_answers(store_path, queries)
    for text in _texts(rng, 40):  # new rows land in the last storage chunk and a new one
        warm.log(text)
    warm.reindex()
    assert _answers(warm, queries) == _cold_answers(store_path, queries)
    warm.close()
