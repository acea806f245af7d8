"""Compiling a backend-neutral :class:`TextQuery` to a PostgreSQL ``tsquery`` expression.

Each term goes to ``phraseto_tsquery`` as a bound value, so quotes, ``&``, ``!``, ``:*`` or
``<->`` in it are words, never operators, and a term of several words matches them as a phrase
(in order, adjacent), as FTS5's quoted strings do. The terms are joined with ``||`` (any) or
``&&`` (all) in SQL. The configuration is ``english``, that of the generated ``search`` columns
(kernel/store/postgres/schema.py): the Snowball stemmer, like FTS5's porter tokenizer; unlike
FTS5, English stop words are not indexed, so a term made only of stop words matches nothing.
"""

from __future__ import annotations

from ctx_kernel.kernel.store.query import TextQuery

CONFIG = "english"
_OPERATORS = {"any": " || ", "all": " && "}
_TERM = f"phraseto_tsquery('{CONFIG}', %s)"


def tsquery(query: TextQuery) -> tuple[str, list[str]]:
    """A FROM item ``(SELECT tsquery) AS q (q)`` with one ``%s`` per term, and the terms to bind."""
    if not query.terms:
        return "(SELECT ''::tsquery) AS q (q)", []
    expression = _OPERATORS[query.mode].join([_TERM] * len(query.terms))
    return f"(SELECT {expression}) AS q (q)", list(query.terms)
