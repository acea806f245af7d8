"""Replay the audit log and compare it with the store's tables.

The hash chain proves the log was not edited; it says nothing about the tables beside it. An
edit made with raw SQL (a decision's text changed after dropping its trigger, a supersession link,
a citation or a proposal's link added or removed, a proposal resolved, an evidence text or its
metadata swapped) leaves the store disagreeing with its own log. This module rebuilds, from the log
alone, what every row an agent or a person reads as truth must say, and names the first table, row
and field that does not.

Each row's payload is read once, into the record of its action (``kernel/payloads.py``). Rows
written by an earlier ctx lack some fields (an imported decision's rationale, an evidence text's
speaker, the links an ADR import made): read back, those are ABSENT, the field they describe is not
checked, and the report's notes say which; every row ctx writes now carries all of them.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from ctx_kernel.kernel import limits
from ctx_kernel.kernel.capture.json_input import JSONInputError, read_json
from ctx_kernel.kernel.payloads import (
    AuditPayload,
    DecisionConfirmed,
    DecisionImported,
    DecisionRetired,
    DecisionSuperseded,
    EvidenceLogged,
    ProposalClosed,
    ProposalCreated,
    ProposalImported,
    ProposalRatified,
)
from ctx_kernel.kernel.records import ABSENT, Absent, Decision, Snapshot
from ctx_kernel.kernel.store.base import Store

_CHUNK = 500


@dataclass
class _Expected:
    """What the log says one row holds: each field with the audit row that set it."""

    seq: int
    fields: dict[str, tuple[Any, int]] = field(default_factory=dict)

    def set(self, seq: int, **values: Any) -> None:
        for key, value in values.items():
            self.fields[key] = (value, seq)


@dataclass(frozen=True)
class StateProblem:
    """The first place the store disagrees with its audit log."""

    seq: int | None
    problem: str


@dataclass(frozen=True)
class StateReport:
    """Every disagreement found (first one first) and what the log could not say."""

    problems: list[StateProblem]
    notes: list[str]

    @property
    def first(self) -> StateProblem | None:
        """The earliest problem in log order; those no audit row explains come last."""
        if not self.problems:
            return None
        return min(self.problems, key=lambda p: (p.seq is None, p.seq or 0))


def _after(row: Mapping[str, Any]) -> dict[str, Any]:
    raw = row.get("after")
    if not raw or not isinstance(raw, str | bytes):
        return {}
    try:
        value = read_json(raw)
    except JSONInputError:
        return {}
    return value if isinstance(value, dict) else {}


_T = TypeVar("_T")


def _or(value: _T | Absent, default: _T) -> _T:
    return default if value is ABSENT else value


def _titled(title: str | Absent | None, deciders: list[str] | Absent) -> dict[str, Any]:
    # An earlier ctx kept no titles or deciders, so an absent key means none, and is checked.
    return {"title": _or(title, None), "deciders": _or(deciders, []) or []}


# Keys an earlier ctx did not always write; absent, the field they describe is not checked.
_EVIDENCE_OPTIONAL = ("kind", "session", "tags", "speaker", "occurred_at")
_PROPOSAL_OPTIONAL = (
    "supersedes",
    "explicit_supersedes",
    "near_duplicate_of",
    "near_duplicate_score",
    "session",
)
_IMPORTED_PROPOSAL_OPTIONAL = ("decision", "rationale", "proposer", "created_at")
_IMPORTED_DECISION_OPTIONAL = ("rationale", "ratified_by", "closed_by", "close_reason")


class _Replay:
    """The rows the log describes, built audit row by audit row."""

    def __init__(self) -> None:
        self.decisions: dict[str, _Expected] = {}
        self.proposals: dict[str, _Expected] = {}
        self.evidence: dict[str, _Expected] = {}
        self.links: dict[tuple[str, str], tuple[str, int]] = {}
        self.cited: dict[str, dict[tuple[str, str], int]] = {"decision_evidence": {}, "proposal_evidence": {}}
        # (proposal id, link) -> the audit row that queued the proposal with it. A row without links
        # means none, as it always has: links are written with the proposal and never change.
        self.proposal_links: dict[tuple[str, str], int] = {}
        # Decisions an earlier ctx imported without logging the supersession links it made.
        self.unlogged_links_from: set[str] = set()
        # (decision id, when) -> (audit row, what a snapshot taken then holds)
        self.snapshots: dict[tuple[str, str], tuple[int, tuple[Any, ...]]] = {}
        self.unchecked: dict[str, set[int]] = defaultdict(set)
        self.problems: list[StateProblem] = []

    def _optional(
        self,
        expected: _Expected,
        table: str,
        row: Mapping[str, Any],
        after: AuditPayload,
        keys: Iterable[str],
    ) -> None:
        for key in keys:
            value = getattr(after, key)
            if value is ABSENT:
                self.unchecked[f"{table}.{key}"].add(row["seq"])
            else:
                expected.set(row["seq"], **{key: value})

    def apply(self, row: Mapping[str, Any]) -> None:
        handler = self._handlers.get(row["action"])
        if handler is not None:
            handler(row, _after(row))
        # Any other action (the vault's) changes no row this replay knows about.

    @cached_property
    def _handlers(self) -> dict[str, Callable[[Mapping[str, Any], dict[str, Any]], None]]:
        return {
            limits.EVIDENCE_LOGGED: self._evidence_logged,
            limits.PROPOSAL_CREATED: self._proposal_created,
            limits.PROPOSAL_IMPORTED: self._proposal_imported,
            limits.PROPOSAL_RATIFIED: self._proposal_ratified,
            limits.PROPOSAL_REJECTED: self._proposal_rejected,
            limits.PROPOSAL_WITHDRAWN: self._proposal_withdrawn,
            limits.DECISION_SUPERSEDED: self._decision_superseded,
            limits.DECISION_RETIRED: self._decision_retired,
            limits.DECISION_IMPORTED: self._decision_imported,
            limits.DECISION_CONFIRMED: self._decision_confirmed,
        }

    def _evidence_logged(self, row: Mapping[str, Any], data: dict[str, Any]) -> None:
        seq, target = row["seq"], row["target"]
        after = EvidenceLogged.from_audit(data)
        expected = self.evidence[target] = _Expected(seq)
        # An absent source always meant none: ctx logged it whenever there was one.
        source = _or(after.source, None)
        expected.set(seq, content_hash=after.content_hash, created_at=row["at"], source=source)
        self._optional(expected, "evidence", row, after, _EVIDENCE_OPTIONAL)
        if after.agent is not ABSENT:
            expected.set(seq, agent=after.agent)
        elif row["actor"] != "unknown":  # an earlier ctx logged the agent as the actor, None as "unknown"
            expected.set(seq, agent=row["actor"])
        else:
            self.unchecked["evidence.agent"].add(seq)

    def _proposal_created(self, row: Mapping[str, Any], data: dict[str, Any]) -> None:
        seq, target = row["seq"], row["target"]
        after = ProposalCreated.from_audit(data)
        expected = self.proposals[target] = _Expected(seq)
        expected.set(
            seq,
            subject=after.subject,
            decision=after.decision,
            rationale=after.rationale,
            proposer=row["actor"],
            created_at=row["at"],
            status="pending",
            resolved_at=None,
            resolved_by=None,
            resolution_note=None,
            decision_id=None,
            source=None,
            adr_number=None,
            # An earlier ctx made no requests to re-confirm, so an absent key means none, and is checked.
            reconfirms=_or(after.reconfirms, None),
            **_titled(after.title, after.deciders),
        )
        self._optional(expected, "proposal", row, after, _PROPOSAL_OPTIONAL)
        for evidence_id in after.evidence or []:
            self.cited["proposal_evidence"][(target, evidence_id)] = seq
        self._links_of(target, after.links, seq)

    def _proposal_imported(self, row: Mapping[str, Any], data: dict[str, Any]) -> None:
        seq, target = row["seq"], row["target"]
        after = ProposalImported.from_audit(data)
        expected = self.proposals[target] = _Expected(seq)
        rejected = after.status == "rejected"
        expected.set(
            seq,
            subject=after.subject,
            status=after.status,
            source=after.source,
            adr_number=after.adr_number,
            session=None,
            supersedes=[],
            explicit_supersedes=[],
            near_duplicate_of=None,
            near_duplicate_score=None,
            decision_id=None,
            reconfirms=None,
            resolved_at=row["at"] if rejected else None,
            resolved_by=row["actor"] if rejected else None,
            **_titled(after.title, after.deciders),
        )
        for evidence_id in _or(after.evidence, []) or []:
            self.cited["proposal_evidence"][(target, evidence_id)] = seq
        self._links_of(target, after.links, seq)
        self._optional(expected, "proposal", row, after, _IMPORTED_PROPOSAL_OPTIONAL)
        if after.reason is not ABSENT:
            expected.set(seq, resolution_note=after.reason)
        else:
            self.unchecked["proposal.resolution_note"].add(seq)

    def _links_of(self, proposal_id: str, links: list[str] | Absent, seq: int) -> None:
        for link in _or(links, []):
            self.proposal_links[(proposal_id, link)] = seq

    def _proposal_ratified(self, row: Mapping[str, Any], data: dict[str, Any]) -> None:
        seq, target, at = row["seq"], row["target"], row["at"]
        after = ProposalRatified.from_audit(data)
        decision_id = after.decision_id
        self._resolve(
            row,
            "ratified",
            resolved_by=row["actor"],
            resolved_at=at,
            decision_id=decision_id,
            resolution_note=None,
        )
        if after.reconfirmed is not ABSENT:
            # A request to re-confirm, carried out: the decision it names stays as it was (its new
            # snapshot has its own decision.confirmed row), and no decision is made.
            if after.reconfirmed not in self.decisions or after.reconfirmed != decision_id:
                self.problems.append(
                    StateProblem(seq, f"audit row {seq} re-confirms {after.reconfirmed}, never ratified")
                )
            return
        if not isinstance(decision_id, str):
            return
        created = self.decisions[decision_id] = _Expected(seq)
        created.set(
            seq,
            subject=after.subject,
            decision=after.decision,
            valid_from=at,
            valid_until=None,
            ratified_by=row["actor"],
            ratified_at=at,
            proposal_id=target,
            amended=after.amended_from is not ABSENT,
            closed_by=None,
            close_reason=None,
            source=None,
            adr_number=None,
            **_titled(after.title, after.deciders),
        )
        proposal = self.proposals.get(target)
        if proposal is not None and "rationale" in proposal.fields:
            created.set(seq, rationale=proposal.fields["rationale"][0])
        else:
            self.unchecked["decision.rationale"].add(seq)
        for evidence_id in _or(after.evidence, []) or []:
            self.cited["decision_evidence"][(decision_id, evidence_id)] = seq

    def _proposal_rejected(self, row: Mapping[str, Any], data: dict[str, Any]) -> None:
        self._resolve(
            row,
            "rejected",
            resolved_by=row["actor"],
            resolved_at=row["at"],
            resolution_note=ProposalClosed.from_audit(data).reason,
            decision_id=None,
        )

    def _proposal_withdrawn(self, row: Mapping[str, Any], data: dict[str, Any]) -> None:
        self._resolve(
            row,
            "withdrawn",
            resolved_by=row["actor"],
            resolved_at=row["at"],
            resolution_note=ProposalClosed.from_audit(data).reason,
            decision_id=None,
        )

    def _decision_superseded(self, row: Mapping[str, Any], data: dict[str, Any]) -> None:
        after = DecisionSuperseded.from_audit(data)
        successor = after.superseded_by
        reason = _or(after.reason, f"superseded by {successor}")
        closed = self._close(row, "superseded", valid_until=after.valid_until, close_reason=reason)
        if closed and isinstance(successor, str):
            self.links[(row["target"], successor)] = (after.linked(row["at"]), row["seq"])

    def _decision_retired(self, row: Mapping[str, Any], data: dict[str, Any]) -> None:
        after = DecisionRetired.from_audit(data)
        self._close(row, "retired", valid_until=after.valid_until, close_reason=after.reason)

    def _decision_confirmed(self, row: Mapping[str, Any], data: dict[str, Any]) -> None:
        after = DecisionConfirmed.from_audit(data)
        held = (row["actor"], after.act, after.git_commit, after.links, after.review_by, after.review_every)
        self.snapshots[(row["target"], row["at"])] = (row["seq"], held)

    def _decision_imported(self, row: Mapping[str, Any], data: dict[str, Any]) -> None:
        seq, target = row["seq"], row["target"]
        after = DecisionImported.from_audit(data)
        imported = self.decisions[target] = _Expected(seq)
        imported.set(
            seq,
            subject=after.subject,
            decision=after.decision,
            valid_from=after.valid_from,
            valid_until=after.valid_until,
            ratified_at=row["at"],
            proposal_id=None,
            amended=False,
            source=after.source,
            adr_number=after.adr_number,
            **_titled(after.title, after.deciders),
        )
        for evidence_id in _or(after.evidence, []) or []:
            self.cited["decision_evidence"][(target, evidence_id)] = seq
        self._optional(imported, "decision", row, after, _IMPORTED_DECISION_OPTIONAL)
        if after.closed_by is ABSENT:
            self.unlogged_links_from.add(target)

    def _resolve(self, row: Mapping[str, Any], status: str, **values: Any) -> None:
        expected = self.proposals.get(row["target"])
        if expected is None:
            self.problems.append(
                StateProblem(row["seq"], f"audit row {row['seq']} resolves {row['target']}, never proposed")
            )
            return
        expected.set(row["seq"], status=status, **values)

    def _close(self, row: Mapping[str, Any], closed_by: str, *, close_reason: Any, **values: Any) -> bool:
        expected = self.decisions.get(row["target"])
        if expected is None:
            self.problems.append(
                StateProblem(row["seq"], f"audit row {row['seq']} closes {row['target']}, never ratified")
            )
            return False
        if expected.fields.get("valid_until", (None, 0))[0] is None:
            # Only closing an open window sets closed_by and the reason; superseding an already
            # closed decision (a split, one retired earlier, an imported link) only links it.
            expected.set(row["seq"], closed_by=closed_by, close_reason=close_reason)
        expected.set(row["seq"], **values)
        return True


def _compare(table: str, item_id: str, expected: _Expected, actual: Any) -> StateProblem | None:
    mismatches = [
        (seq, key) for key, (value, seq) in expected.fields.items() if getattr(actual, key) != value
    ]
    if not mismatches:
        return None
    seq, key = min(mismatches, key=lambda m: m[0])  # the earliest row; ties in the log's field order
    return StateProblem(seq, f"{table} {item_id} does not match audit row {seq} ({key} differs)")


def _rows(
    table: str, kind: str, expected: dict[str, _Expected], actual: dict[str, Any]
) -> list[StateProblem]:
    """Compare one table's rows by id; ``actual`` loses the rows the log explains."""
    problems = []
    for item_id, wanted in expected.items():
        found = actual.pop(item_id, None)
        if found is None:
            problems.append(StateProblem(wanted.seq, f"{kind} {item_id} is missing from the store"))
        elif (problem := _compare(table, item_id, wanted, found)) is not None:
            problems.append(problem)
    return problems + [StateProblem(None, f"{kind} {i} is not in the audit log") for i in sorted(actual)]


