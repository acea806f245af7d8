"""The review app fits a terminal of 80x24: every screen and dialog, its buttons, its keys and help."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Input, Static, Tree
from textual.widgets._toast import Toast

from ctx_kernel.kernel import Ctx
from ctx_kernel.tui.dialogs.help import HelpDialog
from ctx_kernel.tui.screens.base import KernelScreen
from ctx_kernel.tui.screens.browser import BrowserScreen
from ctx_kernel.tui.screens.detail import DetailScreen
from ctx_kernel.tui.widgets.keys import KeyBar
from ctx_kernel.tui.widgets.rows import RowList
from tests.review_support import VIEWS, View, freeze_clock, reach, review_app, seeded_store, settle

SIZE = (80, 24)
# The views that are a whole screen with a key bar; the others are dialogs over one.
SCREENS = [
    "queue",
    "queue_filtered",
    "detail",
    "detail_with_a_contradiction",
    "kernel",
    "kernel_subtree",
    "history",
    "evidence",
    "audit",
]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    freeze_clock(monkeypatch)
    return seeded_store(tmp_path / "project")


def _screen_lines(screen: Screen[object]) -> list[str]:
    """The screen as the person sees it, one string per row."""
    return [strip.text for strip in screen._compositor.render_strips()]


def _text_in(screen: Screen[object], widget: Widget) -> str:
    """The words drawn inside ``widget``'s region, its lines joined by spaces."""
    region = widget.region
    lines = _screen_lines(screen)[region.y : region.bottom]
    return " ".join(" ".join(line[region.x : region.right].split()) for line in lines).strip()


def _scrolls(widget: Widget) -> bool:
    return widget.styles.overflow_x in ("auto", "scroll") or widget.styles.overflow_y in ("auto", "scroll")


def _scrolled_into(widget: Widget, screen: Screen[object]) -> bool:
    """True when an ancestor below the screen scrolls: the widget may rightly lie outside the view."""
    node = widget.parent
    while isinstance(node, Widget) and node is not screen:
        if _scrolls(node):
            return True
        node = node.parent
    return False


def misfits(screen: Screen[object]) -> list[str]:
    """Widgets that stick out of the screen, or out of a parent that does not scroll."""
    area = screen.region
    found = []
    for widget in screen.walk_children(with_self=False):
        if not isinstance(widget, Widget) or not widget.display or _scrolled_into(widget, screen):
            continue
        region = widget.region
        if not region:
            continue
        if not area.contains_region(region):
            found.append(f"{widget!r} at {region} is outside the screen {area}")
        parent = widget.parent
        if isinstance(parent, Widget) and parent is not screen and not parent.region.contains_region(region):
            found.append(f"{widget!r} at {region} sticks out of {parent!r} at {parent.region}")
    return found


async def _open(store: Path, view: View):
    app, kernel = review_app(store, reviewer_confirmed=view.reviewer_confirmed)
    return app, kernel


@pytest.mark.parametrize("name", list(VIEWS))
async def test_every_widget_lies_within_the_screen(store: Path, name: str) -> None:
    app, kernel = await _open(store, VIEWS[name])
    async with app.run_test(size=SIZE) as pilot:
        await reach(VIEWS[name])(pilot)
        assert app.screen.region.size == SIZE
        assert misfits(app.screen) == []
    kernel.close()


@pytest.mark.parametrize("name", [name for name in VIEWS if name not in SCREENS])
async def test_every_button_of_a_dialog_is_on_screen_and_on_top(store: Path, name: str) -> None:
    app, kernel = await _open(store, VIEWS[name])
    async with app.run_test(size=SIZE) as pilot:
        await reach(VIEWS[name])(pilot)
        screen = app.screen
        assert not isinstance(screen, KernelScreen), f"{name} should be a dialog"
        for button in screen.query(Button):
            region = button.region
            assert screen.region.contains_region(region), f"{button.label} at {region}"
            # What is drawn at the button's middle is the button, not something over it.
            on_top, _ = screen.get_widget_at(*region.center)
            assert on_top is button, f"{button.label} is hidden by {on_top!r}"
    kernel.close()


