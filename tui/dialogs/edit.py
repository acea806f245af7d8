"""Edit a decision's text before approving it, or draft a new proposal."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, TextArea


@dataclass(frozen=True)
class Draft:
    """The text a person wrote, and an optional rationale."""

    text: str
    rationale: str | None


class EditDialog(ModalScreen[Draft | None]):
    """A text area prefilled with the decision; Ctrl+S saves, Esc cancels.

    Given the ``original`` text (the proposal's, when ``text`` is an edit kept from before),
    Ctrl+R puts it back.
    """

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("ctrl+r", "restore", "Proposed text", priority=True),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(
        self, title: str, text: str, *, note: str = "", rationale: bool = False, original: str | None = None
    ) -> None:
        super().__init__()
        self.title_text = title
        self.text = text
        self.note = note
        self.with_rationale = rationale
        self.original = original

    def compose(self) -> ComposeResult:
        """Title, note, the text area and (when asked) a rationale line."""
        with Vertical(classes="dialog dialog-wide"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            if self.note:
                yield Label(self.note, classes="dialog-hint", markup=False)
            yield TextArea(self.text, id="text", soft_wrap=True, show_line_numbers=False)
            if self.with_rationale:
                yield Input(placeholder="Rationale (optional)", id="rationale")
            yield Label("", id="edit-error", classes="dialog-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Save (Ctrl+S)", variant="primary", id="save")
                yield Button("Cancel (Esc)", id="cancel")

    def on_mount(self) -> None:
        """Start typing in the text area, at the end of the text (where an amendment usually goes)."""
        area = self.query_one("#text", TextArea)
        area.focus()
        area.move_cursor(area.document.end)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Ctrl+R only where there is a proposed text to put back."""
        return self.original is not None if action == "restore" else True

    def action_restore(self) -> None:
        """Put the proposed text back (the edit is dropped when saved so)."""
        if self.original is not None:
            area = self.query_one("#text", TextArea)
            # An edit of the document, not a new document: Ctrl+Z brings the edit back.
            area.replace(self.original, area.document.start, area.document.end)
            area.move_cursor(area.document.end)

    def action_save(self) -> None:
        """Return the text; refuse an empty one."""
        text = self.query_one("#text", TextArea).text.strip()
        if not text:
            self.query_one("#edit-error", Label).update("The decision text is empty.")
            return
        rationale = None
        if self.with_rationale:
            rationale = self.query_one("#rationale", Input).value.strip() or None
        self.dismiss(Draft(text, rationale))

    def action_cancel(self) -> None:
        """Leave without saving."""
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Save or cancel from the buttons."""
        if event.button.id == "save":
            self.action_save()
        else:
            self.dismiss(None)
