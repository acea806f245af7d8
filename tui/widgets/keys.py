"""The key bar: a screen's most important keys on one line, always ending with ``? help``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from rich.text import Text
from textual import events
from textual.binding import ActiveBinding
from textual.screen import Screen
from textual.widget import Widget

HELP_KEY = "?"
HELP_LABEL = "help"
GAP = "  "

Section = Literal["screen", "focused", "app"]


@dataclass(frozen=True)
class BoundKey:
    """One action and every key bound to it: as bound (``question_mark``) and as shown (``?``)."""

    bound: tuple[str, ...]
    keys: tuple[str, ...]
    description: str
    tooltip: str
    section: Section


def bound_keys(screen: Screen[Any], first: tuple[str, ...] = ()) -> list[BoundKey]:
    """Every active binding of ``screen`` (its own, the focused widget's, the app's), one per action.

    Keys bound to the same action in the same place are merged (``q`` and ``^q`` quit), so the
    list reads as a table of what each key does. Within a section, actions bound to a key in
    ``first`` come first, in that order.
    """
    app = screen.app
    merged: dict[tuple[int, str], tuple[list[str], list[str], ActiveBinding]] = {}
    for key, active in screen.active_bindings.items():
        ident = (id(active.node), active.binding.action)
        bound, shown, _ = merged.setdefault(ident, ([], [], active))
        display = app.get_key_display(active.binding)
        bound.append(key)
        if display not in shown:
            shown.append(display)
    found: list[BoundKey] = []
    for bound, shown, active in merged.values():
        binding, node = active.binding, active.node
        section: Section = "app" if node is app else "screen" if node is screen else "focused"
        description = binding.description or binding.action.replace("_", " ").capitalize()
        tooltip = active.tooltip or binding.tooltip
        found.append(BoundKey(tuple(bound), tuple(sorted(shown, key=len)), description, tooltip, section))
    sections = {"screen": 0, "focused": 1, "app": 2}
    rank = {key: i for i, key in enumerate(first)}

    def order(key: BoundKey) -> tuple[int, int]:
        return sections[key.section], min(rank.get(k, len(rank)) for k in key.bound)

    return sorted(found, key=order)


def bar_items(screen: Screen[Any], wanted: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """``(key to press, key as shown, description)`` for each of ``wanted`` that is active and enabled."""
    active = screen.active_bindings
    items: list[tuple[str, str, str]] = []
    for key in wanted:
        found = active.get(key)
        if found is None or not found.enabled:
            continue
        binding = found.binding
        description = binding.description or binding.action.replace("_", " ")
        items.append((key, screen.app.get_key_display(binding), description))
    return items


class KeyBar(Widget):
    """The screen's keys in its order of importance, as many as fit, then ``? help`` (which lists all)."""

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $footer-background;
        color: $footer-description-foreground;
    }
    KeyBar > .key-bar--key { color: $footer-key-foreground; text-style: bold; }
    """
    COMPONENT_CLASSES = {"key-bar--key"}

    def __init__(self, *keys: str, id: str | None = None) -> None:
        super().__init__(id=id)
        self.keys = keys
        self._spans: list[tuple[int, int, str]] = []

    def on_mount(self) -> None:
        """Follow the screen's bindings as focus moves."""
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        """Stop following them."""
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, _: Screen[Any]) -> None:
        self.refresh()

    def line(self, width: int) -> Text:
        """The bar for ``width`` cells: whole items only, ``? help`` last."""
        help_item = self._item(HELP_KEY, HELP_LABEL)
        room = width - len(GAP) - help_item.cell_len
        line = Text(no_wrap=True, overflow="crop")
        spans: list[tuple[int, int, str]] = []
        for press, shown, description in bar_items(self.screen, self.keys):
            item = self._item(shown, description)
            start = line.cell_len + (1 if not line else len(GAP))
            if start + item.cell_len > room:
                break
            line.append(" " if not line else GAP)
            line.append_text(item)
            spans.append((start, line.cell_len, press))
        line.append(" " if not line else GAP)
        start = line.cell_len
        line.append_text(help_item)
        spans.append((start, line.cell_len, "question_mark"))
        self._spans = spans
        return line

    def _item(self, key: str, description: str) -> Text:
        return Text.assemble((key, self.get_component_rich_style("key-bar--key")), " ", description)

    def render(self) -> Text:
        """Draw the bar for the current width."""
        return self.line(self.size.width)

    def on_click(self, event: events.Click) -> None:
        """A click on an item presses its key."""
        for start, end, key in self._spans:
            if start <= event.x < end:
                self.app.simulate_key(key)
                return
