"""The queue: pending proposals, oldest first, with their age, group and what they would change."""

from __future__ import annotations

from typing import Any, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Header, Input, Static

from ctx_kernel.kernel.facade import Ctx, QueueEntry, plural, visible
from ctx_kernel.kernel.reports import StaleDecision
from ctx_kernel.tui import filtering
from ctx_kernel.tui.format import is_stale, queue_row
from ctx_kernel.tui.screens.actions import ReviewActions
from ctx_kernel.tui.widgets.keys import KeyBar
from ctx_kernel.tui.widgets.rows import Column, Row, RowList

# Contradiction checks run in the background, for the rows on screen only, a few at a time (each
# takes milliseconds), so an act or a redraw never waits long behind them; they start once
# scrolling has paused for BADGE_DELAY seconds.
BADGE_CHUNK = 8
BADGE_DELAY = 0.25
SORTS = ("age", "subject", "proposer", "group")
# The preview below the rows: at least its border and three lines; with more proposals than fit,
# a third of the space (up to PREVIEW_SHARE_MAX rows, so a tall terminal still lists many), and up
# to half of it for a long text. With fewer, it takes every row the list does not need.
PREVIEW_MIN = 4
PREVIEW_SHARE_MAX = 8
# The pending proposals, their handles (the short names `ctx queue` prints and commands take), and
# what changed under the decisions that requests to re-confirm name (by decision id).
Loaded = tuple[list[QueueEntry], dict[str, str], dict[str, StaleDecision]]


def load_queue(ctx: Ctx) -> Loaded:
    """The queue as the screen shows it, read in one go off the UI thread; git is asked what
    changed only when a proposal asks to re-confirm a decision."""
    entries = ctx.review_queue()
    asked = [e.proposal.reconfirms for e in entries if e.proposal.reconfirms is not None]
    stale = {s.decision_id: s for s in ctx.staleness.report().stale} if asked else {}
    return entries, ctx.handles([*(e.proposal.id for e in entries), *asked]), stale


