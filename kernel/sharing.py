"""Architecture Decision Records in and out of the kernel, so decisions can live in git too."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel import adr, clock, entities, text
from kernel.errors import RefusedError, UsageError
from kernel.records import Decision, Proposal

if TYPE_CHECKING:
    from kernel.facade import Ctx

# Front-matter keys ctx writes on export and honours on import, so a round trip keeps exact windows.
KEY_ID, KEY_FROM, KEY_UNTIL, KEY_BY = "ctx-id", "ctx-valid-from", "ctx-valid-until", "ctx-ratified-by"


@dataclass
class ImportReport:
    """What ``ctx import adr`` did."""

    decisions: list[str] = field(default_factory=list)
    proposals: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "decisions": self.decisions,
            "proposals": self.proposals,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "warnings": self.warnings,
        }


def _stamp(record: adr.AdrRecord, key: str) -> str | None:
    value = record.meta.get(key)
    if value:
        return clock.parse_when(value, end_of_day=False)
    if key == KEY_FROM and record.date:
        return f"{record.date}T00:00:00.000000Z"
    return None


def _rationale(record: adr.AdrRecord) -> str | None:
    parts = [p for p in (record.context, record.consequences) if p]
    if not parts:
        return None
    body = record.context or ""
    if record.consequences:
        body = f"{body}\n\nConsequences: {record.consequences}".strip()
    return text.optional_shown(body[: text.MAX_RATIONALE_CHARS], "rationale", text.MAX_RATIONALE_CHARS)


def import_adrs(kernel: Ctx, folder: Path, reviewer: str) -> ImportReport:
    """Import a folder of ADRs: accepted and superseded ones as decisions with rebuilt chains."""
    reviewer = text.require_shown(reviewer, "reviewer", text.MAX_NAME_CHARS)
    records, errors, warnings = adr.read_adr_folder(folder)
    report = ImportReport(warnings=list(warnings))
    report.skipped = [f"{e.path}: {e.reason}" for e in errors]
    by_ref: dict[adr.AdrRef, adr.AdrRecord] = {}
    for record in records:
        by_ref[record.path] = record
        if record.number is not None:
            by_ref.setdefault(record.number, record)
    now = clock.now()

    def successors(record: adr.AdrRecord) -> list[adr.AdrRecord]:
        found = [by_ref[r] for r in record.superseded_by if r in by_ref and by_ref[r] is not record]
        return [s for s in found if s.status not in ("proposed", "rejected")]

    # Windows: from the ADR's date (never before what it supersedes) until its first successor starts.
    start: dict[str, str] = {}
    for record in records:
        start[record.path] = _stamp(record, KEY_FROM) or now
    for _ in range(len(records)):  # relax: successors start no earlier than what they replace
        changed = False
        for record in records:
            for nxt in successors(record):
                if start[nxt.path] < start[record.path]:
                    start[nxt.path], changed = start[record.path], True
        if not changed:
            break

    with kernel.store.transaction():
        ids: dict[str, str] = {}
        pending_links: list[tuple[adr.AdrRecord, adr.AdrRecord]] = []
        ordered = sorted(records, key=lambda r: (start[r.path], r.number or 0, r.path))
        for record in ordered:
            source = record.path
            existing = kernel.store.find_source(source)
            exported_id = record.meta.get(KEY_ID)
            if existing is None and exported_id and clock.ID_RE.match(exported_id):
                # A file ctx exported from this very store: the decision is already here.
                found = kernel.store.get_decision(exported_id)
                existing = found.id if found is not None else None
            if existing is not None:
                ids[record.path] = existing
                report.unchanged.append(source)
                continue
            try:
                subject = text.normalise_subject(record.meta.get("subject") or record.subject)
                body = text.require_shown(record.decision, "decision", text.MAX_DECISION_CHARS)
                _rationale(record)  # refuses hidden characters before anything is written
                if kernel.store.current_decision(subject) is None:
                    kernel.check_new_subject(subject)
            except (UsageError, RefusedError) as exc:
                report.skipped.append(f"{source}: {exc.message}")
                continue
            if record.status in ("proposed", "rejected"):
                proposal = _import_proposal(kernel, record, subject, body, reviewer, now)
                ids[record.path] = proposal.id
                report.proposals.append(proposal.id)
                continue
            decision = _import_decision(kernel, record, subject, body, reviewer, start, now, successors)
            if decision is None:
                report.skipped.append(f"{source}: its window overlaps another decision on {subject}")
                continue
            ids[record.path] = decision.id
            report.decisions.append(decision.id)
            pending_links += [(record, s) for s in successors(record)]
        for old, new in pending_links:
            if old.path in ids and new.path in ids:
                old_id, new_id = ids[old.path], ids[new.path]
                if new_id.startswith("dc_") and not kernel.store.is_ancestor(old_id, new_id):
                    kernel.store.link(old_id, new_id, start[new.path])
                    _audit_link(kernel, old_id, new_id, start[new.path], reviewer, now)
        kernel.record_conflicts(report.decisions)
    return report


def _import_decision(
    kernel: Ctx,
    record: adr.AdrRecord,
    subject: str,
    body: str,
    reviewer: str,
    start: dict[str, str],
    now: str,
    successors: Any,
) -> Decision | None:
    valid_from = start[record.path]
    nexts = successors(record)
    until = _stamp(record, KEY_UNTIL)
    closed_by, reason = None, None
    if nexts:
        until = until or min(start[s.path] for s in nexts)
        closed_by, reason = "superseded", "superseded (imported ADR)"
    elif record.status in ("superseded", "deprecated") or until:
        # Deprecated, or superseded by something not in the folder: closed with no successor.
        until = until or max(now, valid_from)
        closed_by, reason = "retired", f"{record.raw_status or record.status} (imported ADR)"
    for other in kernel.store.decisions(subject, include_closed=True):
        if other.subject != subject:
            continue
        overlaps = (other.valid_until is None or other.valid_until > valid_from) and (
            until is None or until > other.valid_from
        )
        if overlaps:
            subject = f"{subject}-{record.number}" if record.number is not None else f"{subject}-import"
            break
    decision = Decision(
        id=clock.new_id("dc"),
        subject=subject,
        decision=body,
        rationale=_rationale(record),
        valid_from=valid_from,
        valid_until=until,
        ratified_by=record.meta.get(KEY_BY) or reviewer,
        ratified_at=now,
        proposal_id=None,
        amended=False,
        closed_by=closed_by,
        close_reason=reason,
        source=record.path,
        adr_number=record.number,
    )
    try:
        with kernel.store.savepoint():
            kernel.store.insert_decision(decision)
            kernel.store.add_mentions(
                decision.id, entities.for_decision(decision.subject, decision.decision, decision.rationale)
            )
    except RefusedError:  # an overlap the renaming could not avoid: report it, import the rest
        return None
    kernel.store.append_audit(
        now,
        reviewer,
        "decision.imported",
        decision.id,
        None,
        {
            "subject": subject,
            "decision": body,
            "valid_from": valid_from,
            "valid_until": until,
            "source": record.path,
            "adr_number": record.number,
            "status": record.status,
            "rationale": decision.rationale,
            "ratified_by": decision.ratified_by,
            "closed_by": closed_by,
            "close_reason": reason,
        },
    )
    return decision


def _audit_link(kernel: Ctx, old_id: str, new_id: str, linked_at: str, reviewer: str, now: str) -> None:
    """Log an imported supersession link, so that the audit log accounts for every link."""
    old = kernel.store.get_decision(old_id)
    until = old.valid_until if old is not None else None
    kernel.store.append_audit(
        now,
        reviewer,
        "decision.superseded",
        old_id,
        {"valid_until": until},
        {"valid_until": until, "superseded_by": new_id, "linked_at": linked_at},
    )


def _import_proposal(
    kernel: Ctx, record: adr.AdrRecord, subject: str, body: str, reviewer: str, now: str
) -> Proposal:
    rejected = record.status == "rejected"
    proposal = Proposal(
        id=clock.new_id("pr"),
        subject=subject,
        decision=body,
        rationale=_rationale(record),
        proposer=f"adr:{record.path}",
        session=None,
        created_at=_stamp(record, KEY_FROM) or now,
        status="rejected" if rejected else "pending",
        supersedes=[],
        explicit_supersedes=[],
        near_duplicate_of=None,
        near_duplicate_score=None,
        resolved_at=now if rejected else None,
        resolved_by=reviewer if rejected else None,
        resolution_note="rejected in the ADR" if rejected else None,
        decision_id=None,
        source=record.path,
        adr_number=record.number,
    )
    kernel.store.insert_proposal(proposal)
    kernel.store.append_audit(
        now,
        reviewer,
        "proposal.imported",
        proposal.id,
        None,
        {
            "subject": subject,
            "status": proposal.status,
            "source": record.path,
            "adr_number": record.number,
            "decision": body,
            "rationale": proposal.rationale,
            "proposer": proposal.proposer,
            "created_at": proposal.created_at,
            "reason": proposal.resolution_note,
        },
    )
    return proposal


def _title(decision: Decision) -> str:
    first = re.split(r"(?<=[.!?])\s", decision.decision.strip(), maxsplit=1)[0]
    first = " ".join(first.split())
    return first if len(first) <= 90 else first[:87].rstrip() + "..."


def export_adrs(kernel: Ctx, folder: Path) -> list[Path]:
    """Write one MADR-style file per decision, with stable names and supersession links both ways."""
    every = kernel.store.decisions(include_closed=True)
    every.sort(key=lambda d: (d.valid_from, d.id))
    numbers: dict[str, int] = {}
    used = {d.adr_number for d in every if d.adr_number is not None}
    next_number = max(used, default=0) + 1
    for decision in every:
        if decision.adr_number is not None and decision.adr_number not in numbers.values():
            numbers[decision.id] = decision.adr_number
        else:
            while next_number in used:
                next_number += 1
            numbers[decision.id] = next_number
            used.add(next_number)
    names = {d.id: adr.adr_filename(numbers[d.id], _title(d)) for d in every}
    titles = {d.id: _title(d) for d in every}
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for decision in every:
        status = "accepted" if decision.current else decision.closed_by or "accepted"
        status = "deprecated" if status == "retired" else status
        extra = {KEY_ID: decision.id, KEY_FROM: decision.valid_from, KEY_BY: decision.ratified_by}
        if decision.valid_until:
            extra[KEY_UNTIL] = decision.valid_until
        content = adr.render_adr(
            numbers[decision.id],
            titles[decision.id],
            decision.decision,
            status=status,
            date=decision.valid_from[:10],
            context=decision.rationale,
            subject=decision.subject,
            supersedes=[(numbers[o], titles[o]) for o in decision.supersedes if o in numbers],
            superseded_by=[(numbers[n], titles[n]) for n in decision.superseded_by if n in numbers],
            extra=extra,
        )
        path = folder / names[decision.id]
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written
