"""Recall as a service: keyword search, hybrid recall, the inject block, contradictions between
current decisions, and the embedding model with its vectors. The recall engine, the embedding
code and rapidfuzz are imported inside the methods that need them: `ctx log` and `ctx propose`
are an agent's hot path and need none of them (each costs milliseconds to import).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ctx_kernel.kernel import clock, text
from ctx_kernel.kernel.errors import RefusedError, StoreError, UsageError
from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.limits import (
    AUTO,
    BACKFILL_ON_RECALL,
    DEFAULT_BUDGET,
    DEFAULT_MODE,
    DEFAULT_RRF_K,
    MAX_BUDGET,
    MAX_INJECT_CHARS,
    MAX_QUERY_CHARS,
    MAX_RECALL_K,
    MAX_RRF_K,
    MAX_SEARCH_LIMIT,
    META_REINDEX,
    MIN_BUDGET,
    RECALL_MODES,
    VECTOR_MODES,
)
from ctx_kernel.kernel.records import Decision, DecisionMatch, EvidenceMatch, SearchResults
from ctx_kernel.kernel.store.base import Store
from ctx_kernel.kernel.vault.service import VaultService

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from ctx_kernel.kernel.recall import embeddings as embed
    from ctx_kernel.kernel.recall.cache import DecisionCache
    from ctx_kernel.kernel.recall.embeddings import Embedder
    from ctx_kernel.kernel.recall.entity_index import EntityIndex
    from ctx_kernel.kernel.recall.inject import Injection
    from ctx_kernel.kernel.recall.results import Recall
    from ctx_kernel.kernel.reports import ReindexReport, Related, VectorStatus


class RecallService:
    """Finds decisions and evidence, and keeps what finding them needs: vectors, the entity index,
    the recorded contradictions and a worker thread."""

    def __init__(self, store: Store, vault: VaultService, *, embedder: Embedder | str | None = AUTO) -> None:
        self.store = store
        self.vault = vault
        self._embedder_choice = embedder
        self._resolution: embed.Resolution | None = None
        # warm() may resolve the model on another thread while a recall asks for it.
        self._resolution_lock = threading.Lock()
        self._entity_index_cache: EntityIndex | None = None
        self._decision_cache: DecisionCache | None = None
        self._executor: ThreadPoolExecutor | None = None
        # (embedder, the store's data version) when every row last had a vector: nothing to check
        # again until something is written.
        self._embedded: tuple[Embedder, tuple[int, int]] | None = None

    def close(self) -> None:
        """Stop the worker thread, if one was started."""
        if self._executor is not None:
            self._executor.shutdown()

    @property
    def entity_index(self) -> EntityIndex:
        """The names decisions and evidence mention, built on first use."""
        from ctx_kernel.kernel.recall.entity_index import EntityIndex  # noqa: PLC0415 - lazy, see the module

        if self._entity_index_cache is None:
            self._entity_index_cache = EntityIndex()
        return self._entity_index_cache

    def forget_entities(self) -> None:
        """Drop the entity index: the mentions it was built from changed."""
        self._entity_index_cache = None

    def _pool(self) -> ThreadPoolExecutor:
        from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

        if self._executor is None:
            # One worker embeds the query; one searches the evidence vectors with it on a server's
            # store or a large one, and one answers for a server's evidence (Recaller.start_vectors).
            self._executor = ThreadPoolExecutor(max_workers=3, thread_name_prefix="ctx-recall")
        return self._executor

    def search(self, query: str, *, limit: int = 10, as_of: str | None = None) -> SearchResults:
        """Keyword search, answered as ratified decisions and unratified evidence, never blended."""
        if limit < 1 or limit > MAX_SEARCH_LIMIT:
            raise UsageError(f"limit must be between 1 and {MAX_SEARCH_LIMIT}")
        wanted = TextQuery.from_text(query)
        if wanted is None:
            raise UsageError("the query has no words to search for")
        moment = clock.parse_when(as_of) if as_of is not None else None
        # The store's relevance is higher-is-better; search answers with BM25 (lower is better),
        # as schemas/search.schema.json documents.
        return SearchResults(
            query=query,
            decisions=[DecisionMatch(d, -s) for d, s in self.store.search_decisions(wanted, limit, moment)],
            evidence=[EvidenceMatch(e, -s, snip) for e, s, snip in self.store.search_evidence(wanted, limit)],
        )

    def recall(
        self,
        query: str,
        *,
        k: int = 10,
        as_of: str | None = None,
        mode: str = DEFAULT_MODE,
        rrf_k: int = DEFAULT_RRF_K,
        min_scores: dict[str, float] | None = None,
    ) -> Recall:
        """Decisions that hold (with what contradicts them) and unratified evidence matching ``query``.

        ``min_scores`` drops a ranker's hits whose raw score is below the given value
        (``{"vector": 0.4}``: cosine similarity; keyword: negated BM25; entity: idf-weighted match).
        """
        from ctx_kernel.kernel.recall import engine as recall  # noqa: PLC0415 - lazy, see the module
        from ctx_kernel.kernel.recall import fusion  # noqa: PLC0415
        from ctx_kernel.kernel.reports import VectorStatus  # noqa: PLC0415 - not on the hot paths

        query = text.require_text(query, "query", MAX_QUERY_CHARS)
        if TextQuery.from_text(query) is None:
            raise UsageError("the query has no words to search for")
        if mode not in RECALL_MODES:
            raise UsageError(f"unknown mode {mode!r}: use one of {', '.join(RECALL_MODES)}")
        if not 1 <= k <= MAX_RECALL_K:
            raise UsageError(f"k must be between 1 and {MAX_RECALL_K}")
        if not 1 <= rrf_k <= MAX_RRF_K:
            raise UsageError(f"rrf-k must be between 1 and {MAX_RRF_K}")
        moment = clock.parse_when(as_of) if as_of is not None else None
        if mode == "hybrid" and self._resolution is None:
            # A first recall (a one-shot `ctx inject --query`): the model loads (about a second:
            # importing fastembed, opening the ONNX session) on the worker while this thread reads
            # the entity names the entity ranker matches against.
            loading = self._pool().submit(self.embedding)
            self.entity_index.refresh(self.store)
            loading.result()
        early: Future[bytes] | None = None
        if mode in VECTOR_MODES and self._resolution is not None and self._resolution.embedder is not None:
            # Embedding the query is a recall's longest step: it starts first, and is used below
            # if the store is searchable with this model.
            early = self._pool().submit(self._resolution.embedder.embed_query, query)
        if mode in VECTOR_MODES:
            embedder, status = self.prepare_vectors(BACKFILL_ON_RECALL)
            if embedder is None and mode == "vector":
                raise RefusedError(f"vector mode needs vectors, and they are off: {status.note}")
        else:
            embedder, status = None, VectorStatus("unused", None, 0, f"not used in {mode} mode")
        unknown = sorted(set(min_scores or {}) - set(fusion.RANKERS))
        if unknown:
            raise UsageError(f"unknown ranker {unknown[0]!r}: use one of {', '.join(fusion.RANKERS)}")
        if self._decision_cache is None:
            from ctx_kernel.kernel.recall.cache import DecisionCache  # noqa: PLC0415

            self._decision_cache = DecisionCache()
        recaller = recall.Recaller(self.store, self.entity_index, embedder, min_scores, self._decision_cache)
        if embedder is not None:
            recaller.start_vectors(query, max(recall.OVERFETCH, 5 * k), self._pool(), early)
        elif early is not None:
            early.cancel()
        decisions, closed = recaller.decisions(query, mode, k, rrf_k, moment)
        from ctx_kernel.kernel.recall.results import Recall  # noqa: PLC0415

        return Recall(
            query=query,
            mode=mode,
            as_of=moment,
            k=k,
            rrf_k=rrf_k,
            vectors=status,
            decisions=decisions,
            closed=closed,
            evidence=recaller.evidence(query, mode, k, rrf_k),
        )

    def inject(
        self,
        query: str | None = None,
        *,
        budget: int = DEFAULT_BUDGET,
        max_chars: int | None = MAX_INJECT_CHARS,
        via: str = "shell",
        markers: Mapping[str, str] | None = None,
    ) -> Injection:
        """The session-start block: current decisions, superseded ones, conflicts, proposals, evidence,
        and an index of the current decisions left out; at most ``max_chars`` characters (None: no
        cap); ``via`` is where the agent reads it ("shell", "mcp"), which says how to ask for more;
        ``markers`` hold the line shown under each decision that may be stale."""
        from ctx_kernel.kernel.recall import inject  # noqa: PLC0415

        if via not in inject.ASK:
            raise UsageError(f"unknown reader {via!r}: one of {', '.join(inject.ASK)}")
        if not MIN_BUDGET <= budget <= MAX_BUDGET:
            raise UsageError(f"budget must be between {MIN_BUDGET} and {MAX_BUDGET} tokens")
        if query is not None:
            query = text.require_text(query, "query", MAX_QUERY_CHARS)
            if TextQuery.from_text(query) is None:
                raise UsageError("the query has no words to search for")
        return inject.build(self, query, budget, max_chars=max_chars, via=via, markers=markers)

    def recorded_conflicts(self) -> list[tuple[Decision, Related]]:
        """The recorded pairs of current decisions that take opposite stances, newest first."""
        from ctx_kernel.kernel.recall.expansion import conflict_item  # noqa: PLC0415

        pairs = self.store.current_conflict_pairs()
        found = self.store.decisions_by_ids(sorted({i for p in pairs for i in p[:2]}))
        return [
            (found[decision_id], conflict_item(found[other_id], term, clause, other_clause))
            for decision_id, other_id, term, clause, other_clause in pairs
        ]

    def rebuild_index(self) -> None:
        """Derive the keyword index and entity mentions from the rows again (a copied store)."""
        from ctx_kernel.kernel.recall.derived import rebuild_index  # noqa: PLC0415

        rebuild_index(self.store)
        self.forget_entities()

    def forget_decisions(self) -> None:
        """Drop the decisions read for recall (their recorded conflicts changed)."""
        self._decision_cache = None

    def embedding(self) -> embed.Resolution:
        """The embedding model this store uses (resolved once), or why vectors are off."""
        from ctx_kernel.kernel.recall import embeddings as embed  # noqa: PLC0415

        with self._resolution_lock:
            if self._resolution is None:
                if self._embedder_choice == AUTO:
                    self._resolution = embed.resolve()
                elif self._embedder_choice is None:
                    self._resolution = embed.Resolution(None, "disabled", "vectors are disabled")
                else:
                    assert not isinstance(self._embedder_choice, str)
                    self._resolution = embed.Resolution(self._embedder_choice, "given")
            return self._resolution

    def warm(self) -> None:
        """Load the embedding model, the recall code and the entity names before the first recall
        needs them.

        The names are read through a connection of its own, so a long-running host (``ctx mcp``)
        can call it on a background thread at startup while other calls use the store.
        """
        import rapidfuzz.fuzz  # noqa: PLC0415 - imported for the cost: recall's first use
        import rapidfuzz.process  # noqa: F401, PLC0415

        from ctx_kernel.kernel.recall import engine as recall  # noqa: F401, PLC0415

        embedder = self.embedding().embedder
        if embedder is not None:
            # The first inference allocates onnxruntime's buffers. Queries may have a model of
            # their own (an int8 copy); documents logged later are embedded by the model itself.
            embedder.embed_query("warm up")
            embedder.embed_documents(["warm up"])
        # A first recall would read every name (about 0.2 s per 40,000; a second at a million
        # texts); one that cannot be read now is read by that recall.
        with contextlib.suppress(StoreError):
            own = self.store.detached()
            try:
                self.entity_index.refresh(own)
            finally:
                own.close()

    def prepare_vectors(self, backfill: int = 0) -> tuple[Embedder | None, VectorStatus]:
        """The embedder to query with (None when vectors are off), after embedding up to ``backfill`` rows."""
        from ctx_kernel.kernel.recall import backfill as vectorfill  # noqa: PLC0415
        from ctx_kernel.kernel.reports import VectorStatus  # noqa: PLC0415 - not on the hot paths

        resolution = self.embedding()
        embedder = resolution.embedder
        if embedder is None:
            pending = vectorfill.pending_total(self.store)
            return None, VectorStatus("off", None, pending, f"vectors are off: {resolution.reason}")
        # Seven statements otherwise (the model, the tables, the rows still to embed): a warm
        # process skips them while no commit, here or elsewhere, has changed the store.
        version = (self.store.data_version(), self.store.change_count())
        if self._embedded == (embedder, version):
            return embedder, VectorStatus("on", embedder.model_id, 0, None)
        stored = self.store.get_meta("vector_model")
        if stored is None or not self.store.vector_tables_exist():
            try:
                with self.store.transaction():
                    stored = self.store.get_meta("vector_model")
                    if stored is None:
                        self._adopt_model(embedder)
                        stored = embedder.model_id
                    elif stored == embedder.model_id:
                        self.store.create_vector_tables(embedder.dim)
            except StoreError as exc:
                # A login that may not choose the model (a team store's agent: only its owner sets
                # the vector dimension) or a read-only store still answers, without vectors.
                pending = vectorfill.pending_total(self.store)
                return None, VectorStatus("off", stored, pending, f"vectors are off: {exc}")
        if stored != embedder.model_id or self.store.get_meta("vector_dim") != str(embedder.dim):
            pending = vectorfill.pending_total(self.store)
            note = (
                f"vectors are off: this store was embedded with {stored}, and the configured model is "
                f"{embedder.model_id}; run `ctx reindex` to re-embed"
            )
            return None, VectorStatus("off", stored, pending, note)
        if backfill:
            # A read-only or busy store still answers; its rows wait for `ctx reindex`.
            with contextlib.suppress(StoreError):
                vectorfill.backfill(self.store, embedder, backfill)
        pending = vectorfill.pending_total(self.store)
        if pending:
            note = (
                f"{text.plural(pending, 'record')} {'has' if pending == 1 else 'have'} no vector yet "
                "(found by keyword and entity only): run `ctx reindex`"
            )
            return embedder, VectorStatus("partial", embedder.model_id, pending, note)
        if (self.store.data_version(), self.store.change_count()) == version:
            self._embedded = (embedder, version)
        return embedder, VectorStatus("on", embedder.model_id, 0, None)

    def _adopt_model(self, embedder: Embedder) -> None:
        """Record the store's embedding model and create its KNN tables (inside a transaction)."""
        self.store.set_meta("vector_model", embedder.model_id)
        self.store.set_meta("vector_dim", str(embedder.dim))
        self.store.create_vector_tables(embedder.dim)

    def reindex(
        self,
        *,
        download: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ReindexReport:
        """Embed every decision and evidence text again with the configured model, carrying on
        after the texts an interrupted reindex with the same model embedded."""
        from ctx_kernel.kernel.recall import backfill as vectorfill  # noqa: PLC0415
        from ctx_kernel.kernel.recall import embeddings as embed  # noqa: PLC0415
        from ctx_kernel.kernel.reports import ReindexReport  # noqa: PLC0415 - not on the hot paths

        # Before the model loads: a login that may not alter the tables is told who may, at once.
        refusal = self.store.owner_refusal("`ctx reindex`")
        if refusal is not None:
            raise RefusedError(refusal)
        resolution = embed.resolve(download=download) if self._embedder_choice == AUTO else self.embedding()
        embedder = resolution.embedder
        if embedder is None:
            raise RefusedError(f"cannot embed: {resolution.reason}")
        self._resolution = resolution
        started = time.perf_counter()
        with self.store.transaction():
            previous = self.store.get_meta("vector_model")
            # A reindex with this model that was interrupted (Ctrl-C, a kill) left the rows it
            # embedded, oldest first, and its mark: carry on after them instead of starting over.
            resumed = (
                self.store.get_meta(META_REINDEX) == embedder.model_id
                and previous == embedder.model_id
                and self.store.get_meta("vector_dim") == str(embedder.dim)
                and self.store.vector_tables_exist()
            )
            if not resumed:
                self.store.drop_vectors()
                self._adopt_model(embedder)
                self.store.set_meta(META_REINDEX, embedder.model_id)
        total = vectorfill.pending_total(self.store)
        done = 0

        def step(count: int) -> None:
            nonlocal done
            done += count
            if progress is not None:
                progress(done, total)

        if progress is not None:
            progress(0, total)
        vectorfill.backfill(self.store, embedder, total, step)
        from ctx_kernel.kernel.recall.derived import rebuild_index  # noqa: PLC0415

        rebuild_index(self.store)
        self._entity_index_cache = None
        with self.store.transaction():
            self.store.delete_meta(META_REINDEX)
        return ReindexReport(
            model=embedder.model_id,
            dim=embedder.dim,
            previous_model=previous,
            resumed=resumed,
            decisions=self.store.item_count("decision"),
            evidence=self.store.item_count("evidence"),
            seconds=round(time.perf_counter() - started, 2),
        )
