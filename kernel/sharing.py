"""Architecture Decision Records in and out of the kernel, so decisions can live in git too."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
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
# Exported files are ordinary readable text files, whatever mkstemp's private default.
EXPORT_MODE = 0o644
# Front-matter claims about who decided, kept on import as attribution (never as the ratifier).
ATTRIBUTION_KEYS = {KEY_BY: "ratified_by", "deciders": "deciders", "decision-makers": "deciders"}


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


def _stamp(record: adr.AdrRecord, key: str, folder: Path, now: str) -> str | None:
    """A time the file states (a ctx key, or for the start its ``date``), checked, or None."""
    value = record.meta.get(key)
    if not value and key == KEY_FROM and record.date:
        key, value = "date", record.date
    if not value:
        return None
    where = folder / record.path
    try:
        stamp = clock.parse_when(value, end_of_day=False)
    except UsageError as exc:
        raise UsageError(f"{where}: {key}: {exc.message}; nothing imported") from None
    if clock.to_datetime(stamp) > clock.to_datetime(now):
        raise RefusedError(f"{where}: {key} {value} is later than now; nothing imported")
    return stamp


def _rationale(context: str | None, consequences: str | None) -> str | None:
    if not (context or consequences):
        return None
    body = context or ""
    if consequences:
        body = f"{body}\n\nConsequences: {consequences}".strip()
    return text.optional_shown(body[: text.MAX_RATIONALE_CHARS], "rationale", text.MAX_RATIONALE_CHARS)


@dataclass
class _Cleaned:
    """An ADR's texts as ctx stores them: secrets redacted, as in any other captured text."""

    subject: str
    decision: str
    rationale: str | None
    attribution: dict[str, str]
    redacted: dict[str, int]


def _clean(record: adr.AdrRecord) -> _Cleaned:
    """Redact an ADR's texts before anything is stored or audited (UsageError for an unusable field)."""
    from kernel.redact import redact  # noqa: PLC0415 - paid only when importing

    counts: dict[str, int] = {}

    def scrub(value: str | None) -> str | None:
        if not value:
            return value
        cleaned = redact(value)
        for kind, n in cleaned.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        return cleaned.text

    # The file's own claims about who decided are kept as attribution; the ratifier is the importer.
    attribution = {
        name: scrub(record.meta[key]) or ""
        for key, name in ATTRIBUTION_KEYS.items()
        if record.meta.get(key, "").strip()
    }
    return _Cleaned(
        subject=text.normalise_subject(scrub(record.meta.get("subject") or record.subject) or ""),
        decision=text.require_shown(scrub(record.decision) or "", "decision", text.MAX_DECISION_CHARS),
        rationale=_rationale(scrub(record.context), scrub(record.consequences)),
        attribution=attribution,
        redacted=counts,
    )


def _check_starts(
    records: list[adr.AdrRecord], start: dict[str, str], stated: set[str], folder: Path, successors: Any
) -> None:
    """Refuse a file whose stated start is earlier than that of a decision it supersedes."""
    for record in records:
        for nxt in successors(record):
            if nxt.path in stated and record.path in stated and start[nxt.path] < start[record.path]:
                raise RefusedError(
                    f"{folder / nxt.path}: valid from {start[nxt.path][:10]}, earlier than "
                    f"{record.path} which it supersedes ({start[record.path][:10]}); nothing imported"
                )


