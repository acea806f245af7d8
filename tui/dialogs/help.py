"""Every key the current screen answers to, read from its active bindings (``?``)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Label, Static

from ctx_kernel.tui.widgets.keys import BoundKey, KeyBar, bound_keys

SECTIONS = {"screen": "On this screen", "focused": "Where the cursor is", "app": "Everywhere"}


def help_table(keys: list[BoundKey]) -> Group:
    """Keys and what they do, one table per section under its heading."""
    parts: list[RenderableType] = []
    for section, title in SECTIONS.items():
        rows = [key for key in keys if key.section == section]
        if not rows:
            continue
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True, min_width=5)
        table.add_column(ratio=1)
        for key in rows:
            what = Text(key.description)
            if key.tooltip and key.tooltip != key.description:
                what.append(f": {key.tooltip}", style="dim")
            table.add_row(Text(" ".join(key.keys), style="bold"), what)
        if parts:
            parts.append(Text(""))
        parts.extend([Text(title, style="bold underline"), table])
    return Group(*parts)


class HelpDialog(ModalScreen[None]):
    """The keys of the screen beneath, generated from its bindings; Esc, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def __init__(self, screen: Screen[Any], title: str) -> None:
        super().__init__()
        bars = screen.query(KeyBar)
        self.keys = bound_keys(screen, bars.first().keys if bars else ())
        self.title_text = title

    def compose(self) -> ComposeResult:
        """Title, the table of keys, and how to close."""
        with Vertical(classes="dialog dialog-wide", id="help"):
            yield Label(f"Keys: {self.title_text}", classes="dialog-title", markup=False)
            with VerticalScroll(classes="dialog-body", id="help-body"):
                yield Static(help_table(self.keys), id="help-keys")
            yield Label("↑ ↓ scroll · Esc, q or ? closes", classes="dialog-hint")

    def on_mount(self) -> None:
        """Scroll with the keyboard straight away."""
        self.query_one("#help-body").focus()

    def action_close(self) -> None:
        """Close."""
        self.dismiss(None)
