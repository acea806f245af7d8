"""Full-text queries as they cross the store interface: words, never a backend's query syntax.

A backend compiles a :class:`TextQuery` to its own language (SQLite: an FTS5 ``MATCH`` string,
kernel/store/sqlite/fts.py), so what a person typed never reaches a query parser as syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_WORD_RE = re.compile(r"\w+", re.UNICODE)

# Question words and function words carry no topic; dropping them keeps BM25 from scanning
# the posting lists of the most frequent words in the vault (the slowest full-text queries).
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


@dataclass(frozen=True)
class TextQuery:
    """Rows holding any (or all) of ``terms``, each a word or a phrase of words in order.

    Terms are plain text: a backend matches them as words, whatever characters they hold.
    """

    terms: tuple[str, ...]
    mode: Literal["any", "all"] = "any"

    @classmethod
    def from_text(cls, text: str, *, drop_stopwords: bool = False) -> TextQuery | None:
        """The words of what a person typed, or None when it holds no word at all.

        With ``drop_stopwords``, function words are left out unless nothing else is left.
        """
        found = words(text)
        if drop_stopwords:
            found = [w for w in found if w not in STOPWORDS] or found
        return cls(tuple(found)) if found else None
