"""Recall: keyword, entity and vector rankers, run and fused (see kernel/recall/fusion.py).

What a recall answers is in results.py, how a hit is expanded in expansion.py, the entity names a
process keeps in entity_index.py and what earlier recalls read in cache.py.

Each store (kernel decisions, vault evidence) is ranked on its own; the two answers are
never blended. Decision hits are then expanded with what contradicts them: their
supersede chain, conflicting decisions on related subjects, and pending proposals that
would replace them. A decision is presented as holding only when its validity window
contains the moment asked about.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from typing import Literal

from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.language import entities
from ctx_kernel.kernel.language import query as fulltext
from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.limits import RECALL_MODES
from ctx_kernel.kernel.recall import fusion, snippets, vocabulary
from ctx_kernel.kernel.recall.cache import DecisionCache
from ctx_kernel.kernel.recall.embeddings import Embedder
from ctx_kernel.kernel.recall.entity_index import EntityIndex
from ctx_kernel.kernel.recall.expansion import chain_item, clip_text, closed_why, conflict_related, lineage_of
from ctx_kernel.kernel.recall.fusion import Ranked
from ctx_kernel.kernel.recall.results import ClosedHit, DecisionHit, EvidenceHit
from ctx_kernel.kernel.records import Decision, Evidence, Proposal
from ctx_kernel.kernel.reports import (
    Related,
)
from ctx_kernel.kernel.store.base import ConflictRow, Store

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
ENTITY_ITEMS = 200
# Evidence postings one keyword search may rank (see Recaller._keyword): FTS5 ranks about one
# per microsecond, so this bounds the search to about 20 ms whatever the store's size.
KEYWORD_POSTINGS = 20_000
# Hybrid fusion settings, chosen on the labelled set in tests/data/recall (`just quality`):
# results were flat for vector weights 1.5-2 and a vector floor of 0.7-0.8. Sentence
# similarity is the strongest single signal on paraphrased questions, so it weighs most,
# and each list drops its weak tail before fusion.
WEIGHTS: dict[str, float] = {"keyword": 1.0, "entity": 0.5, "vector": 1.5}
RELATIVE_FLOOR: dict[str, float] = {"keyword": 0.3, "entity": 0.5, "vector": 0.8}


def fuse(lists: dict[str, Ranked], rrf_k: int, weights: dict[str, float] | None = None) -> fusion.Fused:
    """Reciprocal rank fusion (see ``fusion.rrf``)."""
    return fusion.rrf(lists, rrf_k, weights)


def valid_at(decision: Decision, moment: str | None) -> bool:
    """True when ``decision`` holds at ``moment`` (now when None)."""
    if moment is None:
        return decision.valid_until is None
    return decision.valid_from <= moment and (decision.valid_until is None or decision.valid_until > moment)


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
        if mode == "hybrid" and moment is None:  # related by the subjects in force now
            fused = fusion.with_neighbours(fused, self._relatives, from_each=False)
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
                    closed.append(ClosedHit(decision, scores, closed_why(decision)))
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

    def _relatives(self, decision_ids: list[str]) -> dict[str, list[str]]:
        """The decisions in force on subjects one word apart from each decision in force of
        ``decision_ids`` (see ``fusion.SubjectFamilies``)."""
        records = self._load([], decision_ids)
        current = [d for d in records.values() if d.valid_until is None]
        if not current:
            return {}
        if self._cache.families is None:
            self._cache.families = fusion.SubjectFamilies(self.store.current_subjects())
        families = self._cache.families
        subjects = {d.id: families.relatives(d.subject) for d in current}
        wanted = set().union(*subjects.values())
        if not wanted:
            return {}
        on: dict[str, list[str]] = {}
        for relative in self._load([], self.store.current_ids(sorted(wanted))).values():
            on.setdefault(relative.subject, []).append(relative.id)
        return {item: [i for s in sorted(found) for i in on.get(s, ())] for item, found in subjects.items()}

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
        lineage = lineage_of(hit.decision.id, chain, "supersedes") | lineage_of(
            hit.decision.id, chain, "superseded_by"
        )
        superseded = [
            chain_item(d, hit.decision, d.id in matched)
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
            conflict_related(other_id, subject, text, valid_from, valid_until, term, clause, other_clause)
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
            # The texts that the time and question signals read are kept for the hits' records.
            read: dict[str, Evidence] = {}

            def texts(ids: list[str]) -> dict[str, str]:
                missing = [i for i in ids if i not in read]
                if missing:
                    read.update(store.evidence_by_ids(missing))
                return {i: read[i].text for i in ids if i in read}

            def moments(ids: list[str]) -> dict[str, str]:
                texts(ids)
                return {i: read[i].occurred_at or read[i].created_at for i in ids if i in read}

            timed = fusion.timed_candidates(query, lists, texts)
            dated = fusion.dated_candidates(query, lists, moments)
            summed = fusion.with_neighbours(
                fusion.combsum(lists, timed, dated), store.evidence_neighbours, hops=2
            )
            fused = fusion.settle_questions(summed, texts, k)[:k]
            texts([item for item, _, _ in fused])
            records = read
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


def _snippet(text: str, terms: Sequence[str]) -> str:
    """The window of ``text`` around the query's words, else its start."""
    return snippets.snippet(text, terms) or clip_text(text, 240)
