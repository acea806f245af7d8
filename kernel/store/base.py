"""The interface the kernel facade needs from a storage backend.

SQLite is the embedded default; a shared server backend (PostgreSQL with pgvector)
implements the same protocol without touching the kernel's logic.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

from kernel.records import AuditEvent, Decision, Evidence, Proposal


class Store(Protocol):
    """What the facade calls; every method's SQL stays inside the backend."""

    location: str

    def close(self) -> None:
        """Release the connection."""

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction that holds the store's write lock until it commits or rolls back."""

    def savepoint(self) -> AbstractContextManager[None]:
        """A nested step inside a transaction that can fail alone."""

    def get_meta(self, key: str) -> str | None:
        """A metadata value, or None."""

    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value."""

    def evidence_id_for_hash(self, content_hash: str) -> str | None:
        """The id of the evidence with this content hash, if any."""

    def insert_evidence(self, evidence: Evidence) -> None:
        """Append evidence to the vault."""

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

    def search_decisions(
        self, match: str, limit: int, as_of: str | None = None
    ) -> list[tuple[Decision, float]]:
        """Decisions matching an FTS5 query, best BM25 first."""

    def search_evidence(self, match: str, limit: int) -> list[tuple[Evidence, float, str]]:
        """Evidence matching an FTS5 query with a snippet, best BM25 first."""

    def integrity_check(self) -> str:
        """The database's own consistency check ('ok' when sound)."""
