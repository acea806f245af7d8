"""Compiling a backend-neutral :class:`TextQuery` to PostgreSQL full-text SQL, and ranking by BM25.

Each term goes to ``phraseto_tsquery`` as a bound value, so quotes, ``&``, ``!``, ``:*`` or
``<->`` in it are words, never operators, and a term of several words matches them as a phrase
(in order, adjacent), as FTS5's quoted strings do. The terms are joined with ``||`` (any) or
``&&`` (all) in SQL. The configuration is that of the generated ``search`` columns
(kernel/store/postgres/schema.py): the English Snowball stemmer with every word indexed, stop
words included, as FTS5's porter tokenizer does.

Ranking is Okapi BM25 (k1 = 1.2, b = 0.75), as SQLite's ``bm25()``, so both backends order
matches alike: PostgreSQL's own ``ts_rank_cd`` has no inverse document frequency, and on the
labelled recall set it fell 0.1 short of SQLite in keyword MRR. Per term, the term frequency is
``ts_rank_cd`` of that term alone with the column weights (it is the weighted count of the term's
occurrences, or of the phrase's), the document length is its number of distinct words (:func:`length`),
and the inverse document frequency comes from counts the caller makes (:func:`idf`).

GIN keeps no term frequencies, so :func:`ranked` reads the tsvector of every matching row;
:func:`ranked_postings` computes the same scores from the postings tables (schema.POSTINGS), which
hold each lexeme's occurrences per weight and the row's length, as FTS5 ranks from its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.store.postgres.schema import TEXT_SEARCH_CONFIG

CONFIG = TEXT_SEARCH_CONFIG
K1 = 1.2
B = 0.75
_OPERATORS = {"any": " || ", "all": " && "}
_TERM = f"phraseto_tsquery('{CONFIG}', %s)"


def tsquery(query: TextQuery) -> tuple[str, list[str]]:
    """A FROM item ``(SELECT tsquery) AS q (q)`` with one ``%s`` per term, and the terms to bind."""
    if not query.terms:
        return "(SELECT ''::tsquery) AS q (q)", []
    expression = _OPERATORS[query.mode].join([_TERM] * len(query.terms))
    return f"(SELECT {expression}) AS q (q)", list(query.terms)


def idf(rows: int, frequency: int) -> float:
    """The inverse document frequency of a term in ``frequency`` of ``rows`` texts, as FTS5's
    ``bm25()`` computes it (a term in more than half the texts weighs almost nothing)."""
    weight = math.log((rows - frequency + 0.5) / (frequency + 0.5)) if rows > frequency else 0.0
    return weight if weight > 0.0 else 1e-6


def ceiling(idf: float) -> float:
    """The most a term of this idf can add to a row's score, however often the row holds it."""
    return idf * (K1 + 1)


def length(column: str) -> str:
    """SQL for a document's length in BM25: its distinct words (``length`` of its tsvector).

    FTS5 counts every word; counting a tsvector's positions per matching row made a ranking 25
    times slower than the match itself, and on the labelled recall set the two lengths rank alike.
    """
    return f"length({column})"


def ranked(
    query: TextQuery,
    alias: str,
    weights: tuple[float, float, float, float],
    idfs: list[float],
    average: float,
    matching: list[int] | None = None,
) -> tuple[str, str, list[object]]:
    """The FROM items and the score expression that rank rows of ``alias`` by BM25 for ``query``.

    The FROM items (after the table's own, ``CROSS JOIN`` ed) hold ``q.q``, the whole query to
    match with ``@@``, then per row each term's weighted frequency and the row's relative length.
    ``weights`` are the columns' weights ``(D, C, B, A)`` as FTS5's ``bm25()`` takes them: an
    occurrence in a column counts as that many occurrences (ts_rank_cd's weights are the same,
    scaled to at most 1). ``idfs`` holds each term's inverse document frequency and ``average``
    the average row length; the parameters returned are those of the FROM items, in order.
    """
    count = len(query.terms)
    if not count:
        return "(SELECT ''::tsquery AS q) AS q", "0.0", []
    scale = 1.0 / max(weights)
    array = "'{" + ", ".join(repr(w * scale) for w in weights) + "}'::float4[]"
    terms = ", ".join(f"{_TERM} AS q{i}" for i in range(count))
    chosen = range(count) if matching is None else matching
    whole = (_OPERATORS[query.mode] if matching is None else " || ").join(f"t.q{i}" for i in chosen)
    weighted = ", ".join(f"%s::float8 AS w{i}" for i in range(count))
    frequencies = ", ".join(
        f"ts_rank_cd({array}, {alias}.search, q.q{i}, 0) / {scale!r} AS f{i}" for i in range(count)
    )
    source = (
        f"(SELECT t.*, {whole} AS q, {weighted}, %s::float8 AS average FROM (SELECT {terms}) AS t) AS q "
        f"CROSS JOIN LATERAL (SELECT {frequencies}, "
        f"{length(alias + '.search')} / greatest(q.average, 1.0) AS relative) AS tf"
    )
    return source, _score(count), [*idfs, average, *query.terms]


