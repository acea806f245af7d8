"""The records the facade returns: plain frozen dataclasses, cheap to import and to build."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

EVIDENCE_KINDS = ("note", "conversation", "log", "doc", "code", "other")


@dataclass(frozen=True)
class Evidence:
    """A text in the evidence vault: unratified, never changed."""

    id: str
    text: str
    kind: str
    agent: str | None
    session: str | None
    tags: list[str]
    content_hash: str
    created_at: str
    source: str | None = None
    speaker: str | None = None
    occurred_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class Decision:
    """A ratified decision and its validity window."""

    id: str
    subject: str
    decision: str
    rationale: str | None
    valid_from: str
    valid_until: str | None
    ratified_by: str
    ratified_at: str
    proposal_id: str | None
    amended: bool
    closed_by: str | None
    close_reason: str | None
    evidence: list[str] = field(default_factory=list)
    supersedes: list[str] = field(default_factory=list)
    superseded_by: list[str] = field(default_factory=list)
    source: str | None = None
    adr_number: int | None = None
    title: str | None = None  # as the ADR or the proposer titled it
    deciders: list[str] = field(default_factory=list)  # who the record says decided (attribution)

    @property
    def current(self) -> bool:
        """True while the window is open."""
        return self.valid_until is None

    def valid_at(self, moment: str) -> bool:
        """True when ``moment`` falls inside the window ``[valid_from, valid_until)``."""
        return self.valid_from <= moment and (self.valid_until is None or moment < self.valid_until)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``schemas/decision.schema.json``)."""
        data = asdict(self)
        data["current"] = self.current
        return data


@dataclass(frozen=True)
class Proposal:
    """A proposed decision and its review state."""

    id: str
    subject: str
    decision: str
    rationale: str | None
    proposer: str
    session: str | None
    created_at: str
    status: str
    supersedes: list[str]
    explicit_supersedes: list[str]
    near_duplicate_of: str | None
    near_duplicate_score: float | None
    resolved_at: str | None
    resolved_by: str | None
    resolution_note: str | None
    decision_id: str | None
    evidence: list[str] = field(default_factory=list)
    source: str | None = None
    adr_number: int | None = None
    title: str | None = None  # as the ADR or the proposer titled it
    deciders: list[str] = field(default_factory=list)  # who the record says decided (attribution)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``schemas/proposal.schema.json``)."""
        return asdict(self)


@dataclass(frozen=True)
class AuditEvent:
    """One row of the hash-chained audit log."""

    seq: int
    at: str
    actor: str
    action: str
    target: str
    before: str | None
    after: str | None
    prev_hash: str
    hash: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class LogResult:
    """The outcome of logging evidence: its id, and whether the text was already there."""

    id: str
    duplicate: bool
    redacted: int = 0  # secrets replaced by placeholders before the text was stored

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class Ratification:
    """The outcome of ratifying a proposal."""

    proposal_id: str
    decision: Decision
    superseded: list[str]
    # Pending proposals of the same review group closed as settled by this ratification.
    settled: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "proposal_id": self.proposal_id,
            "decision": self.decision.to_dict(),
            "superseded": list(self.superseded),
            "settled": list(self.settled),
        }


@dataclass(frozen=True)
class SearchHit:
    """A keyword hit with its BM25 score (lower is better, as FTS5 reports it)."""

    id: str
    score: float
    snippet: str


@dataclass(frozen=True)
class SearchResults:
    """Keyword search answered in two separate sections: ratified decisions and unratified evidence."""

    query: str
    decisions: list[tuple[Decision, float]]
    evidence: list[tuple[Evidence, float, str]]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``schemas/search.schema.json``)."""
        return {
            "query": self.query,
            "decisions": [{**d.to_dict(), "score": s} for d, s in self.decisions],
            "evidence": [
                {**e.to_dict(), "score": s, "snippet": snip, "ratified": False}
                for e, s, snip in self.evidence
            ],
        }
