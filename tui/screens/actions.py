"""The reviewer's acts, shared by the queue and the detail screen: each goes through the facade."""

from __future__ import annotations

from kernel.facade import Ctx, Decision, Proposal, Ratification, RatifyPreview
from tui.dialogs.confirm import ConfirmDialog
from tui.dialogs.edit import Draft, EditDialog
from tui.dialogs.reason import ReasonDialog
from tui.screens.base import KernelScreen


class ReviewActions(KernelScreen):
    """Approve, edit then approve, reject, withdraw; every act is confirmed only when irreversible."""

    def acted(self, message: str) -> None:
        """After an act: say what happened and read the store again."""
        self.notify(message, title="ctx", markup=False)
        self.reload()

    # -- approve --------------------------------------------------------------------------

    def approve(self, proposal_id: str, decision: str | None = None) -> None:
        """Show exactly what ratifying changes, then ratify on confirmation."""
        self.fetch(
            lambda k: k.preview_ratify(proposal_id, decision=decision),
            self._confirm_approve,
            group="act",
        )

    def _confirm_approve(self, preview: RatifyPreview) -> None:
        reviewer = self.backend.reviewer
        pid = preview.proposal.id
        settle = [p.id for p in preview.settles]
        amended = preview.text if preview.amended else None

        def ratify(kernel: Ctx) -> Ratification:
            return kernel.ratify(pid, reviewer=reviewer, decision=amended, settle=settle)

        def answered(yes: bool | None) -> None:
            if yes:
                self.fetch(ratify, self._approved, group="act")

        title = f"Approve as {reviewer}?"
        self.app.push_screen(ConfirmDialog(title, preview.lines(), "Approve"), answered)

    def _approved(self, result: Ratification) -> None:
        self.app.last_ratified = result.decision  # type: ignore[attr-defined]
        parts = [f"Ratified {result.decision.subject} as {result.decision.id}"]
        if result.superseded:
            parts.append(f"superseding {', '.join(result.superseded)}")
        if result.settled:
            parts.append(f"settling {len(result.settled)} more")
        self.acted("; ".join(parts) + ". It cannot be undone in place (u drafts a replacement).")

    def edit_then_approve(self, proposal: Proposal) -> None:
        """Amend the text in an editor, then approve the amended decision."""

        def edited(draft: Draft | None) -> None:
            if draft is not None:
                self.approve(proposal.id, draft.text)

        note = "The amendment is recorded next to the proposed text. Ctrl+S to continue, Esc to cancel."
        self.app.push_screen(EditDialog(f"Edit {proposal.subject}", proposal.decision, note=note), edited)

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
        reviewer = self.backend.reviewer

        def previews(kernel: Ctx) -> list[RatifyPreview]:
            return [kernel.preview_ratify(pid) for pid in ids]

        def confirm(found: list[RatifyPreview]) -> None:
            lines: list[str] = []
            for preview in found:
                lines.append(f"• {preview.subject}: {preview.text}")
                lines.extend(f"    {line}" for line in preview.lines()[2:])

            def ratify_all(kernel: Ctx) -> list[Ratification]:
                return [
                    kernel.ratify(p.proposal.id, reviewer=reviewer, settle=[s.id for s in p.settles])
                    for p in found
                ]

            def answered(yes: bool | None) -> None:
                if yes:
                    self.fetch(ratify_all, self._approved_many, group="act")

            title = f"Approve these {len(found)} proposals as {reviewer}?"
            self.app.push_screen(ConfirmDialog(title, lines, f"Approve {len(found)}"), answered)

        self.fetch(previews, confirm, group="act")

    def _approved_many(self, results: list[Ratification]) -> None:
        if results:
            self.app.last_ratified = results[-1].decision  # type: ignore[attr-defined]
        self.acted(f"Ratified {len(results)} proposals.")

    # -- reject and withdraw --------------------------------------------------------------

    def reject(self, proposal: Proposal) -> None:
        """Reject with a reason, which is required and kept for audit."""
        reviewer = self.backend.reviewer

        def answered(reason: str | None) -> None:
            if reason:
                self.fetch(
                    lambda k: k.reject(proposal.id, reviewer=reviewer, reason=reason),
                    lambda p: self.acted(f"Rejected {p.id} on {p.subject}."),
                    group="act",
                )

        self.app.push_screen(ReasonDialog(f"Reject {proposal.subject}: why?"), answered)

    def withdraw(self, proposal: Proposal) -> None:
        """Withdraw a proposal (an optional reason)."""
        reviewer = self.backend.reviewer

        def answered(reason: str | None) -> None:
            if reason is None:
                return
            self.fetch(
                lambda k: k.withdraw(proposal.id, actor=reviewer, reason=reason or None),
                lambda p: self.acted(f"Withdrew {p.id} on {p.subject}."),
                group="act",
            )

        title = f"Withdraw {proposal.subject}?"
        self.app.push_screen(ReasonDialog(title, required=False, action="Withdraw"), answered)

    # -- a ratified decision is never edited in place -------------------------------------

    def propose_replacement(self, decision: Decision, *, text: str | None = None) -> None:
        """Draft a new proposal that supersedes ``decision`` (the only way to change it)."""
        reviewer = self.backend.reviewer

        def drafted(draft: Draft | None) -> None:
            if draft is None:
                return
            self.fetch(
                lambda k: k.propose(
                    decision.subject,
                    draft.text,
                    rationale=draft.rationale,
                    supersedes=[decision.id],
                    proposer=reviewer,
                ),
                lambda p: self.acted(f"Proposed {p.id} to supersede {decision.id}; it is in the queue."),
                group="act",
            )

        note = (
            f"A ratified decision cannot be changed or undone in place. This drafts a new proposal on "
            f"{decision.subject} that supersedes {decision.id}; it goes to the queue for review."
        )
        self.app.push_screen(
            EditDialog(f"Replace {decision.subject}", text or decision.decision, note=note, rationale=True),
            drafted,
        )
