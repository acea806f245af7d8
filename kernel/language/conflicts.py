"""Opposing stances: do two decisions say the opposite about the same thing?

A decision's stance on a term is read from the clauses that mention the term:
positive (use, enable, allow, must, require, include, add, ...), negative (avoid,
disable, deny, never, forbid, exclude, remove, ...), and a negation flips it.
Two decisions conflict on a term when their stances on it are opposite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctx_kernel.kernel.language.entities import normalise
from ctx_kernel.kernel.language.query import STOPWORDS

# Bump when the rules below change: stores then detect their conflicts again.
RULES_VERSION = "2"
POSITIVE = frozenset(
    "use uses using used adopt adopts adopted prefer prefers preferred enable enables enabled allow "
    "allows allowed permit permits permitted must always require requires required mandatory include "
    "includes included add adds added keep keeps standardise standardize".split()
)
NEGATIVE = frozenset(
    "avoid avoids avoided disable disables disabled deny denies denied disallow disallows disallowed "
    "block blocks blocked never forbid forbids forbidden prohibit prohibits prohibited exclude excludes "
    "excluded remove removes removed drop drops dropped ban bans banned deprecate deprecated "
    "discourage discouraged".split()
)
NEGATIONS = frozenset(
    "not no don't dont doesn't isn't aren't without cannot can't shouldn't mustn't won't".split()
)
_CLAUSE_SPLIT = re.compile(r"[.;:!?\n]+|,\s+(?:but|while|whereas|and)\s+|\s+but\s+")
_WORD = re.compile(r"[\w']+")


@dataclass(frozen=True)
class Conflict:
    """Why two texts disagree: the shared term and the clause of each side."""

    term: str
    clause: str
    other_clause: str


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSE_SPLIT.split(text) if c.strip()]


def clause_stance(clause: str, term: str | None = None) -> int:
    """+1 for a positive stance, -1 for a negative one, 0 when the clause takes none.

    A negation flips a stance word ("do not use"); with no stance word it counts only when it
    opens the clause or stands at most two words before ``term`` ("no Redis", "without Redis"), so that
    "speed is not needed outside ingest" takes no stance on ingest.
    """
    words = [w.lower() for w in _WORD.findall(clause)]
    sign = 0
    if any(w in POSITIVE for w in words):
        sign = 1
    if any(w in NEGATIVE for w in words):
        sign = -1
    negated = [i for i, w in enumerate(words) if w in NEGATIONS]
    if not negated:
        return sign
    if sign:
        return -sign
    first = normalise(term).split()[0] if term and normalise(term) else None
    near = {i for i, w in enumerate(words) if first and normalise(w) == first}
    if 0 in negated or any(0 < t - n <= 2 for n in negated for t in near):
        return -1
    return 0


def stance(text: str, term: str) -> tuple[int, str | None]:
    """The stance ``text`` takes on ``term`` and the clause that shows it (0 when none or mixed)."""
    needle = f" {normalise(term)} "
    signs: list[tuple[int, str]] = []
    for clause in _clauses(text):
        if needle in f" {normalise(clause)} ":
            sign = clause_stance(clause, term)
            if sign:
                signs.append((sign, clause))
    if not signs or len({s for s, _ in signs}) > 1:
        return 0, None
    return signs[0]


def content_words(text: str) -> set[str]:
    """Words of four letters or more that are neither stopwords nor stance words."""
    return {
        w
        for w in (w.lower() for w in _WORD.findall(text))
        if len(w) >= 4 and w not in STOPWORDS and w not in POSITIVE and w not in NEGATIVE
    }


def find_conflict(text: str, other: str, terms: set[str]) -> Conflict | None:
    """The first of ``terms`` (in sorted order) on which the two texts take opposite stances."""
    for term in sorted(terms):
        mine, clause = stance(text, term)
        if not mine:
            continue
        theirs, other_clause = stance(other, term)
        if theirs == -mine and clause and other_clause:
            return Conflict(term, clause, other_clause)
    return None
