"""Recall: keyword, entity and vector rankers, fused (see kernel/recall/fusion.py).

Each store (kernel decisions, vault evidence) is ranked on its own; the two answers are
never blended. Decision hits are then expanded with what contradicts them: their
supersede chain, conflicting decisions on related subjects, and pending proposals that
would replace them. A decision is presented as holding only when its validity window
contains the moment asked about.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any, Literal

from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.limits import RECALL_MODES
from ctx_kernel.kernel.recall import conflicts, entities, fusion, snippets, vocabulary
from ctx_kernel.kernel.recall.embeddings import Embedder
from ctx_kernel.kernel.recall.fusion import Ranked
from ctx_kernel.kernel.records import Decision, Evidence, Proposal
from ctx_kernel.kernel.reports import (
    DecisionSource,
    EvidenceSource,
    RankerScore,
    Related,
    Scores,
    VectorStatus,
)
from ctx_kernel.kernel.store import query as fulltext
from ctx_kernel.kernel.store.base import ConflictRow, Store
from ctx_kernel.kernel.store.query import TextQuery
from ctx_kernel.kernel.text import clip

MODES = RECALL_MODES
# Every ranker fetches this many candidates (or 5 * k) before fusion.
OVERFETCH = 50
# Binary-quantised KNN candidates rescored exactly per query (about 2.5 us each on SQLite): 200
# keep 0.99-1.0 of the exact top 10 at 10k texts, where 100 kept 0.95 (`just bench-recall`).
VECTOR_CANDIDATES = 200
# ...and one per this many records: the near-ties that quantisation blurs grow with the store
# (at a million texts, 200 candidates kept 0.86 of the exact top 10 and 1,000 kept 0.997).
RECORDS_PER_CANDIDATE = 1000
# Evidence past this many texts has its vectors searched by a worker beside this thread's work:
# a search of milliseconds, mostly numpy and SQLite, which release the GIL (at 100,000 texts,
# hybrid p50 16.0 ms with it, 18.7 without); in a smaller store a search is a fraction of a
# millisecond of mostly Python, and a worker only waits for the GIL (10,000: 9.2 with, 8.4 without).
SEARCH_ASIDE = 50_000
# all-MiniLM-L6-v2 puts unrelated English texts at cosine 0.0-0.2; below this a
# "nearest" neighbour is noise and would only dilute the fused list.
MIN_SIMILARITY = 0.25
# fuzz.ratio between a query phrase and an entity name ("authn" vs "auth" scores 89).
ENTITY_CUTOFF = 85.0
ENTITY_ITEMS = 200
# From this many distinct entity names, a warm index prefilters them with numpy (see EntityIndex).
PREFILTER_NAMES = 5000
# Evidence postings one keyword search may rank (see Recaller._keyword): FTS5 ranks about one
# per microsecond, so this bounds the search to about 20 ms whatever the store's size.
KEYWORD_POSTINGS = 20_000
# Decision records a warm process keeps between recalls (about 1 KB each).
CACHED_DECISIONS = 50_000
# From this recall over unchanged decisions on, a process holds every decision (see DecisionCache).
PRELOAD_AFTER = 2
# Decisions whose conflicts one statement of the preload reads.
PRELOAD_BATCH = 5_000
# Entities whose counts and newest items (up to ENTITY_ITEMS ids) a warm process keeps.
CACHED_POSTINGS = 2_000
# Query phrases whose fuzzy matches over the entity names a warm process keeps.
CACHED_PHRASES = 20_000
# Decisions naming a hit's entities that are checked for an opposite stance.
CONFLICT_CANDIDATES = 20
# Related subjects: token_set_ratio of the subjects' words ("cache.sessions" ~ "auth.sessions").
SUBJECT_SIMILARITY = 75.0
SUPERSEDED_WARNING = "superseded: do not apply"
# Hybrid fusion settings, chosen on the labelled set in tests/data/recall (`just quality`):
# results were flat for vector weights 1.5-2 and a vector floor of 0.7-0.8. Sentence
# similarity is the strongest single signal on paraphrased questions, so it weighs most,
# and each list drops its weak tail before fusion.
WEIGHTS: dict[str, float] = {"keyword": 1.0, "entity": 0.5, "vector": 1.5}
RELATIVE_FLOOR: dict[str, float] = {"keyword": 0.3, "entity": 0.5, "vector": 0.8}


@dataclass(frozen=True)
class DecisionHit:
    """A decision that holds at the moment asked about, with what contradicts it."""

    decision: Decision
    rank: int
    rrf: float
    scores: dict[str, RankerScore | None]
    via: str | None = None
    superseded: list[Related] = field(default_factory=list)
    conflicts: list[Related] = field(default_factory=list)
    pending: list[Related] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (an item of ``decisions`` in ``schemas/recall.schema.json``)."""
        d = self.decision
        return {
            "id": d.id,
            "subject": d.subject,
            "decision": d.decision,
            "rationale": d.rationale,
            "current": d.current,
            "valid_from": d.valid_from,
            "valid_until": d.valid_until,
            "source": _decision_source(d),
            "ratified_by": d.ratified_by,
            "rank": self.rank,
            "rrf": self.rrf,
            "scores": _scores_dict(self.scores),
            "via": self.via,
            "superseded": [r.to_dict() for r in self.superseded],
            "conflicts": [r.to_dict() for r in self.conflicts],
            "pending": [r.to_dict() for r in self.pending],
        }