def _term_score(idf: str, frequency: str, relative: str) -> str:
    """BM25 of one term: its ``idf`` times its saturated ``frequency`` in a row of ``relative`` length."""
    return f"{idf} * {frequency} * {K1 + 1!r} / ({frequency} + {K1!r} * ({1 - B!r} + {B!r} * {relative}))"


def _score(count: int) -> str:
    """The BM25 sum over ``count`` terms of ``q.w{i}`` (idf), ``tf.f{i}`` (weighted frequency) and
    ``tf.relative`` (the row's length over the average), in term order."""
    return "(" + " + ".join(_term_score(f"q.w{i}", f"tf.f{i}", "tf.relative") for i in range(count)) + ")"


def ranked_postings(
    query: TextQuery,
    table: str,
    weights: tuple[float, float, float, float],
    idfs: list[float],
    average: float,
    lexemes: Sequence[str | None],
    matching: list[int] | None = None,
) -> tuple[str, list[object]]:
    """A query of ``(rowid, score)``: the BM25 of :func:`ranked`, from the postings ``table``.

    ``lexemes`` holds each term's one lexeme. A posting's weighted frequency is its occurrences
    per weight times the column weights, which is what ``ts_rank_cd`` of the term alone adds up
    (an occurrence weighs its column's weight), and its length that of the row's tsvector. Each
    posting's share is the term's BM25 computed as :func:`ranked` computes it, and a row's shares
    are summed in term order (a term a row lacks adds an exact 0 there), so every score is the
    one :func:`ranked` gives, to the bit. With ``matching`` (term numbers), only the rows holding
    one of those terms are scored (on every term, by index probes); ``all`` keeps the rows that
    hold every term.
    """
    count = len(query.terms)
    if count != len(lexemes) or not all(lexemes):
        raise ValueError("ranking from postings needs one lexeme per term")
    d, c, b, a = weights
    frequency = f"(p.a * {a!r}::float8 + p.b * {b!r}::float8 + p.c * {c!r}::float8 + p.d * {d!r}::float8)"
    relative = "(p.length / greatest(%s::float8, 1.0))"
    share = _term_score("terms.w", frequency, relative)
    bound: list[object] = [list(lexemes), list(idfs)]
    terms = (
        'WITH terms (term, w, i) AS (SELECT term COLLATE "C", w, i '
        "FROM unnest(%s::text[], %s::float8[]) WITH ORDINALITY AS u (term, w, i))"
    )
    if matching is None:
        hits = f"SELECT p.rowid, terms.i, {share} AS share FROM terms JOIN {table} p ON p.term = terms.term"
        bound.append(average)
    else:
        # Each chosen row's postings of every term by a probe of the primary key (OFFSET 0 keeps
        # the planner from joining all the common terms' postings instead).
        hits = (
            f"SELECT h.* FROM (SELECT DISTINCT p.rowid FROM terms JOIN {table} p ON p.term = terms.term "
            "WHERE terms.i = ANY(%s::bigint[])) AS chosen CROSS JOIN LATERAL ("
            f"SELECT p.rowid, terms.i, {share} AS share FROM terms JOIN {table} p "
            "ON p.term = terms.term AND p.rowid = chosen.rowid OFFSET 0) AS h"
        )
        bound += [[i + 1 for i in matching], average]
    every = f"HAVING count(*) = {count}" if query.mode == "all" and matching is None else ""
    statement = (
        f"{terms} SELECT h.rowid, sum(h.share ORDER BY h.i) AS score FROM ({hits}) AS h "
        f"GROUP BY h.rowid {every}"
    )
    return statement, bound
