"""The JSON answers the CLI (``--json``) and the MCP server (``format: "json"``) both give.

One function per answer, so the two hosts cannot drift apart; each answer is valid against the
schema named in its docstring. Answers that are a single record (``ctx propose``, ``ctx log``,
``ctx search``, ...) are that record's ``to_dict``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctx_kernel.kernel import clock, text

if TYPE_CHECKING:
    # Every command made from an operation loads this module, a shell's Tab press included; the
    # records load when there is an answer to write.
    from ctx_kernel.kernel.records import Decision, Evidence, Proposal


def queue(proposals: list[Proposal]) -> dict[str, Any]:
    """Pending proposals, oldest first (``schemas/queue.schema.json``)."""
    return {"proposals": [p.to_dict() for p in proposals]}


def decisions(found: list[Decision], as_of: str | None) -> dict[str, Any]:
    """Decisions current, valid at ``as_of`` (as the caller wrote it), or all
    (``schemas/decisions.schema.json``)."""
    return {
        "as_of": clock.parse_when(as_of) if as_of else None,
        "decisions": [d.to_dict() for d in found],
    }


def evidence_list(found: list[Evidence], since: str | None) -> dict[str, Any]:
    """The newest evidence texts, newest first, logged at or after ``since`` (as the caller wrote it)
    (``schemas/evidence-list.schema.json``)."""
    return {
        "since": clock.parse_when(since, end_of_day=False) if since else None,
        "evidence": [e.to_dict() for e in found],
    }


def show(record: Evidence | Proposal | Decision) -> dict[str, Any]:
    """One record of any kind, named (``schemas/show.schema.json``)."""
    from ctx_kernel.kernel.records import Decision, Evidence, Proposal  # noqa: PLC0415

    kinds: dict[type, str] = {Evidence: "evidence", Proposal: "proposal", Decision: "decision"}
    return {"kind": kinds[type(record)], "record": record.to_dict()}


def subject_decision(subject: str, as_of: str | None, held: Decision | None) -> dict[str, Any]:
    """The decision in force on exactly one subject, or null (``schemas/subject-decision.schema.json``)."""
    return {
        "subject": text.normalise_subject(subject),
        "as_of": clock.parse_when(as_of) if as_of else None,
        "decision": held.to_dict() if held else None,
    }
