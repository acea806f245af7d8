"""A subject's supersede chain: every decision it has held, with its validity window."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Header, Label, Static

from ctx_kernel.kernel.facade import Ctx, Decision, visible
from ctx_kernel.tui.format import state, window
from ctx_kernel.tui.screens.base import KernelScreen
from ctx_kernel.tui.widgets.keys import KeyBar


def timeline(chain: list[Decision], names: dict[str, str]) -> Text:
    """The chain oldest first: window, state, handle, who ratified it, the text, what replaced it."""
    out = Text()
    for decision in chain:
        out.append("● " if decision.current else "○ ", style="green" if decision.current else "dim")
        out.append(f"{window(decision)}  ")
        out.append_text(state(decision))
        out.append(f"  {names.get(decision.id, decision.id)}\n", style="dim")
        out.append(f"  {visible(decision.subject)}: ", style="bold")
        out.append(f"{visible(decision.decision)}\n")
        extra = f"ratified by {visible(decision.ratified_by)}"
        if decision.amended:
            extra += " (amended)"
        if decision.superseded_by:
            extra += f"; superseded by {', '.join(names.get(i, i) for i in decision.superseded_by)}"
        if decision.close_reason and not decision.superseded_by:
            extra += f"; {visible(decision.close_reason)}"
        out.append(f"  {extra}\n\n", style="dim")
    return out


class HistoryScreen(KernelScreen):
    """The chain of one subject, oldest first."""

    HELP_TITLE = "History"

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, subject: str) -> None:
        super().__init__()
        self.subject = subject

    def compose(self) -> ComposeResult:
        """Title and the timeline."""
        yield Header()
        yield Label(f"History of {self.subject}", classes="section")
        with VerticalScroll():
            yield Static("Loading…", id="history")
        yield KeyBar("escape", "1", "2", "3", "4", "q")

    def on_mount(self) -> None:
        """Load the chain."""
        self.reload()

    def reload(self) -> None:
        """Read the chain again."""
        subject = self.subject

        def load(ctx: Ctx) -> Text:
            chain = ctx.history(subject)
            return timeline(chain, ctx.handles(i for d in chain for i in (d.id, *d.superseded_by)))

        self.fetch(load, self.query_one("#history", Static).update)
