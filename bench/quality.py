"""Recall@5 and MRR per recall mode on the labelled set, with the real embedding model.

python bench/quality.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import labelled_eval as quality

from ctx_kernel.kernel import Ctx

SET = Path(__file__).resolve().parent.parent / "tests" / "data" / "recall" / "recall_set.json"


def main() -> None:
    """Load the set into a temporary store and print the table."""
    with tempfile.TemporaryDirectory() as folder:
        kernel, _ = Ctx.init(Path(folder) / "ctx.db")
        resolution = kernel.embedding()
        if resolution.embedder is None:
            raise SystemExit(f"no embedding model: {resolution.reason}")
        ids = quality.load_set(kernel, SET)
        kernel.reindex()
        print(f"labelled set: {SET.name}, model {resolution.embedder.model_id}\n")
        print(quality.table(quality.evaluate(kernel, SET, ids)))
        kernel.close()


if __name__ == "__main__":
    main()
