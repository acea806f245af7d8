"""Architecture Decision Records into the kernel, so decisions can live in git too (export: adr_export)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctx_kernel.kernel import clock, ids, text
from ctx_kernel.kernel.adr import files as adr
from ctx_kernel.kernel.errors import RefusedError, UsageError
from ctx_kernel.kernel.facts.links import MAX_LINKS, check_link, looks_like_path
from ctx_kernel.kernel.limits import DECISION_IMPORTED, PROPOSAL_IMPORTED
from ctx_kernel.kernel.payloads import DecisionImported, DecisionSuperseded, ProposalImported
from ctx_kernel.kernel.records import ABSENT, ClosedBy, Decision, Proposal, Record

if TYPE_CHECKING:
    from ctx_kernel.kernel.decisions.kernel import DecisionService
    from ctx_kernel.kernel.vault.service import VaultService

# The fields ctx writes on export and honours on import (in front matter or ctx's comment block), so a
# round trip keeps exact windows.
KEY_ID, KEY_FROM, KEY_UNTIL, KEY_BY, KEY_LINKS = (
    adr.KEY_ID,
    adr.KEY_FROM,
    adr.KEY_UNTIL,
    adr.KEY_BY,
    adr.KEY_LINKS,
)
# Evidence tag of an ADR file kept whole beside the decision it holds.
ADR_TAG = "adr"
# Front-matter claims about who decided, kept on import as attribution (never as the ratifier).
ATTRIBUTION_KEYS = {KEY_BY: "ratified_by", "deciders": "deciders", "decision-makers": "deciders"}


@dataclass
class ImportReport(Record):
    """What ``ctx import adr`` did."""

    decisions: list[str] = field(default_factory=list)
    proposals: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # One entry per file read: path, number, title, the subject chosen and what became of it.
    files: list[dict[str, Any]] = field(default_factory=list)
    dry_run: bool = False
    # Supersessions a file's text only mentions ("This replaces ADR 3"): never linked by the import; a
    # person confirms one by writing its status line in the successor's file (``status_line``).
    suggested_links: list[dict[str, Any]] = field(default_factory=list)


class _DryRun(Exception):  # not an error: raised to roll a dry run back
    """Raised inside the import's transaction so that a dry run writes nothing."""


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


def rationale_of(context: str | None, consequences: str | None) -> str | None:
    """The rationale ctx keeps for an ADR: its context, then its consequences."""
    if not (context or consequences):
        return None
    body = context or ""
    if consequences:
        body = f"{body}\n\nConsequences: {consequences}".strip()
    return body


@dataclass
class _Cleaned:
    """An ADR's texts as ctx stores them: secrets redacted, as in any other captured text."""

    subject: str
    decision: str
    rationale: str | None
    attribution: dict[str, str]
    redacted: dict[str, int]
    title: str
    deciders: list[str]


def _clean(record: adr.AdrRecord, subject: str) -> _Cleaned:
    """Redact an ADR's texts before anything is stored or audited (UsageError for an unusable field)."""
    from ctx_kernel.kernel.capture.redact import redact  # noqa: PLC0415 - paid only when importing

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
    # A decision can be no longer than its file, which the reader has already limited.
    limit = adr.MAX_ADR_BYTES
    title = text.require_shown(scrub(record.title) or "", "title", text.MAX_TITLE_CHARS)
    return _Cleaned(
        subject=text.normalise_subject(scrub(subject) or ""),
        decision=text.require_shown(scrub(record.decision) or "", "decision", limit),
        rationale=text.optional_shown(
            rationale_of(scrub(record.context), scrub(record.consequences)), "rationale", limit
        ),
        attribution=attribution,
        redacted=counts,
        title=" ".join(title.split()),
        deciders=[
            text.require_shown(scrub(name) or "", "decider", text.MAX_NAME_CHARS) for name in record.deciders
        ],
    )