@dataclass(frozen=True)
class ClosedHit:
    """A matching decision that no longer holds and has no successor in force."""

    decision: Decision
    scores: dict[str, RankerScore | None]
    why: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (an item of ``closed``)."""
        d = self.decision
        return {
            "id": d.id,
            "subject": d.subject,
            "decision": d.decision,
            "current": False,
            "valid_from": d.valid_from,
            "valid_until": d.valid_until,
            "source": _decision_source(d),
            "scores": _scores_dict(self.scores),
            "why": self.why,
            "warning": SUPERSEDED_WARNING
            if d.closed_by == "superseded"
            else "no longer in force: do not apply",
        }


@dataclass(frozen=True)
class EvidenceHit:
    """An unratified evidence text that matches."""

    evidence: Evidence
    rank: int
    rrf: float
    scores: dict[str, RankerScore | None]
    snippet: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (an item of ``evidence``): labelled unratified, with no window of its own."""
        e = self.evidence
        return {
            "id": e.id,
            "label": "unratified",
            "ratified": False,
            "current": None,
            "valid_from": e.created_at,
            "valid_until": None,
            "source": EvidenceSource(e.kind, e.agent, e.session, e.tags).to_dict(),
            "created_at": e.created_at,
            "snippet": self.snippet,
            "rank": self.rank,
            "rrf": self.rrf,
            "scores": _scores_dict(self.scores),
        }


