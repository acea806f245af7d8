"""Snapshots of every screen of the review app at fixed terminal sizes (pytest-textual-snapshot).

After an intended change of the look: ``pytest tests/test_review_snapshots.py --snapshot-update``,
then review the SVGs (``snapshot_report.html``) before committing them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from kernel import Ctx
from tests.review_support import freeze_clock, review_app, seeded_store, settle
from tui.widgets.rows import RowList

WIDE = (100, 30)
SMALL = (80, 24)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    freeze_clock(monkeypatch)
    return seeded_store(tmp_path / "project")


@pytest.fixture
def opened(store: Path):
    kernels: list[Ctx] = []

    def make():
        app, kernel = review_app(store)
        kernels.append(kernel)
        return app

    yield make
    for kernel in kernels:
        kernel.close()


def steps(*keys: str, focus_row: str | None = None) -> Callable[[Pilot[None]], Awaitable[None]]:
    """Wait for the data, optionally move the queue cursor to a subject, press keys, wait again."""

    async def run(pilot: Pilot[None]) -> None:
        await settle(pilot)
        if focus_row is not None:
            rows = pilot.app.screen.query_one("#queue", RowList)
            rows.move_to(next(r.key for r in rows.rows if r.cells[2].plain == focus_row))
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False
        await settle(pilot)

    return run


def test_queue(snap_compare, opened) -> None:
    assert snap_compare(opened(), terminal_size=WIDE, run_before=steps())


def test_queue_at_80x24(snap_compare, opened) -> None:
    assert snap_compare(opened(), terminal_size=SMALL, run_before=steps())


def test_queue_filtered(snap_compare, opened) -> None:
    assert snap_compare(opened(), terminal_size=WIDE, run_before=steps("slash", *"by:gemini"))


def test_detail_with_a_contradiction(snap_compare, opened) -> None:
    run = steps("enter", focus_row="frontend.storybook")
    assert snap_compare(opened(), terminal_size=(100, 50), run_before=run)


def test_detail_with_a_supersession(snap_compare, opened) -> None:
    run = steps("enter", focus_row="db.driver")
    assert snap_compare(opened(), terminal_size=(100, 50), run_before=run)


def test_approve_confirmation(snap_compare, opened) -> None:
    run = steps("a", focus_row="auth.tokens")
    assert snap_compare(opened(), terminal_size=WIDE, run_before=run)


def test_reject_dialog_requires_a_reason(snap_compare, opened) -> None:
    run = steps("r", "enter", focus_row="testing.integration")
    assert snap_compare(opened(), terminal_size=WIDE, run_before=run)


def test_edit_dialog(snap_compare, opened) -> None:
    run = steps("e", focus_row="db.driver")
    assert snap_compare(opened(), terminal_size=WIDE, run_before=run)


def test_kernel_browser(snap_compare, opened) -> None:
    assert snap_compare(opened(), terminal_size=WIDE, run_before=steps("2", "down", "down", "down"))


def test_history(snap_compare, opened) -> None:
    run = steps("2", "down", "down", "down", "down", "down", "h")
    assert snap_compare(opened(), terminal_size=WIDE, run_before=run)


def test_evidence(snap_compare, opened) -> None:
    assert snap_compare(opened(), terminal_size=WIDE, run_before=steps("3"))


def test_evidence_opened(snap_compare, opened) -> None:
    assert snap_compare(opened(), terminal_size=WIDE, run_before=steps("3", "enter"))


def test_audit(snap_compare, opened) -> None:
    assert snap_compare(opened(), terminal_size=WIDE, run_before=steps("4"))
