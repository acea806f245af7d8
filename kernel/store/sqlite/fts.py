"""Compiling a backend-neutral :class:`TextQuery` to an SQLite FTS5 ``MATCH`` string."""

from __future__ import annotations

from ctx_kernel.kernel.language.query import TextQuery

_OPERATORS = {"any": " OR ", "all": " AND "}


def match_string(query: TextQuery) -> str:
    """Each term as one quoted FTS5 string, so ``"``, ``NEAR(``, ``*``, ``AND`` or ``col:`` are
    searched as plain words; a term of several words matches them as a phrase."""
    return _OPERATORS[query.mode].join('"' + term.replace('"', '""') + '"' for term in query.terms)
