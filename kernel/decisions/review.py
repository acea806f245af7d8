"""What a reviewer sees before acting: queue groups, the change a ratification makes, word diffs.

Functions over records and store reads; the decision service plans with them, and the review app
and the CLI render what they return.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from ctx_kernel.kernel.errors import NotFoundError, RefusedError, UsageError
from ctx_kernel.kernel.records import Decision, Evidence, Proposal, Snapshot
from ctx_kernel.kernel.text import MAX_DECISION_CHARS, clip, require_shown, visible

if TYPE_CHECKING:
    from ctx_kernel.kernel.reports import Related, StaleDecision
    from ctx_kernel.kernel.store.base import Store

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
        """True when ratifying it would close a current decision (a re-confirmation request closes none)."""
        if self.proposal.reconfirms is not None:
            return False
        return self.current is not None or bool(self.proposal.explicit_supersedes)


@dataclass(frozen=True)
class ClosingWindow:
    """A current decision whose validity window a ratification would close."""

    decision: Decision
    reason: str


@dataclass(frozen=True)
class RatificationPlan:
    """Exactly what ratifying a proposal changes in the kernel: the one object that the preview
    shows and ``Ctx.ratify`` executes, refusing when the store no longer matches it."""

    proposal: Proposal
    subject: str
    text: str
    amended: bool
    # Every decision the new one supersedes (linked); the current ones among them are closed.
    supersedes: list[Decision]
    closes: list[ClosingWindow]
    settles: list[Proposal]
    contradicts: list[Related] = field(default_factory=list)
    # The paths and globs the proposal says its decision governs (snapshotted when ratified).
    links: list[str] = field(default_factory=list)
    # When the proposal asks to re-confirm a current decision: that act, as the person is shown it.
    reconfirmation: ReconfirmationPlan | None = None

    def closes_unseen(self) -> list[Decision]:
        """The current decisions this plan closes that its proposal was not made against (ratified
        since): what a ratification that shows nothing (``--yes``) must not close unasked."""
        known = set(self.proposal.supersedes)
        return [c.decision for c in self.closes if c.decision.id not in known]

    def key(self) -> tuple[object, ...]:
        """What must still hold when the plan is carried out (contradictions are advice, not state)."""
        return (
            self.proposal.id,
            self.text,
            tuple(d.id for d in self.supersedes),
            tuple(c.decision.id for c in self.closes),
            tuple(p.id for p in self.settles),
            None if self.reconfirmation is None else self.reconfirmation.key(),
        )

    def lines(self) -> list[str]:
        """The change as plain sentences, for a confirmation (stored text shown visibly)."""
        if self.reconfirmation is not None:
            return self._reconfirmation_lines(self.reconfirmation)
        heading = f"New current decision on {self.subject}{' (amended)' if self.amended else ''}:"
        out = [heading, visible(self.text)]
        if self.amended:
            out.append(
                "Changed from the proposed text: " + visible(plain_diff(self.proposal.decision, self.text))
            )
        closing = {c.decision.id for c in self.closes}
        for window in self.closes:
            old = window.decision
            out.append(
                f"Closes {old.id} on {old.subject} ({window.reason}), valid since {old.valid_from[:10]}: "
                + visible(_one_line(old.decision))
            )
        for old in self.supersedes:
            if old.id not in closing:
                out.append(f"Links {old.id} on {old.subject} as superseded (already closed: {old.closed_by})")
        if not self.supersedes:
            out.append("Supersedes nothing: the subject has no current decision.")
        for other in self.settles:
            out.append(
                f"Closes proposal {other.id} by {visible(other.proposer)} as settled by this one: "
                + visible(_one_line(other.decision))
            )
        for related in self.contradicts:
            out.append(f"Contradicts current decision on {related.subject}: {visible(related.text)}")
        if self.links:
            out.append("Governs (snapshotted from the git checkout): " + visible(", ".join(self.links)))
        return out

    def _reconfirmation_lines(self, reconfirmation: ReconfirmationPlan) -> list[str]:
        proposal, decision = self.proposal, reconfirmation.decision
        out = [
            f"Re-confirms {decision.id} on {decision.subject}, as {visible(proposal.proposer)} asks "
            "(no new decision, nothing superseded):",
            visible(decision.decision),
        ]
        if proposal.rationale:
            out.append("Their reasoning: " + visible(_one_line(proposal.rationale, 400)))
        if proposal.evidence:
            out.append("Their evidence: " + ", ".join(proposal.evidence))
        # The re-confirmation's own lines, less its first (the decision, said above).
        out += reconfirmation.lines()[1:]
        for other in self.settles:
            out.append(
                f"Closes proposal {other.id} by {visible(other.proposer)} as settled by this one "
                "(it asks the same)"
            )
        return out


@dataclass(frozen=True)
class ReconfirmationPlan:
    """What re-confirming a current decision records, as the person is shown it: the decision, its
    newest snapshot, what changed since (if anything), HEAD, and the review dates it will carry."""

    decision: Decision
    snapshot: Snapshot | None
    stale: StaleDecision | None
    head: str | None
    review_by: str | None
    review_every: int | None

    def key(self) -> tuple[object, ...]:
        """What must still hold when the re-confirmation is recorded."""
        stale = self.stale
        return (
            self.decision.id,
            self.decision.valid_until,
            None if self.snapshot is None else self.snapshot.taken_at,
            self.head,
            None
            if stale is None
            else (stale.commits, tuple(stale.changed_links), tuple(stale.unmatched_links)),
        )

    def lines(self) -> list[str]:
        """The act as plain sentences, for a confirmation."""
        d = self.decision
        out = [f"Re-confirm {d.id} on {d.subject}: {visible(_one_line(d.decision))}"]
        if self.snapshot is not None:
            out.append(
                f"Last confirmed by {visible(self.snapshot.taken_by)} at {self.snapshot.taken_at[:19]}"
            )
            links = [x.link for x in self.snapshot.links]
            if links:
                out.append("Governs: " + visible(", ".join(links)))
        if self.stale is not None:
            out.append(visible(self.stale.line))
            for path in [*self.stale.paths, *self.stale.renamed, *self.stale.deleted][:10]:
                out.append(f"  {visible(path)}")
        if self.head is not None:
            out.append(f"New snapshot at {self.head[:12]}")
        if self.review_by or self.review_every:
            every = f"every {self.review_every} days" if self.review_every else ""
            out.append(
                "Review "
                + " and ".join(x for x in (f"by {self.review_by}" if self.review_by else "", every) if x)
            )
        return out


def _one_line(value: str, limit: int = 120) -> str:
    return clip(value, limit)


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
    preview: RatificationPlan


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


def plain_diff(old: str, new: str) -> str:
    """A word diff as plain text, like ``git diff --word-diff=plain``: ``[-removed-]{+added+}``."""
    out: list[str] = []
    for op, piece in word_diff(old, new):
        out.append(piece if op == "=" else f"[-{piece}-]" if op == "-" else f"{{+{piece}+}}")
    return "".join(out)


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


def supersede_targets(explicit: Sequence[str], current: Decision | None) -> list[str]:
    """The decisions a proposal supersedes: those it names, and its subject's current decision."""
    targets = list(explicit)
    if current is not None and current.id not in targets:
        targets.append(current.id)
    return targets