@dataclass(frozen=True)
class Recall:
    """The answer to a recall query: decisions and evidence, never blended."""

    query: str
    mode: str
    as_of: str | None
    k: int
    rrf_k: int
    vectors: VectorStatus
    decisions: list[DecisionHit]
    closed: list[ClosedHit]
    evidence: list[EvidenceHit]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``schemas/recall.schema.json``)."""
        return {
            "query": self.query,
            "mode": self.mode,
            "as_of": self.as_of,
            "k": self.k,
            "rrf_k": self.rrf_k,
            "vectors": self.vectors.to_dict(),
            "decisions": [h.to_dict() for h in self.decisions],
            "closed": [h.to_dict() for h in self.closed],
            "evidence": [h.to_dict() for h in self.evidence],
        }


def _decision_source(decision: Decision) -> dict[str, Any]:
    kind: Literal["adr", "proposal"] = "adr" if decision.source else "proposal"
    return DecisionSource(kind, decision.source, decision.proposal_id, decision.adr_number).to_dict()


def _scores_dict(scores: dict[str, RankerScore | None]) -> dict[str, Any]:
    # Fusion keys every hit's scores by all of RANKERS, the fields of Scores.
    return Scores(**scores).to_dict()


def fuse(lists: dict[str, Ranked], rrf_k: int, weights: dict[str, float] | None = None) -> fusion.Fused:
    """Reciprocal rank fusion (see ``fusion.rrf``)."""
    return fusion.rrf(lists, rrf_k, weights)


def valid_at(decision: Decision, moment: str | None) -> bool:
    """True when ``decision`` holds at ``moment`` (now when None)."""
    if moment is None:
        return decision.valid_until is None
    return decision.valid_from <= moment and (decision.valid_until is None or decision.valid_until > moment)


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


class DecisionCache:
    """What earlier recalls of this process read, kept while it still holds.

    Decision records and supersession chains stay until a decision is written, closed or linked
    (the store's ``decision_version``): agents log evidence all the time and that changes none of
    them. From the second recall over the same decisions, every decision is read at once (when
    there are at most CACHED_DECISIONS), so later recalls read none. Entity postings and item
    counts cover evidence too: they are forgotten on any commit (``data_version``) or change by
    this connection.
    """

    def __init__(self) -> None:
        self._decisions: tuple[object, ...] | None = None
        self._data: tuple[int, int] | None = None
        self._recalls = 0  # recalls since the decisions last changed
        self.complete = False  # every decision of the store is in ``records``
        self.records: dict[str, Decision] = {}
        self.chains: dict[str, list[str]] = {}  # decision id -> ids of its chain (itself included)
        self.conflicts: dict[tuple[str, str | None], list[ConflictRow]] = {}  # (id, moment) -> conflicts_at
        # (id prefix, entity id) -> (items mentioning it, the newest ENTITY_ITEMS of them)
        self.postings: dict[tuple[str, int], tuple[int, list[str]]] = {}
        self.sizes: dict[str, int] = {}  # kind -> item_count

    def check(self, store: Store) -> None:
        """Forget what the store changed since the last recall (or what grew too large)."""
        decisions = store.decision_version()
        full = len(self.records) > CACHED_DECISIONS or len(self.conflicts) > CACHED_DECISIONS
        if decisions != self._decisions or full:
            self.records, self.chains, self.conflicts, self.complete, self._recalls = {}, {}, {}, False, 0
            self._decisions = decisions
        data = (store.data_version(), store.change_count())
        if data != self._data or len(self.postings) > CACHED_POSTINGS:
            self.postings, self.sizes = {}, {}
            self._data = data
        self._recalls += 1
        if self._recalls >= PRELOAD_AFTER and not self.complete:
            self._preload(store)

    def _preload(self, store: Store) -> None:
        """Read every decision, its chain and its conflicts with the decisions in force (about
        20 ms per 1,000 decisions), when not too many."""
        if store.item_count("decision") > CACHED_DECISIONS:
            return
        conflicts: dict[tuple[str, str | None], list[ConflictRow]] = {}
        with store.snapshot():
            if store.decision_version() != self._decisions:
                return  # changed since check(): the next recall reads them
            records = {d.id: d for d in store.decisions(include_closed=True)}
            ids = list(records)
            for first in range(0, len(ids), PRELOAD_BATCH):
                for decision_id, rows in store.conflicts_at(ids[first : first + PRELOAD_BATCH], None).items():
                    conflicts[(decision_id, None)] = rows
        chains: dict[str, list[str]] = {}
        for start in records:
            if start in chains:
                continue
            members, todo = {start: None}, [start]
            while todo:
                current = records[todo.pop()]
                for linked in (*current.supersedes, *current.superseded_by):
                    if linked not in members and linked in records:
                        members[linked] = None
                        todo.append(linked)
            chain = list(members)
            for member in chain:
                chains[member] = chain
        self.records, self.chains, self.conflicts, self.complete = records, chains, conflicts, True


class Recaller:
    """Runs one recall against a store."""

    def __init__(
        self,
        store: Store,
        entity_index: EntityIndex,
        embedder: Embedder | None,
        min_scores: dict[str, float] | None = None,
        cache: DecisionCache | None = None,
    ) -> None:
        self.store = store
        if cache is None:
            cache = DecisionCache()
        cache.check(store)
        self._cache = cache
        self.min_scores = dict(min_scores or {})
        for name, minimum in self.min_scores.items():
            if not math.isfinite(minimum):
                raise UsageError(f"the minimum score for {name} must be a finite number, not {minimum}")
        self.entity_index = entity_index
        self.embedder = embedder
        self._embedding: Future[bytes] | None = None  # the query's vector, from start_vectors' pool
        self._embedding_lock = threading.Lock()
        self._entities_lock = threading.Lock()
        self._vectors: dict[str, Ranked] = {}  # kind -> its vector list (each kind ranked by one thread)
        self._pool: Executor | None = None  # start_vectors' pool, when the store's reads overlap
        self._evidence_search: Future[Ranked] | None = None  # the evidence vectors, by a worker
        self._evidence_answer: tuple[tuple[str, str, int, int], Future[list[EvidenceHit]]] | None = None
        self._chains: dict[str, dict[str, Decision]] = {}
        self._entities: list[tuple[int, str, float]] | None = None
        self._conflicts: dict[str, list[ConflictRow]] = {}
        self._loaded = cache.records  # every decision read during this recall (or an earlier one)
        self._lexical_lists: dict[tuple[str, str, int], dict[str, Ranked]] = {}

    # -- rankers --------------------------------------------------------------------------

    def _keyword(self, store: Store, query: str, kind: str, fetch: int) -> Ranked:
        if kind == "decision":
            # Subjects are terse ("db.driver"); the query gains the short forms of its words.
            expanded = TextQuery.from_text(vocabulary.expand(query), drop_stopwords=True)
            if expanded is None:
                return []
            return [(i, s, None) for i, s in store.fts_decision_ids(expanded, fetch)]
        wanted = TextQuery.from_text(query, drop_stopwords=True)
        if wanted is None:
            return []
        # BM25 scores every text that holds any term: at a million texts a common word is in tens
        # of thousands and costs tens of milliseconds, while its low idf barely moves the order.
        # When the terms' texts do not fit in KEYWORD_POSTINGS, cheaper searches stand in for the
        # one: the rarest terms that fit (the rarest always), which weigh most in BM25 (the idea
        # of MaxScore pruning), and the texts holding every term, then every term but the
        # commonest (FTS5 scores only the texts holding them all). Small stores never reach the
        # budget. Measured against the full query's top 10: the same at 100,000 texts, 0.70 of
        # it at a million (0.60 without the second tier).
        # Counted past the budget (counting costs a twentieth of ranking) to tell the rarest apart;
        # terms beyond that are taken in the query's order.
        counts = store.evidence_term_counts(wanted.terms, 4 * KEYWORD_POSTINGS)
        order = {term: n for n, term in enumerate(wanted.terms)}
        rarest_first = sorted(wanted.terms, key=lambda t: (counts[t], order[t]))
        kept = 0
        total = 0
        for term in rarest_first:
            if kept and total + counts[term] > KEYWORD_POSTINGS:
                break
            kept += 1
            total += counts[term]
        if kept == len(wanted.terms):
            return [(i, s, None) for i, s in store.fts_evidence_ids(wanted, fetch)]
        found: dict[str, float] = {}
        subsets: list[tuple[int, Literal["any", "all"]]] = [
            (kept, "any"),
            (len(rarest_first), "all"),
            (len(rarest_first) - 1, "all"),
        ]
        for size, mode in subsets:
            if mode == "all" and size <= kept:
                continue  # the rarest terms' search holds these texts already
            chosen = set(rarest_first[:size])
            part = TextQuery(tuple(t for t in wanted.terms if t in chosen), mode)
            # A text found by several searches keeps its best score (each term adds to BM25).
            for item, score in store.fts_evidence_ids(part, fetch):
                found[item] = max(score, found.get(item, score))
        best = sorted(found, key=lambda i: (-found[i], i))[:fetch]
        return [(i, found[i], None) for i in best]

    def _entity(self, store: Store, kind: str, fetch: int, matched: list[tuple[int, str, float]]) -> Ranked:
        if not matched:
            return []
        prefix = "dc_" if kind == "decision" else "ev_"
        postings = self._cache.postings
        missing = [m[0] for m in matched if (prefix, m[0]) not in postings]
        if missing:
            counts = store.entity_counts(missing, prefix)
            newest = store.entity_items(missing, prefix, ENTITY_ITEMS)
            for entity_id in missing:
                postings[(prefix, entity_id)] = (counts.get(entity_id, 0), newest.get(entity_id, []))
        total = max(self._size(store, kind), 1)
        scores: dict[str, float] = {}
        weighed: list[tuple[str, list[str]]] = []
        for entity_id, name, ratio in matched:
            df, items = postings[(prefix, entity_id)]
            if not df:
                continue
            weighed.append((name, items))
            # Rare names say more than common ones (idf), and exact names more than near ones.
            weight = (ratio / 100.0) ** 2 * math.log(1.0 + total / df)
            for item in items:
                scores[item] = scores.get(item, 0.0) + weight
        order = [i for _, i in sorted([(-score, i) for i, score in scores.items()])[:fetch]]
        # The names that matched, for the items kept only (a common name reaches hundreds).
        names: dict[str, list[str]] = {i: [] for i in order}
        for name, items in weighed:
            for item in items:
                if item in names:
                    names[item].append(name)
        return [(i, scores[i], ", ".join(sorted(set(names[i]))[:5])) for i in order]

    def _size(self, store: Store, kind: str) -> int:
        """How many records of ``kind`` the store holds, read once while the store is unchanged."""
        if kind not in self._cache.sizes:
            self._cache.sizes[kind] = store.item_count(kind)
        return self._cache.sizes[kind]

    def start_vectors(
        self, query: str, fetch: int, pool: Executor | None, embedding: Future[bytes] | None = None
    ) -> None:
        """Embed the query in a thread of ``pool`` (up to three workers), unless ``embedding``
        (the query's vector, from ``self.embedder`` in that pool) is under way already.

        Embedding is the costliest step of a recall, and onnxruntime releases the GIL: while the
        query is embedded, this thread ranks the evidence and the decisions by keyword and entity
        (see :meth:`decisions`). The rest of a recall on an embedded store is Python and SQLite
        work of this process, which more threads only shared out (they waited for the GIL: a
        worker fusing the evidence beside the decisions made a recall slower). A store whose reads
        wait on a server (``parallel_reads``) gets two more workers, each on a connection of its
        own: one searches the evidence vectors as soon as the query's vector is there, one
        answers for the evidence while this thread answers for the decisions. On an embedded
        store with more than SEARCH_ASIDE evidence texts, the search of their vectors has a
        worker too.
        """
        if self.embedder is None or pool is None:
            return
        self._embedding = embedding or pool.submit(self.embedder.embed_query, query)
        if self.store.parallel_reads:
            self._pool = pool
            searcher = self.store.reader().reader()  # reader() is the evidence answer's
            self._evidence_search = pool.submit(self._search, searcher, query, "evidence", fetch)
        elif self._size(self.store, "evidence") > SEARCH_ASIDE:
            self._evidence_search = pool.submit(self._search, self.store.reader(), query, "evidence", fetch)

    def _query_vector(self, query: str) -> bytes:
        """The query's vector: embedded here when no worker has started on it (or there is none)."""
        assert self.embedder is not None
        with self._embedding_lock:
            if self._embedding is None or self._embedding.cancel():
                done: Future[bytes] = Future()
                try:
                    done.set_result(self.embedder.embed_query(query))
                except BaseException as exc:
                    done.set_exception(exc)
                self._embedding = done
            embedding = self._embedding
        return embedding.result()

    def _nearest(self, store: Store, kind: str, vector: bytes, fetch: int) -> Ranked:
        """The records of ``kind`` nearest to ``vector``, read through ``store``; weak ones left out."""
        candidates = max(VECTOR_CANDIDATES, 2 * fetch, self._size(store, kind) // RECORDS_PER_CANDIDATE)
        return [
            (item, sim, None)
            for item, sim in store.nearest(kind, vector, candidates, fetch)
            if sim >= MIN_SIMILARITY
        ]

    def _vector(self, store: Store, query: str, kind: str, fetch: int) -> Ranked:
        if self.embedder is None:
            return []
        search = self._evidence_search if kind == "evidence" else None
        if search is not None and not search.cancel():  # a worker has it (else: here, through store)
            return search.result()
        return self._search(store, query, kind, fetch)

    def _search(self, store: Store, query: str, kind: str, fetch: int) -> Ranked:
        """The vector list of ``kind``, searched once per recall through ``store``."""
        if kind not in self._vectors:
            self._vectors[kind] = self._nearest(store, kind, self._query_vector(query), fetch)
        return self._vectors[kind]

    def rank(
        self, store: Store, query: str, kind: str, mode: str, fetch: int, *, floors: bool = True
    ) -> dict[str, Ranked]:
        """Each requested ranker's list for one store.

        With ``floors``, in hybrid mode a list keeps only the items scoring at least a share
        of its best item's raw score: RRF rewards agreement, and a ranker's weak tail would
        otherwise outvote another ranker's confident first hit.
        """
        lists = self._rank(store, query, kind, mode, fetch)
        for name, minimum in self.min_scores.items():
            if name in lists:
                lists[name] = [r for r in lists[name] if r[1] >= minimum]
        if mode == "hybrid" and floors:
            for name, ranked in lists.items():
                floor = RELATIVE_FLOOR.get(name, 0.0)
                if ranked and floor:
                    best = ranked[0][1]
                    lists[name] = [r for r in ranked if r[1] >= floor * best]
        return lists

    def _rank(self, store: Store, query: str, kind: str, mode: str, fetch: int) -> dict[str, Ranked]:
        lists = dict(self._lexical(store, query, kind, mode, fetch))
        if mode in ("hybrid", "vector") and self.embedder is not None:
            lists["vector"] = self._vector(store, query, kind, fetch)
        return lists

    def _lexical(self, store: Store, query: str, kind: str, mode: str, fetch: int) -> dict[str, Ranked]:
        """The keyword and entity lists of one store, computed once per recall."""
        key = (kind, mode, fetch)
        if key in self._lexical_lists:
            return self._lexical_lists[key]
        lists: dict[str, Ranked] = {}
        if mode in ("hybrid", "keyword"):
            lists["keyword"] = self._keyword(store, query, kind, fetch)
        if mode == "entity" or (
            mode == "hybrid" and (kind == "decision" or self._names_identifier(store, query))
        ):
            lists["entity"] = self._entity(store, kind, fetch, self._matched_entities(store, query))
        self._lexical_lists[key] = lists
        return lists

    def _matched_entities(self, store: Store, query: str) -> list[tuple[int, str, float]]:
        """The entities the query names, matched once per recall (by whichever thread asks first)."""
        with self._entities_lock:
            if self._entities is None:
                self._entities = self.entity_index.match(store, vocabulary.expand(query))
            return self._entities

    def _names_identifier(self, store: Store, query: str) -> bool:
        """True when ``query`` names something the entity ranker can find: an identifier
        (a dotted subject, a path, a code name) or a word some record names as an entity.

        On prose the entity ranker only matches common words, which adds noise to evidence.
        """
        if entities.extract(query):
            return True
        words = [w for w in fulltext.words(query) if len(w) >= 3 and w not in fulltext.STOPWORDS]
        return bool(self.entity_index.known(store, words))

    # -- decisions ------------------------------------------------------------------------

    def decisions(
        self, query: str, mode: str, k: int, rrf_k: int, moment: str | None
    ) -> tuple[list[DecisionHit], list[ClosedHit]]:
        """Decision hits that hold at ``moment``; matching ones that no longer hold are mapped
        to their successors in force, or reported as closed."""
        fetch = max(OVERFETCH, 5 * k)
        if self._pool is not None:
            # The evidence is answered (ranked, fused, read, snippets cut) by the pool's other
            # worker on a connection of its own, while this thread ranks and expands the decisions.
            answer = self._pool.submit(self._evidence, self.store.reader(), query, mode, k, rrf_k)
            self._evidence_answer = ((query, mode, k, rrf_k), answer)
            # Hand the GIL over now: else the worker waits for this thread's next blocking call or
            # the interpreter's switch interval (5 ms) before it can start.
            time.sleep(0)
        elif self._embedding is not None:
            # The query is being embedded: rank the evidence by keyword and entity meanwhile, so
            # that this thread waits for the vector only once there is nothing else to do. (Doing
            # more meanwhile, preparing the likely hits' conflicts and snippets, did not pay: the
            # model runs slower while this thread runs Python.)
            self._lexical(self.store, query, "evidence", mode, fetch)
        lists = self.rank(self.store, query, "decision", mode, fetch)
        fused = fuse(lists, rrf_k, WEIGHTS)
        ids = fused.ids()
        records: dict[str, Decision] = {}
        hits: list[DecisionHit] = []
        seen: set[str] = set()
        closed: list[ClosedHit] = []
        matched_ids = set(ids)
        for position, (item, score, scores) in enumerate(fused):
            if len(hits) >= k:
                break
            if position % (3 * k) == 0:
                # Records (and the chains of closed ones) a window at a time: most recalls stop early.
                window = self._load([], ids[position : position + 3 * k])
                records.update(window)
                self._load([i for i, d in window.items() if not valid_at(d, moment)])
            decision = records.get(item)
            if decision is None:
                continue
            if valid_at(decision, moment):
                if item not in seen:
                    seen.add(item)
                    hits.append(DecisionHit(decision, len(hits) + 1, score, scores))
                continue
            in_force = self._in_force(decision, moment)
            if not in_force:
                if len(closed) < k and decision.valid_from <= (moment or "9999"):
                    closed.append(ClosedHit(decision, scores, _closed_why(decision)))
                continue
            for successor in in_force:
                if successor.id not in seen and len(hits) < k:
                    seen.add(successor.id)
                    # Placed by its predecessor's match; its own scores, if it matched too.
                    own = fused.scores_of(successor.id)
                    hits.append(DecisionHit(successor, len(hits) + 1, score, own, via=decision.id))
        hit_ids = [hit.decision.id for hit in hits]
        pending = self.store.pending_proposals_on(sorted({h.decision.subject for h in hits}), hit_ids)
        self._conflicts = self._conflicts_of(hit_ids, moment)
        self._load(hit_ids)
        return [self._expand(hit, moment, matched_ids, pending) for hit in hits], closed

    def _conflicts_of(self, decision_ids: list[str], moment: str | None) -> dict[str, list[ConflictRow]]:
        """:meth:`Store.conflicts_at`, kept with the decisions (a contested decision has dozens)."""
        cache = self._cache.conflicts
        missing = [i for i in decision_ids if (i, moment) not in cache]
        if missing:
            for decision_id, rows in self.store.conflicts_at(missing, moment).items():
                cache[(decision_id, moment)] = rows
        return {i: cache[(i, moment)] for i in decision_ids}

    def _load(self, chains_of: list[str], records: Sequence[str] = ()) -> dict[str, Decision]:
        """Cache the chains of ``chains_of`` (two queries per decision were most of a recall) and
        return the decisions ``records``, reading every decision not read yet in one go."""
        todo = [i for i in dict.fromkeys(chains_of) if i not in self._chains]
        known = self._cache.chains
        unknown = [i for i in todo if i not in known]
        if unknown:
            known.update(self.store.chains_of(unknown))
        members = {i: known[i] for i in todo}
        wanted = {m for ids in members.values() for m in ids}.union(records)
        # Not ``wanted - self._loaded.keys()``: a set minus a dict view walks every key of the view.
        missing = {i for i in wanted if i not in self._loaded}
        if missing:
            self._loaded.update(self.store.decisions_by_ids(sorted(missing)))
        for decision_id in todo:
            if decision_id in self._chains:
                continue
            chain = {m: self._loaded[m] for m in members[decision_id] if m in self._loaded}
            for member in chain:
                self._chains[member] = chain
        return {i: self._loaded[i] for i in records if i in self._loaded}

    def _chain(self, decision_id: str) -> dict[str, Decision]:
        """Every decision linked to ``decision_id`` by supersession (itself included), cached per recall."""
        if decision_id not in self._chains:
            chain = self.store.decisions_by_ids(self.store.chain_ids(decision_id))
            for member in chain:
                self._chains[member] = chain
        return dict(self._chains[decision_id])

    def _in_force(self, decision: Decision, moment: str | None) -> list[Decision]:
        chain = self._chain(decision.id)
        return sorted((d for d in chain.values() if valid_at(d, moment)), key=lambda d: (d.valid_from, d.id))

    def _expand(
        self, hit: DecisionHit, moment: str | None, matched: set[str], pending: list[Proposal]
    ) -> DecisionHit:
        chain = self._chain(hit.decision.id)
        # Only its own line: what it replaced and what replaced it. A sibling successor (a decision
        # split in two) shares a predecessor with it, and is neither.
        lineage = _lineage(hit.decision.id, chain, "supersedes") | _lineage(
            hit.decision.id, chain, "superseded_by"
        )
        superseded = [
            _chain_item(d, hit.decision, d.id in matched)
            for d in sorted((chain[i] for i in lineage), key=lambda d: (d.valid_from, d.id))
        ]
        return DecisionHit(
            hit.decision,
            hit.rank,
            hit.rrf,
            hit.scores,
            hit.via,
            superseded,
            self.stored_conflicts(hit.decision, moment),
            [
                Related(
                    "pending",
                    p.id,
                    p.subject,
                    p.decision,
                    False,
                    None,
                    None,
                    f"pending proposal by {p.proposer} (since {p.created_at[:10]}) would supersede it",
                    "not ratified: awaiting review",
                )
                for p in pending
                if hit.decision.id in p.supersedes or p.subject == hit.decision.subject
            ],
        )

    def stored_conflicts(self, decision: Decision, moment: str | None) -> list[Related]:
        """The recorded conflicts of ``decision`` with decisions that hold at ``moment``."""
        found = self._conflicts.pop(decision.id, None)
        if found is None:
            found = self.store.conflicts_at([decision.id], moment)[decision.id]
        # conflicts_at keeps only the others that hold at ``moment``, and reads what is shown of them.
        return [
            _conflict_related(other_id, subject, text, valid_from, valid_until, term, clause, other_clause)
            for other_id, term, clause, other_clause, subject, text, valid_from, valid_until in found
        ]

    # -- evidence -------------------------------------------------------------------------

    def evidence(self, query: str, mode: str, k: int, rrf_k: int) -> list[EvidenceHit]:
        """Evidence hits, best first."""
        if self._evidence_answer is not None and self._evidence_answer[0] == (query, mode, k, rrf_k):
            answer = self._evidence_answer[1]
            # Whichever thread is free first answers: the worker if it has started, else this one
            # (taking the task back from the queue), which waits for the vectors only.
            if not answer.cancel():
                return answer.result()
        return self._evidence(self.store, query, mode, k, rrf_k)

    def _evidence(self, store: Store, query: str, mode: str, k: int, rrf_k: int) -> list[EvidenceHit]:
        """:meth:`evidence`, reading through ``store`` (this recall's store or its worker's connection)."""
        fetch = max(OVERFETCH, 5 * k)
        if mode == "hybrid":
            # Normalised scores carry each ranker's confidence; see kernel/recall/fusion.py.
            lists = self.rank(store, query, "evidence", mode, fetch, floors=False)
            timed = fusion.timed_candidates(
                query, lists, lambda ids: {i: e.text for i, e in store.evidence_by_ids(ids).items()}
            )
            fused = fusion.with_neighbours(fusion.combsum(lists, timed), store.evidence_neighbours)[:k]
        else:
            fused = fuse(self.rank(store, query, "evidence", mode, fetch), rrf_k, WEIGHTS)[:k]
        records = store.evidence_by_ids([item for item, _, _ in fused])
        wanted = TextQuery.from_text(query, drop_stopwords=True)
        terms = wanted.terms if wanted else ()
        return [
            EvidenceHit(records[item], rank, score, scores, _snippet(records[item].text, terms))
            for rank, (item, score, scores) in enumerate(
                ((i, s, sc) for i, s, sc in fused if i in records), 1
            )
        ]


class ConflictDetector:
    """Finds current decisions that contradict a decision; run when a decision is ratified."""

    def __init__(self, store: Store, entity_index: EntityIndex) -> None:
        self.store = store
        self.entity_index = entity_index
        self._subjects: dict[str, str] | None = None

    def find(self, decision: Decision) -> list[tuple[Decision, conflicts.Conflict]]:
        """Current decisions on other subjects that take the opposite stance to ``decision``."""
        chain = set(self.store.chain_ids(decision.id))
        text = f"{decision.decision}\n{decision.rationale or ''}"
        # Its own entities, and plain words that other records name as entities ("redis" vs `redis`).
        words = [w for w in fulltext.words(text) if len(w) >= 3 and w not in fulltext.STOPWORDS]
        named = dict.fromkeys([*entities.extract(text), *self.entity_index.known(self.store, words)])
        names = [n for n in named if len(entities.normalise(n)) >= 3][:16]
        # Decisions naming the same entities...
        candidates: dict[str, bool] = {}
        phrases = [entities.normalise(n) for n in names]
        if phrases:
            named_query = TextQuery(tuple(dict.fromkeys(phrases)))
            for other_id, _ in self.store.fts_decision_ids(
                named_query, CONFLICT_CANDIDATES, current_only=True
            ):
                candidates[other_id] = False
        # ...and decisions on fuzzy-similar subjects, compared on their shared content words.
        candidates.update(
            dict.fromkeys(self.store.current_ids(self._similar_subjects(decision.subject)), True)
        )
        for excluded in (decision.id, *chain):
            candidates.pop(excluded, None)
        others = self.store.decisions_by_ids(sorted(candidates))
        out: list[tuple[Decision, conflicts.Conflict]] = []
        mine = conflicts.content_words(text)
        for other_id in sorted(candidates):
            other = others.get(other_id)
            if other is None or other.subject == decision.subject or not other.current:
                continue
            other_text = f"{other.decision}\n{other.rationale or ''}"
            haystack = f" {entities.normalise(other_text)} "
            terms = {n for n, p in zip(names, phrases, strict=True) if f" {p} " in haystack}
            if candidates[other_id]:
                terms |= mine & conflicts.content_words(other_text)
            found = conflicts.find_conflict(text, other_text, terms)
            if found is None:
                continue
            out.append((other, found))
        return out

    def _similar_subjects(self, subject: str) -> list[str]:
        from rapidfuzz import fuzz, process  # noqa: PLC0415

        if self._subjects is None:
            self._subjects = {s: entities.normalise(s) for s in self.store.current_subjects()}
        leaf = subject.rsplit(".", 1)[-1]
        similar = {s for s in self._subjects if s.rsplit(".", 1)[-1] == leaf}
        similar.update(
            s
            for s, _, _ in process.extract(
                entities.normalise(subject),
                self._subjects,
                scorer=fuzz.token_set_ratio,
                score_cutoff=SUBJECT_SIMILARITY,
                limit=20,
            )
        )
        similar.discard(subject)
        return sorted(similar)


def conflict_item(other: Decision, term: str, clause: str, other_clause: str) -> Related:
    """The entry for ``other``, which takes the opposite stance on ``term``."""
    return _conflict_related(
        other.id,
        other.subject,
        other.decision,
        other.valid_from,
        other.valid_until,
        term,
        clause,
        other_clause,
    )


# A pure function of its arguments, whose result is frozen: a warm process builds each entry once
# (a hit of a contested subject carries tens of them, each clipping two clauses).
@functools.lru_cache(maxsize=4096)
def _conflict_related(
    other_id: str,
    subject: str,
    text: str,
    valid_from: str,
    valid_until: str | None,
    term: str,
    clause: str,
    other_clause: str,
) -> Related:
    return Related(
        "conflict", other_id, subject, text, valid_until is None, valid_from, valid_until,
        f"opposite stance on {term!r}: {_clip(clause)!r} here, {_clip(other_clause)!r} in {subject}",
        "conflict: needs a person to reconcile",
    )  # fmt: skip


def _lineage(start: str, chain: dict[str, Decision], direction: str) -> set[str]:
    """Decisions reached from ``start`` by following only ``supersedes`` or only ``superseded_by``."""
    found: set[str] = set()
    todo = [start]
    while todo:
        current = chain.get(todo.pop())
        if current is None:
            continue
        for nxt in getattr(current, direction):
            if nxt not in found and nxt != start and nxt in chain:
                found.add(nxt)
                todo.append(nxt)
    return found


def _chain_item(item: Decision, hit: Decision, matched: bool) -> Related:
    later = item.valid_from > hit.valid_from
    if later:
        why = f"replaced it on {item.valid_from[:10]}, after the moment asked about"
        return Related(
            "later", item.id, item.subject, item.decision, item.valid_until is None,
            item.valid_from, item.valid_until, why, None, matched,
        )  # fmt: skip
    until = item.valid_until[:10] if item.valid_until else "?"
    successors = ", ".join(item.superseded_by) or "a later decision"
    why = f"held {item.valid_from[:10]} to {until}; superseded by {successors}"
    if item.closed_by == "retired":
        why = f"held {item.valid_from[:10]} to {until}; retired: {item.close_reason or ''}".rstrip(": ")
    return Related(
        "superseded", item.id, item.subject, item.decision, False,
        item.valid_from, item.valid_until, why, SUPERSEDED_WARNING, matched,
    )  # fmt: skip


def _closed_why(decision: Decision) -> str:
    until = decision.valid_until[:10] if decision.valid_until else "?"
    if decision.closed_by == "retired":
        return f"retired on {until} ({decision.close_reason or 'no reason given'}): do not apply"
    return f"closed on {until} with no successor in force: do not apply"


def _clip(value: str, limit: int = 80) -> str:
    return clip(value, limit)


def _snippet(text: str, terms: Sequence[str]) -> str:
    """The window of ``text`` around the query's words, else its start."""
    return snippets.snippet(text, terms) or _clip(text, 240)
