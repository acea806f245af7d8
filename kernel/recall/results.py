"""What a recall answers: decision hits with what contradicts them, closed decisions, evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ctx_kernel.kernel.recall.expansion import SUPERSEDED_WARNING
from ctx_kernel.kernel.records import Decision, Evidence
from ctx_kernel.kernel.reports import (
    DecisionSource,
    EvidenceSource,
    RankerScore,
    Related,
    Scores,
    VectorStatus,
)


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
    # The line saying it may be stale (``ctx stale``), when it may.
    stale: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (an item of ``decisions`` in ``schemas/recall.schema.json``)."""
        d = self.decision
        stale = {} if self.stale is None else {"stale": self.stale}
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
            **stale,
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
