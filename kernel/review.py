"""What a reviewer sees before acting: queue groups, the change a ratification makes, word diffs.

Pure functions over facade records; the review app and the CLI render them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from kernel import clock
from kernel.errors import CtxError
from kernel.records import Decision, Evidence, Proposal

if TYPE_CHECKING:
    from kernel.facade import Ctx
    from kernel.recall import Related

# A proposal left this long is stale: queues that rot are how approval gates fail.
STALE_AFTER = timedelta(days=7)
# A word with the spaces after it, so a run of changed words diffs as one piece.
_TOKEN = re.compile(r"^\s+|\S+\s*")


@dataclass(frozen=True)
class QueueEntry:
    """A pending proposal with what the queue shows about it."""

    proposal: Proposal
    # The current decision on its subject, which ratifying it would supersede.
    current: Decision | None
    # The review group: its subject, with near-duplicates on other subjects (see group_queue).
    group: str
    group_size: int

    @property
    def supersedes(self) -> bool:
        """True when ratifying it would close a current decision."""
        return self.current is not None or bool(self.proposal.explicit_supersedes)


@dataclass(frozen=True)
class ClosingWindow:
    """A current decision whose validity window a ratification would close."""

    decision: Decision
    reason: str


@dataclass(frozen=True)
class RatifyPreview:
    """Exactly what ratifying a proposal changes in the kernel."""

    proposal: Proposal
    subject: str
    text: str
    amended: bool
    closes: list[ClosingWindow]
    settles: list[Proposal]
    contradicts: list[Related] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The change as plain sentences, for a confirmation."""
        out = [f"New current decision on {self.subject}{' (amended)' if self.amended else ''}:", self.text]
        for closing in self.closes:
            old = closing.decision
            out.append(
                f"Closes {old.id} on {old.subject} ({closing.reason}), valid since {old.valid_from[:10]}"
            )
        if not self.closes:
            out.append("Supersedes nothing: the subject has no current decision.")
        for other in self.settles:
            out.append(f"Closes proposal {other.id} by {other.proposer} as settled by this one")
        for related in self.contradicts:
            out.append(f"Contradicts current decision on {related.subject}: {related.text}")
        return out


@dataclass(frozen=True)
class ProposalContext:
    """Everything the detail view shows about one proposal."""

    proposal: Proposal
    current: Decision | None
    chain: list[Decision]
    contradicts: list[Related]
    related: list[Decision]
    evidence: list[Evidence]
    group: list[Proposal]
    preview: RatifyPreview


def group_queue(pending: Sequence[Proposal], current: dict[str, Decision]) -> list[QueueEntry]:
    """Queue entries in the order given, each with its review group.

    A group is a subject's pending proposals plus the proposals on other subjects flagged as
    near-duplicates of one of them. Links are not followed further: chains of near-duplicates
    would otherwise join unrelated subjects, and approving one proposal must settle only what a
    reviewer can see is the same question.
    """
    by_subject: dict[str, int] = {}
    subject_of: dict[str, str] = {}
    for proposal in pending:
        by_subject[proposal.subject] = by_subject.get(proposal.subject, 0) + 1
        subject_of[proposal.id] = proposal.subject
    linked: dict[str, set[str]] = {}
    for proposal in pending:
        other = subject_of.get(proposal.near_duplicate_of or "")
        if other is not None and other != proposal.subject:
            linked.setdefault(proposal.subject, set()).add(proposal.near_duplicate_of or "")
            linked.setdefault(other, set()).add(proposal.id)
    return [
        QueueEntry(
            p, current.get(p.subject), p.subject, by_subject[p.subject] + len(linked.get(p.subject, ()))
        )
        for p in pending
    ]


def group_members(pending: Sequence[Proposal], proposal_id: str) -> list[Proposal]:
    """The other proposals in the review group of ``proposal_id`` (see :func:`group_queue`),
    same subject first, each part oldest first; ``pending`` may hold any superset of the group."""
    mine = next((p for p in pending if p.id == proposal_id), None)
    if mine is None:
        return []
    ordered = sorted({p.id: p for p in pending}.values(), key=lambda p: (p.created_at, p.id))
    same = [p for p in ordered if p.subject == mine.subject]
    ids = {p.id for p in same}
    targets = {p.near_duplicate_of for p in same}
    others = [
        p for p in ordered if p.subject != mine.subject and (p.near_duplicate_of in ids or p.id in targets)
    ]
    return [p for p in [*same, *others] if p.id != proposal_id]


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """``(op, text)`` pieces turning ``old`` into ``new`` word by word: op is ``=``, ``-`` or ``+``."""
    import difflib  # noqa: PLC0415 - only the review app diffs; the hot path skips the import

    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    out: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.append(("=", "".join(a[i1:i2])))
            continue
        if tag in ("delete", "replace"):
            out.append(("-", "".join(a[i1:i2])))
        if tag in ("insert", "replace"):
            out.append(("+", "".join(b[j1:j2])))
    return out