def _citations(
    table: str, expected: dict[tuple[str, str], int], stored: list[tuple[Any, ...]], verb: str = "cites"
) -> list[StateProblem]:
    rows = {(r[0], r[1]) for r in stored}
    problems = [
        StateProblem(seq, f"{table} row ({a}, {b}) is missing from the store (audit row {seq} {verb} it)")
        for (a, b), seq in expected.items()
        if (a, b) not in rows
    ]
    problems += [
        StateProblem(None, f"{table} row ({a}, {b}) is not in the audit log")
        for a, b in sorted(rows - expected.keys())
    ]
    return problems


def _links(replay: _Replay, stored: list[tuple[Any, ...]]) -> tuple[list[StateProblem], int]:
    problems, unlogged = [], 0
    found = {(r[0], r[1]): r[2] for r in stored}
    for (old, new), (created_at, seq) in replay.links.items():
        if (old, new) not in found:
            message = (
                f"supersession row ({old} -> {new}) is missing from the store (audit row {seq} links them)"
            )
            problems.append(StateProblem(seq, message))
        elif found[(old, new)] != created_at:
            message = f"supersession row ({old} -> {new}) does not match audit row {seq} (created_at differs)"
            problems.append(StateProblem(seq, message))
    for old, new in sorted(found.keys() - replay.links.keys()):
        if old in replay.unlogged_links_from and new in replay.unlogged_links_from:
            unlogged += 1  # an ADR import by an earlier ctx linked them without an audit row
            continue
        problems.append(StateProblem(None, f"supersession row ({old} -> {new}) is not in the audit log"))
    return problems, unlogged


