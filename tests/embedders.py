"""A small deterministic embedder for unit tests of the vector plumbing (not of retrieval quality)."""

from __future__ import annotations

import hashlib
import math
import re
import struct
from collections.abc import Sequence

_WORD = re.compile(r"\w+")


class HashEmbedder:
    """Feature hashing of words into ``dim`` signed buckets, normalised: same words, same vector."""

    def __init__(self, dim: int = 64, model_id: str = "test/hash-64") -> None:
        self.dim = dim
        self.model_id = model_id
        self.calls = 0

    def _vector(self, text: str) -> bytes:
        values = [0.0] * self.dim
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            values[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in values)) or 1.0
        return struct.pack(f"<{self.dim}f", *(v / norm for v in values))

    def embed_documents(self, texts: Sequence[str]) -> list[bytes]:
        """One vector per text."""
        self.calls += len(texts)
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> bytes:
        """The vector of a query."""
        return self._vector(text)


class SignEmbedder(HashEmbedder):
    """Feature hashing as :class:`HashEmbedder`, then each bucket's sign: every component is
    +-1/sqrt(dim), so cosine similarity is 1 - 2 * Hamming distance / dim and binary quantisation
    keeps the exact order (ties included)."""

    def __init__(self, dim: int = 64, model_id: str = "test/sign-64") -> None:
        super().__init__(dim, model_id)

    def _vector(self, text: str) -> bytes:
        values = struct.unpack(f"<{self.dim}f", super()._vector(text))
        unit = 1.0 / math.sqrt(self.dim)
        return struct.pack(f"<{self.dim}f", *(unit if v >= 0 else -unit for v in values))
