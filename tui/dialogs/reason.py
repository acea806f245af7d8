"""Ask for a reason (required for a rejection, optional for a withdrawal)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label


class ReasonDialog(ModalScreen[str | None]):
    """Returns the reason typed, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, *, required: bool = True, action: str = "Reject") -> None:
        super().__init__()
        self.title_text = title
        self.required = required
        self.action = action

    def compose(self) -> ComposeResult:
        """The question, one input line and two buttons."""
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            placeholder = "Reason (required, kept for audit)" if self.required else "Reason (optional)"
            yield Input(placeholder=placeholder, id="reason")
            yield Label("", id="reason-error", classes="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.action} (Enter)", variant="error", id="ok")
                yield Button("Cancel (Esc)", id="cancel")

    def on_mount(self) -> None:
        """Type straight away."""
        self.query_one("#reason", Input).focus()

    def _submit(self) -> None:
        reason = self.query_one("#reason", Input).value.strip()
        if self.required and not reason:
            self.query_one("#reason-error", Label).update("A reason is required: it is kept for audit.")
            return
        self.dismiss(reason)

    def on_input_submitted(self, _: Input.Submitted) -> None:
        """Enter submits."""
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Submit or cancel from the buttons."""
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        """Leave without a reason: nothing happens."""
        self.dismiss(None)
