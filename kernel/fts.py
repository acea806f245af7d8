"""Turning what a person typed into a safe FTS5 query."""

from __future__ import annotations

import re

_WORD_RE = re.compile(r"\w+", re.UNICODE)


def match_query(text: str, *, operator: str = "OR") -> str | None:
    """Quote every word so FTS5 syntax (``"``, ``NEAR(``, ``*``, ``AND``) is searched as plain words.

    Returns None when the text holds no word at all.
    """
    words = list(dict.fromkeys(w.lower() for w in _WORD_RE.findall(text)))
    if not words:
        return None
    return f" {operator} ".join(f'"{w}"' for w in words)
