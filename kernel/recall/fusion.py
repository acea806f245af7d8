"""Fusing the rankers' lists into one order.

Decisions use weighted reciprocal rank fusion (RRF): only ranks count, so a ranker's
score scale never matters, and agreement between rankers is rewarded.

Evidence uses CombSUM over min-max normalised scores (Fox and Shaw, 1994; Lee, 1997):
each ranker that returned anything maps its scores onto [0, 1] (its best hit 1, its
weakest 0) and the fused score is their sum. Unlike RRF it keeps how far ahead a
ranker's first hit is, so one ranker's confident hit is not buried under items that two
rankers only half agree on. No weights are fitted: every ranker counts the same.
(z-scores for BM25 raised MRR@10 on LoCoMo conversations by 0.02 but lowered it by 0.04 on
the labelled developer notes, where sentence similarity is the stronger ranker: it weighs
keyword hits up, which suits one kind of text only. Weighing each list by how far its best
score stands above its mean raised LoCoMo's figures by about 0.005 and lowered the labelled
evidence's MRR by 0.014.)

Conversations answer a question over several turns, so a strong hit lends a share of its
score to the turns logged just before and after it in the same session, and the square of
that share to the turns two away. Decisions have
neighbours too: those on subjects one word apart (``api.rate-limits`` and
``api.rate-limits.internal``, ``api.errors.format`` and ``api.errors.codes``, ``ci.runners``
and ``security.ci-runners``) answer the same question from two sides, and a strong hit lends
them the same share.

A question that asks when something happened is answered by a text that states a time
("last Friday", "two weeks ago", "in May"), which its words rarely share with the question.
For such a question, stating a time counts as one more ranker's vote: a candidate that
states one gains what a ranker's best hit brings, 1, like any other list in the sum.

A question that names a day ("on 31 July, 2023", "August 3, 2023", "2023-08-03") or a
month ("in May 2023") is answered by what was said then: a candidate that happened (or was
logged) within a week of a day it names, or in a month it names, gains what a ranker's best
hit brings, 1, as for stating a time.

A text that ends in a question asks rather than answers: the answer is usually in the turn
after it. Once its neighbours have taken their share of its score, it keeps half of it, so
the reply it lent to can pass it.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import overload

from ctx_kernel.kernel.reports import RankerScore

RANKERS = ("keyword", "entity", "vector")
# The share of a strong hit's fused score its neighbouring turns receive.
NEIGHBOUR_SHARE = 0.5
# Hits whose neighbours are looked up (the first ones of the fused list).
NEIGHBOUR_SOURCES = 10
# The share of its fused score a text that ends in a question keeps.
ASKING_SHARE = 0.5

Ranked = list[tuple[str, float, str | None]]

# A question about a moment: "When did ...", "How long ago ...", "What year ...".
_ASKS_WHEN = re.compile(r"^\W*(?:when|how long ago|what (?:date|day|month|year|time))\b", re.IGNORECASE)
_DAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
# Words that say when on their own, and spans that do after a count or a determiner
# ("last week", "two years", "the other day", "this summer").
_WHEN_WORDS = _DAYS | {"yesterday", "today", "tonight", "tomorrow", "recently", "ago"}
_SPANS = _DAYS | frozenset(
    "day days night week weeks weekend month months year years morning evening "
    "summer spring autumn fall winter".split()
)
_SPAN_LEADS = frozenset(
    "last next this past coming that other few couple several one two three four five six".split()
)
# Capitalised only, so the verb "may" is not read as the month.
_MONTH_NUMBERS = {
    name: number
    for number, name in enumerate(
        "January February March April May June July August September October November December".split(), 1
    )
}
_MONTHS = frozenset(_MONTH_NUMBERS)
_WORD = re.compile(r"\w+")
# A day a question names ("31 July, 2023", "July 31, 2023", "2023-07-31"), else a month ("May 2023").
_MONTH_NAMES = "|".join(sorted(_MONTHS))
_DAY_NAMED = re.compile(
    rf"\b(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m1>{_MONTH_NAMES}),?\s+(?P<y1>\d{{4}})"
    rf"|(?P<m2>{_MONTH_NAMES})\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y2>\d{{4}})"
    rf"|(?P<y3>\d{{4}})-(?P<m3>\d\d)-(?P<d3>\d\d)"
    rf"|(?P<m4>{_MONTH_NAMES}),?\s+(?P<y4>\d{{4}}))\b"
)
# How far from a day a question names a candidate may have happened and still gain its vote.
DAY_WINDOW = datetime.timedelta(days=7)
_SUBJECT_WORD = re.compile(r"[^\W_]+")


Hit = tuple[str, float, dict[str, RankerScore | None]]


class Fused(Sequence[Hit]):
    """Fused items, best first, each with its fused score and every ranker's score of it.

    The rankers' scores of an item are made when the item is read: a recall reads the first
    few of a hundred or more (building them all took most of a fusion's 0.3 ms).
    """

    def __init__(self, totals: dict[str, float], lists: dict[str, Ranked]) -> None:
        self._order = sorted(totals, key=lambda item: (-totals[item], item))  # ties broken by id
        self._totals = totals
        self._lists = lists
        self._positions: dict[str, dict[str, tuple[int, float, str | None]]] | None = None

    def ids(self) -> list[str]:
        """The items, best first."""
        return list(self._order)

    def totals(self) -> dict[str, float]:
        """Each item's fused score."""
        return dict(self._totals)

    def scores_of(self, item: str) -> dict[str, RankerScore | None]:
        """Each ranker's score of ``item`` (None: that ranker did not return it)."""
        if self._positions is None:
            self._positions = {
                ranker: {entry[0]: (rank, entry[1], entry[2]) for rank, entry in enumerate(ranked, start=1)}
                for ranker, ranked in self._lists.items()
            }
        scores: dict[str, RankerScore | None] = dict.fromkeys(RANKERS)
        for ranker, positions in self._positions.items():
            found = positions.get(item)
            if found is not None:
                scores[ranker] = RankerScore(found[0], round(found[1], 6), found[2])
        return scores

    def with_totals(self, totals: dict[str, float]) -> Fused:
        """The same rankers' lists, fused to ``totals`` instead."""
        return Fused(totals, self._lists)

    @overload
    def __getitem__(self, index: int) -> Hit: ...

    @overload
    def __getitem__(self, index: slice) -> list[Hit]: ...

    def __getitem__(self, index: int | slice) -> Hit | list[Hit]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._order)))]
        item = self._order[index]
        return item, self._totals[item], self.scores_of(item)

    def __len__(self) -> int:
        return len(self._order)


