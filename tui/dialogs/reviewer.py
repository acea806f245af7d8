"""Ask once which name the review app records as the person acting, when none is configured."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label


class ReviewerDialog(ModalScreen[str | None]):
    """Returns the name to record (prefilled with the login name), or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, guess: str) -> None:
        super().__init__()
        self.guess = guess

    def compose(self) -> ComposeResult:
        """The question, the name and two buttons."""
        with Vertical(classes="dialog"):
            yield Label("Who is acting?", classes="dialog-title")
            yield Label(
                "No reviewer name is configured (--reviewer, CTX_REVIEWER or reviewer in config.toml), "
                "so this is your login name. The audit log records it as the person who acts.",
                classes="dialog-hint",
                markup=False,
            )
            yield Input(value=self.guess, id="reviewer-name")
            yield Label("", id="reviewer-error", classes="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Use this name (Enter)", variant="primary", id="ok")
                yield Button("Cancel (Esc)", id="cancel")

    def on_mount(self) -> None:
        """Edit the name straight away."""
        self.query_one("#reviewer-name", Input).focus()

    def _submit(self) -> None:
        name = self.query_one("#reviewer-name", Input).value.strip()
        if not name:
            self.query_one("#reviewer-error", Label).update("A name is required: the audit log records it.")
            return
        self.dismiss(name)

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
        """Leave: nothing happens."""
        self.dismiss(None)