def _snapshots(replay: _Replay, stored: list[Snapshot]) -> list[StateProblem]:
    """Each snapshot a person's ratification or re-confirmation took, against its audit row: a
    snapshot written around ctx would silence a staleness warning."""
    problems = []
    found = {
        (s.decision_id, s.taken_at): (
            s.taken_by,
            s.act,
            s.git_commit,
            [x.to_dict() for x in s.links],
            s.review_by,
            s.review_every,
        )
        for s in stored
    }
    for (decision_id, at), (seq, held) in replay.snapshots.items():
        row = found.pop((decision_id, at), None)
        if row is None:
            problems.append(
                StateProblem(
                    seq, f"snapshot of {decision_id} at {at} is missing from the store (audit row {seq})"
                )
            )
        elif row != held:
            problems.append(
                StateProblem(seq, f"snapshot of {decision_id} at {at} does not match audit row {seq}")
            )
    problems += [
        StateProblem(None, f"snapshot of {decision_id} at {at} is not in the audit log")
        for decision_id, at in sorted(found)
    ]
    return problems


def _decision_text(decision: Decision) -> str:
    # The text conflict detection reads (facts.conflicts.ConflictDetector): the decision and its rationale.
    return f"{decision.decision}\n{decision.rationale or ''}"


def _conflicts(store: Store, decisions: dict[str, Decision]) -> tuple[list[StateProblem], str | None]:
    """Each stored conflict must be one the rules find in the two (verified) decisions' texts."""
    from ctx_kernel.kernel.language import conflicts  # noqa: PLC0415 - only to verify

    rules = store.get_meta(limits.META_CONFLICT_RULES)
    if rules is not None and rules != conflicts.RULES_VERSION:
        return (
            [],
            "conflicts were detected by other rules and are not checked: `ctx reindex` detects them again",
        )
    problems = []
    for decision_id, other_id, term, clause, other_clause in store.link_rows("decision_conflict"):
        where = f"decision_conflict row ({decision_id}, {other_id})"
        mine, theirs = decisions.get(decision_id), decisions.get(other_id)
        if mine is None or theirs is None:
            problems.append(StateProblem(None, f"{where} names a decision that is not in the store"))
            continue
        found = conflicts.find_conflict(_decision_text(mine), _decision_text(theirs), {term})
        if mine.subject == theirs.subject or found is None:
            differs = "term"
        elif found.clause != clause:
            differs = "clause"
        elif found.other_clause != other_clause:
            differs = "other_clause"
        else:
            continue
        problems.append(
            StateProblem(None, f"{where} is not a conflict of the two decisions ({differs} differs)")
        )
    return problems, None