def plan(
    store: Store,
    proposal: Proposal,
    decision: str | None,
    settle: Sequence[str] | None,
    *,
    group: Sequence[Proposal],
    contradicts: Sequence[Related] = (),
) -> RatificationPlan:
    """What ratifying ``proposal`` (with ``decision`` as amended text) would change.

    It supersedes every decision the proposal names and the subject's current decision,
    closing those still current; it settles ``settle`` (default: the whole review ``group``).
    """
    current = store.current_decision(proposal.subject)
    targets = supersede_targets(proposal.explicit_supersedes, current)
    found = store.decisions_by_ids(targets)
    missing = [t for t in targets if t not in found]
    if missing:
        raise NotFoundError(f"no decision {missing[0]}")
    supersedes = [found[t] for t in targets]
    closes = [
        ClosingWindow(
            old,
            "current decision on the subject"
            if current is not None and old.id == current.id
            else "named by the proposal",
        )
        for old in supersedes
        if old.current
    ]
    if settle is None:
        settles = list(group)
    else:
        members = {p.id: p for p in group}
        settles = []
        for other in dict.fromkeys(settle):
            if other == proposal.id:
                raise UsageError(f"{proposal.id} cannot settle itself")
            if other not in members:
                outside = store.get_proposal(other)
                if outside is None:
                    raise NotFoundError(f"no proposal {other}")
                if outside.status != "pending":
                    raise RefusedError(f"proposal {other} is {outside.status}, not pending")
                raise RefusedError(
                    f"{other} is not in the review group of {proposal.id} "
                    "(pending proposals on the same subject, and near-duplicates)"
                )
            settles.append(members[other])
    text = (
        require_shown(decision, "decision", MAX_DECISION_CHARS) if decision is not None else proposal.decision
    )
    return RatificationPlan(
        proposal=proposal,
        subject=proposal.subject,
        text=text,
        amended=text != proposal.decision,
        supersedes=supersedes,
        closes=closes,
        settles=settles,
        contradicts=list(contradicts),
    )


def stale_reason(
    shown: RatificationPlan, now: RatificationPlan, lookup: Callable[[str], Decision | None]
) -> str | None:
    """Why ``shown`` no longer describes what ratifying would do (``now``), naming what changed;
    ``lookup`` reads a decision as it stands."""
    if shown.key() == now.key():
        return None
    if shown.reconfirmation is not None:
        return (
            f"{shown.reconfirmation.decision.id} changed since it was shown (a newer commit, snapshot or "
            "act); look at it again"
        )
    shown_ids = {d.id for d in shown.supersedes}
    for window in now.closes:
        if window.decision.id not in shown_ids:
            new = window.decision
            return (
                f"{new.subject} now has current decision {new.id}, ratified by {visible(new.ratified_by)} "
                f"at {new.ratified_at[:19]}, which the approval you saw did not close; review it again"
            )
    still_open = {c.decision.id for c in now.closes}
    for window in shown.closes:
        old = lookup(window.decision.id) or window.decision
        if old.id not in still_open:
            when = f" at {old.valid_until[:19]}" if old.valid_until else ""
            return (
                f"{old.id} on {old.subject}, which the approval you saw closes, was "
                f"{old.closed_by or 'closed'}{when} since; review it again"
            )
    return "what ratifying changes is no longer what you saw; review it again"


def context(
    store: Store, proposal: Proposal, similar: list[Decision], change: RatificationPlan | None
) -> ProposalContext:
    """Everything the detail view shows about ``proposal``, given the decisions recall found
    ``similar`` to it and, while it is pending, the ``change`` ratifying it would make."""
    current = store.current_decision(proposal.subject)
    chain = store.connected_decisions(proposal.subject)
    evidence_by_id = store.evidence_by_ids(proposal.evidence)
    evidence = [evidence_by_id[e] for e in proposal.evidence if e in evidence_by_id]
    if change is not None:
        contradicts, group = change.contradicts, change.settles
    else:
        change = RatificationPlan(proposal, proposal.subject, proposal.decision, False, [], [], [])
        contradicts, group = [], []
    return ProposalContext(proposal, current, chain, contradicts, similar, evidence, group, change)