def plan_subjects(records: list[adr.AdrRecord]) -> dict[str, str]:
    """The subject of each record (by path), before the import makes it unique.

    A subject stated in the front matter is kept. A record that supersedes exactly one record,
    which nothing else supersedes, continues that record's subject, so that the chain stays on one
    subject and a later proposal on it supersedes the current decision. Any other record takes a
    subject made from its title.
    """
    by_ref = _by_ref(records)
    chosen: dict[str, str] = {}

    def subject_of(record: adr.AdrRecord, seen: frozenset[str]) -> str:
        if record.path in chosen:
            return chosen[record.path]
        subject = record.subject
        if not record.subject_stated:
            older = _linked(record.supersedes, by_ref, record)
            if len(older) == 1 and older[0].path not in seen:
                newer = _linked(older[0].superseded_by, by_ref, older[0])
                if [r.path for r in newer] == [record.path]:
                    subject = subject_of(older[0], seen | {record.path})
        chosen[record.path] = subject
        return subject

    for record in records:
        subject_of(record, frozenset({record.path}))
    return chosen


def _by_ref(records: list[adr.AdrRecord]) -> dict[adr.AdrRef, adr.AdrRecord]:
    """Records by path, and by number where the reader resolved links to numbers."""
    by_ref: dict[adr.AdrRef, adr.AdrRecord] = {}
    for record in records:
        by_ref[record.path] = record
        if record.number is not None:
            by_ref.setdefault(record.number, record)
    return by_ref


def _linked(
    refs: list[adr.AdrRef], by_ref: dict[adr.AdrRef, adr.AdrRecord], record: adr.AdrRecord
) -> list[adr.AdrRecord]:
    found = [by_ref[r] for r in refs if r in by_ref and by_ref[r] is not record]
    return list({r.path: r for r in found}.values())


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


def _later_that_day(records: list[adr.AdrRecord], start: dict[str, str], now: str, successors: Any) -> None:
    """A successor dated only by its day (adr-tools writes ``Date: 2024-05-01``), on the day its
    predecessor started at a stated time, starts at the end of that day (or now, if that is earlier):
    it was written later that day, not before what it replaces."""
    for record in records:
        for nxt in successors(record):
            if nxt.meta.get(KEY_FROM) or not nxt.date or start[nxt.path] >= start[record.path]:
                continue
            if start[nxt.path][:10] == start[record.path][:10]:
                start[nxt.path] = min(clock.parse_when(nxt.date, end_of_day=True), now)


def _check_cycles(records: list[adr.AdrRecord], folder: Path, successors: Any) -> None:
    """Refuse files that supersede each other in a ring (21 by 22, 22 by 23, 23 by 21): no order of
    windows can hold them, and closing each at its successor's start would leave all three empty."""
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    path: list[adr.AdrRecord] = []

    def visit(record: adr.AdrRecord) -> None:
        state[record.path] = 1
        path.append(record)
        for nxt in successors(record):
            if state.get(nxt.path) == 1:
                ring = [*path[path.index(nxt) :], nxt]
                names = " -> ".join(r.path for r in ring)
                raise RefusedError(
                    f"{folder}: these ADRs supersede each other in a ring ({names}); fix their status "
                    "lines; nothing imported"
                )
            if state.get(nxt.path) is None:
                visit(nxt)
        path.pop()
        state[record.path] = 2

    for record in records:
        if state.get(record.path) is None:
            visit(record)


def import_adrs(
    decisions: DecisionService, vault: VaultService, folder: Path, reviewer: str, *, dry_run: bool = False
) -> ImportReport:
    """Import a folder of ADRs: accepted and superseded ones as decisions with rebuilt chains.

    ``reviewer`` ratifies every imported decision; a file's own ``ctx-ratified-by`` or deciders are
    kept as attribution. Each file is also kept whole as evidence cited by its decision or proposal.
    Texts are redacted like captured evidence. A stated time that is not a date ctx keeps, later than
    now, or earlier than its predecessor's, or a file larger than the reader takes, refuses the whole
    import, naming the file. ``dry_run`` does everything, reports it, and writes nothing.
    """
    reviewer = text.require_shown(reviewer, "reviewer", text.MAX_NAME_CHARS)
    records, errors, warnings = adr.read_adr_folder(folder)
    for error in errors:
        if error.reason.startswith("larger than"):
            raise RefusedError(
                f"{error.path}: {error.reason}, the most ctx reads from one ADR file; nothing imported"
            )
    report = ImportReport(warnings=list(warnings), dry_run=dry_run)
    report.skipped = [f"{e.path}: {e.reason}" for e in errors]
    report.files = [
        {"path": _relative(e.path, folder), "outcome": "skipped", "reason": e.reason} for e in errors
    ]
    by_ref = _by_ref(records)
    report.suggested_links = suggested_links(records, by_ref)
    subjects = plan_subjects(records)
    now = clock.now()

    def successors(record: adr.AdrRecord) -> list[adr.AdrRecord]:
        found = _linked(record.superseded_by, by_ref, record)
        return [s for s in found if s.status not in ("proposed", "rejected")]

    start, until = _windows(records, folder, now, successors)
    try:
        with decisions.store.transaction():
            _import_all(
                decisions, vault, folder, records, subjects, reviewer, now, start, until, successors, report
            )
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    report.files.sort(key=lambda f: f["path"])
    return report


