"""The decision kernel's write path and reads: ratifying a planned change, retiring a decision,
and the one place a decision is written (ratified or imported) with its mentions, its audit row and
its supersession links."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ctx_kernel.kernel import clock, ids, text
from ctx_kernel.kernel.decisions import review
from ctx_kernel.kernel.decisions.queue import QueueService
from ctx_kernel.kernel.decisions.review import ProposalContext, RatificationPlan, ReconfirmationPlan
from ctx_kernel.kernel.errors import CtxError, NotFoundError, RefusedError, StalePlanError, UsageError
from ctx_kernel.kernel.facts.links import check_review
from ctx_kernel.kernel.facts.service import FactsService
from ctx_kernel.kernel.language import entities
from ctx_kernel.kernel.limits import (
    DECISION_CONFIRMED,
    DECISION_RETIRED,
    DECISION_SUPERSEDED,
    MAX_LIST_LIMIT,
    PROPOSAL_RATIFIED,
    PROPOSAL_REJECTED,
)
from ctx_kernel.kernel.payloads import (
    AuditPayload,
    DecisionConfirmed,
    DecisionRetired,
    DecisionSuperseded,
    DecisionWindow,
    ProposalClosed,
    ProposalRatified,
    ProposalState,
)
from ctx_kernel.kernel.recall.service import RecallService
from ctx_kernel.kernel.records import (
    ABSENT,
    Decision,
    Evidence,
    History,
    LinkDigest,
    Proposal,
    Ratification,
    Snapshot,
    SnapshotAct,
    Timeline,
    omit_none,
)
from ctx_kernel.kernel.store.base import Store

if TYPE_CHECKING:
    from ctx_kernel.kernel.facts.stale import StaleFacts
    from ctx_kernel.kernel.reports import Related


class DecisionService:
    """Ratified decisions: a person's acts turn proposals into them, close them and link them."""

    def __init__(
        self,
        store: Store,
        queue: QueueService,
        recall: RecallService,
        facts: FactsService,
        stale: StaleFacts | None = None,
    ) -> None:
        self.store = store
        self.queue = queue
        self.recall = recall
        self.facts = facts
        # Snapshots of the repository at a person's acts; None: none are taken (no git asked).
        self.stale = stale

    # -- the write path -----------------------------------------------------------------------

    def write(
        self,
        decision: Decision,
        *,
        actor: str,
        at: str,
        action: str,
        target: str,
        before: AuditPayload | None,
        after: AuditPayload,
    ) -> None:
        """Insert ``decision`` with its entity mentions and log the act that made it (``action`` on
        ``target``), inside the caller's transaction."""
        self.store.insert_decision(decision)
        self.store.add_mentions(
            decision.id, entities.for_decision(decision.subject, decision.decision, decision.rationale)
        )
        self.store.append_audit(
            at, actor, action, target, None if before is None else before.to_dict(), after.to_dict()
        )

    def link(
        self, old_id: str, change: DecisionSuperseded, *, actor: str, logged_at: str, was_until: str | None
    ) -> None:
        """Link ``old_id`` as superseded by ``change.superseded_by`` from the time ``change`` says and
        log it at ``logged_at``, inside the caller's transaction; ``was_until`` is the old decision's
        end before. Refuses a link that would make a cycle."""
        new_id = change.superseded_by
        if self.store.is_ancestor(old_id, new_id):
            raise RefusedError(f"superseding {old_id} would make a cycle")
        self.store.link(old_id, new_id, change.linked(logged_at))
        self.store.append_audit(
            logged_at,
            actor,
            DECISION_SUPERSEDED,
            old_id,
            DecisionWindow(valid_until=was_until).to_dict(),
            change.to_dict(),
        )

    # -- ratification -------------------------------------------------------------------------

    def plan_ratification(
        self,
        proposal_id: str,
        *,
        decision: str | None = None,
        settle: Sequence[str] | None = None,
        contradicts: bool = True,
    ) -> RatificationPlan:
        """What ratifying would change: the new decision, what it supersedes and closes, the
        proposals it settles (default: its whole review group) and, with ``contradicts``, the
        current decisions it contradicts. The one place this is worked out: the preview shows it
        and :meth:`ratify` carries it out."""
        settled = None if settle is None else [self.queue.vault.resolve_id(s, "proposal") for s in settle]
        pending = self.queue.pending(proposal_id)
        if pending.reconfirms is not None:
            return self._plan_requested_reconfirmation(pending, decision, settled)
        group = self.queue.review_group(pending.id)
        found: list[Related] = []
        if contradicts:
            found = self.proposal_conflicts([pending.id]).get(pending.id, [])
        plan = review.plan(self.store, pending, decision, settled, group=group, contradicts=found)
        links = self.store.proposal_links(pending.id)
        return replace(plan, links=links) if links else plan

    def _plan_requested_reconfirmation(
        self, pending: Proposal, decision: str | None, settle: Sequence[str] | None
    ) -> RatificationPlan:
        """Ratifying a request to re-confirm: the person's re-confirmation of that decision, planned
        as :meth:`plan_reconfirmation` plans it. There is no text to amend, and it settles only the
        other pending requests to re-confirm the same decision (default: all of them)."""
        target = pending.reconfirms
        assert target is not None
        if decision is not None and decision != pending.decision:
            raise UsageError(
                f"{pending.id} asks to re-confirm {target}: it is ratified as the decision stands, "
                "not amended (propose a new decision to change it)"
            )
        same = {p.id: p for p in self.queue.review_group(pending.id) if p.reconfirms == target}
        if settle is None:
            settles = list(same.values())
        else:
            outside = [s for s in settle if s not in same]
            if outside:
                raise UsageError(
                    f"{pending.id} asks to re-confirm {target}: it settles only other requests to "
                    f"re-confirm it, not {outside[0]}"
                )
            settles = [same[s] for s in dict.fromkeys(settle)]
        reconfirmation = self.plan_reconfirmation(target)
        return RatificationPlan(
            proposal=pending,
            subject=pending.subject,
            text=pending.decision,
            amended=False,
            supersedes=[],
            closes=[],
            settles=settles,
            reconfirmation=reconfirmation,
        )

    def ratify(
        self,
        proposal: str | RatificationPlan,
        *,
        reviewer: str,
        decision: str | None = None,
        settle: Sequence[str] | None = None,
        review_by: str | None = None,
        review_every: str | int | None = None,
    ) -> Ratification:
        """A person's act: turn a pending proposal into the current decision on its subject.

        Given a plan from :meth:`plan_ratification` (what the person was shown), carries out exactly
        that plan, or refuses with :class:`StalePlanError` naming what changed since. Given a proposal
        id, plans and carries out in one step: ``decision`` ratifies an amended text (recorded),
        ``settle`` names the review-group proposals closed as settled by this one (default: the whole
        group, as the review app does). Atomically closes the windows the plan closes and links each
        superseded decision. ``review_by`` (a date) and ``review_every`` (days, or ``90d``) make it
        due for review; with the proposal's links they are kept in a snapshot of the git checkout.
        """
        reviewer = text.require_shown(reviewer, "reviewer", text.MAX_NAME_CHARS)
        review_dates = check_review(review_by, review_every)
        with self.store.transaction():
            return self._ratify(proposal, reviewer, decision, settle, review_dates)

    def ratify_all(self, plans: Sequence[RatificationPlan], *, reviewer: str) -> list[Ratification]:
        """Ratify several shown plans in one transaction: all of them, or none if any is refused."""
        reviewer = text.require_shown(reviewer, "reviewer", text.MAX_NAME_CHARS)
        touched: dict[str, str] = {}
        for plan in plans:
            for pid in [plan.proposal.id, *(p.id for p in plan.settles)]:
                if pid in touched:
                    raise UsageError(f"{pid} is in the plans of both {touched[pid]} and {plan.proposal.id}")
                touched[pid] = plan.proposal.id
        with self.store.transaction():
            return [self._ratify(plan, reviewer, None, None, (None, None)) for plan in plans]

    def _ratify(
        self,
        proposal: str | RatificationPlan,
        reviewer: str,
        decision: str | None,
        settle: Sequence[str] | None,
        review_dates: tuple[str | None, int | None],
    ) -> Ratification:
        """Plan again inside the transaction and carry out the plan, if it is still the one shown."""
        if isinstance(proposal, RatificationPlan):
            if decision is not None or settle is not None:
                raise UsageError("a ratification plan already holds the text and the proposals it settles")
            shown = proposal
            self._still_pending(shown.proposal.id, None)
            for other in shown.settles:
                self._still_pending(other.id, shown.proposal.id)
            amended = shown.text if shown.amended else None
            plan = self.plan_ratification(
                shown.proposal.id, decision=amended, settle=[p.id for p in shown.settles], contradicts=False
            )
            reason = review.stale_reason(shown, plan, self.store.get_decision)
            if reason is not None:
                raise StalePlanError(f"not ratified: {reason}")
        else:
            plan = self.plan_ratification(proposal, decision=decision, settle=settle, contradicts=False)
        return self._carry_out(plan, reviewer, review_dates)

    def _still_pending(self, proposal_id: str, settled_by: str | None) -> Proposal:
        found = self.queue.proposal(proposal_id)
        if found.status == "pending":
            return found
        when = f" by {text.visible(found.resolved_by or '?')} at {(found.resolved_at or '?')[:19]}"
        if settled_by is None:
            raise RefusedError(f"proposal {found.id} was already {found.status}{when}")
        raise StalePlanError(
            f"not ratified: {found.id}, which approving {settled_by} was shown to settle, was "
            f"{found.status}{when} since; review it again"
        )

    def _carry_out(
        self, plan: RatificationPlan, reviewer: str, review_dates: tuple[str | None, int | None]
    ) -> Ratification:
        """Write ``plan`` inside the caller's transaction (its freshness already checked)."""
        if plan.reconfirmation is not None:
            return self._carry_out_requested_reconfirmation(plan, plan.reconfirmation, reviewer, review_dates)
        proposal = plan.proposal
        replaced = plan.supersedes
        # A successor never starts before what it replaces, even if the wall clock stepped back.
        at = clock.latest([clock.now(), *(old.valid_from for old in replaced)])
        new = Decision(
            id=ids.new_id("dc"),
            subject=proposal.subject,
            decision=plan.text,
            rationale=proposal.rationale,
            valid_from=at,
            valid_until=None,
            ratified_by=reviewer,
            ratified_at=at,
            proposal_id=proposal.id,
            amended=plan.amended,
            closed_by=None,
            close_reason=None,
            evidence=list(proposal.evidence),
            title=proposal.title,
            deciders=list(proposal.deciders),
        )
        for window in plan.closes:
            self.store.close_decision(window.decision.id, at, "superseded", f"superseded by {new.id}")
        ratified = ProposalRatified(
            status="ratified",
            decision_id=new.id,
            subject=new.subject,
            decision=new.decision,
            supersedes=[old.id for old in replaced],
            evidence=list(new.evidence),
            title=omit_none(new.title),
            deciders=new.deciders or ABSENT,
            amended_from=proposal.decision if new.amended else ABSENT,
        )
        self.write(
            new,
            actor=reviewer,
            at=at,
            action=PROPOSAL_RATIFIED,
            target=proposal.id,
            before=ProposalState(status="pending"),
            after=ratified,
        )
        for old in replaced:
            # A decision closed before (retired, or split) is only linked: its window and reason stay.
            change = DecisionSuperseded(
                valid_until=old.valid_until or at,
                superseded_by=new.id,
                reason=ABSENT if old.valid_until else f"superseded by {new.id}",
            )
            self.link(old.id, change, actor=reviewer, logged_at=at, was_until=old.valid_until)
        self.facts.record_conflicts([new.id])
        if plan.links or review_dates != (None, None):
            self.confirm(new.id, plan.links, at=at, by=reviewer, act="ratified", review_dates=review_dates)
        self.store.resolve_proposal(proposal.id, "ratified", at, reviewer, None, new.id)
        settled = [other.id for other in plan.settles]
        for other in settled:
            note = f"settled by {proposal.id}, ratified as {new.id}"
            self._settle(other, note, at=at, reviewer=reviewer, by=proposal.id, decision_id=new.id)
        result = self.store.get_decision(new.id)
        assert result is not None
        return Ratification(proposal.id, result, [old.id for old in replaced], settled)

    def _carry_out_requested_reconfirmation(
        self,
        plan: RatificationPlan,
        shown: ReconfirmationPlan,
        reviewer: str,
        review_dates: tuple[str | None, int | None],
    ) -> Ratification:
        """Re-confirm the decision a request asked about and resolve the request as ratified naming
        it, inside the caller's transaction: the proposal's audit row says no decision was made."""
        proposal, decision = plan.proposal, shown.decision
        if review_dates != (None, None):
            shown = replace(shown, review_by=review_dates[0], review_every=review_dates[1])
        snapshot = self._record_reconfirmation(shown, reviewer)
        ratified = ProposalRatified(
            status="ratified",
            decision_id=decision.id,
            subject=decision.subject,
            decision=decision.decision,
            supersedes=[],
            evidence=ABSENT,
            reconfirmed=decision.id,
        )
        self.store.append_audit(
            snapshot.taken_at,
            reviewer,
            PROPOSAL_RATIFIED,
            proposal.id,
            ProposalState(status="pending").to_dict(),
            ratified.to_dict(),
        )
        at = snapshot.taken_at
        self.store.resolve_proposal(proposal.id, "ratified", at, reviewer, None, decision.id)
        settled = [other.id for other in plan.settles]
        note = f"settled by {proposal.id}, which re-confirmed {decision.id}"
        for other in settled:
            self._settle(other, note, at=at, reviewer=reviewer, by=proposal.id, decision_id=decision.id)
        return Ratification(proposal.id, decision, [], settled, reconfirmed=True)

    def _settle(
        self, proposal_id: str, note: str, *, at: str, reviewer: str, by: str, decision_id: str
    ) -> None:
        """Close a pending proposal as settled by the one ``by`` ratified, inside the caller's transaction."""
        self.store.resolve_proposal(proposal_id, "rejected", at, reviewer, note, None)
        self.store.append_audit(
            at,
            reviewer,
            PROPOSAL_REJECTED,
            proposal_id,
            ProposalState(status="pending").to_dict(),
            ProposalClosed(status="rejected", reason=note, settled_by=by, decision_id=decision_id).to_dict(),
        )

    def _record_reconfirmation(self, plan: ReconfirmationPlan, reviewer: str) -> Snapshot:
        """A person's re-confirmation as ``plan`` holds it, inside the caller's transaction."""
        links = [] if plan.snapshot is None else [x.link for x in plan.snapshot.links]
        return self.confirm(
            plan.decision.id,
            links,
            at=clock.latest([clock.now(), *([] if plan.snapshot is None else [plan.snapshot.taken_at])]),
            by=reviewer,
            act="reconfirmed",
            review_dates=(plan.review_by, plan.review_every),
        )

    def confirm(
        self,
        decision_id: str,
        links: Sequence[str],
        *,
        at: str,
        by: str,
        act: SnapshotAct,
        review_dates: tuple[str | None, int | None],
    ) -> Snapshot:
        """Record a person's ratification or re-confirmation of a decision with a snapshot of the git
        checkout (HEAD, and what each link matches) and its audit row, inside the caller's transaction."""
        checkout = self.stale.checkout() if self.stale is not None and links else None
        if self.stale is not None:
            snapshot = self.stale.snapshot(
                decision_id,
                links,
                at=at,
                by=by,
                act=act,
                review_by=review_dates[0],
                review_every=review_dates[1],
                checkout=checkout,
            )
        else:
            snapshot = Snapshot(
                decision_id, at, by, act, None, [LinkDigest(x, None, 0) for x in links], *review_dates
            )
        self.store.insert_snapshot(snapshot)
        confirmed = DecisionConfirmed(
            act=act,
            git_commit=snapshot.git_commit,
            links=[x.to_dict() for x in snapshot.links],
            review_by=snapshot.review_by,
            review_every=snapshot.review_every,
        )
        self.store.append_audit(at, by, DECISION_CONFIRMED, decision_id, None, confirmed.to_dict())
        return snapshot

    def plan_reconfirmation(
        self, decision_id: str, *, review_by: str | None = None, review_every: str | int | None = None
    ) -> ReconfirmationPlan:
        """What re-confirming a current decision records: the one place this is worked out, shown to
        the person and then carried out by :meth:`reconfirm`. Without new review dates it keeps the
        interval it had (a review date it had is met by the act)."""
        found = self.decision(decision_id)
        if not found.current:
            raise RefusedError(
                f"{found.id} is not current ({found.closed_by}): only a current decision is re-confirmed"
            )
        dates = check_review(review_by, review_every)
        snapshots = self.store.snapshots_of(found.id)
        newest = snapshots[-1] if snapshots else None
        if dates == (None, None) and newest is not None:
            dates = (None, newest.review_every)
        report = self.stale.report() if self.stale is not None else None
        item = None if report is None else next((x for x in report.stale if x.decision_id == found.id), None)
        return ReconfirmationPlan(found, newest, item, None if report is None else report.head, *dates)

    def reconfirm(
        self,
        target: str | ReconfirmationPlan,
        *,
        reviewer: str,
        review_by: str | None = None,
        review_every: str | int | None = None,
    ) -> Snapshot:
        """A person's act: confirm that a current decision still holds, with a new snapshot of the git
        checkout. Given a shown plan, refuses with :class:`StalePlanError` if what it showed changed."""
        reviewer = text.require_shown(reviewer, "reviewer", text.MAX_NAME_CHARS)
        if isinstance(target, ReconfirmationPlan):
            if review_by is not None or review_every is not None:
                raise UsageError("a re-confirmation plan already holds its review dates")
            shown = target
        else:
            shown = self.plan_reconfirmation(target, review_by=review_by, review_every=review_every)
        with self.store.transaction():
            plan = self.plan_reconfirmation(
                shown.decision.id, review_by=shown.review_by, review_every=shown.review_every
            )
            if plan.key() != shown.key():
                raise StalePlanError(
                    f"not re-confirmed: {shown.decision.id} changed since it was shown (a newer commit, "
                    "snapshot or act); look at it again"
                )
            return self._record_reconfirmation(plan, reviewer)

    # -- review -------------------------------------------------------------------------------

    def proposal_conflicts(self, proposal_ids: Sequence[str]) -> dict[str, list[Related]]:
        """For each pending proposal, the current decisions on other subjects it contradicts."""
        resolved = [self.queue.vault.resolve_id(p, "proposal") for p in proposal_ids]
        found = [self.store.get_proposal(pid) for pid in resolved]
        return self.facts.proposal_conflicts([p for p in found if p is not None])

    def proposal_context(self, proposal_id: str, *, related: int = 5) -> ProposalContext:
        """A proposal with its subject's current decision and chain, contradictions, related decisions
        found by recall, cited evidence, review group, and the change ratifying it would make."""
        proposal = self.queue.proposal(proposal_id)
        similar: list[Decision] = []
        self.facts.keep_current()
        try:
            found = self.recall.recall(f"{proposal.subject} {proposal.decision}", k=related + 1)
        except CtxError:
            found = None
        if found is not None:
            similar = [h.decision for h in found.decisions if h.decision.subject != proposal.subject][
                :related
            ]
        change = None
        if proposal.status == "pending":
            try:
                change = self.plan_ratification(proposal.id)
            except RefusedError:
                # A request to re-confirm a decision closed since: shown, and refused if ratified.
                if proposal.reconfirms is None:
                    raise
        return review.context(self.store, proposal, similar, change)

    # -- other acts and reads ----------------------------------------------------------------

    def retire(self, subject: str, *, reviewer: str, reason: str) -> Decision:
        """Close the current decision on a subject with no successor."""
        subject = text.normalise_subject(subject)
        reviewer = text.require_shown(reviewer, "reviewer", text.MAX_NAME_CHARS)
        reason = text.require_shown(reason, "reason", text.MAX_REASON_CHARS)
        with self.store.transaction():
            current = self.store.current_decision(subject)
            if current is None:
                raise RefusedError(f"no current decision on {subject} to retire")
            at = clock.now()
            self.store.close_decision(current.id, at, "retired", reason)
            self.store.append_audit(
                at,
                reviewer,
                DECISION_RETIRED,
                current.id,
                DecisionWindow(valid_until=None).to_dict(),
                DecisionRetired(valid_until=at, reason=reason).to_dict(),
            )
            return self._require_decision(current.id)

    def _require_decision(self, decision_id: str) -> Decision:
        found = self.store.get_decision(decision_id)
        if found is None:
            raise NotFoundError(f"no decision {decision_id}")
        return found

    def decision(self, decision_id: str) -> Decision:
        """One decision by id."""
        return self._require_decision(self.queue.vault.resolve_id(decision_id, "decision"))

    def show(self, item_id: str) -> Evidence | Proposal | Decision:
        """Any record by id."""
        checked = self.queue.vault.resolve_id(item_id)
        kind = ids.ID_PREFIXES[checked[:2]]
        if kind == "evidence":
            return self.queue.vault.evidence(checked)
        if kind == "proposal":
            return self.queue.proposal(checked)
        return self.decision(checked)

    def decisions(
        self,
        subject: str | None = None,
        *,
        as_of: str | None = None,
        include_closed: bool = False,
        limit: int | None = None,
    ) -> list[Decision]:
        """Current decisions, those valid at ``as_of``, or all of them; ``subject`` takes a subtree;
        the first ``limit`` (by subject) when given."""
        subject = text.normalise_subject(subject) if subject is not None else None
        moment = clock.parse_when(as_of) if as_of is not None else None
        return self.store.decisions(subject, moment, include_closed, text.check_limit(limit, MAX_LIST_LIMIT))

    def timeline(self, target: str, around: int) -> Timeline:
        """A subject's records in time order, told whole or around one record (``decisions/timeline.py``)."""
        from ctx_kernel.kernel.decisions.timeline import timeline  # noqa: PLC0415

        return timeline(self, target, around)

    def history(self, subject: str) -> list[Decision]:
        """A subject's supersede chain, with the decisions on other subjects it links to, oldest first."""
        subject = text.normalise_subject(subject)
        chain = self.store.connected_decisions(subject)
        if not chain:
            raise NotFoundError(f"no decisions on {subject}")
        return chain

    def subject_history(self, subject: str, *, limit: int | None = None) -> History:
        """A subject's chain and the proposals on it that were rejected or withdrawn, each oldest
        first (the newest ``limit`` of each when given); refused when the subject has neither."""
        subject = text.normalise_subject(subject)
        limit = text.check_limit(limit, MAX_LIST_LIMIT)
        with self.store.snapshot():
            chain = self.store.connected_decisions(subject, limit)
            proposals = self.store.closed_proposals(subject, limit)
            pending = [] if chain or proposals else self.store.list_proposals("pending", subject, 1)
        if not chain and not proposals:
            waiting = (
                f" (a proposal on it waits for review: ctx queue --subject {subject})" if pending else ""
            )
            raise NotFoundError(f"no decisions on {subject}, and no rejected or withdrawn proposals{waiting}")
        return History(subject, chain, proposals)
