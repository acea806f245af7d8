"""The reviewer's acts, shared by the queue and the detail screen: each goes through the facade."""

from __future__ import annotations

from collections.abc import Callable

from ctx_kernel.kernel.facade import (
    Ctx,
    Decision,
    Proposal,
    Ratification,
    RatificationPlan,
    StalePlanError,
    plural,
)
from ctx_kernel.tui.dialogs.confirm import ConfirmDialog
from ctx_kernel.tui.dialogs.edit import Draft, EditDialog
from ctx_kernel.tui.dialogs.reason import ReasonDialog
from ctx_kernel.tui.dialogs.reviewer import ReviewerDialog
from ctx_kernel.tui.screens.base import KernelScreen


def named(ctx: Ctx, ids: list[str]) -> list[str]:
    """The handles of ``ids`` (the short names lists print), in their order."""
    names = ctx.handles(ids)
    return [names.get(i, i) for i in ids]


class ReviewActions(KernelScreen):
    """Approve, edit then approve, reject, withdraw; every act is confirmed only when irreversible."""

    # The key that drafts a replacement for the last approval, where the screen has one.
    UNDO_KEY: str | None = None

    def as_reviewer(self, act: Callable[[], object]) -> None:
        """Run ``act`` once the name to record is settled: a login-name guess is confirmed once."""
        backend = self.backend
        if backend.reviewer_confirmed:
            act()
            return

        def answered(name: str | None) -> None:
            if name is None:
                return
            backend.confirm_reviewer(name)
            self.app.sub_title = f"reviewer: {name}"
            act()

        self.app.push_screen(ReviewerDialog(backend.reviewer), answered)

    def acted(self, message: str) -> None:
        """After an act: say what happened (one line over the key bar) and read the store again."""
        self.notify(message, markup=False)
        self.reload()

    def drop_drafts(self, *proposal_ids: str) -> None:
        """Forget the kept edits of proposals that are no longer pending."""
        for pid in proposal_ids:
            self.review_app.drafts.pop(pid, None)

    def draft_changed(self) -> None:
        """A kept edit changed: show what approving would now ratify."""

    # -- approve --------------------------------------------------------------------------

    def approve(self, proposal_id: str, decision: str | None = None, *, note: str | None = None) -> None:
        """Show exactly what ratifying changes (the kernel's plan), then carry out that plan.

        Without ``decision``, the text is the proposal's, or the edit kept from a cancelled approval.
        """
        if decision is None:
            decision = self.review_app.drafts.get(proposal_id)
        self.as_reviewer(
            lambda: self.fetch(
                lambda k: k.plan_ratification(proposal_id, decision=decision),
                lambda plan: self._confirm_approve(plan, note),
                group="act",
            )
        )

    def _confirm_approve(self, plan: RatificationPlan, note: str | None) -> None:
        reviewer = self.backend.reviewer

        def ratify(ctx: Ctx) -> tuple[Ratification, list[str]] | StalePlanError:
            try:
                done = ctx.ratify(plan, reviewer=reviewer)
            except StalePlanError as exc:
                return exc
            return done, named(ctx, [done.decision.id, *done.superseded])

        def answered(yes: bool | None) -> None:
            if yes:
                self.fetch(ratify, lambda r: self._approved(r, plan), group="act")

        lines = plan.lines() if note is None else [note, "", *plan.lines()]
        title = f"Approve as {reviewer}?"
        self.app.push_screen(ConfirmDialog(title, lines, "Approve"), answered)

    def _approved(
        self, result: tuple[Ratification, list[str]] | StalePlanError, plan: RatificationPlan
    ) -> None:
        if isinstance(result, StalePlanError):
            # Another reviewer acted first: show the plan as it now stands, never the old one.
            self.notify(result.message, title="ctx", severity="warning", timeout=10, markup=False)
            self.reload()
            amended = plan.text if plan.amended else None
            self.approve(plan.proposal.id, amended, note=f"The store changed: {result.message}")
            return
        done, (name, *superseded) = result
        self.drop_drafts(done.proposal_id, *done.settled)
        if done.reconfirmed:
            asker = plan.proposal.proposer
            self.acted(f"Re-confirmed {done.decision.subject} ({name}), as {asker} asked.")
            return
        self.review_app.last_ratified = done.decision
        # Short enough for one line at 80 columns: a toast sits over the key bar, not over the
        # proposal that opens next.
        parts = [f"Ratified {done.decision.subject} as {name}"]
        if superseded:
            parts.append(f"superseding {', '.join(superseded)}")
        if done.settled:
            parts.append(f"settling {len(done.settled)} more")
        hint = f" ({self.UNDO_KEY} drafts a replacement)" if self.UNDO_KEY else ""
        self.acted(", ".join(parts) + hint + ".")

    def edit_then_approve(self, proposal: Proposal) -> None:
        """Amend the text in an editor, then approve the amended decision.

        The edit is kept until the proposal is resolved: cancelling the approval does not lose it,
        and the next approval or edit of the proposal starts from it.
        """
        drafts = self.review_app.drafts

        def edited(draft: Draft | None) -> None:
            if draft is None:
                return
            if draft.text == proposal.decision:
                drafts.pop(proposal.id, None)
            else:
                drafts[proposal.id] = draft.text
            self.draft_changed()
            self.approve(proposal.id, draft.text)

        note = (
            "The amendment is recorded next to the proposed text. "
            "Ctrl+S to continue, Ctrl+R for the proposed text, Esc to cancel."
        )
        dialog = EditDialog(
            f"Edit {proposal.subject}",
            drafts.get(proposal.id, proposal.decision),
            note=note,
            original=proposal.decision,
        )
        self.app.push_screen(dialog, edited)

    def approve_many(self, proposals: list[Proposal], groups: dict[str, str]) -> None:
        """Approve a selection after one confirmation that lists it; one proposal per review group."""
        seen: dict[str, str] = {}
        for proposal in proposals:
            group = groups.get(proposal.id, proposal.id)
            if group in seen:
                self.notify(
                    f"{seen[group]} and {proposal.id} are in one review group: select one of them",
                    severity="warning",
                    markup=False,
                )
                return
            seen[group] = proposal.id
        ids = [p.id for p in proposals]
        drafts = dict(self.review_app.drafts)

        def plans(ctx: Ctx) -> list[RatificationPlan]:
            return [ctx.plan_ratification(pid, decision=drafts.get(pid)) for pid in ids]

        def confirm(found: list[RatificationPlan]) -> None:
            reviewer = self.backend.reviewer
            lines: list[str] = []
            for plan in found:
                lines.append(f"• {plan.subject}: {plan.text}")
                lines.extend(f"    {line}" for line in plan.lines()[2:])

            def ratify_all(ctx: Ctx) -> list[Ratification] | StalePlanError:
                try:
                    return ctx.ratify_all(found, reviewer=reviewer)
                except StalePlanError as exc:
                    return exc

            def answered(yes: bool | None) -> None:
                if yes:
                    self.fetch(ratify_all, self._approved_many, group="act")

            which = "this proposal" if len(found) == 1 else f"these {len(found)} proposals"
            title = f"Approve {which} as {reviewer}?"
            self.app.push_screen(ConfirmDialog(title, lines, f"Approve {len(found)}"), answered)

        self.as_reviewer(lambda: self.fetch(plans, confirm, group="act"))

    def _approved_many(self, results: list[Ratification] | StalePlanError) -> None:
        if isinstance(results, StalePlanError):
            message = f"Nothing was ratified: {results.message}"
            self.notify(message, title="ctx", severity="warning", timeout=10, markup=False)
            self.reload()
            return
        if results:
            self.review_app.last_ratified = results[-1].decision
        for done in results:
            self.drop_drafts(done.proposal_id, *done.settled)
        self.acted(f"Ratified {plural(len(results), 'proposal')}.")

    # -- reject and withdraw --------------------------------------------------------------

    def reject(self, proposal: Proposal) -> None:
        """Reject with a reason, which is required and kept for audit."""

        def answered(reason: str | None) -> None:
            reviewer = self.backend.reviewer
            if reason:
                self.fetch(
                    lambda k: named(k, [k.reject(proposal.id, reviewer=reviewer, reason=reason).id]),
                    lambda names: self._resolved(proposal, f"Rejected {names[0]} on {proposal.subject}."),
                    group="act",
                )

        self.as_reviewer(
            lambda: self.app.push_screen(ReasonDialog(f"Reject {proposal.subject}: why?"), answered)
        )

    def withdraw(self, proposal: Proposal) -> None:
        """Withdraw a proposal (an optional reason)."""

        def answered(reason: str | None) -> None:
            reviewer = self.backend.reviewer
            if reason is None:
                return
            self.fetch(
                lambda k: named(k, [k.withdraw(proposal.id, actor=reviewer, reason=reason or None).id]),
                lambda names: self._resolved(proposal, f"Withdrew {names[0]} on {proposal.subject}."),
                group="act",
            )

        title = f"Withdraw {proposal.subject}?"
        self.as_reviewer(
            lambda: self.app.push_screen(ReasonDialog(title, required=False, action="Withdraw"), answered)
        )

    def _resolved(self, proposal: Proposal, message: str) -> None:
        self.drop_drafts(proposal.id)
        self.acted(message)

    # -- a ratified decision is never edited in place -------------------------------------

    def propose_replacement(self, decision: Decision, *, text: str | None = None) -> None:
        """Draft a new proposal that supersedes ``decision`` (the only way to change it)."""

        def drafted(draft: Draft | None) -> None:
            reviewer = self.backend.reviewer
            if draft is None:
                return

            def propose(ctx: Ctx) -> list[str]:
                made = ctx.propose(
                    decision.subject,
                    draft.text,
                    rationale=draft.rationale,
                    supersedes=[decision.id],
                    proposer=reviewer,
                )
                return named(ctx, [made.id, decision.id])

            self.fetch(
                propose,
                lambda names: self.acted(f"Proposed {names[0]} to supersede {names[1]}; it is in the queue."),
                group="act",
            )

        note = (
            f"A ratified decision cannot be changed or undone in place. This drafts a new proposal on "
            f"{decision.subject} that supersedes {decision.id}; it goes to the queue for review."
        )
        self.as_reviewer(
            lambda: self.app.push_screen(
                EditDialog(
                    f"Replace {decision.subject}", text or decision.decision, note=note, rationale=True
                ),
                drafted,
            )
        )
