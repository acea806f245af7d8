"""Helpers for the review app's tests: a frozen clock, a seeded store, and waiting for workers."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from textual.pilot import Pilot

from kernel import Ctx, clock
from kernel.demo import build_demo
from tui.app import ReviewApp, make_app

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
    monkeypatch.setattr(clock, "new_id", new_id)


def seeded_store(folder: Path) -> Path:
    """The demo store (decisions, a supersession, evidence, pending proposals incl. a contradiction)."""
    kernel = build_demo(folder)
    location = Path(kernel.location)
    kernel.close()
    return location


def review_app(store: Path, *, poll: float | None = None, reviewer: str = "alice") -> tuple[ReviewApp, Ctx]:
    """The real app over a store opened without vectors (recall is deterministic and fast)."""
    kernel = Ctx.open(store, embedder=None)
    return make_app(kernel, reviewer, now=lambda: APP_NOW, poll=poll), kernel


async def settle(pilot: Pilot[None]) -> None:
    """Wait until every worker (and the workers their results start) has finished."""
    for _ in range(50):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not any(w.is_running for w in pilot.app.workers):
            return
