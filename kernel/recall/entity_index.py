"""The entity names a process keeps in memory, and the phrases of a query matched against them."""

from __future__ import annotations

import math
import threading
from typing import Any

from ctx_kernel.kernel.language import entities
from ctx_kernel.kernel.language import query as fulltext
from ctx_kernel.kernel.store.base import Store

# fuzz.ratio between a query phrase and an entity name ("authn" vs "auth" scores 89).
ENTITY_CUTOFF = 85.0
# From this many distinct entity names, a warm index prefilters them with numpy (see EntityIndex).
PREFILTER_NAMES = 5000
# Query phrases whose fuzzy matches over the entity names a warm process keeps.
CACHED_PHRASES = 20_000


class EntityIndex:
    """The distinct entity names, kept in memory and refreshed when new ones appear.

    Matching a phrase against every name with ``fuzz.ratio`` costs tens of milliseconds at
    100k names. Each name also keeps its length and a bitmask of its characters: a name can
    reach the cutoff only if both differ from the phrase's by little (lower bounds of the
    Indel distance that ``fuzz.ratio`` normalises), so numpy rules out almost every name
    and rapidfuzz scores only the few left, with the same results.
    """

    def __init__(self) -> None:
        # A long-running host reads the names on a thread of its own (RecallService.warm) while
        # a recall may match against them.
        self._lock = threading.RLock()
        self._reset()

    def _reset(self) -> None:
        self._version = -1
        self._ids: list[int] = []
        self._names: list[str] = []
        self._display: list[str] = []
        self._known: set[str] = set()
        # The names ordered by length (a phrase's candidates are one contiguous slice), equal
        # lengths in index order: their indexes, lengths and masks (numpy; see _char_masks).
        self._by_length: Any = None  # int64, one per name
        self._sorted_lengths: Any = None  # int32
        self._sorted_masks: Any = None  # uint64, shape (2, names)
        self._asked = 0
        # phrase -> (name index, fuzz.ratio) in process.extract's order, while the names are unchanged
        self._phrases: dict[str, list[tuple[int, float]]] = {}

    def refresh(self, store: Store) -> None:
        """Reload the names when the store has new ones."""
        with self._lock:
            self._refresh(store)

    def known(self, store: Store, words: list[str]) -> list[str]:
        """Those of ``words`` that some record names as an entity."""
        with self._lock:
            self._refresh(store)
            return [w for w in words if w in self._known]

    def match(self, store: Store, query: str) -> list[tuple[int, str, float]]:
        """``(entity id, name, best fuzz.ratio)`` of entities a phrase of ``query`` names."""
        with self._lock:
            return self._match(store, query)

    def _refresh(self, store: Store) -> None:
        version = store.entity_version()
        if version < self._version:  # a rolled-back write or another store: start again
            self._reset()
        if version != self._version:
            # Entity ids only grow (rows are never deleted), so only the new names are read.
            pairs = store.entity_names(self._ids[-1] if self._ids else 0)
            names = [name for _, name in pairs]
            self._ids += [entity_id for entity_id, _ in pairs]
            self._names += entities.normalise_many(names)
            self._display += names
            self._known.update(names)
            self._version = version
            self._phrases.clear()

    def _match(self, store: Store, query: str) -> list[tuple[int, str, float]]:
        self._refresh(store)
        phrases = query_phrases(query)
        if not phrases or not self._names:
            return []
        from rapidfuzz import fuzz, process  # noqa: PLC0415 - only recall needs it

        self._asked += 1
        # A one-shot process (a cold `ctx inject --query`) or a small vocabulary: scoring every
        # name costs less than importing numpy and building the masks.
        prefilter = self._asked > 1 and len(self._names) >= PREFILTER_NAMES
        if prefilter:
            self._mask_new_names()
        if len(self._phrases) > CACHED_PHRASES:
            self._phrases.clear()
        best: dict[int, float] = {}
        for phrase in phrases:
            found = self._phrases.get(phrase)
            if found is None:
                near = self._near(phrase) if prefilter else None
                # In index order, so ties among more than ``limit`` names break as over the full list.
                names = self._names if near is None else [self._names[i] for i in near]
                found = [
                    (index if near is None else near[index], float(score))
                    for _, score, index in process.extract(
                        phrase, names, scorer=fuzz.ratio, score_cutoff=ENTITY_CUTOFF, limit=50
                    )
                ]
                if CACHED_PHRASES:
                    self._phrases[phrase] = found
            for index, score in found:
                best[index] = max(best.get(index, 0.0), score)
        return [(self._ids[i], self._display[i], score) for i, score in best.items()]

    def _mask_new_names(self) -> None:
        """Lengths and character masks of the names added since the last call (names only grow)."""
        import numpy as np  # noqa: PLC0415 - only a warm recall over many names needs it

        built = 0 if self._by_length is None else len(self._by_length)
        if built < len(self._names):
            lengths, masks = _all_char_masks(self._names[built:])
            indexes = np.arange(built, len(self._names))
            if built:  # after the names held: a stable sort keeps equal lengths in index order
                lengths = np.concatenate([self._sorted_lengths, lengths])
                masks = np.concatenate([self._sorted_masks, masks], axis=1)
                indexes = np.concatenate([self._by_length, indexes])
            order = np.argsort(lengths, kind="stable")
            self._by_length = indexes[order]
            self._sorted_lengths = lengths[order]
            self._sorted_masks = np.ascontiguousarray(masks[:, order])

    def _near(self, phrase: str) -> list[int]:
        """Indexes of the names that may reach the cutoff against ``phrase``, in index order."""
        import numpy as np  # noqa: PLC0415

        # fuzz.ratio = 100 * (1 - indel / (len(a) + len(b))); the cutoff bounds the distance.
        share = 1.0 - ENTITY_CUTOFF / 100.0
        size = len(phrase)
        # |n - size| <= share * (n + size) + 0.5 holds only for n in [shortest, longest]: only the
        # names of those lengths (one slice of the names ordered by length) are looked at.
        shortest = math.floor((size * (1.0 - share) - 0.5) / (1.0 + share)) - 1
        longest = math.ceil((size * (1.0 + share) + 0.5) / (1.0 - share)) + 1
        first, last = np.searchsorted(self._sorted_lengths, [shortest, longest + 1])
        lengths = self._sorted_lengths[first:last]
        once, twice = _char_masks(phrase)
        allowed = share * (lengths + size) + 0.5  # + 0.5: a bound, not a test
        distance = np.bitwise_count(self._sorted_masks[0, first:last] ^ np.uint64(once)) + np.bitwise_count(
            self._sorted_masks[1, first:last] ^ np.uint64(twice)
        )
        near = self._by_length[first:last][(np.abs(lengths - size) <= allowed) & (distance <= allowed)]
        near.sort()
        found: list[int] = near.tolist()
        return found