def _evidence(store: Store, replay: _Replay) -> list[StateProblem]:
    problems = []
    logged = list(replay.evidence)
    for start in range(0, len(logged), _CHUNK):
        chunk = logged[start : start + _CHUNK]
        found = store.evidence_by_ids(chunk)
        for evidence_id in chunk:
            expected = replay.evidence[evidence_id]
            actual = found.get(evidence_id)
            if actual is None:
                problems.append(
                    StateProblem(expected.seq, f"evidence {evidence_id} is missing from the store")
                )
            elif (problem := _compare("evidence", evidence_id, expected, actual)) is not None:
                problems.append(problem)
            elif hashlib.sha256(actual.text.encode("utf-8")).hexdigest() != actual.content_hash:
                problems.append(
                    StateProblem(expected.seq, f"evidence {evidence_id} text does not match its content hash")
                )
    known = replay.evidence.keys()
    problems += [
        StateProblem(None, f"evidence {i} is not in the audit log")
        for i in store.evidence_ids()
        if i not in known
    ]
    return problems


def _notes(replay: _Replay, unlogged_links: int) -> list[str]:
    notes = []
    if replay.unchecked:
        rows = len(set().union(*replay.unchecked.values()))
        fields = ", ".join(sorted(replay.unchecked))
        notes.append(
            f"{rows} audit rows written by an earlier ctx lack fields, not checked for them: {fields}"
        )
    if unlogged_links:
        notes.append(
            f"{unlogged_links} supersession links between decisions an earlier ctx imported from ADRs "
            "have no audit row and are not checked"
        )
    return notes


