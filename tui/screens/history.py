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

# Sessions named after how often a decision was served; the rest are counted.
SHOWN_SESSIONS = 3


def timeline(
    chain: list[Decision], names: dict[str, str], served: dict[str, tuple[int, list[str]]] | None = None
) -> Text:
    """The chain oldest first: window, state, handle, who ratified it, the text, what replaced it, and
    how often and to whom it was served (``ctx audit served``)."""
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
        out.append(f"  {extra}\n", style="dim")
        times, sessions = (served or {}).get(decision.id, (0, []))
        if times:
            shown = ", ".join(visible(s) for s in sessions[:SHOWN_SESSIONS])
            more = f" and {len(sessions) - SHOWN_SESSIONS} more" if len(sessions) > SHOWN_SESSIONS else ""
            out.append(f"  served {times} time{'s' if times != 1 else ''} to {shown}{more}\n", style="dim")
        out.append("\n")
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
            names = ctx.handles(i for d in chain for i in (d.id, *d.superseded_by))
            return timeline(chain, names, ctx.served.counts([d.id for d in chain]))

        self.fetch(load, self.query_one("#history", Static).update)
