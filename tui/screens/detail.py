"""One proposal in full: against the current decision, the change approval makes, its evidence."""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Header, Label, OptionList, Static
from textual.widgets.option_list import Option

from ctx_kernel.kernel.facade import Ctx, ProposalContext, visible
from ctx_kernel.tui.dialogs.text import TextDialog
from ctx_kernel.tui.format import age_text, diff_text, one_line, state, window
from ctx_kernel.tui.screens.actions import ReviewActions
from ctx_kernel.tui.widgets.keys import KeyBar


class DetailScreen(ReviewActions):
    """A proposal, the decision it would replace (side by side, word diff), its subject's timeline,
    contradictions and related decisions found by recall, and its cited evidence."""

    HELP_TITLE = "Proposal detail"

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", tooltip="to the queue"),
        Binding("a", "approve", "Approve"),
        Binding("r", "reject", "Reject"),
        Binding("e", "edit", "Edit+approve"),
        Binding("w", "withdraw", "Withdraw"),
        Binding("s", "skip", "Skip", tooltip="leave it for later, show the next"),
        Binding("h", "history", "History", tooltip="every decision the subject has held"),
    ]

    def __init__(self, proposal_id: str, order: list[str]) -> None:
        super().__init__()
        self.proposal_id = proposal_id
        self.order = order
        self.context: ProposalContext | None = None

    def compose(self) -> ComposeResult:
        """Sections filled in when the context arrives."""
        yield Header()
        with VerticalScroll(id="detail"):
            yield Static("Loading…", id="d-head")
            with Horizontal(id="d-compare"):
                with Vertical(classes="side"):
                    yield Label("Current decision", classes="section")
                    yield Static(id="d-current")
                with Vertical(classes="side"):
                    yield Label("Proposed", classes="section")
                    yield Static(id="d-new")
            yield Label("Word diff", classes="section")
            yield Static(id="d-diff")
            yield Label("If you approve", classes="section")
            yield Static(id="d-change")
            yield Label("Contradictions", classes="section")
            yield Static(id="d-conflicts")
            yield Label("Timeline", classes="section", id="d-timeline-title")
            yield Static(id="d-timeline")
            yield Label("Related decisions (recall)", classes="section")
            yield Static(id="d-related")
            yield Label("Cited evidence (Enter opens one in full)", classes="section")
            yield OptionList(id="d-evidence")
        yield KeyBar("escape", "a", "r", "e", "s", "w", "h", "1", "2", "3", "4", "q")

    def on_mount(self) -> None:
        """Load the proposal's context; arrow keys scroll it."""
        self.query_one("#detail").focus()
        self.reload()

    def reload(self) -> None:
        """Read the proposal and its context again; with an edit kept, the change is the edit's."""
        pid = self.proposal_id
        draft = self.review_app.drafts.get(pid)

        def load(ctx: Ctx) -> ProposalContext:
            found = ctx.proposal_context(pid)
            if draft is None or found.proposal.status != "pending":
                return found
            return replace(found, preview=ctx.plan_ratification(pid, decision=draft))

        self.fetch(load, self._loaded, group="detail")

    def acted(self, message: str) -> None:
        """After an act on this proposal, go on to the next pending one (or back to the queue)."""
        self.notify(message, markup=False)
        self._next()

    def draft_changed(self) -> None:
        """A kept edit changed: "If you approve" shows the edit's change."""
        self.reload()

    def _next(self) -> None:
        order = self.order
        later = order[order.index(self.proposal_id) + 1 :] if self.proposal_id in order else []

        def first_pending(ctx: Ctx) -> str | None:
            return next((p for p in later if ctx.proposal(p).status == "pending"), None)

        def pick(nxt: str | None) -> None:
            if nxt is None:
                self.app.pop_screen()
                return
            self.proposal_id = nxt
            self.reload()

        self.fetch(first_pending, pick, group="detail")

    def _loaded(self, found: ProposalContext) -> None:
        shown_before = self.context.proposal.id if self.context is not None else None
        self.context = found
        proposal = found.proposal
        if proposal.id != shown_before:
            # Another proposal (the next one after an act): start at its header, not where the
            # last one was scrolled to.
            detail = self.query_one("#detail", VerticalScroll)
            detail.focus()
            detail.scroll_home(animate=False, immediate=True)
        now = self.backend.now()
        head = Text()
        head.append(visible(proposal.subject), style="bold")
        head.append(f"  {proposal.id}  ", style="dim")
        head.append(f"by {visible(proposal.proposer)}, ")
        head.append_text(age_text(proposal.created_at, now))
        head.append(" old")
        if proposal.session:
            head.append(f", session {visible(proposal.session)}", style="dim")
        if proposal.status != "pending":
            head.append(f"\n{proposal.status}", style="bold red")
            if proposal.resolution_note:
                head.append(f": {visible(proposal.resolution_note)}")
        if proposal.rationale:
            head.append("\nwhy: ", style="cyan")
            head.append(visible(proposal.rationale))
        self.query_one("#d-head", Static).update(head)
        current = found.current
        self.query_one("#d-current", Static).update(
            Text(visible(current.decision)) if current else Text("(none: the subject is new)", style="dim")
        )
        self.query_one("#d-new", Static).update(Text(visible(proposal.decision)))
        self.query_one("#d-diff", Static).update(
            diff_text(current.decision, proposal.decision)
            if current
            else Text("(nothing to compare)", style="dim")
        )
        change = Text()
        for i, line in enumerate(
            found.preview.lines() if proposal.status == "pending" else ["(not pending)"]
        ):
            change.append(("" if i == 0 else "\n") + line, style="bold" if i == 0 else "")
        self.query_one("#d-change", Static).update(change)
        conflicts = Text()
        for item in found.contradicts:
            conflicts.append(f"✗ {visible(item.subject)}: ", style="bold magenta")
            conflicts.append(f"{visible(item.text)}\n  {visible(item.why)}\n")
        self.query_one("#d-conflicts", Static).update(conflicts or Text("none found", style="dim"))
        self.query_one("#d-timeline-title", Label).update(Text(f"Timeline of {visible(proposal.subject)}"))
        timeline = Text()
        for decision in found.chain:
            timeline.append("● " if decision.current else "○ ", style="green" if decision.current else "dim")
            timeline.append(f"{window(decision)}  ")
            timeline.append_text(state(decision))
            timeline.append(f"  {decision.id}\n  {visible(decision.subject)}: {visible(decision.decision)}\n")
        timeline.append("◌ pending  ", style="yellow")
        timeline.append(visible(proposal.decision))
        self.query_one("#d-timeline", Static).update(timeline)
        related = Text()
        for decision in found.related:
            related.append(f"{visible(decision.subject)}: ", style="bold")
            related.append(f"{visible(decision.decision)}\n")
        self.query_one("#d-related", Static).update(related or Text("none found", style="dim"))
        options = self.query_one("#d-evidence", OptionList)
        options.clear_options()
        for evidence in found.evidence:
            preview = one_line(evidence.text[:400])[:160]
            options.add_option(Option(Text(f"[{visible(evidence.kind)}] {preview}"), id=evidence.id))
        if found.evidence:
            options.highlighted = 0
        else:
            options.add_option(Option("none cited", disabled=True))

    @on(OptionList.OptionSelected, "#d-evidence")
    def _open_evidence(self, event: OptionList.OptionSelected) -> None:
        if self.context is None or event.option.id is None:
            return
        evidence = next(e for e in self.context.evidence if e.id == event.option.id)
        subtitle = (
            f"{evidence.id} · {evidence.kind} · {evidence.agent or 'unknown'} · {evidence.created_at[:19]}"
        )
        self.app.push_screen(TextDialog("Evidence (unratified)", evidence.text, subtitle=subtitle))

    def _pending(self) -> ProposalContext | None:
        if self.context is None:
            return None
        if self.context.proposal.status != "pending":
            self.notify(
                f"{self.context.proposal.id} is {self.context.proposal.status}",
                severity="warning",
                markup=False,
            )
            return None
        return self.context

    def action_approve(self) -> None:
        """Approve this proposal."""
        if found := self._pending():
            self.approve(found.proposal.id)

    def action_edit(self) -> None:
        """Edit, then approve."""
        if found := self._pending():
            self.edit_then_approve(found.proposal)

    def action_reject(self) -> None:
        """Reject with a reason."""
        if found := self._pending():
            self.reject(found.proposal)

    def action_withdraw(self) -> None:
        """Withdraw."""
        if found := self._pending():
            self.withdraw(found.proposal)

    def action_skip(self) -> None:
        """Leave this one for later; show the next."""
        self._next()

    def action_history(self) -> None:
        """The subject's whole chain."""
        from ctx_kernel.tui.screens.history import HistoryScreen  # noqa: PLC0415

        if self.context is not None:
            self.app.push_screen(HistoryScreen(self.context.proposal.subject))
