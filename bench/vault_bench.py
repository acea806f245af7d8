"""Encryption at rest on a large plain store: time of `ctx encrypt` and `ctx rekey`, and what they leave.

Logs --rows plain evidence texts, each with a made-up word of its own and three words shared by
all, then times `ctx encrypt` and `ctx rekey` (sealing and the file rewrite) and greps the
store's db, -wal and -shm files for every planted word and for ciphertext under the old key.
Every count printed after "left" must be 0.

    python bench/vault_bench.py [--rows 60000]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import string
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SHARED = ("wombatine", "dugongish", "kakapoid")


def _files(store: Path) -> bytes:
    return b"".join(p.read_bytes() for p in store.parent.glob(store.name + "*"))


def _left(stolen: bytes, own: list[str]) -> int:
    """How many planted words the files hold (one pass: every 12-letter window of every run of letters)."""
    windows = set()
    for run in re.finditer(rb"[a-z]{12,}", stolen):
        text = run.group()
        windows.update(text[i : i + 12] for i in range(len(text) - 11))
    return sum(w.encode() in windows for w in own) + sum(w.encode() in stolen for w in SHARED)


def main() -> None:
    """Print the times and what each step left readable."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=60_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["CTX_CONFIG_DIR"] = str(Path(folder) / "config")
        from ctx_kernel.kernel import Ctx
        from ctx_kernel.kernel import sealing as vault
        from ctx_kernel.kernel.capture.ingest import EvidenceInput, Item

        store = Path(folder) / ".ctx" / "ctx.db"
        kernel, _ = Ctx.init(store)
        rng = random.Random(args.rows)
        own = ["".join(rng.choices(string.ascii_lowercase, k=12)) for _ in range(args.rows)]
        kernel.log_many(
            Item(n, EvidenceInput(text=f"{word} {' '.join(SHARED)} note {n}")) for n, word in enumerate(own)
        )
        print(f"{args.rows:,} plain evidence texts, {len(own) + len(SHARED):,} planted words")

        started = time.perf_counter()
        kernel.encrypt()
        took = time.perf_counter() - started
        left = _left(_files(store), own)
        print(f"ctx encrypt  {took:6.1f} s   planted words left {left}")

        old_id = bytes.fromhex(kernel.store.get_meta("vault_key_id") or "")
        started = time.perf_counter()
        kernel.rekey()
        took = time.perf_counter() - started
        stolen = _files(store)
        left = _left(stolen, own)
        old = stolen.count(vault.MAGIC + old_id)
        print(f"ctx rekey    {took:6.1f} s   planted words left {left}, texts under the old key left {old}")
        kernel.close()


if __name__ == "__main__":
    main()
