"""Helpers for the review app's tests: a frozen clock, a seeded store, and waiting for workers."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from ctx_kernel.kernel import Ctx, clock, ids
from ctx_kernel.kernel.demo import build_demo
from ctx_kernel.tui.app import ReviewApp, make_app
from ctx_kernel.tui.widgets.rows import RowList

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
# The app's "now": the demo's proposals are then about eleven days old, so they show as stale.
APP_NOW = datetime(2026, 1, 16, 12, 0, tzinfo=UTC)


def freeze_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Timestamps one minute apart from START and ids from a counter: snapshots stay identical."""
    ticks = itertools.count()
    serial = itertools.count(1)

    def now() -> str:
        return clock.format_ts(START + timedelta(minutes=next(ticks)))

    def new_id(prefix: str) -> str:
        body = f"{next(serial):026d}"
        return f"{prefix}_{body}"

    monkeypatch.setattr(clock, "now", now)
    monkeypatch.setattr(ids, "new_id", new_id)


def seeded_store(folder: Path) -> Path:
    """The demo store (decisions, a supersession, evidence, pending proposals incl. a contradiction)."""
    kernel = build_demo(folder)
    location = Path(kernel.location)
    kernel.close()
    return location


def review_app(
    store: Path, *, poll: float | None = None, reviewer: str = "alice", reviewer_confirmed: bool = True
) -> tuple[ReviewApp, Ctx]:
    """The real app over a store opened without vectors (recall is deterministic and fast)."""
    kernel = Ctx.open(store, embedder=None)
    app = make_app(kernel, reviewer, now=lambda: APP_NOW, poll=poll, reviewer_confirmed=reviewer_confirmed)
    return app, kernel


async def settle(pilot: Pilot[None]) -> None:
    """Wait until every worker (and the workers their results start) has finished."""
    for _ in range(50):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            return


@dataclass(frozen=True)
class View:
    """A screen or dialog of the review app: the keys that reach it from the queue of the demo store."""

    keys: tuple[str, ...] = ()
    row: str | None = None  # the subject of the queue row to put the cursor on first
    reviewer_confirmed: bool = True


# Every screen and dialog, by name (the snapshot and fit tests go through the same list).
VIEWS: dict[str, View] = {
    "queue": View(),
    "queue_filtered": View(("slash", *"by:gemini")),
    "queue_help": View(("question_mark",)),
    "detail": View(("enter",), row="db.driver"),
    "detail_with_a_contradiction": View(("enter",), row="frontend.storybook"),
    "detail_help": View(("enter", "question_mark"), row="db.driver"),
    "approve_confirmation": View(("a",), row="auth.tokens"),
    "approve_selection": View(("space", "space", "A")),
    "reject_requires_a_reason": View(("r", "enter"), row="testing.integration"),
    "withdraw": View(("w",), row="frontend.storybook"),
    "edit": View(("e",), row="db.driver"),
    "approve_after_a_cancelled_edit": View(("e", "space", *"amended", "ctrl+s", "n", "a"), row="db.driver"),
    "who_is_acting": View(("a",), reviewer_confirmed=False),
    "kernel": View(("2", "down", "down")),
    "kernel_subtree": View(("2", "down", "down", "down")),
    "replace": View(("2", "down", "down", "n")),
    "history": View(("2", "down", "down", "down", "down", "h")),
    "evidence": View(("3",)),
    "evidence_opened": View(("3", "enter")),
    "audit": View(("4",)),
    "audit_row": View(("4", "enter")),
}


def reach(view: View) -> Callable[[Pilot[None]], Awaitable[None]]:
    """Wait for the data, put the queue cursor on ``view.row``, press its keys, wait again."""

    async def run(pilot: Pilot[None]) -> None:
        await settle(pilot)
        if view.row is not None:
            rows = pilot.app.screen.query_one("#queue", RowList)
            rows.move_to(next(r.key for r in rows.rows if r.cells[2].plain == view.row))
        for key in view.keys:
            await pilot.press(key)
            await settle(pilot)
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False
        await settle(pilot)

    return run
