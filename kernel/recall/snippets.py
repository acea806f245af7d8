"""Snippets of evidence hits: a window of the text around the query's words, matches in [brackets].

They are cut in Python from the texts recall has already read, by the rules SQLite's FTS5 index
of the vault uses: its words (the unicode61 tokenizer's: letters and digits), folded (lower case,
accents removed) and compared by their Porter stems (the porter tokenizer's), so "rotate" marks
"rotation". FTS5's own snippet() looks every hit's words up in the index again, which cost about
0.07 ms per hit at 10,000 texts and 0.36 ms at a million (`just bench-recall`); a window here costs
tens of microseconds, and hits from a PostgreSQL store get the same snippets as from SQLite.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from ctx_kernel.kernel.vault.sealing import fold

# Words per snippet, as recall asked FTS5 for.
WIDTH = 24
# Stems a process remembers (each a few dozen bytes); stemming a word costs about 17 us.
CACHED_STEMS = 65_536
ELLIPSIS = "…"

_WORD = re.compile(r"[^\W_]+")  # what FTS5's unicode61 tokenizer counts as a word


def snippet(text: str, terms: Sequence[str], width: int = WIDTH) -> str | None:
    """The ``width`` words of ``text`` that hold the most of ``terms`` (each a word or a phrase),
    every match in [brackets], with an ellipsis where the text goes on; None when none is there."""
    phrases = [stems for stems in ([_stem(fold(w)) for w in _WORD.findall(term)] for term in terms) if stems]
    if not phrases:
        return None
    # A Porter stem keeps a word's first two letters: only words that start like one are stemmed.
    heads = {stem[:2] for stems in phrases for stem in stems}
    words = list(_WORD.finditer(text))
    stems: list[str | None] = [None] * len(words)
    hits: list[tuple[int, int, int]] = []  # (first word, words, phrase)
    for position, found in enumerate(words):
        word = found.group().lower()
        if not word.isascii():
            word = fold(word)
        if word[:2] in heads:
            stems[position] = _stem(word)
    for position, stem in enumerate(stems):
        if stem is not None:
            for number, phrase in enumerate(phrases):
                if stem == phrase[0] and stems[position : position + len(phrase)] == phrase:
                    hits.append((position, len(phrase), number))
    if not hits:
        return None
    start = _window(hits, len(words), width)
    end = min(len(words), start + width)
    marked = {word for first, size, _ in hits if first >= start for word in range(first, first + size)}
    # From the text's start, or to its end, what lies beyond the first or last word is kept too.
    out, cursor = [], words[start].start() if start > 0 else 0
    for index in range(start, end):
        found = words[index]
        out.append(text[cursor : found.start()])
        out.append(f"[{found.group()}]" if index in marked else found.group())
        cursor = found.end()
    if end == len(words):
        return (ELLIPSIS if start > 0 else "") + "".join(out) + text[cursor:]
    return (ELLIPSIS if start > 0 else "") + "".join(out) + ELLIPSIS


def _window(hits: list[tuple[int, int, int]], total: int, width: int) -> int:
    """The first word of the window holding the most distinct phrases, then the most matches
    (FTS5's scoring: 1000 for each phrase, 1 for each repeat), a quarter of it before the first."""
    best, chosen = -1, 0
    for first, _, _ in hits:
        start = max(0, min(first - width // 4, total - width))
        inside = [(f, n) for f, size, n in hits if f >= start and f + size <= start + width]
        score = 1000 * len({n for _, n in inside}) + len(inside)
        if score > best:
            best, chosen = score, start
    return chosen


@functools.lru_cache(maxsize=CACHED_STEMS)
def _stem(word: str) -> str:
    stemmed: str = _porter().stemWord(word)
    return stemmed


@functools.cache
def _porter() -> Any:
    import snowballstemmer  # noqa: PLC0415 - only recall with evidence hits needs it

    return snowballstemmer.stemmer("porter")