def rrf(lists: dict[str, Ranked], rrf_k: int, weights: dict[str, float] | None = None) -> Fused:
    """Reciprocal rank fusion: sum of weight / (rrf_k + rank); ties broken by id for determinism."""
    fused: dict[str, float] = {}
    for ranker, ranked in lists.items():
        weight = (weights or {}).get(ranker, 1.0)
        for rank, (item, _, _) in enumerate(ranked, start=1):
            fused[item] = fused.get(item, 0.0) + weight / (rrf_k + rank)
    return Fused(fused, lists)


def asks_when(query: str) -> bool:
    """True when ``query`` asks when something happened ("When did ...", "How long ago ...")."""
    return _ASKS_WHEN.search(query) is not None


def states_time(text: str) -> bool:
    """True when ``text`` says when something happened ("yesterday", "last week", "in May").

    Word by word rather than one large regular expression: it runs on every candidate of
    a "when" question, and this is about three times faster.
    """
    previous = ""
    for word in _WORD.findall(text):
        lower = word.lower()
        if lower in _WHEN_WORDS or word in _MONTHS:
            return True
        if lower in _SPANS and (previous in _SPAN_LEADS or previous.isdigit()):
            return True
        if len(word) == 4 and word.isdigit() and word[:2] in ("19", "20"):
            return True
        previous = lower
    return False


