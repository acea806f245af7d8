"""Pydantic models of every machine-readable input and output; ``schemas/`` is generated from them.

Run ``python -m kernel.contracts`` to rewrite ``schemas/`` after changing a model; a test
fails while the files are stale. Hosts build their JSON from the records' ``to_dict`` and
tests validate it against these schemas; only ``ctx propose --json`` imports this module,
to validate its input.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter

from kernel import text

Id = Annotated[str, StringConstraints(pattern=r"^(ev|pr|dc)_[0-9A-HJKMNP-TV-Z]{26}$")]
EvidenceId = Annotated[str, StringConstraints(pattern=r"^ev_[0-9A-HJKMNP-TV-Z]{26}$")]
DecisionId = Annotated[str, StringConstraints(pattern=r"^dc_[0-9A-HJKMNP-TV-Z]{26}$")]
ProposalId = Annotated[str, StringConstraints(pattern=r"^pr_[0-9A-HJKMNP-TV-Z]{26}$")]
Timestamp = Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProposeInput(_Strict):
    """A proposal as an agent sends it (``ctx propose --json -``, MCP ``propose_decision``)."""

    subject: Annotated[str, StringConstraints(min_length=1, max_length=text.MAX_SUBJECT_CHARS)]
    decision: Annotated[str, StringConstraints(min_length=1, max_length=text.MAX_DECISION_CHARS)]
    rationale: Annotated[str, StringConstraints(max_length=text.MAX_RATIONALE_CHARS)] | None = None
    evidence: list[EvidenceId] = Field(default_factory=list, max_length=100)
    supersedes: list[DecisionId] = Field(default_factory=list, max_length=100)
    proposer: Annotated[str, StringConstraints(min_length=1, max_length=text.MAX_NAME_CHARS)] | None = None
    session: Annotated[str, StringConstraints(max_length=text.MAX_NAME_CHARS)] | None = None


class EvidenceOut(_Strict):
    """An evidence text: raw, unratified."""

    id: EvidenceId
    text: str
    kind: str
    agent: str | None
    session: str | None
    tags: list[str]
    content_hash: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    created_at: Timestamp


class DecisionOut(_Strict):
    """A ratified decision with its validity window and supersession links."""

    id: DecisionId
    subject: str
    decision: str
    rationale: str | None
    valid_from: Timestamp
    valid_until: Timestamp | None
    current: bool
    ratified_by: str
    ratified_at: Timestamp
    proposal_id: ProposalId | None
    amended: bool
    closed_by: Literal["superseded", "retired"] | None
    close_reason: str | None
    evidence: list[EvidenceId]
    supersedes: list[DecisionId]
    superseded_by: list[DecisionId]
    source: str | None
    adr_number: int | None


class ProposalOut(_Strict):
    """A proposal and its review state."""

    id: ProposalId
    subject: str
    decision: str
    rationale: str | None
    proposer: str
    session: str | None
    created_at: Timestamp
    status: Literal["pending", "ratified", "rejected", "withdrawn"]
    supersedes: list[DecisionId]
    explicit_supersedes: list[DecisionId]
    near_duplicate_of: ProposalId | None
    near_duplicate_score: float | None
    resolved_at: Timestamp | None
    resolved_by: str | None
    resolution_note: str | None
    decision_id: DecisionId | None
    evidence: list[EvidenceId]
    source: str | None
    adr_number: int | None


class LogOut(_Strict):
    """The result of ``ctx log``."""

    id: EvidenceId
    duplicate: bool


class RatificationOut(_Strict):
    """The result of ``ctx ratify``."""

    proposal_id: ProposalId
    decision: DecisionOut
    superseded: list[DecisionId]


class DecisionsOut(_Strict):
    """``ctx decisions``: current decisions, or those valid at ``as_of``, or all."""

    as_of: Timestamp | None
    decisions: list[DecisionOut]


class QueueOut(_Strict):
    """``ctx queue``: pending proposals, oldest first."""

    proposals: list[ProposalOut]


class HistoryOut(_Strict):
    """``ctx history``: a subject's supersede chain, oldest first."""

    subject: str
    decisions: list[DecisionOut]


class ShowOut(_Strict):
    """``ctx show``: one record of any kind."""

    kind: Literal["evidence", "proposal", "decision"]
    record: EvidenceOut | ProposalOut | DecisionOut


class DecisionHit(DecisionOut):
    """A decision found by keyword search with its BM25 score (lower is better)."""

    score: float


class EvidenceHit(EvidenceOut):
    """Evidence found by keyword search: always unratified."""

    score: float
    snippet: str
    ratified: Literal[False]


class SearchOut(_Strict):
    """``ctx search``: ratified decisions and unratified evidence in separate sections."""

    query: str
    decisions: list[DecisionHit]
    evidence: list[EvidenceHit]


class AuditVerifyOut(_Strict):
    """``ctx audit verify``: the recomputed chain."""

    ok: bool
    rows: int
    last_hash: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    first_bad_seq: int | None
    problem: str | None


SCHEMAS: dict[str, type[BaseModel]] = {
    "propose-input": ProposeInput,
    "log": LogOut,
    "ratification": RatificationOut,
    "proposal": ProposalOut,
    "decision": DecisionOut,
    "evidence": EvidenceOut,
    "decisions": DecisionsOut,
    "queue": QueueOut,
    "history": HistoryOut,
    "show": ShowOut,
    "search": SearchOut,
    "audit-verify": AuditVerifyOut,
}

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"


def schema_documents() -> dict[str, dict[str, Any]]:
    """Every schema file's name and JSON document."""
    documents = {}
    for name, model in SCHEMAS.items():
        document = TypeAdapter(model).json_schema()
        document = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://ctx.invalid/schemas/{name}.schema.json",
            **document,
        }
        documents[f"{name}.schema.json"] = document
    return documents


def render(document: dict[str, Any]) -> str:
    """The exact text written to a schema file."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def write_schemas(folder: Path = SCHEMA_DIR) -> list[Path]:
    """Rewrite every schema file under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, document in schema_documents().items():
        path = folder / filename
        path.write_text(render(document), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_schemas(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_DIR):
        print(written_path)
