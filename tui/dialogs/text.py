"""Show a long text in full (an evidence record, an explanation)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from ctx_kernel.kernel.facade import visible


class TextDialog(ModalScreen[None]):
    """A scrollable text; Esc or q closes it."""

    BINDINGS = [Binding("escape,q", "close", "Close")]

    def __init__(self, title: str, body: str, *, subtitle: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.subtitle = subtitle

    def compose(self) -> ComposeResult:
        """Title, subtitle and the body."""
        with Vertical(classes="dialog dialog-wide"):
            yield Label(visible(self.title_text), classes="dialog-title", markup=False)
            if self.subtitle:
                yield Label(visible(self.subtitle), classes="dialog-hint", markup=False)
            with VerticalScroll(classes="dialog-body", id="text-body"):
                yield Static(visible(self.body), markup=False)
            yield Label("Esc to close", classes="dialog-hint")

    def on_mount(self) -> None:
        """Scroll with the keyboard straight away."""
        self.query_one("#text-body").focus()

    def action_close(self) -> None:
        """Close."""
        self.dismiss(None)
