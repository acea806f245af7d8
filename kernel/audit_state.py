"""Replay the audit log and compare it with the store's tables.

The hash chain proves the log was not edited; it says nothing about the tables beside it. An
edit made with raw SQL (a decision's text changed after dropping its trigger, a proposal
resolved, an evidence text swapped, a row added or removed) leaves the store disagreeing with
its own log. This module rebuilds, from the log alone, what every decision, proposal and
evidence row must say, and names the first row that does not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kernel.json_input import JSONInputError, read_json
from kernel.store.base import Store

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


def _after(row: Mapping[str, Any]) -> dict[str, Any]:
    raw = row.get("after")
    if not raw or not isinstance(raw, str | bytes):
        return {}
    try:
        value = read_json(raw)
    except JSONInputError:
        return {}
    return value if isinstance(value, dict) else {}


class _Replay:
    """The decisions, proposals and evidence the log describes, built row by row."""

    def __init__(self) -> None:
        self.decisions: dict[str, _Expected] = {}
        self.proposals: dict[str, _Expected] = {}
        self.evidence: dict[str, _Expected] = {}
        self.problems: list[StateProblem] = []

    def apply(self, row: Mapping[str, Any]) -> None:
        seq, action, target, actor, at = row["seq"], row["action"], row["target"], row["actor"], row["at"]
        after = _after(row)
        if action == "evidence.logged":
            self.evidence[target] = _Expected(seq)
            self.evidence[target].set(seq, content_hash=after.get("content_hash"))
        elif action == "proposal.created":
            expected = self.proposals[target] = _Expected(seq)
            expected.set(
                seq,
                subject=after.get("subject"),
                decision=after.get("decision"),
                rationale=after.get("rationale"),
                proposer=actor,
                created_at=at,
                evidence=sorted(after.get("evidence") or []),
                status="pending",
                resolved_by=None,
                resolution_note=None,
                decision_id=None,
            )
        elif action == "proposal.imported":
            expected = self.proposals[target] = _Expected(seq)
            expected.set(seq, subject=after.get("subject"), status=after.get("status"))
        elif action == "proposal.ratified":
            self._resolve(row, "ratified", resolved_by=actor, decision_id=after.get("decision_id"))
            decision_id = after.get("decision_id")
            if isinstance(decision_id, str):
                created = self.decisions[decision_id] = _Expected(seq)
                created.set(
                    seq,
                    subject=after.get("subject"),
                    decision=after.get("decision"),
                    valid_from=at,
                    valid_until=None,
                    ratified_by=actor,
                    ratified_at=at,
                    proposal_id=target,
                    amended="amended_from" in after,
                    closed_by=None,
                )
                proposal = self.proposals.get(target)
                if proposal is not None and "rationale" in proposal.fields:
                    created.set(seq, rationale=proposal.fields["rationale"][0])
        elif action in ("proposal.rejected", "proposal.withdrawn"):
            self._resolve(row, action.split(".")[1], resolved_by=actor, resolution_note=after.get("reason"))
        elif action == "decision.superseded":
            self._close(row, "superseded", valid_until=after.get("valid_until"))
        elif action == "decision.retired":
            self._close(
                row, "retired", valid_until=after.get("valid_until"), close_reason=after.get("reason")
            )
        elif action == "decision.imported":
            imported = self.decisions[target] = _Expected(seq)
            imported.set(
                seq,
                subject=after.get("subject"),
                decision=after.get("decision"),
                valid_from=after.get("valid_from"),
                valid_until=after.get("valid_until"),
            )
        # Any other action changes no row this replay knows about.

    def _resolve(self, row: Mapping[str, Any], status: str, **values: Any) -> None:
        expected = self.proposals.get(row["target"])
        if expected is None:
            self.problems.append(
                StateProblem(row["seq"], f"audit row {row['seq']} resolves {row['target']}, never proposed")
            )
            return
        expected.set(row["seq"], status=status, **values)

    def _close(self, row: Mapping[str, Any], closed_by: str, **values: Any) -> None:
        expected = self.decisions.get(row["target"])
        if expected is None:
            self.problems.append(
                StateProblem(row["seq"], f"audit row {row['seq']} closes {row['target']}, never ratified")
            )
            return
        if expected.fields.get("valid_until", (None, 0))[0] is None:
            # Only closing an open window sets closed_by; superseding an already closed decision
            # (a split, or one retired earlier) links it and leaves its window as it was.
            expected.set(row["seq"], closed_by=closed_by)
        expected.set(row["seq"], **values)


def _compare(kind: str, item_id: str, expected: _Expected, actual: Any) -> StateProblem | None:
    mismatches = []
    for key, (value, seq) in expected.fields.items():
        found = getattr(actual, key)
        if key == "evidence":
            found = sorted(found)
        if found != value:
            mismatches.append((seq, key))
    if not mismatches:
        return None
    seq, key = min(mismatches, key=lambda m: m[0])  # the earliest row; ties in the log's field order
    return StateProblem(seq, f"{kind} {item_id} does not match audit row {seq} ({key} differs)")


def _chunks(ids: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


def check_state(store: Store, rows: Iterable[Mapping[str, Any]]) -> StateProblem | None:
    """Replay ``rows`` (a whole, verified chain) and name the first table row that disagrees with it."""
    replay = _Replay()
    for row in rows:
        replay.apply(row)
    problems = list(replay.problems)

    decisions = {d.id: d for d in store.decisions(include_closed=True)}
    for decision_id, expected in replay.decisions.items():
        actual = decisions.pop(decision_id, None)
        if actual is None:
            problems.append(StateProblem(expected.seq, f"decision {decision_id} is missing from the store"))
        elif (problem := _compare("decision", decision_id, expected, actual)) is not None:
            problems.append(problem)
    problems += [StateProblem(None, f"decision {i} is not in the audit log") for i in sorted(decisions)]

    proposals = {p.id: p for p in store.list_proposals(None)}
    for proposal_id, expected in replay.proposals.items():
        actual = proposals.pop(proposal_id, None)
        if actual is None:
            problems.append(StateProblem(expected.seq, f"proposal {proposal_id} is missing from the store"))
        elif (problem := _compare("proposal", proposal_id, expected, actual)) is not None:
            problems.append(problem)
    problems += [StateProblem(None, f"proposal {i} is not in the audit log") for i in sorted(proposals)]

    logged = list(replay.evidence)
    for chunk in _chunks(logged):
        found = store.evidence_by_ids(chunk)
        for evidence_id in chunk:
            expected = replay.evidence[evidence_id]
            actual = found.get(evidence_id)
            if actual is None:
                missing = f"evidence {evidence_id} is missing from the store"
                problems.append(StateProblem(expected.seq, missing))
                continue
            if (problem := _compare("evidence", evidence_id, expected, actual)) is not None:
                problems.append(problem)
            elif hashlib.sha256(actual.text.encode("utf-8")).hexdigest() != actual.content_hash:
                problems.append(
                    StateProblem(expected.seq, f"evidence {evidence_id} text does not match its content hash")
                )
    stored = store.item_count("evidence")
    if stored > len(logged):
        problems.append(
            StateProblem(None, f"the store holds {stored} evidence rows, the audit log logged {len(logged)}")
        )
    if not problems:
        return None
    return min(problems, key=lambda p: (p.seq is None, p.seq or 0))
