"""Turning what a person typed into a safe FTS5 query."""

from __future__ import annotations

import re

_WORD_RE = re.compile(r"\w+", re.UNICODE)

# Question words and function words carry no topic; dropping them keeps BM25 from scanning
# the posting lists of the most frequent words in the vault (the slowest FTS5 queries).
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers him his how i if in into is it its itself just me more most my
    no nor not now of off on once only or other our ours out over own same she should so some such
    than that the their theirs them then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    shall may might must let lets use used using we're what's whats how's hows do does did""".split()
)


def words(text: str) -> list[str]:
    """The distinct lower-case words of ``text``, in order."""
    return list(dict.fromkeys(w.lower() for w in _WORD_RE.findall(text)))


def match_query(text: str, *, operator: str = "OR", drop_stopwords: bool = False) -> str | None:
    """Quote every word so FTS5 syntax (``"``, ``NEAR(``, ``*``, ``AND``) is searched as plain words.

    With ``drop_stopwords``, function words are left out unless nothing else is left.
    Returns None when the text holds no word at all.
    """
    found = words(text)
    if drop_stopwords:
        found = [w for w in found if w not in STOPWORDS] or found
    if not found:
        return None
    return f" {operator} ".join(f'"{w}"' for w in found)