def _all_char_masks(names: list[str]) -> tuple[Any, Any]:
    """The lengths of ``names`` and their :func:`_char_masks` as a (2, n) array, computed by numpy.

    A cold ``ctx inject --query`` builds these for every entity name: no Python loop per character.
    """
    import numpy as np  # noqa: PLC0415

    table = np.arange(0x110000, dtype=np.int64) % 27 + 37  # each code point's bit, as _char_masks
    table[97:123] = np.arange(26)
    table[48:58] = np.arange(26, 36)
    table[32] = 36
    lengths = np.fromiter(map(len, names), dtype=np.int64, count=len(names))
    masks = np.zeros((len(names), 2), dtype=np.uint64)
    step = 1 << 15  # names per pass: bounds the (step x 64) count matrix
    for first in range(0, len(names), step):
        part = names[first : first + step]
        codes = np.frombuffer("".join(part).encode("utf-32-le"), dtype=np.uint32)
        owners = np.repeat(np.arange(len(part), dtype=np.int64), lengths[first : first + step])
        counts = np.bincount(owners * 64 + table[codes], minlength=len(part) * 64).reshape(-1, 64)
        for column, least in ((0, 1), (1, 2)):
            packed = np.packbits(counts >= least, axis=1, bitorder="little")
            masks[first : first + len(part), column] = packed.view("<u8").ravel()
    return lengths.astype(np.int32), np.ascontiguousarray(masks.T)  # rows: once, twice


def _char_masks(text: str) -> tuple[int, int]:
    """Bitmasks of the characters ``text`` holds at least once and at least twice.

    Each character sets one of 64 bits (letters, digits and space their own). A bit that
    differs between two strings' masks stands for characters whose counts differ, so the
    number of differing bits never exceeds the Indel distance between the strings.
    """
    once = twice = 0
    for char in text:
        code = ord(char)
        if 97 <= code <= 122:
            bit = code - 97
        elif 48 <= code <= 57:
            bit = code - 22
        elif code == 32:
            bit = 36
        else:
            bit = 37 + code % 27
        twice |= once & (1 << bit)
        once |= 1 << bit
    return once, twice


def query_phrases(query: str) -> list[str]:
    """The content words of ``query`` with their pairs and triples, plus identifiers it names."""
    words = [w for w in entities.normalise(query).split() if w not in fulltext.STOPWORDS]
    phrases = dict.fromkeys(words)
    for size in (2, 3):
        for start in range(len(words) - size + 1):
            phrases[" ".join(words[start : start + size])] = None
    for name in entities.extract(query):
        phrases[entities.normalise(name)] = None
    return [p for p in phrases if len(p) >= 2][:40]
