"""A subject's story in time order: what was logged, proposed, ratified, rejected, withdrawn,
superseded and retired, around one record or across the whole subject.

The second of the three steps an agent takes into memory: a compact hit (``recall``, ``search``),
then what came before and after it (this), then the whole record (``show``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctx_kernel.kernel import text
from ctx_kernel.kernel.errors import CtxError, NotFoundError
from ctx_kernel.kernel.records import Decision, Evidence, Proposal, Timeline, TimelineEntry, TimelineEvent

if TYPE_CHECKING:
    from ctx_kernel.kernel.decisions.kernel import DecisionService

# Characters of a record's text an entry carries.
TEXT_CHARS = 200
# At one instant, the order things happen in: a ratification closes the proposal, then the
# decision it replaces, then puts the new one in force.
_ORDER = {
    "logged": 0,
    "proposed": 1,
    "ratified": 2,
    "rejected": 2,
    "withdrawn": 2,
    "superseded": 3,
    "retired": 3,
    "in force": 4,
}
# What closing a proposal or a decision is called on the timeline.
_CLOSED: dict[str, TimelineEvent] = {
    "ratified": "ratified",
    "rejected": "rejected",
    "withdrawn": "withdrawn",
    "superseded": "superseded",
    "retired": "retired",
}


def timeline(service: DecisionService, target: str, around: int) -> Timeline:
    """The timeline of ``target``: a record (id, start of one or handle), whose subject it tells
    with ``around`` entries either side of the record's own, or a subject, told whole (its newest
    ``around`` * 2 + 1 entries)."""
    focus = _record(service, target)
    if focus is None:
        subject = text.normalise_subject(target)
    elif isinstance(focus, Evidence):
        subject = _cited_subject(service, focus.id)
    else:
        subject = focus.subject
    entries = _entries(service, subject, focus)
    if not entries:
        raise NotFoundError(f"nothing on {subject}: no decision, proposal or evidence")
    focus_id = focus.id if focus is not None else None
    marks = [i for i, entry in enumerate(entries) if entry.focus]
    middle = marks[0] if marks else len(entries) - 1 - around
    start = max(0, middle - around)
    end = min(len(entries), max(middle, 0) + around + 1)
    return Timeline(subject, focus_id, entries[start:end], start, len(entries) - end)


def _record(service: DecisionService, target: str) -> Evidence | Proposal | Decision | None:
    """The record ``target`` names, or None when it names none and reads as a subject."""
    try:
        return service.show(target)
    except CtxError:
        if any(c in target for c in "._") or target.islower():
            return None
        raise


def _cited_subject(service: DecisionService, evidence_id: str) -> str:
    """The subject of the first proposal that cites this evidence."""
    subject = service.store.first_citing_subject(evidence_id)
    if subject is None:
        raise NotFoundError(f"no proposal cites {evidence_id}: `ctx show {evidence_id}` shows it alone")
    return subject


def _entries(
    service: DecisionService, subject: str, focus: Evidence | Proposal | Decision | None
) -> list[TimelineEntry]:
    store = service.store
    proposals = [p for p in store.list_proposals(None, subject) if p.subject == subject]
    decisions = [d for d in store.connected_decisions(subject) if d.subject == subject]
    cited = sorted({e for p in proposals for e in p.evidence} | {e for d in decisions for e in d.evidence})
    evidence = store.evidence_by_ids(cited)
    focus_id = focus.id if focus is not None else None
    found: list[TimelineEntry] = []

    def add(at: str | None, event: TimelineEvent, record: Evidence | Proposal | Decision) -> None:
        if at is None:
            return
        focused = record.id == focus_id
        if isinstance(record, Evidence):
            body = text.clip(record.text, TEXT_CHARS)
            entry = TimelineEntry(at, event, "evidence", record.id, None, body, focused)
        elif isinstance(record, Proposal):
            body = text.clip(record.decision, TEXT_CHARS)
            entry = TimelineEntry(at, event, "proposal", record.id, record.subject, body, focused)
        else:
            body = text.clip(record.decision, TEXT_CHARS)
            entry = TimelineEntry(at, event, "decision", record.id, record.subject, body, focused)
        found.append(entry)

    for item in evidence.values():
        add(item.created_at, "logged", item)
    for proposal in proposals:
        add(proposal.created_at, "proposed", proposal)
        if proposal.status != "pending":
            add(proposal.resolved_at, _CLOSED[proposal.status], proposal)
    for decision in decisions:
        add(decision.valid_from, "in force", decision)
        if decision.closed_by is not None:
            add(decision.valid_until, _CLOSED[decision.closed_by], decision)
    found.sort(key=lambda entry: (entry.at, _ORDER[entry.event], entry.id))
    return found