def replay_state(store: Store, rows: Iterable[Mapping[str, Any]]) -> StateReport:
    """Replay ``rows`` (a whole, verified chain) and compare every table it describes with the store."""
    replay = _Replay()
    for row in rows:
        replay.apply(row)
    problems = list(replay.problems)
    decisions = {d.id: d for d in store.decisions(include_closed=True)}
    problems += _rows("decision", "decision", replay.decisions, dict(decisions))
    problems += _rows("proposal", "proposal", replay.proposals, {p.id: p for p in store.list_proposals(None)})
    problems += _evidence(store, replay)
    link_problems, unlogged = _links(replay, store.link_rows("supersession"))
    problems += link_problems
    for table, expected in replay.cited.items():
        problems += _citations(table, expected, store.link_rows(table))
    # A link added to a pending proposal around ctx would be snapshotted by its ratification.
    problems += _citations("proposal_link", replay.proposal_links, store.link_rows("proposal_link"), "names")
    problems += _snapshots(replay, store.all_snapshots())
    conflict_problems, conflict_note = _conflicts(store, decisions)
    problems += conflict_problems
    notes = _notes(replay, unlogged) + ([conflict_note] if conflict_note else [])
    return StateReport(problems, notes)


def check_state(store: Store, rows: Iterable[Mapping[str, Any]]) -> StateProblem | None:
    """Replay ``rows`` (a whole, verified chain) and name the first table row that disagrees with it."""
    return replay_state(store, rows).first