def suggested_links(
    records: list[adr.AdrRecord], by_ref: dict[adr.AdrRef, adr.AdrRecord]
) -> list[dict[str, Any]]:
    """The supersessions the files' texts mention, once per pair, each with the status line that would
    state it in the successor's file."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for record in records:
        for suggestion in record.suggested:
            other = by_ref.get(suggestion.target)
            if other is None or other is record:
                continue
            newer, older = (record, other) if suggestion.relation == "supersedes" else (other, record)
            found.setdefault(
                (newer.path, older.path),
                {
                    "path": newer.path,
                    "supersedes": older.path,
                    "said": suggestion.said,
                    "said_in": record.path,
                    "status_line": f"Supersedes {adr.link_to(older)}",
                },
            )
    return sorted(found.values(), key=lambda s: (s["path"], s["supersedes"]))


def _relative(path: Path, folder: Path) -> str:
    try:
        return path.relative_to(folder).as_posix()
    except ValueError:
        return path.name


def _windows(
    records: list[adr.AdrRecord], folder: Path, now: str, successors: Any
) -> tuple[dict[str, str], dict[str, str | None]]:
    """Each record's start and stated end: from its date (never before what it supersedes) until
    its first successor starts. Every start is a checked canonical stamp, so comparing them as text
    compares times."""
    start: dict[str, str] = {}
    until: dict[str, str | None] = {}
    stated: set[str] = set()
    for record in records:
        given = _stamp(record, KEY_FROM, folder, now)
        start[record.path] = given or now
        if given is not None:
            stated.add(record.path)
        until[record.path] = end = _stamp(record, KEY_UNTIL, folder, now)
        if end is not None and end < start[record.path]:
            raise RefusedError(
                f"{folder / record.path}: {KEY_UNTIL} is earlier than its start; nothing imported"
            )
    _check_cycles(records, folder, successors)
    _later_that_day(records, start, now, successors)
    _check_starts(records, start, stated, folder, successors)
    for _ in range(len(records)):  # relax: an undated predecessor starts now, and so must what replaces it
        changed = False
        for record in records:
            for nxt in successors(record):
                if start[nxt.path] < start[record.path]:
                    start[nxt.path], changed = start[record.path], True
        if not changed:
            break
    return start, until


def _known(decisions: DecisionService, record: adr.AdrRecord) -> Decision | Proposal | None:
    """The decision or proposal this file was imported as, or exported from, in this store."""
    existing = decisions.store.find_source(record.path)
    if existing is not None:
        return decisions.store.get_decision(existing) or decisions.store.get_proposal(existing)
    exported_id = record.meta.get(KEY_ID, "")
    if not ids.ID_RE.match(exported_id):
        return None
    if exported_id.startswith("dc_"):
        return decisions.store.get_decision(exported_id)
    if exported_id.startswith("pr_"):
        return decisions.store.get_proposal(exported_id)
    return None


def _import_all(
    decisions: DecisionService,
    vault: VaultService,
    folder: Path,
    records: list[adr.AdrRecord],
    subjects: dict[str, str],
    reviewer: str,
    now: str,
    start: dict[str, str],
    until: dict[str, str | None],
    successors: Any,
    report: ImportReport,
) -> None:
    made_ids: dict[str, str] = {}
    pending_links: list[tuple[adr.AdrRecord, adr.AdrRecord]] = []
    inside = folder.resolve()
    where = repository_folder(folder)
    for record in sorted(records, key=lambda r: (start[r.path], r.number or 0, r.path)):
        source = record.path
        entry: dict[str, Any] = {"path": source, "number": record.number, "title": record.title}
        report.files.append(entry)
        known = _known(decisions, record)
        if known is not None:
            made_ids[record.path] = known.id
            report.unchanged.append(source)
            entry.update(outcome="unchanged", subject=known.subject, id=known.id)
            continue
        try:
            cleaned = _clean(record, subjects[record.path])
            if decisions.store.current_decision(cleaned.subject) is None:
                decisions.queue.check_new_subject(cleaned.subject)
            evidence_id = _keep_file(vault, folder / source, inside, source, reviewer)
        except (UsageError, RefusedError) as exc:
            report.skipped.append(f"{source}: {exc.message}")
            entry.update(outcome="skipped", reason=exc.message, subject=subjects[record.path])
            continue
        if cleaned.redacted:
            kinds = ", ".join(sorted(cleaned.redacted))
            count = sum(cleaned.redacted.values())
            report.warnings.append(f"{source}: {text.plural(count, 'secret')} redacted ({kinds})")
        links = links_of(record, where)
        if record.status in ("proposed", "rejected"):
            proposal = _import_proposal(
                decisions, record, cleaned, reviewer, start[record.path], now, evidence_id, links
            )
            made_ids[record.path] = proposal.id
            report.proposals.append(proposal.id)
            entry.update(outcome=f"{proposal.status} proposal", subject=proposal.subject, id=proposal.id)
            if proposal.status == "pending" and links:
                entry["links"] = links
            continue
        decision = _import_decision(
            decisions,
            record,
            cleaned,
            reviewer,
            start,
            until[record.path],
            now,
            successors,
            evidence_id,
            links,
        )
        if decision is None:
            why = f"its window overlaps another decision on {cleaned.subject}"
            report.skipped.append(f"{source}: {why}")
            entry.update(outcome="skipped", reason=why, subject=cleaned.subject)
            continue
        made_ids[record.path] = decision.id
        report.decisions.append(decision.id)
        state = "current" if decision.current else decision.closed_by
        entry.update(outcome=f"{state} decision", subject=decision.subject, id=decision.id)
        if decision.current and links:
            entry["links"] = links
        pending_links += [(record, s) for s in successors(record)]
    for old, new in pending_links:
        if old.path in made_ids and new.path in made_ids:
            old_id, new_id = made_ids[old.path], made_ids[new.path]
            if new_id.startswith("dc_") and not decisions.store.is_ancestor(old_id, new_id):
                _link(decisions, old_id, new_id, start[new.path], reviewer, now)
    if not report.dry_run:  # conflicts are derived; a dry run leaves every cache as it was
        decisions.facts.record_conflicts(report.decisions)


def _keep_file(vault: VaultService, path: Path, inside: Path, source: str, reviewer: str) -> str:
    """Keep the whole file as evidence (redacted like any captured text); its id."""
    from ctx_kernel.kernel.capture.ingest import EvidenceInput, prepare  # noqa: PLC0415

    body = adr.read_text(path, inside)
    prepared = prepare(
        EvidenceInput(body, kind="doc", agent=reviewer, source=source, tags=(ADR_TAG,)), redact=True
    )
    return vault.append(prepared).id  # the vault's one writer, inside the import's transaction


def repository_folder(folder: Path) -> str | None:
    """Where ``folder`` lies in its git checkout (``docs/decisions``, ``""`` at the root), or None
    outside one: a relative link in an ADR file leads from there."""
    try:
        real = folder.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    for parent in (real, *real.parents):
        if (parent / ".git").exists():  # a folder in a clone, a file in a worktree or submodule
            place = real.relative_to(parent).as_posix()
            return "" if place == "." else place
    return None


def links_of(record: adr.AdrRecord, folder: str | None = None) -> list[str]:
    """The paths and globs a file says its decision governs: front matter ``ctx-links`` (comma
    separated), then the paths MADR's Confirmation section names, in code spans (relative to the
    repository) and relative Markdown links (relative to the file, so only when ``folder``, the ADR
    folder's place in the repository, is known: see :func:`repository_folder`). A link that would
    leave the repository, or prose that names no path, is not kept."""
    found = [raw for raw in record.meta.get(KEY_LINKS, "").split(",") if raw.strip()]
    found += [span for span in record.confirmation_spans if looks_like_path(span)]
    if folder is not None:
        here = posixpath.join(folder, posixpath.dirname(record.path))
        for target in filter(looks_like_path, record.confirmation_targets):
            resolved = posixpath.normpath(posixpath.join(here, target))
            if resolved != ".." and not resolved.startswith("../"):
                found.append(resolved)
    links = []
    for raw in found:
        try:
            links.append(check_link(raw))
        except UsageError:
            continue
    return list(dict.fromkeys(links))[:MAX_LINKS]


def _import_decision(
    decisions: DecisionService,
    record: adr.AdrRecord,
    cleaned: _Cleaned,
    reviewer: str,
    start: dict[str, str],
    until: str | None,
    now: str,
    successors: Any,
    evidence_id: str,
    links: list[str],
) -> Decision | None:
    valid_from = start[record.path]
    subject, body = cleaned.subject, cleaned.decision
    nexts = successors(record)
    closed_by: ClosedBy | None = None
    reason: str | None = None
    if nexts:
        until = until or min(start[s.path] for s in nexts)
        closed_by, reason = "superseded", "superseded (imported ADR)"
    elif record.status in ("superseded", "deprecated") or until:
        # Deprecated, or superseded by something not in the folder: closed with no successor.
        until = until or max(now, valid_from)
        closed_by, reason = "retired", f"{record.raw_status or record.status} (imported ADR)"
    for other in decisions.store.decisions(subject, include_closed=True):
        if other.subject != subject:
            continue
        overlaps = (other.valid_until is None or other.valid_until > valid_from) and (
            until is None or until > other.valid_from
        )
        if overlaps:
            subject = f"{subject}-{record.number}" if record.number is not None else f"{subject}-import"
            break
    decision = Decision(
        id=ids.new_id("dc"),
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
        evidence=[evidence_id],
        title=cleaned.title,
        deciders=cleaned.deciders,
    )
    payload = DecisionImported(
        subject=subject,
        decision=body,
        valid_from=valid_from,
        valid_until=until,
        source=record.path,
        adr_number=record.number,
        status=record.status,
        rationale=decision.rationale,
        ratified_by=decision.ratified_by,
        closed_by=closed_by,
        close_reason=reason,
        title=decision.title,
        deciders=decision.deciders,
        evidence=decision.evidence,
        attribution=cleaned.attribution or ABSENT,
    )
    try:
        with decisions.store.savepoint():
            decisions.write(
                decision,
                actor=reviewer,
                at=now,
                action=DECISION_IMPORTED,
                target=decision.id,
                before=None,
                after=payload,
            )
            if links and until is None:
                decisions.confirm(
                    decision.id, links, at=now, by=reviewer, act="ratified", review_dates=(None, None)
                )
    except RefusedError:  # an overlap the renaming could not avoid: report it, import the rest
        return None
    return decision


def _link(
    decisions: DecisionService, old_id: str, new_id: str, linked_at: str, reviewer: str, now: str
) -> None:
    """Link an imported supersession and log it, so that the audit log accounts for every link."""
    old = decisions.store.get_decision(old_id)
    until = old.valid_until if old is not None else None
    change = DecisionSuperseded(valid_until=until, superseded_by=new_id, linked_at=linked_at)
    decisions.link(old_id, change, actor=reviewer, logged_at=now, was_until=until)


def _import_proposal(
    decisions: DecisionService,
    record: adr.AdrRecord,
    cleaned: _Cleaned,
    reviewer: str,
    created_at: str,
    now: str,
    evidence_id: str,
    links: list[str],
) -> Proposal:
    rejected = record.status == "rejected"
    proposal = Proposal(
        id=ids.new_id("pr"),
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
        evidence=[evidence_id],
        title=cleaned.title,
        deciders=cleaned.deciders,
    )
    decisions.store.insert_proposal(proposal)
    links = [] if rejected else links
    if links:  # before the audit row: the database refuses a link added to a logged proposal
        decisions.store.insert_proposal_links(proposal.id, links)
    payload = ProposalImported(
        subject=cleaned.subject,
        status=proposal.status,
        source=record.path,
        adr_number=record.number,
        decision=cleaned.decision,
        rationale=proposal.rationale,
        proposer=proposal.proposer,
        created_at=proposal.created_at,
        reason=proposal.resolution_note,
        title=proposal.title,
        deciders=proposal.deciders,
        evidence=proposal.evidence,
        attribution=cleaned.attribution or ABSENT,
        links=links or ABSENT,
    )
    decisions.store.append_audit(now, reviewer, PROPOSAL_IMPORTED, proposal.id, None, payload.to_dict())
    return proposal
