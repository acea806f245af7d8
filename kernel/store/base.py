"""The interface the kernel facade needs from a storage backend.

SQLite is the embedded default; a shared server backend (PostgreSQL with pgvector)
implements the same protocol without touching the kernel's logic.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from ctx_kernel.kernel.records import AuditEvent, Decision, Evidence, Proposal

if TYPE_CHECKING:
    from ctx_kernel.kernel.store.sqlite_index import ConflictRow
    from ctx_kernel.kernel.vault.sealing import Vault


class Store(Protocol):
    """What the facade calls; every method's SQL stays inside the backend."""

    location: str

    def close(self) -> None:
        """Release the connection."""

    def reader(self) -> Store:
        """A second connection for reads that run in parallel with this one's (another thread)."""

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction that holds the store's write lock until it commits or rolls back."""

    def savepoint(self) -> AbstractContextManager[None]:
        """A nested step inside a transaction that can fail alone."""

    def snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: every read inside it sees the same committed state, and no writer waits."""

    def schema_version(self) -> int:
        """The number of the last migration applied."""

    def get_meta(self, key: str) -> str | None:
        """A metadata value, or None."""

    def delete_meta(self, key: str) -> None: ...

    def vault(self) -> Vault | None: ...

    def is_sealed(self) -> bool: ...

    def offer_key(self, where: str, key: bytes) -> None: ...

    def forget_vault(self) -> None: ...

    def plain_evidence(self, limit: int) -> list[tuple[int, str, str]]: ...

    def sealed_evidence_not_under(self, key_id: str, limit: int) -> list[tuple[int, str, bytes]]: ...

    def count_evidence_to_seal(self, key_id: str | None) -> int: ...

    def seal_evidence(self, rowid: int, blob: bytes, plain: str | None, index_text: str | None) -> None: ...

    def forget_evidence_derivatives(self) -> None: ...

    def secure_delete(self) -> None: ...

    def scrub(self) -> None: ...

    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value."""

    def evidence_id_for_hash(self, content_hash: str) -> str | None:
        """The id of the evidence with this content hash, if any."""

    def insert_evidence(self, evidence: Evidence) -> None:
        """Append evidence to the vault."""

    def ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids starting with ``prefix`` (whose ``ev_``/``pr_``/``dc_`` names the kind)."""

    def get_evidence(self, evidence_id: str) -> Evidence | None:
        """One evidence row."""

    def missing_evidence(self, ids: list[str]) -> list[str]:
        """Those of ``ids`` that name no evidence."""

    def insert_proposal(self, proposal: Proposal) -> None:
        """Queue a proposal with its cited evidence."""

    def get_proposal(self, proposal_id: str) -> Proposal | None:
        """One proposal."""

    def list_proposals(
        self, status: str | None = "pending", subject: str | None = None, limit: int | None = None
    ) -> list[Proposal]:
        """Proposals, oldest first."""

    def pending_near_duplicates(self, ids: list[str]) -> list[Proposal]:
        """Pending proposals flagged as near-duplicates of any of ``ids``."""

    def pending_proposals_on(self, subjects: Sequence[str], decision_ids: Sequence[str]) -> list[Proposal]:
        """Pending proposals, oldest first, on any of ``subjects`` or superseding any of ``decision_ids``."""

    def pending_texts(self) -> list[tuple[str, str, str]]:
        """``(id, subject, decision)`` of every pending proposal, for near-duplicate checks."""

    def resolve_proposal(
        self,
        proposal_id: str,
        status: str,
        at: str,
        by: str,
        note: str | None,
        decision_id: str | None,
    ) -> None:
        """Move a pending proposal to ratified, rejected or withdrawn."""

    def find_source(self, source: str) -> str | None:
        """The id of the decision or proposal imported from ``source``, if any."""

    def get_decision(self, decision_id: str) -> Decision | None:
        """One decision with its evidence and links."""

    def current_decision(self, subject: str) -> Decision | None:
        """The decision on ``subject`` whose window is open."""

    def decisions(
        self, subject: str | None = None, as_of: str | None = None, include_closed: bool = False
    ) -> list[Decision]:
        """Decisions (current, valid at ``as_of``, or all), with ``subject`` matching a whole subtree."""

    def connected_decisions(self, subject: str) -> list[Decision]:
        """The subject's decisions and every decision linked to them by supersession, oldest first."""

    def insert_decision(self, decision: Decision) -> None:
        """Add a decision with its cited evidence."""

    def close_decision(self, decision_id: str, until: str, closed_by: str, reason: str | None) -> None:
        """Close an open window, once."""

    def link(self, old_id: str, new_id: str, at: str) -> None:
        """Record that ``new_id`` supersedes ``old_id``."""

    def is_ancestor(self, candidate: str, decision_id: str) -> bool:
        """True when ``candidate`` is ``decision_id`` or one of its successors (a link would cycle)."""

    def append_audit(
        self, at: str, actor: str, action: str, target: str, before: Any, after: Any
    ) -> AuditEvent:
        """Append a hash-chained audit row inside the current transaction."""

    def audit_rows(self) -> Iterator[dict[str, Any]]:
        """Every audit row, in order."""

    def link_rows(self, table: str) -> list[tuple[Any, ...]]:
        """Every row of a link table the audit replay checks (supersession, citations, conflicts)."""

    def rebuild_text_index(self, *, evidence: bool) -> None:
        """Rebuild the keyword index of decisions (and of evidence) from the rows, and forget mentions."""

    def evidence_ids(self) -> list[str]:
        """The id of every evidence row, oldest first."""

    def schema_objects(self) -> list[tuple[str, str, str, str | None]]:
        """``(type, name, table, sql)`` of every table, index and trigger in the database."""

    def search_decisions(
        self, match: str, limit: int, as_of: str | None = None
    ) -> list[tuple[Decision, float]]:
        """Decisions matching an FTS5 query, best BM25 first."""

    def search_evidence(self, match: str, limit: int) -> list[tuple[Evidence, float, str]]:
        """Evidence matching an FTS5 query with a snippet, best BM25 first."""

    def data_version(self) -> int:
        """A counter that changes when another connection commits."""

    def change_count(self) -> int:
        """Rows this connection has inserted, updated or deleted since it opened."""

    def integrity_check(self) -> str:
        """The database's own consistency check ('ok' when sound)."""

    # -- recall index (derived data: entities and vectors) -------------------------------

    def add_mentions(self, item: str, names: Iterable[str]) -> None:
        """Record that record ``item`` mentions each entity in ``names``."""

    def entity_version(self) -> int:
        """Grows whenever an entity is added."""

    def entity_names(self, after: int = 0) -> list[tuple[int, str]]:
        """``(id, name)`` of the entities whose id is above ``after``."""

    def entity_items(self, entity_ids: Sequence[int], prefix: str, limit: int) -> dict[int, list[str]]:
        """Newest items with id prefix ``prefix`` mentioning each entity."""

    def entity_counts(self, entity_ids: Sequence[int], prefix: str) -> dict[int, int]:
        """How many items with id prefix ``prefix`` mention each entity."""

    def item_count(self, kind: str) -> int:
        """How many decisions or evidence texts the store holds."""

    def fts_decision_ids(self, match: str, limit: int, current_only: bool = False) -> list[tuple[str, float]]:
        """Decision ids (any window, or current only) matching an FTS5 query, with BM25."""

    def add_conflict(
        self, decision_id: str, other_id: str, term: str, clause: str, other_clause: str
    ) -> None:
        """Record that two decisions take opposite stances on ``term``."""

    def conflicts_for(self, decision_id: str) -> list[tuple[str, str, str, str]]:
        """``(other id, term, clause, other clause)`` of a decision's recorded conflicts."""

    def conflicts_at(self, decision_ids: Sequence[str], moment: str | None) -> dict[str, list[ConflictRow]]:
        """The recorded conflicts of each decision with others that hold at ``moment`` (None: now)."""

    def current_conflict_pairs(self) -> list[tuple[str, str, str, str, str]]:
        """Each conflict between two current decisions, once."""

    def clear_conflicts(self) -> None:
        """Forget every recorded conflict."""

    def current_ids(self, subjects: Sequence[str]) -> list[str]:
        """Ids of the current decisions on ``subjects``."""

    def fts_evidence_ids(self, match: str, limit: int) -> list[tuple[str, float]]:
        """Evidence ids matching an FTS5 query, with BM25."""

    def evidence_common_terms(self, terms: Sequence[str], threshold: int) -> set[str]:
        """Those of ``terms`` that at least ``threshold`` evidence texts contain."""

    def evidence_snippets(self, match: str, ids: Sequence[str]) -> dict[str, str]:
        """FTS5 snippets of the evidence ``ids`` that match ``match``."""

    def evidence_by_ids(self, ids: Sequence[str]) -> dict[str, Evidence]:
        """Evidence rows by id."""

    def decisions_by_ids(self, ids: Sequence[str]) -> dict[str, Decision]:
        """Decisions by id."""

    def evidence_neighbours(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """The evidence logged just before and after each of ``ids`` in the same session or source."""

    def recent_evidence_ids(self, limit: int) -> list[str]:
        """Ids of the newest evidence texts, newest first."""

    def ids_for_rowids(self, kind: str, rowids: Sequence[int]) -> dict[int, str]:
        """Record ids of decision or evidence rowids."""

    def chain_ids(self, decision_id: str) -> list[str]:
        """Every decision linked to ``decision_id`` through supersession."""

    def chains_of(self, decision_ids: Sequence[str]) -> dict[str, list[str]]:
        """:meth:`chain_ids` of several decisions at once."""

    def current_subjects(self) -> list[str]:
        """Subjects that have a current decision."""

    def known_subjects(self) -> list[str]:
        """Every subject a decision (current or not) or a pending proposal is on."""

    def vector_tables_exist(self) -> bool:
        """True when the KNN tables exist."""

    def create_vector_tables(self, dim: int) -> None:
        """Create the KNN tables for ``dim``-dimensional vectors."""

    def drop_vectors(self) -> None:
        """Forget every vector."""

    def pending_vectors(self, kind: str, limit: int) -> list[tuple[int, str]]:
        """``(rowid, text)`` of the oldest rows without a vector."""

    def pending_vector_count(self, kind: str) -> int:
        """How many rows wait for a vector."""

    def insert_vectors(self, kind: str, rows: Sequence[tuple[int, int, bytes]]) -> int:
        """Store ``(chunk_id, owner_rowid, float32 bytes)`` rows."""

    def nearest(self, kind: str, query: bytes, candidates: int, limit: int) -> list[tuple[int, float]]:
        """``(owner rowid, cosine similarity)`` of the nearest rows."""
