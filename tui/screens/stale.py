"""Decisions that may no longer hold (``ctx stale``): re-confirm, retire, or draft a replacement."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Header, Static

from ctx_kernel.kernel.facade import Ctx, Proposal, plural, visible
from ctx_kernel.kernel.reports import StaleDecision, StaleReport
from ctx_kernel.tui.dialogs.confirm import ConfirmDialog
from ctx_kernel.tui.dialogs.edit import Draft, EditDialog
from ctx_kernel.tui.dialogs.reason import ReasonDialog
from ctx_kernel.tui.dialogs.text import TextDialog
from ctx_kernel.tui.screens.actions import ReviewActions
from ctx_kernel.tui.widgets.keys import KeyBar
from ctx_kernel.tui.widgets.rows import Column, Row, RowList

# The stale report, the handles of its decisions, and the pending requests to re-confirm each.
Loaded = tuple[StaleReport, dict[str, str], dict[str, list[Proposal]]]


def details(item: StaleDecision, requests: Sequence[Proposal] = ()) -> str:
    """Everything ``ctx stale`` says about one decision, and who asks to re-confirm it, as plain lines."""
    lines = [item.decision, "", item.line, ""]
    for request in requests:
        lines.append(f"{request.proposer} asks to re-confirm it ({request.id}, c approves the request)")
        if request.rationale:
            lines.append(f"  why: {request.rationale}")
        if request.evidence:
            lines.append(f"  evidence: {', '.join(request.evidence)}")
        lines.append("")
    lines.append(f"Confirmed by {item.confirmed_by} at {item.confirmed_at[:19]}")
    if item.snapshot_commit:
        lines.append(f"Snapshot commit {item.snapshot_commit}")
    if item.commits:
        lines.append(f"{plural(item.commits, 'commit')} by {', '.join(item.authors)}")
    lines += [f"M {p}" for p in item.paths]
    lines += [f"R {p}" for p in item.renamed]
    lines += [f"D {p}" for p in item.deleted]
    return visible("\n".join(lines))


class StaleScreen(ReviewActions):
    """Current decisions whose linked code changed since a person confirmed them, or whose links
    match nothing, or whose review date passed; only a person re-confirms them."""

    HELP_TITLE = "Stale"
    BINDINGS = [
        Binding("c", "reconfirm", "Re-confirm", tooltip="it still holds: a new snapshot (audited)"),
        Binding("r", "retire", "Retire", tooltip="close it with no successor (a reason is kept)"),
        Binding("p", "replace", "Propose", tooltip="draft a replacement proposal with its links"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[str, StaleDecision] = {}
        self.requests: dict[str, list[Proposal]] = {}

    def compose(self) -> ComposeResult:
        """What was compared, then the stale decisions."""
        yield Header()
        yield Static("Comparing with the git checkout…", id="stale-status")
        yield RowList(
            [Column("id", 6), Column("subject", 18, cut="middle"), Column("why", None)],
            id="stale",
        )
        yield KeyBar("enter", "c", "r", "p", "1", "5", "q")

    def on_mount(self) -> None:
        """Focus the list (the data loads when the screen is shown)."""
        self.query_one(RowList).focus()

    def on_screen_resume(self) -> None:
        """Read again whenever the screen is shown."""
        self.reload()

    def reload(self) -> None:
        """Work out which decisions may be stale, off the UI thread."""

        def load(ctx: Ctx) -> Loaded:
            report = ctx.staleness.report()
            requests: dict[str, list[Proposal]] = {}
            for proposal in ctx.queue():
                if proposal.reconfirms is not None:
                    requests.setdefault(proposal.reconfirms, []).append(proposal)
            return report, ctx.handles([s.decision_id for s in report.stale]), requests

        self.fetch(load, self._loaded, group="stale")

    def _why(self, item: StaleDecision) -> Text:
        why = Text()
        asking = self.requests.get(item.decision_id, [])
        if asking:
            why.append(f"{visible(asking[0].proposer)} asks to re-confirm · ", style="bold green")
        why.append(visible(item.line.removeprefix("may be stale: ")))
        return why

    def _loaded(self, found: Loaded) -> None:
        report, names, self.requests = found
        compared = f" against {report.head[:12]}" if report.head else ""
        status = report.note or (
            f"{plural(len(report.stale), 'decision')} may be stale, of {report.checked} with links "
            f"or a review date{compared}"
        )
        self.query_one("#stale-status", Static).update(Text(visible(status)))
        self.items = {s.decision_id: s for s in report.stale}
        self.query_one(RowList).set_rows(
            [
                Row(
                    s.decision_id,
                    (
                        Text(names.get(s.decision_id, s.decision_id)),
                        Text(visible(s.subject)),
                        self._why(s),
                    ),
                )
                for s in report.stale
            ]
        )

    def _current(self) -> StaleDecision | None:
        key = self.query_one(RowList).current_key
        return None if key is None else self.items.get(key)

    @on(RowList.Opened, "#stale")
    def _open(self, event: RowList.Opened) -> None:
        item = self.items[event.key]
        requests = self.requests.get(event.key, [])
        self.app.push_screen(TextDialog(f"{item.subject}: may be stale", details(item, requests)))

    def action_reconfirm(self) -> None:
        """Show what re-confirming records (the kernel's plan), then record exactly that; when an
        agent asked for it, approving its request does, and resolves the request too."""
        item = self._current()
        if item is None:
            return
        asking = self.requests.get(item.decision_id, [])
        if asking:
            self.approve(asking[0].id)
            return

        def shown(plan: object) -> None:
            def answered(yes: bool | None) -> None:
                if yes:
                    reviewer = self.backend.reviewer
                    self.fetch(
                        lambda k: k.reconfirm(plan, reviewer=reviewer),  # type: ignore[arg-type]
                        lambda _: self.acted(f"Re-confirmed {item.subject}."),
                        group="act",
                    )

            lines = plan.lines()  # type: ignore[attr-defined]
            self.app.push_screen(ConfirmDialog(f"Re-confirm {item.subject}?", lines, "Re-confirm"), answered)

        self.as_reviewer(
            lambda: self.fetch(lambda k: k.plan_reconfirmation(item.decision_id), shown, group="act")
        )

    def action_retire(self) -> None:
        """Close the decision with no successor; the reason is required and kept."""
        item = self._current()
        if item is None:
            return

        def answered(reason: str | None) -> None:
            reviewer = self.backend.reviewer
            if reason:
                self.fetch(
                    lambda k: k.retire(item.subject, reviewer=reviewer, reason=reason),
                    lambda _: self.acted(f"Retired {item.subject}."),
                    group="act",
                )

        self.as_reviewer(
            lambda: self.app.push_screen(
                ReasonDialog(f"Retire {item.subject}: why?", action="Retire"), answered
            )
        )

    def action_replace(self) -> None:
        """Draft a replacement: a proposal on the subject, with the decision's links, for review."""
        item = self._current()
        if item is None:
            return
        links = [*item.changed_links, *item.unmatched_links]

        def answered(draft: Draft | None) -> None:
            reviewer = self.backend.reviewer
            if draft is None:
                return

            def propose(k: Ctx) -> str:
                kept = [x.link for x in k.store.snapshots_of(item.decision_id)[-1].links]
                made = k.propose(
                    item.subject, draft.text, rationale=draft.rationale, proposer=reviewer, links=kept
                )
                return made.id

            self.fetch(
                propose,
                lambda pid: self.acted(f"Proposed a replacement for {item.subject}: review it in the queue."),
                group="act",
            )

        note = "Changed: " + ", ".join(links) if links else ""
        self.as_reviewer(
            lambda: self.app.push_screen(
                EditDialog(f"Replace {item.subject}", item.decision, note=visible(note), rationale=True),
                answered,
            )
        )