def parse_stamp(stamp: str) -> datetime:
    """A canonical ctx timestamp as an aware datetime."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC)


def age(stamp: str, now: datetime) -> timedelta:
    """How long ago ``stamp`` was (never negative)."""
    return max(now - parse_stamp(stamp), timedelta(0))


def short_age(delta: timedelta) -> str:
    """``3d``, ``5h``, ``12m`` or ``40s``."""
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def as_decision(proposal: Proposal) -> Decision:
    """The decision a proposal would become, for conflict checks before it is ratified."""
    return Decision(
        id=proposal.id,
        subject=proposal.subject,
        decision=proposal.decision,
        rationale=proposal.rationale,
        valid_from=clock.now(),
        valid_until=None,
        ratified_by="",
        ratified_at="",
        proposal_id=proposal.id,
        amended=False,
        closed_by=None,
        close_reason=None,
    )


def proposal_conflicts(kernel: Ctx, proposal_ids: Sequence[str]) -> dict[str, list[Related]]:
    """The current decisions on other subjects that each proposal contradicts."""
    from kernel import recall  # noqa: PLC0415 - recall is heavy; see the facade's imports

    detector = recall.ConflictDetector(kernel.store, kernel._entity_index)
    out: dict[str, list[Related]] = {}
    for pid in proposal_ids:
        proposal = kernel.store.get_proposal(pid)
        if proposal is None:
            continue
        out[pid] = [
            recall.conflict_item(other, c.term, c.clause, c.other_clause)
            for other, c in detector.find(as_decision(proposal))
        ]
    return out


def preview(
    kernel: Ctx, proposal: Proposal, decision: str | None, settle: Sequence[str] | None
) -> RatifyPreview:
    """What ratifying ``proposal`` (with ``decision`` as amended text) would change."""
    closes: list[ClosingWindow] = []
    current = kernel.store.current_decision(proposal.subject)
    for decision_id in proposal.explicit_supersedes:
        old = kernel.store.get_decision(decision_id)
        if old is not None and old.current:
            closes.append(ClosingWindow(old, "named by the proposal"))
    if current is not None and all(c.decision.id != current.id for c in closes):
        closes.append(ClosingWindow(current, "current decision on the subject"))
    group = kernel.review_group(proposal.id)
    chosen = set(settle) if settle is not None else {p.id for p in group}
    text = (decision or proposal.decision).strip()
    conflicts = proposal_conflicts(kernel, [proposal.id]).get(proposal.id, [])
    return RatifyPreview(
        proposal=proposal,
        subject=proposal.subject,
        text=text,
        amended=text != proposal.decision,
        closes=closes,
        settles=[p for p in group if p.id in chosen],
        contradicts=conflicts,
    )


def context(kernel: Ctx, proposal: Proposal, related: int) -> ProposalContext:
    """Everything the detail view shows about ``proposal``."""
    current = kernel.store.current_decision(proposal.subject)
    chain = kernel.store.connected_decisions(proposal.subject)
    evidence_by_id = kernel.store.evidence_by_ids(proposal.evidence)
    evidence = [evidence_by_id[e] for e in proposal.evidence if e in evidence_by_id]
    similar: list[Decision] = []
    try:
        found = kernel.recall(f"{proposal.subject} {proposal.decision}", k=related + 1)
    except CtxError:
        found = None
    if found is not None:
        similar = [h.decision for h in found.decisions if h.decision.subject != proposal.subject][:related]
    if proposal.status == "pending":
        change = preview(kernel, proposal, None, None)
        contradicts, group = change.contradicts, change.settles
    else:
        change = RatifyPreview(proposal, proposal.subject, proposal.decision, False, [], [])
        contradicts, group = [], []
    return ProposalContext(proposal, current, chain, contradicts, similar, evidence, group, change)