@pytest.mark.parametrize("name", SCREENS)
async def test_the_key_bar_fits_and_ends_with_help(store: Path, name: str) -> None:
    app, kernel = await _open(store, VIEWS[name])
    async with app.run_test(size=SIZE) as pilot:
        await reach(VIEWS[name])(pilot)
        bar = app.screen.query_one(KeyBar)
        assert bar.region.y == SIZE[1] - 1 and bar.region.width == SIZE[0]
        line = bar.render()
        assert line.cell_len <= SIZE[0]
        assert line.plain.rstrip().endswith("? help")
        for width in range(12, 200):
            narrower = bar.line(width)
            assert narrower.cell_len <= width and narrower.plain.endswith("? help"), width
        # Whole items only, each a key of the screen with its binding's description.
        active = app.screen.active_bindings
        offered = {f"{app.get_key_display(b.binding)} {b.binding.description}" for b in active.values()}
        items = line.plain.strip().split("  ")
        assert items[-1] == "? help" and len(items) >= 3
        assert set(items[:-1]) <= offered, set(items[:-1]) - offered
        if name == "queue":
            assert items[:-1] == [
                "a Approve",
                "r Reject",
                "e Edit+approve",
                "enter Open",
                "/ Filter",
                "s Skip",
            ]
    kernel.close()


async def test_the_key_bar_shows_more_on_a_wider_terminal(store: Path) -> None:
    app, kernel = await _open(store, VIEWS["queue"])
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        line = app.screen.query_one(KeyBar).render().plain
        for item in ("w Withdraw", "space Select", "A Approve sel.", "o Sort", "u Undo", "1 Queue"):
            assert item in line
        assert line.rstrip().endswith("? help") and len(line) <= 160
    kernel.close()


