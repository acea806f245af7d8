"""A virtual table: renders only the rows on screen, so 10,000 rows scroll as fast as 10."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip


@dataclass(frozen=True)
class Column:
    """A column: its title, width in cells (None takes the remaining width) and where it cuts.

    ``middle`` keeps both ends of a text too long for the column (ids differ at their end).
    """

    title: str
    width: int | None
    cut: Literal["end", "middle"] = "end"


def middle_ellipsis(text: Text, width: int) -> Text:
    """``text`` in at most ``width`` cells: its start, an ellipsis, and its end (the larger part)."""
    if text.cell_len <= width:
        return text
    if width < 3:
        return text[:width]
    head = (width - 1) // 2
    tail = width - 1 - head
    return Text.assemble(text[:head], "…", text[len(text) - tail :])


@dataclass(frozen=True)
class Row:
    """One row: a key for lookups and one rich text per column."""

    key: str
    cells: tuple[Text, ...]


class RowList(ScrollView, can_focus=True):
    """A keyboard- and mouse-driven list of rows with a cursor, drawn line by line.

    Textual's DataTable measures every row when rows change; at 10,000 rows that takes
    seconds. This widget draws the visible lines only.
    """

    DEFAULT_CSS = """
    RowList { height: 1fr; overflow-x: hidden; }
    RowList > .row-list--cursor { background: $accent 40%; text-style: bold; }
    RowList:focus > .row-list--cursor { background: $accent; color: $text; }
    """
    COMPONENT_CLASSES = {"row-list--cursor"}
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "jump(0)", "First", show=False),
        Binding("end,G", "jump(-1)", "Last", show=False),
        Binding("enter", "open", "Open", show=False, tooltip="the row in full"),
    ]

    cursor: reactive[int] = reactive(0, always_update=True)

    class Highlighted(Message):
        """The cursor moved to another row."""

        def __init__(self, rows: RowList, key: str | None) -> None:
            super().__init__()
            self.rows = rows
            self.key = key

        @property
        def control(self) -> RowList:
            """The list that sent it."""
            return self.rows

    class Scrolled(Message):
        """Other rows came into view."""

        def __init__(self, rows: RowList) -> None:
            super().__init__()
            self.rows = rows

        @property
        def control(self) -> RowList:
            """The list that sent it."""
            return self.rows

    class Opened(Message):
        """A row was opened (Enter or double click)."""

        def __init__(self, rows: RowList, key: str) -> None:
            super().__init__()
            self.rows = rows
            self.key = key

        @property
        def control(self) -> RowList:
            """The list that sent it."""
            return self.rows

    def __init__(self, columns: list[Column], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns = columns
        self.keys: list[str] = []
        self._items: Sequence[Any] = ()
        self._make: Callable[[Any], Row] = lambda row: row
        self._built: dict[int, Row] = {}
        self._index: dict[str, int] = {}
        self._cache: dict[tuple[int, int, bool], Strip] = {}

    # -- data -----------------------------------------------------------------------------

    def set_rows(self, rows: list[Row], keep: str | None = None) -> None:
        """Replace the rows, keeping the cursor on ``keep`` (or the current row's key) if present."""
        self.set_items(rows, [row.key for row in rows], lambda row: row, keep)

    def set_items(
        self, items: Sequence[Any], keys: list[str], make: Callable[[Any], Row], keep: str | None = None
    ) -> None:
        """Replace the rows with ``items``; ``make`` builds an item's row only when it is drawn."""
        keep = keep if keep is not None else self.current_key
        self._items, self.keys, self._make = items, keys, make
        self._built.clear()
        self._index = {key: i for i, key in enumerate(keys)}
        self._cache.clear()
        self.virtual_size = Size(self.size.width, len(keys))
        self.cursor = self._index.get(keep, min(self.cursor, max(len(keys) - 1, 0))) if keep else 0
        self.refresh()

    def row(self, index: int) -> Row:
        """The row at ``index``, built on first use."""
        built = self._built.get(index)
        if built is None:
            built = self._built[index] = self._make(self._items[index])
        return built

    @property
    def rows(self) -> list[Row]:
        """Every row (builds them all: for tests and small lists)."""
        return [self.row(i) for i in range(len(self.keys))]

    def visible_keys(self) -> list[str]:
        """The keys of the rows on screen."""
        top = int(self.scroll_offset.y)
        return self.keys[top : top + max(self.size.height, 1)]

    def watch_scroll_y(self, old: float, new: float) -> None:
        """Tell the screen when other rows come into view."""
        super().watch_scroll_y(old, new)
        if int(old) != int(new):
            self.post_message(self.Scrolled(self))

    @property
    def current_key(self) -> str | None:
        """The key of the row under the cursor."""
        return self.keys[self.cursor] if 0 <= self.cursor < len(self.keys) else None

    def move_to(self, key: str) -> None:
        """Put the cursor on the row with ``key``."""
        if key in self._index:
            self.cursor = self._index[key]

    def refresh_row(self, key: str) -> None:
        """Build one row again (its item changed) and redraw it."""
        index = self._index.get(key)
        if index is None:
            return
        self._built.pop(index, None)
        for cached in [c for c in self._cache if c[0] == index]:
            del self._cache[cached]
        self.refresh()

    # -- layout ---------------------------------------------------------------------------

    def widths(self, total: int) -> list[int]:
        """Each column's width for a line ``total`` cells wide (one space between columns)."""
        fixed = sum(c.width or 0 for c in self.columns) + len(self.columns) - 1
        flex = max(total - fixed, 8)
        return [c.width if c.width is not None else flex for c in self.columns]

    def header(self, total: int) -> Text:
        """The column titles laid out like the rows."""
        line = Text(no_wrap=True, overflow="crop")
        for i, (column, width) in enumerate(zip(self.columns, self.widths(total), strict=True)):
            line.append(("" if i == 0 else " ") + column.title.ljust(width)[:width])
        return line

    def on_resize(self, event: events.Resize) -> None:
        """Lay the rows out again for the new size, the cursor row still in view."""
        self._cache.clear()
        self.virtual_size = Size(event.size.width, len(self.keys))
        self._scroll_to_cursor(self.cursor)

    def on_focus(self) -> None:
        """The cursor row looks different with focus: draw it again."""
        self._cache.clear()
        self.refresh()

    def on_blur(self) -> None:
        """The cursor row looks different without focus: draw it again."""
        self._cache.clear()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        """Draw screen line ``y``."""
        index = y + int(self.scroll_offset.y)
        # The width left of the scrollbar: a row drawn under it would lose its last cells.
        width = self.scrollable_content_region.width or self.size.width
        if index >= len(self.keys):
            return Strip.blank(width, self.rich_style)
        selected = index == self.cursor
        cached = self._cache.get((index, width, selected))
        if cached is not None:
            return cached
        base = self.rich_style
        if selected:
            base = base + self.get_component_rich_style("row-list--cursor")
        segments: list[Segment] = []
        cells = zip(self.columns, self.row(index).cells, self.widths(width), strict=True)
        for i, (column, cell, size) in enumerate(cells):
            if i:
                segments.append(Segment(" ", base))
            text = cell.copy()
            if column.cut == "middle":
                text = middle_ellipsis(text, size)
            text.truncate(size, overflow="ellipsis", pad=True)
            for segment in text.render(self.app.console):
                if segment.text == "\n":
                    continue
                style = base + segment.style if segment.style else base
                if selected:
                    style = style + Style(bgcolor=base.bgcolor)
                segments.append(Segment(segment.text, style))
        strip = Strip(segments).adjust_cell_length(width, base)
        if len(self._cache) > 2000:
            self._cache.clear()
        self._cache[(index, width, selected)] = strip
        return strip

    # -- cursor ---------------------------------------------------------------------------

    def watch_cursor(self, old: int, new: int) -> None:
        """Keep the cursor visible and tell the screen."""
        if not self.keys:
            self.post_message(self.Highlighted(self, None))
            return
        clamped = min(max(new, 0), len(self.keys) - 1)
        if clamped != new:
            self.cursor = clamped
            return
        self._scroll_to_cursor(new)
        self._cache = {k: v for k, v in self._cache.items() if k[0] not in (old, new)}
        self.refresh()
        self.post_message(self.Highlighted(self, self.keys[new]))

    def _scroll_to_cursor(self, index: int) -> None:
        top = int(self.scroll_offset.y)
        height = max(self.size.height, 1)
        if index < top:
            self.scroll_to(y=index, animate=False, immediate=True)
        elif index >= top + height:
            self.scroll_to(y=index - height + 1, animate=False, immediate=True)

    def action_cursor(self, step: int) -> None:
        """Move the cursor by ``step`` rows."""
        if self.keys:
            self.cursor = min(max(self.cursor + step, 0), len(self.keys) - 1)

    def action_page(self, direction: int) -> None:
        """Move the cursor by a screenful."""
        self.action_cursor(direction * max(self.size.height - 1, 1))

    def action_jump(self, index: int) -> None:
        """Go to the first (0) or last (-1) row."""
        if self.keys:
            self.cursor = index % len(self.keys)

    def action_open(self) -> None:
        """Open the row under the cursor."""
        if self.current_key is not None:
            self.post_message(self.Opened(self, self.current_key))

    def on_click(self, event: events.Click) -> None:
        """A click moves the cursor; a double click opens the row."""
        index = event.y + int(self.scroll_offset.y)
        if 0 <= index < len(self.keys):
            self.cursor = index
            if event.chain >= 2:
                self.action_open()