def import_adrs(kernel: Ctx, folder: Path, reviewer: str) -> ImportReport:
    """Import a folder of ADRs: accepted and superseded ones as decisions with rebuilt chains.

    ``reviewer`` ratifies every imported decision; a file's own ``ctx-ratified-by`` or deciders are
    kept as attribution in the audit log. Texts are redacted like captured evidence. A stated time
    that is not a date ctx keeps, later than now, or earlier than its predecessor's refuses the
    whole import, naming the file.
    """
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
    # Every start is a checked canonical stamp, so comparing them as text compares times.
    start: dict[str, str] = {}
    until: dict[str, str | None] = {}
    stated: set[str] = set()
    for record in records:
        given = _stamp(record, KEY_FROM, folder, now)
        start[record.path] = given or now
        if given is not None:
            stated.add(record.path)
        until[record.path] = _stamp(record, KEY_UNTIL, folder, now)
        if until[record.path] is not None and until[record.path] < start[record.path]:
            raise RefusedError(
                f"{folder / record.path}: {KEY_UNTIL} is earlier than its start; nothing imported"
            )
    _check_starts(records, start, stated, folder, successors)
    for _ in range(len(records)):  # relax: an undated predecessor starts now, and so must what replaces it
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
                cleaned = _clean(record)
                if kernel.store.current_decision(cleaned.subject) is None:
                    kernel.check_new_subject(cleaned.subject)
            except (UsageError, RefusedError) as exc:
                report.skipped.append(f"{source}: {exc.message}")
                continue
            if cleaned.redacted:
                kinds = ", ".join(sorted(cleaned.redacted))
                report.warnings.append(
                    f"{source}: {sum(cleaned.redacted.values())} secrets redacted ({kinds})"
                )
            if record.status in ("proposed", "rejected"):
                proposal = _import_proposal(kernel, record, cleaned, reviewer, start[record.path], now)
                ids[record.path] = proposal.id
                report.proposals.append(proposal.id)
                continue
            decision = _import_decision(
                kernel, record, cleaned, reviewer, start, until[record.path], now, successors
            )
            if decision is None:
                report.skipped.append(f"{source}: its window overlaps another decision on {cleaned.subject}")
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
    cleaned: _Cleaned,
    reviewer: str,
    start: dict[str, str],
    until: str | None,
    now: str,
    successors: Any,
) -> Decision | None:
    valid_from = start[record.path]
    subject, body = cleaned.subject, cleaned.decision
    nexts = successors(record)
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
        rationale=cleaned.rationale,
        valid_from=valid_from,
        valid_until=until,
        ratified_by=reviewer,
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
    payload: dict[str, Any] = {
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
    }
    if cleaned.attribution:
        payload["attribution"] = cleaned.attribution
    kernel.store.append_audit(now, reviewer, "decision.imported", decision.id, None, payload)
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
    kernel: Ctx, record: adr.AdrRecord, cleaned: _Cleaned, reviewer: str, created_at: str, now: str
) -> Proposal:
    rejected = record.status == "rejected"
    proposal = Proposal(
        id=clock.new_id("pr"),
        subject=cleaned.subject,
        decision=cleaned.decision,
        rationale=cleaned.rationale,
        proposer=f"adr:{record.path}",
        session=None,
        created_at=created_at,
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
    payload: dict[str, Any] = {
        "subject": cleaned.subject,
        "status": proposal.status,
        "source": record.path,
        "adr_number": record.number,
        "decision": cleaned.decision,
        "rationale": proposal.rationale,
        "proposer": proposal.proposer,
        "created_at": proposal.created_at,
        "reason": proposal.resolution_note,
    }
    if cleaned.attribution:
        payload["attribution"] = cleaned.attribution
    kernel.store.append_audit(now, reviewer, "proposal.imported", proposal.id, None, payload)
    return proposal


def _title(decision: Decision) -> str:
    first = re.split(r"(?<=[.!?])\s", decision.decision.strip(), maxsplit=1)[0]
    first = " ".join(first.split())
    return first if len(first) <= 90 else first[:87].rstrip() + "..."


def owned_by_ctx(path: Path) -> bool:
    """Whether an existing file is one ctx wrote: a regular file whose front matter has a decision ``ctx-id``.

    This is the one test export uses before it replaces a file; anything else in the folder is the
    user's and is left alone unless forced.
    """
    try:
        meta = adr.front_matter(path)
    except adr.AdrParseError:
        return False
    found = meta.get(KEY_ID, "")
    return bool(clock.ID_RE.match(found)) and found.startswith("dc_")


def _refusal(path: Path, force: bool) -> str | None:
    """Why export must not replace ``path`` (None when it may)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return None if force else "is a symbolic link (never written through; --force replaces the link)"
    if not stat.S_ISREG(info.st_mode):
        return "exists and is not a regular file"
    if force or owned_by_ctx(path):
        return None
    return "exists and was not written by ctx export (--force overwrites it)"


def _write_atomic(path: Path, content: str) -> None:
    """Write a file by renaming a finished temporary file over it: a reader never sees half of it,
    and a link at ``path`` is replaced, never written through."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            os.fchmod(handle.fileno(), EXPORT_MODE)
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def export_adrs(kernel: Ctx, folder: Path, *, force: bool = False) -> list[Path]:
    """Write one MADR-style file per decision, with stable names and supersession links both ways.

    Files are replaced atomically and only when ctx wrote them (see :func:`owned_by_ctx`); a link,
    or a file of the user's with an exported file's name, refuses the whole export before anything is
    written, unless ``force`` (which replaces links and files, never writing through a link).
    """
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
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise UsageError(f"{folder} is not a folder") from None
    except OSError as exc:
        raise UsageError(f"cannot create the folder {folder}: {exc.strerror or exc}") from None
    contents: dict[Path, str] = {}
    for decision in every:
        status = "accepted" if decision.current else decision.closed_by or "accepted"
        status = "deprecated" if status == "retired" else status
        extra = {KEY_ID: decision.id, KEY_FROM: decision.valid_from, KEY_BY: decision.ratified_by}
        if decision.valid_until:
            extra[KEY_UNTIL] = decision.valid_until
        contents[folder / names[decision.id]] = adr.render_adr(
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
    refused = [(path, why) for path in contents if (why := _refusal(path, force)) is not None]
    if refused:
        path, why = refused[0]
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise RefusedError(f"{path} {why}{more}; nothing written")
    for path, content in contents.items():
        try:
            _write_atomic(path, content)
        except OSError as exc:
            raise RefusedError(f"cannot write {path}: {exc.strerror or exc}") from None
    return list(contents)
