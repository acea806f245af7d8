"""Yes/no confirmation that lists exactly what will happen."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from ctx_kernel.kernel.facade import visible


class ConfirmDialog(ModalScreen[bool]):
    """Asks before an irreversible act; returns True to go ahead."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, title: str, lines: list[str], confirm: str = "Confirm") -> None:
        super().__init__()
        self.title_text = title
        self.lines = lines
        self.confirm = confirm

    def compose(self) -> ComposeResult:
        """The question, the list of changes, and two buttons."""
        with Vertical(classes="dialog"):
            yield Label(visible(self.title_text), classes="dialog-title", markup=False)
            with VerticalScroll(classes="dialog-body"):
                for line in self.lines:
                    yield Static(visible(line), markup=False, classes="dialog-line")
            yield Label("This cannot be undone in place.", classes="dialog-hint")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.confirm} (y)", variant="primary", id="yes")
                yield Button("Cancel (n)", id="no")

    def on_mount(self) -> None:
        """Focus Cancel: a stray Enter must not carry out an act that cannot be undone."""
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Answer from the button."""
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        """Answer from a key."""
        self.dismiss(answer)