async def test_a_click_on_the_key_bar_presses_the_key(store: Path) -> None:
    app, kernel = await _open(store, VIEWS["queue"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        line = app.screen.query_one(KeyBar).render().plain
        await pilot.click(KeyBar, offset=(line.index("? help") + 1, 0))
        await settle(pilot)
        assert isinstance(app.screen, HelpDialog)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.click(KeyBar, offset=(line.index("/ Filter") + 3, 0))
        await settle(pilot)
        assert app.focused is app.screen.query_one("#filter")
    kernel.close()


def _help_rows(dialog: HelpDialog) -> list[tuple[list[str], str]]:
    """The help dialog's table as the person reads it (at the width it is drawn): keys, then text."""
    static = dialog.query_one("#help-keys", Static)
    console = Console(width=static.region.width, file=io.StringIO(), record=True, color_system=None)
    console.print(static.content)
    rows = []
    for line in console.export_text().splitlines():
        # A row starts at the left edge: its keys, two spaces or more, what they do.
        match = re.match(r"(\S+(?: \S+)*?)\s{2,}(\S.*)", line)
        if match:
            rows.append((match[1].split(" "), match[2]))
    return rows


def _lists(rows: list[tuple[list[str], str]], key: str, description: str) -> bool:
    return any(key in keys and text.lower().startswith(description.lower()) for keys, text in rows)


async def test_a_question_mark_in_the_filter_is_typed_not_help(store: Path) -> None:
    app, kernel = await _open(store, VIEWS["queue_filtered"])
    async with app.run_test(size=SIZE) as pilot:
        await reach(VIEWS["queue_filtered"])(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        assert not isinstance(app.screen, HelpDialog)
        assert app.screen.query_one("#filter", Input).value == "by:gemini?"
    kernel.close()


@pytest.mark.parametrize("name", [name for name in SCREENS if name != "queue_filtered"])
async def test_help_lists_every_key_of_the_screen(store: Path, name: str) -> None:
    app, kernel = await _open(store, VIEWS[name])
    async with app.run_test(size=SIZE) as pilot:
        await reach(VIEWS[name])(pilot)
        screen = app.screen
        expected = {
            (app.get_key_display(active.binding), active.binding.description or active.binding.action)
            for active in screen.active_bindings.values()
        }
        await pilot.press("question_mark")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, HelpDialog)
        rows = _help_rows(dialog)
        for display, description in expected:
            assert _lists(rows, display, description.replace("_", " ")), f"{display} ({description})"
        for key in ("?", "1", "2", "3", "4", "q"):
            assert any(key in keys for keys, _ in rows)
        assert misfits(dialog) == []
        await pilot.press("question_mark")
        await settle(pilot)
        assert app.screen is screen
    kernel.close()


async def test_help_on_the_queue_names_the_keys_the_bar_has_no_room_for(store: Path) -> None:
    app, kernel = await _open(store, VIEWS["queue"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        bar = app.screen.query_one(KeyBar).render().plain
        await pilot.press("question_mark")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, HelpDialog)
        rows = _help_rows(dialog)
        for key, words in [
            ("/", "Filter"),
            ("o", "Sort"),
            ("enter", "Open"),
            ("u", "Undo"),
            ("space", "Select"),
            ("A", "Approve sel."),
            ("1", "Queue"),
            ("4", "Audit"),
            ("esc", "Clear filter"),
            ("↑", "Up"),
            ("^p", "palette"),
        ]:
            assert _lists(rows, key, words), key
        assert "u Undo" not in bar
    kernel.close()


async def test_approving_from_the_detail_opens_the_next_one_at_its_top(store: Path) -> None:
    app, kernel = await _open(store, VIEWS["detail"])
    async with app.run_test(size=SIZE) as pilot:
        await reach(View(("enter",), row="auth.tokens"))(pilot)
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        first = detail.proposal_id
        scroller = detail.query_one("#detail")
        await pilot.press("end")
        await settle(pilot)
        assert scroller.scroll_y > 0
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is detail and detail.proposal_id != first
        with Ctx.open(store, embedder=None) as reader:
            assert reader.proposal(first).status == "ratified"
        assert scroller.scroll_y == 0
        head = detail.query_one("#d-head", Static)
        assert app.screen.region.contains_region(head.region)
        assert detail.proposal_id in str(head.render())
        on_top, _ = app.screen.get_widget_at(*head.region.offset)
        assert on_top is head
    kernel.close()


async def test_the_audit_screen_keeps_the_end_of_ids_that_share_a_start(store: Path) -> None:
    app, kernel = await _open(store, VIEWS["audit"])
    async with app.run_test(size=SIZE) as pilot:
        await reach(VIEWS["audit"])(pilot)
        rows = app.screen.query_one("#audit", RowList)
        lines = [rows.render_line(y).text for y in range(rows.size.height)]
        shown = [line for line in lines if line.strip()]
        targets = [event.target for event in reversed(kernel.audit.events())][: len(shown)]
        for line, target in zip(shown, targets, strict=True):
            cell = line.rstrip().rsplit(" ", 1)[-1]
            assert len(cell) < len(target) and "…" in cell
            head, tail = cell.split("…")
            assert target.startswith(head) and target.endswith(tail) and len(tail) >= 8
        # Rows for different targets never look the same.
        cells = {line.rstrip().rsplit(" ", 1)[-1] for line in shown}
        assert len(cells) == len({*targets})
    kernel.close()


LONG_DECISION = (
    "Keep every payment webhook idempotent: store the provider's event id with a unique index before "
    "doing any work, answer 200 for an event already stored, and move failed deliveries to a dead "
    "letter table that an operator replays by hand after reading why each one failed; never retry "
    "inside the request, because the provider retries on its own schedule and two retries at once "
    "charged a customer twice in March."
)


async def test_the_preview_takes_the_rows_the_list_does_not_need_and_shows_the_whole_text(
    store: Path,
) -> None:
    with Ctx.open(store, embedder=None) as agent:
        long = agent.propose(
            "payments.webhooks", LONG_DECISION, rationale="Double charges.", proposer="claude"
        )
    app, kernel = await _open(store, VIEWS["queue"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        rows = screen.query_one("#queue", RowList)
        rows.move_to(long.id)
        await settle(pilot)
        preview = screen.query_one("#preview")
        # The list is as tall as its rows; the preview has every row from there to the status line.
        assert rows.region.height == len(rows.keys) == 6
        assert preview.region.y == rows.region.bottom
        assert preview.region.bottom == screen.query_one("#queue-status").region.y
        shown = _text_in(screen, preview)
        assert " ".join(LONG_DECISION.split()) in shown and "why: Double charges." in shown
    kernel.close()


async def test_a_long_queue_keeps_most_rows_and_still_shows_a_long_text_whole(store: Path) -> None:
    with Ctx.open(store, embedder=None) as agent:
        for i in range(40):
            agent.propose(f"area{i}.topic", f"Adopt tool {i} for area {i}.", proposer="codex")
        long = agent.propose("payments.webhooks", LONG_DECISION, proposer="claude")
    app, kernel = await _open(store, VIEWS["queue"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        rows = screen.query_one("#queue", RowList)
        space = screen.query_one("#queue-body").region.height
        await pilot.press("end", "up")
        await settle(pilot)
        beside_a_short_text = rows.region.height
        assert beside_a_short_text >= space * 2 // 3
        await pilot.press("down")
        await settle(pilot)
        assert rows.current_key == long.id
        preview = screen.query_one("#preview")
        assert " ".join(LONG_DECISION.split()) in _text_in(screen, preview)
        # The list gave up rows for the long text, but kept half the space, the cursor row in view.
        assert space // 2 <= rows.region.height < beside_a_short_text
        assert rows.current_key in rows.visible_keys()
        await pilot.press("up")
        await settle(pilot)
        assert rows.region.height == beside_a_short_text
    kernel.close()


async def test_the_kernel_screen_gives_the_text_the_width_left_after_the_tree(store: Path) -> None:
    app, kernel = await _open(store, VIEWS["kernel"])
    async with app.run_test(size=SIZE) as pilot:
        await reach(VIEWS["kernel"])(pilot)
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        tree = screen.query_one("#subjects", Tree)
        pane = screen.query_one("#decision-pane")
        # The tree is as wide as its subjects' names; the text column has every column after it.
        assert tree.region.width <= 30
        assert pane.region.x == tree.region.right and pane.region.right == SIZE[0]
        await pilot.press("home")
        await settle(pilot)
        leaves = 0
        for _ in range(tree.last_line + 1):
            node = tree.cursor_node
            assert node is not None
            shown = _text_in(screen, pane)
            if node.allow_expand:
                # A subject with subjects below: each decision under it, its text whole (the root's
                # list is longer than the screen, so it is read from the pane's text).
                assert screen.chosen is None
                listed = str(screen.query_one("#decision", Static).render())
                under = [d for d in screen.decisions.values() if d.subject.startswith(node.data or "")]
                assert under and all(d.decision in listed for d in under)
            else:
                leaves += 1
                chosen = screen.chosen
                assert chosen is not None and chosen.id == node.data
                assert " ".join(chosen.decision.split()) in shown
            await pilot.press("down")
            await settle(pilot)
        assert leaves == len(screen.decisions)
    kernel.close()


async def test_replacing_asks_for_a_decision_not_a_subject_above_several(store: Path) -> None:
    app, kernel = await _open(store, VIEWS["kernel_subtree"])
    async with app.run_test(size=SIZE) as pilot:
        await reach(VIEWS["kernel_subtree"])(pilot)
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        node = screen.query_one("#subjects", Tree).cursor_node
        assert node is not None and node.data == "auth"
        await pilot.press("n")
        await settle(pilot)
        assert app.screen is screen, "n on a subject with subjects below it drafts nothing"
    kernel.close()


async def test_after_an_act_the_toast_covers_no_text_of_the_next_proposal(store: Path) -> None:
    app, kernel = await _open(store, VIEWS["detail"])
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await reach(View(("enter",), row="auth.tokens"))(pilot)
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        first = detail.proposal_id
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        await pilot.pause(0.1)
        assert app.screen is detail and detail.proposal_id != first
        toasts = list(detail.query(Toast))
        assert len(toasts) == 1 and "Ratified auth.tokens as" in str(toasts[0].render())
        content = detail.query_one("#detail").region
        bar = detail.query_one(KeyBar).region
        for toast in toasts:
            region = toast.region
            assert region.height == 1 and region.y == bar.y, region
            assert not region.overlaps(content)
        # Every row of "If you approve" that is on screen is drawn, not covered.
        change = detail.query_one("#d-change", Static)
        visible_part = change.region.intersection(content)
        assert visible_part.height > 0
        for y in range(visible_part.y, visible_part.bottom):
            on_top, _ = detail.get_widget_at(visible_part.x, y)
            assert on_top is change
    kernel.close()