def preview_height(space: int, needed: int) -> int:
    """Rows the preview gets of ``space`` when the list cannot have all it needs: ``needed`` rows,
    within a floor that keeps it steady from row to row and a ceiling of half the space."""
    floor = max(PREVIEW_MIN, min(space // 3, PREVIEW_SHARE_MAX))
    return max(min(needed, space // 2), floor)


class QueueBody(Vertical):
    """The rows and the preview below them, sharing the space between the filter and the status."""

    class Resized(Message):
        """The space changed: share it again."""

    def on_resize(self) -> None:
        """Ask the screen to share the new space (after the layout, so the size is the new one)."""
        self.post_message(self.Resized())


class QueueScreen(ReviewActions):
    """Pending proposals with badges; filter, sort, select, and act on the one under the cursor."""

    HELP_TITLE = "Queue"
    UNDO_KEY = "u"

    BINDINGS = [
        Binding("a", "approve", "Approve", tooltip="after a confirmation that lists what changes"),
        Binding("r", "reject", "Reject", tooltip="with a reason, kept for audit"),
        Binding("e", "edit", "Edit+approve", tooltip="amend the text, then approve it"),
        Binding("w", "withdraw", "Withdraw", tooltip="with an optional reason"),
        Binding("s", "skip", "Skip", tooltip="leave it for later, go to the next"),
        Binding("space", "select", "Select", tooltip="mark it for A, or unmark it"),
        Binding("A", "approve_selected", "Approve sel.", tooltip="every selected proposal, one confirmation"),
        Binding("slash", "search", "Filter", tooltip="fuzzy words, subject:auth, by:claude"),
        Binding("o", "sort", "Sort", tooltip="by age, subject, proposer or group"),
        Binding("u", "undo", "Undo", show=False, tooltip="draft a replacement for the last approval"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entries: list[QueueEntry] = []
        self.names: dict[str, str] = {}
        self.stale: dict[str, StaleDecision] = {}
        self.shown: list[QueueEntry] = []
        self.selected: set[str] = set()
        self.contradicts: dict[str, int] = {}
        self._by_id: dict[str, QueueEntry] = {}
        self._checking = False
        self._badge_timer: Timer | None = None
        self._list_height = 0
        self._preview = Text()
        self.sort = "age"

    def compose(self) -> ComposeResult:
        """Filter box, column titles, the rows, a preview of the highlighted proposal, and the footer."""
        yield Header()
        yield Input(placeholder="/ filter: words (fuzzy), subject:auth, by:claude", id="filter")
        yield Static(id="queue-header")
        with QueueBody(id="queue-body"):
            yield RowList(
                [
                    Column("", 1),
                    Column("age", 4),
                    Column("subject", 20),
                    Column("by", 8),
                    Column("badges", 13),
                    Column("proposed decision", None),
                ],
                id="queue",
            )
            with VerticalScroll(id="preview", can_focus=False):
                yield Static(id="peek")
        yield Static(id="queue-status")
        yield KeyBar(
            "a", "r", "e", "enter", "slash", "s", "w", "space", "A", "o", "u", "1", "2", "3", "4", "q"
        )

    def on_mount(self) -> None:
        """Put the keyboard focus in the list (the data loads when the screen is shown)."""
        self.query_one(RowList).focus()

    def on_screen_resume(self) -> None:
        """Read the store whenever the screen is shown, the first time included."""
        self.reload()

    def on_resize(self) -> None:
        """Column titles follow the width."""
        self._header()

    def _header(self) -> None:
        rows = self.query_one(RowList)
        self.query_one("#queue-header", Static).update(rows.header(max(rows.size.width, 40)))

    # -- data -----------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the pending proposals (the first time, the read the app started early)."""
        early = self.backend.take("queue")
        if early is None:
            self.fetch(load_queue, self._loaded, group="queue")
            return

        def wait() -> None:
            loaded = cast(Loaded, early.result())
            self.app.call_from_thread(self._loaded, loaded)

        self.run_worker(wait, thread=True, group="queue", exclusive=True, exit_on_error=False)

    def _loaded(self, loaded: Loaded) -> None:
        entries, self.names, self.stale = loaded
        known = {e.proposal.id for e in entries}
        self.entries = entries
        self.selected &= known
        self.drop_drafts(*(pid for pid in list(self.review_app.drafts) if pid not in known))
        # A ratification elsewhere can change what contradicts what: check the visible rows again.
        self.contradicts = {}
        self._show()
        # After the first paint: the checks compete with it for the interpreter.
        self.call_after_refresh(self._check_contradictions)

    def _show(self) -> None:
        query = self.query_one("#filter", Input).value
        shown = filtering.apply(self.entries, query)
        if self.sort == "subject":
            shown = sorted(shown, key=lambda e: (e.proposal.subject, e.proposal.created_at))
        elif self.sort == "proposer":
            shown = sorted(shown, key=lambda e: (e.proposal.proposer, e.proposal.created_at))
        elif self.sort == "group":
            shown = sorted(shown, key=lambda e: (-e.group_size, e.group, e.proposal.created_at))
        self.shown = shown
        self._by_id = {e.proposal.id: e for e in shown}
        rows = self.query_one(RowList)
        rows.set_items(shown, [e.proposal.id for e in shown], self._row)
        self._header()
        self._status()
        self._peek(rows.current_key)

    def _status(self) -> None:
        now = self.backend.now()
        stale = sum(1 for e in self.entries if is_stale(e.proposal.created_at, now))
        groups = len({e.group for e in self.entries if e.group_size > 1})
        parts = [f"{len(self.entries)} pending"]
        if stale:
            parts.append(f"[b red]{stale} stale (over a week)[/]")
        if groups:
            parts.append(f"{groups} group{'s' if groups > 1 else ''} to settle together")
        if self.selected:
            parts.append(f"[b green]{len(self.selected)} selected[/]")
        if len(self.shown) != len(self.entries):
            parts.append(f"showing {len(self.shown)}")
        parts.append(f"sort: {self.sort}")
        self.query_one("#queue-status", Static).update(" · ".join(parts))

    def _row(self, entry: QueueEntry) -> Row:
        pid = entry.proposal.id
        return queue_row(
            entry, self.backend.now(), selected=pid in self.selected, contradicts=self.contradicts.get(pid)
        )

    def _entry(self, key: str | None) -> QueueEntry | None:
        return self._by_id.get(key) if key else None

    def _peek(self, key: str | None) -> None:
        entry = self._entry(key)
        peek = Text()
        if entry is None:
            peek.append("Nothing to review." if not self.entries else "No proposal matches the filter.")
        else:
            proposal = entry.proposal
            peek.append(f"{self.names.get(proposal.id, proposal.id)} ", style="dim")
            peek.append(visible(proposal.decision))
            draft = self.review_app.drafts.get(proposal.id)
            if draft is not None:
                peek.append("\nyour edit, not yet approved: ", style="bold yellow")
                peek.append(visible(draft))
            if proposal.rationale:
                peek.append("\nwhy: ", style="cyan")
                peek.append(visible(proposal.rationale))
            if proposal.reconfirms is not None:
                self._peek_request(peek, proposal.reconfirms)
            elif entry.current is not None:
                peek.append("\nreplaces: ", style="cyan")
                peek.append(visible(entry.current.decision), style="dim")
            if entry.group_size > 1:
                others = plural(entry.group_size - 1, "other proposal")
                peek.append(f"\nsettles {others} in its group", style="bold")
        self._preview = peek
        self.query_one("#peek", Static).update(peek)
        self.query_one("#preview", VerticalScroll).scroll_home(animate=False, immediate=True)
        self._fit()

    def _peek_request(self, peek: Text, decision_id: str) -> None:
        """A request to re-confirm: which decision, and what changed under its links, by whom."""
        peek.append(
            f"\nasks a person to re-confirm {self.names.get(decision_id, decision_id)} as it stands "
            "(no new decision)",
            style="bold green",
        )
        item = self.stale.get(decision_id)
        if item is None:
            peek.append("\nnothing changed under its links since it was last confirmed", style="dim")
            return
        peek.append("\n" + visible(item.line), style="yellow")
        if item.commits:
            peek.append(f"\n{plural(item.commits, 'commit')} by {visible(', '.join(item.authors))}")

    def draft_changed(self) -> None:
        """A kept edit changed: the preview shows it."""
        self._peek(self.query_one(RowList).current_key)

    def _fit(self) -> None:
        """Give the list the rows it needs and the preview the rest, or share them when both are long."""
        body = self.query_one(QueueBody)
        space, width = body.size.height, body.size.width
        if not space:
            return
        # The preview's border and padding: one row above the text, one column each side.
        needed = 1 + len(self._preview.wrap(self.app.console, max(width - 2, 1)))
        rows = max(len(self.shown), 1)
        height = rows if rows + needed <= space else min(rows, space - preview_height(space, needed))
        height = max(height, 1)
        if height != self._list_height:
            self._list_height = height
            self.query_one(RowList).styles.height = height

    @on(QueueBody.Resized)
    def _resized(self) -> None:
        self._fit()

    def _check_contradictions(self) -> None:
        """Check the rows on screen for contradictions, in the background (each costs milliseconds)."""
        if self._checking:
            return
        rows = self.query_one(RowList)
        todo = [key for key in rows.visible_keys() if key not in self.contradicts][:BADGE_CHUNK]
        if not todo:
            return
        self._checking = True

        def found(result: dict[str, list[Any]]) -> None:
            self._checking = False
            for pid in todo:
                self.contradicts[pid] = len(result.get(pid, []))
                rows.refresh_row(pid)
            self._check_contradictions()

        def failed() -> None:
            self._checking = False

        self.fetch(lambda k: k.proposal_conflicts(todo), found, group="badges", on_error=failed)

    # -- events ---------------------------------------------------------------------------

    @on(RowList.Highlighted, "#queue")
    def _highlighted(self, event: RowList.Highlighted) -> None:
        self._peek(event.key)

    @on(RowList.Scrolled, "#queue")
    def _scrolled(self) -> None:
        # Check once scrolling pauses: the checks would otherwise compete with drawing.
        if self._badge_timer is not None:
            self._badge_timer.stop()
        self._badge_timer = self.set_timer(BADGE_DELAY, self._check_contradictions)

    @on(RowList.Opened, "#queue")
    def _opened(self, event: RowList.Opened) -> None:
        from ctx_kernel.tui.screens.detail import DetailScreen  # noqa: PLC0415 - the two screens refer to each other

        self.app.push_screen(DetailScreen(event.key, [e.proposal.id for e in self.shown]))

    @on(Input.Changed, "#filter")
    def _filter_changed(self) -> None:
        self._show()

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.query_one(RowList).focus()

    # -- actions --------------------------------------------------------------------------

    def _current(self) -> QueueEntry | None:
        entry = self._entry(self.query_one(RowList).current_key)
        if entry is None:
            self.notify("No proposal under the cursor.", severity="warning", markup=False)
        return entry

    def action_approve(self) -> None:
        """Approve the proposal under the cursor."""
        if entry := self._current():
            self.approve(entry.proposal.id)

    def action_edit(self) -> None:
        """Edit the proposal's text, then approve it."""
        if entry := self._current():
            self.edit_then_approve(entry.proposal)

    def action_reject(self) -> None:
        """Reject with a reason."""
        if entry := self._current():
            self.reject(entry.proposal)

    def action_withdraw(self) -> None:
        """Withdraw the proposal."""
        if entry := self._current():
            self.withdraw(entry.proposal)

    def action_skip(self) -> None:
        """Leave it for later and go to the next one."""
        self.query_one(RowList).action_cursor(1)

    def action_select(self) -> None:
        """Add the proposal under the cursor to the selection, or take it out."""
        entry = self._current()
        if entry is None:
            return
        pid = entry.proposal.id
        self.selected.symmetric_difference_update({pid})
        self.query_one(RowList).refresh_row(pid)
        self._status()
        self.query_one(RowList).action_cursor(1)

    def action_approve_selected(self) -> None:
        """Approve every selected proposal after one confirmation that lists them."""
        chosen = [e for e in self.entries if e.proposal.id in self.selected]
        if not chosen:
            self.notify(
                "Nothing selected: space selects the proposal under the cursor.",
                severity="warning",
                markup=False,
            )
            return
        self.approve_many([e.proposal for e in chosen], {e.proposal.id: e.group for e in self.entries})

    def action_search(self) -> None:
        """Type a filter."""
        self.query_one("#filter", Input).focus()

    def action_clear_filter(self) -> None:
        """Clear the filter and go back to the list."""
        self.query_one("#filter", Input).value = ""
        self.query_one(RowList).focus()

    def action_sort(self) -> None:
        """Sort by age, subject, proposer, or review group."""
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self._show()

    def action_undo(self) -> None:
        """Ratifications cannot be undone; offer a proposal that supersedes the last one instead."""
        last = self.review_app.last_ratified
        if last is None:
            self.notify(
                "Nothing to undo. Ratified decisions are never undone in place; "
                "replace one from the Kernel screen (2, then n).",
                severity="information",
                markup=False,
            )
            return
        self.propose_replacement(last)
