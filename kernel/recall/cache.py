"""What earlier recalls of a process read about decisions, kept while it still holds."""

from __future__ import annotations

from ctx_kernel.kernel.recall.fusion import SubjectFamilies
from ctx_kernel.kernel.records import Decision
from ctx_kernel.kernel.store.base import ConflictRow, Store

# Entities whose counts and newest items (up to ENTITY_ITEMS ids) a warm process keeps.
CACHED_POSTINGS = 2_000
# Decision records a warm process keeps between recalls (about 1 KB each).
CACHED_DECISIONS = 50_000
# From this recall over unchanged decisions on, a process holds every decision (see DecisionCache).
PRELOAD_AFTER = 2
# Decisions whose conflicts one statement of the preload reads.
PRELOAD_BATCH = 5_000


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
        self.families: SubjectFamilies | None = None  # the subjects in force, by their words

    def check(self, store: Store) -> None:
        """Forget what the store changed since the last recall (or what grew too large)."""
        decisions = store.decision_version()
        full = len(self.records) > CACHED_DECISIONS or len(self.conflicts) > CACHED_DECISIONS
        if decisions != self._decisions or full:
            self.records, self.chains, self.conflicts, self.complete, self._recalls = {}, {}, {}, False, 0
            self.families = None
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
