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
from collections.abc import Callable, Sequence
from typing import Any

from ctx_kernel.kernel.sealing import fold
from ctx_kernel.kernel.text import ASCII_SEPARATORS

# Words per snippet, as recall asked FTS5 for.
WIDTH = 24
# Stems a process remembers (each a few dozen bytes); stemming a word costs about 17 us.
CACHED_STEMS = 65_536
ELLIPSIS = "…"

_WORD = re.compile(r"[^\W_]+")  # what FTS5's unicode61 tokenizer counts as a word


def snippet(text: str, terms: Sequence[str], width: int = WIDTH) -> str | None:
    """The ``width`` words of ``text`` that hold the most of ``terms`` (each a word or a phrase),
    every match in [brackets], with an ellipsis where the text goes on; None when none is there."""
    phrases = _phrases(tuple(terms))
    if not phrases:
        return None
    # A Porter stem keeps a word's first two letters: only words that start like one are stemmed.
    heads = {stem[:2] for stems in phrases for stem in stems}
    count, stems, span = _stems(text, heads)
    hits: list[tuple[int, int, int]] = []  # (first word, words, phrase)
    for position, stem in enumerate(stems):
        if stem is not None:
            for number, phrase in enumerate(phrases):
                if stem == phrase[0] and stems[position : position + len(phrase)] == phrase:
                    hits.append((position, len(phrase), number))
    if not hits:
        return None
    start = _window(hits, count, width)
    end = min(count, start + width)
    marked = {word for first, size, _ in hits if first >= start for word in range(first, first + size)}
    # From the text's start, or to its end, what lies beyond the first or last word is kept too.
    first, cursor = span(start)
    out = [ELLIPSIS if start > 0 else text[:first]]
    for index in range(start, end):
        begin, cursor_end = span(index)
        if index > start:
            out.append(text[cursor:begin])
        word = text[begin:cursor_end]
        out.append(f"[{word}]" if index in marked else word)
        cursor = cursor_end
    out.append(text[cursor:] if end == count else ELLIPSIS)
    return "".join(out)


def _stems(text: str, heads: set[str]) -> tuple[int, list[str | None], Callable[[int], tuple[int, int]]]:
    """How many words ``text`` has, the stem of each that starts with one of ``heads`` (folded
    as the index folds words; None for the others), and where the n-th word lies."""
    if not text.isascii():
        found = list(_WORD.finditer(text))
        stems: list[str | None] = [None] * len(found)
        for position, match in enumerate(found):
            word = match.group().lower()
            word = word if word.isascii() else fold(word)
            if word[:2] in heads:
                stems[position] = _stem(word)
        return len(found), stems, lambda n: found[n].span()
    # ASCII: every byte that is not a letter or digit separates words (as [^\W_]+ does) and lower
    # case keeps the length, so bytes' translate and split do what the regular expression does,
    # several times faster.
    spaced = text.encode("ascii").lower().translate(ASCII_SEPARATORS)
    words = spaced.split()
    wanted = {head.encode("ascii") for head in heads if head.isascii()}
    stems = [None] * len(words)
    for position in [p for p, word in enumerate(words) if word[:2] in wanted]:
        stems[position] = _stem(words[position].decode("ascii"))
    starts: list[int] = []  # where the words found so far begin

    def span(n: int) -> tuple[int, int]:
        while len(starts) <= n:
            after = starts[-1] + len(words[len(starts) - 1]) if starts else 0
            starts.append(spaced.find(words[len(starts)], after))
        return starts[n], starts[n] + len(words[n])

    return len(words), stems, span


@functools.lru_cache(maxsize=256)
def _phrases(terms: tuple[str, ...]) -> list[list[str]]:
    """Each term's words as stems (a recall cuts a snippet of every hit with the same terms)."""
    return [stems for stems in ([_stem(fold(w)) for w in _WORD.findall(term)] for term in terms) if stems]


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