def timed_candidates(
    query: str, lists: dict[str, Ranked], texts: Callable[[list[str]], dict[str, str]]
) -> set[str]:
    """The candidates of ``lists`` that state a time, when ``query`` asks when; else none.

    ``texts`` maps ids to their texts; it is only called for a question that asks when.
    """
    if not asks_when(query):
        return set()
    candidates = list(dict.fromkeys(item for ranked in lists.values() for item, _, _ in ranked))
    return {item for item, text in texts(candidates).items() if states_time(text)}


def periods_named(query: str) -> list[tuple[datetime.date, datetime.date]]:
    """The periods ``query`` names, first and last day: a week either side of a day it names
    ("on 31 July, 2023", "August 3, 2023", "2023-08-03"), a month it names ("in May 2023")."""
    periods = []
    for found in _DAY_NAMED.finditer(query):
        parts = found.groupdict()
        try:
            if parts["m4"]:
                year, month = int(parts["y4"]), _MONTH_NUMBERS[parts["m4"]]
                start = datetime.date(year, month, 1)
                following = datetime.date(year + month // 12, month % 12 + 1, 1)
                periods.append((start, following - datetime.timedelta(days=1)))
                continue
            year = int(parts["y1"] or parts["y2"] or parts["y3"])
            month_name = parts["m1"] or parts["m2"]
            month = _MONTH_NUMBERS[month_name] if month_name else int(parts["m3"])
            day = datetime.date(year, month, int(parts["d1"] or parts["d2"] or parts["d3"]))
        except ValueError:  # 31 February: no day
            continue
        periods.append((day - DAY_WINDOW, day + DAY_WINDOW))
    return periods


def dated_candidates(
    query: str, lists: dict[str, Ranked], moments: Callable[[list[str]], dict[str, str]]
) -> set[str]:
    """The candidates of ``lists`` that happened in a period ``query`` names (:func:`periods_named`).

    ``moments`` maps ids to when each happened (a UTC timestamp); it is only called for a
    query that names a period.
    """
    periods = periods_named(query)
    if not periods:
        return set()
    candidates = list(dict.fromkeys(item for ranked in lists.values() for item, _, _ in ranked))
    return {item for item, moment in moments(candidates).items() if within(moment, periods)}


def within(moment: str, periods: Sequence[tuple[datetime.date, datetime.date]]) -> bool:
    """True when ``moment`` (a UTC timestamp) falls on a day of one of ``periods``."""
    when = datetime.date.fromisoformat(moment[:10])
    return any(start <= when <= end for start, end in periods)


def combsum(lists: dict[str, Ranked], timed: Collection[str] = (), dated: Collection[str] = ()) -> Fused:
    """CombSUM of min-max normalised scores over the lists that are not empty.

    A list whose scores are all equal gives each of its items 1. Each item of ``timed``, and
    each of ``dated``, that a list holds gains 1 more (see the module docstring). Ties are
    broken by id.
    """
    fused: dict[str, float] = {}
    for ranked in lists.values():
        if not ranked:
            continue
        values = [score for _, score, _ in ranked]
        low, high = min(values), max(values)
        span = high - low
        for item, score, _ in ranked:
            share = (score - low) / span if span > 0 else 1.0
            fused[item] = fused.get(item, 0.0) + share
    for votes in (timed, dated):
        for item in votes:
            if item in fused:
                fused[item] += 1.0
    return Fused(fused, lists)


def with_neighbours(
    fused: Fused,
    neighbours: Callable[[list[str]], dict[str, list[str]]],
    share: float = NEIGHBOUR_SHARE,
    sources: int = NEIGHBOUR_SOURCES,
    *,
    from_each: bool = True,
    hops: int = 1,
) -> Fused:
    """Add ``share`` of each of the first ``sources`` hits' fused score to the items next to it.

    ``neighbours`` maps hit ids to their neighbours' ids (for evidence, the turns logged just
    before and after them in the same session). With ``from_each``, a turn between two strong
    hits, or a hit next to another, gains from both: the answer to a question often spans a
    question turn and its reply. Without it, an item gains from its strongest neighbour only
    (a decision related to several hits is no likelier to answer than one related to one).
    With ``hops`` 2, the neighbours' neighbours gain ``share`` squared (one more call).
    """
    if not fused:
        return fused
    total = fused.totals()
    strong = [(item, total[item]) for item in fused.ids()[:sources]]
    adjacent = neighbours([item for item, _ in strong])
    beyond: dict[str, list[str]] = {}
    if hops > 1:
        ring = {other for item, _ in strong for other in adjacent.get(item, [])}
        beyond = neighbours(sorted(ring)) if ring else {}
    gains: dict[str, float] = {}
    for item, score in strong:
        near = adjacent.get(item, [])
        reached = [(other, share) for other in near]
        seen = {item, *near}
        for other in near:
            for further in beyond.get(other, []):
                if further not in seen:
                    seen.add(further)
                    reached.append((further, share * share))
        for other, part in reached:
            gain = part * score
            gains[other] = gains.get(other, 0.0) + gain if from_each else max(gains.get(other, 0.0), gain)
    for other, gain in gains.items():
        total[other] = total.get(other, 0.0) + gain
    return fused.with_totals(total)


def asks(text: str) -> bool:
    """True when ``text`` ends in a question mark."""
    return text.rstrip().endswith("?")


def settle_questions(
    fused: Fused, texts: Callable[[list[str]], dict[str, str]], k: int, share: float = ASKING_SHARE
) -> Fused:
    """``fused`` with each text that :func:`asks` keeping ``share`` of its score, exact for the first ``k``.

    Texts are read for the first hits only, a window that doubles until no hit past it
    could still reach the first ``k`` (lowering scores only moves hits down).
    """
    order = fused.ids()
    totals = fused.totals()
    window = 2 * k
    settled = 0
    while True:
        head = order[settled:window]
        for item, text in texts(head).items():
            if asks(text):
                totals[item] *= share
        settled = min(window, len(order))
        if settled >= len(order):
            break
        kth = sorted((totals[i] for i in order[:settled]), reverse=True)[k - 1] if settled >= k else None
        if kth is not None and kth > totals[order[settled]]:
            break
        window *= 2
    return fused.with_totals(totals)


def subject_words(subject: str) -> frozenset[str]:
    """The words of a subject, lower-cased (``api.rate-limits`` is api, rate, limits)."""
    return frozenset(_SUBJECT_WORD.findall(subject.lower()))


def _family_keys(words: frozenset[str]) -> list[frozenset[str]]:
    """The word sets a subject shares with a subject one word apart: its own, and (with three
    words or more) each of its sets with one word left out. A key keeps two words at least, so
    ``ci.runners`` and ``ci.caching`` are not related through ``ci`` alone."""
    keys = [words] if len(words) >= 2 else []
    if len(words) >= 3:
        keys += [words - {word} for word in words]
    return keys


class SubjectFamilies:
    """Subjects one word apart from each other: one adds a word to the other, or each has one
    word the other lacks (siblings under a parent of two words or more)."""

    def __init__(self, subjects: Iterable[str]) -> None:
        self._by_key: dict[frozenset[str], list[str]] = {}
        for subject in subjects:
            for key in _family_keys(subject_words(subject)):
                self._by_key.setdefault(key, []).append(subject)

    def relatives(self, subject: str) -> set[str]:
        """The subjects one word apart from ``subject`` (never itself)."""
        found = {other for key in _family_keys(subject_words(subject)) for other in self._by_key.get(key, ())}
        found.discard(subject)
        return found
