"""Two reviewers at once: each review app sees the other's act within a second (PostgreSQL: the
commit's notification wakes it; SQLite: data_version, once a second), and a plan shown before the
other's act is refused as stale, on both backends."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx
from ctx_kernel.tui.app import POLL_SECONDS, make_app
from ctx_kernel.tui.dialogs.confirm import ConfirmDialog
from ctx_kernel.tui.screens.queue import QueueScreen
from ctx_kernel.tui.widgets.rows import RowList
from tests.review_support import APP_NOW, settle

# PostgreSQL wakes the app at the commit; SQLite's app asks once per POLL_SECONDS.
WITHIN = {"postgresql": 1.0, "sqlite": POLL_SECONDS + 1.0}


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str | Path]:
    if request.param == "sqlite":
        return "sqlite", tmp_path / "team.db"
    return "postgresql", request.getfixturevalue("pg_empty").url()


def queue_rows(app) -> list[str]:  # type: ignore[no-untyped-def]
    screen = next(s for s in app.screen_stack if isinstance(s, QueueScreen))
    return [row.key for row in screen.query_one("#queue", RowList).rows]


async def test_two_reviewers_see_each_others_acts_and_a_stale_plan_is_refused(location) -> None:  # type: ignore[no-untyped-def]
    backend, where = location
    setup, _ = Ctx.init(where, embedder=None)
    with setup:
        jwt = setup.ratify(setup.propose("auth.tokens", "Use JWT").id, reviewer="carol").decision
        mine = setup.propose("auth.tokens", "Use opaque session ids in Redis", proposer="claude").id
        # On another subject, replacing the same decision: not in the other's review group.
        theirs = setup.propose(
            "auth.sessions", "Server-side sessions replace tokens", supersedes=[jwt.id], proposer="codex"
        ).id
        setup.propose("ci.cache", "Cache pip downloads between CI runs", proposer="codex")
    kernel_a, kernel_b = Ctx.open(where, embedder=None), Ctx.open(where, embedder=None)
    app_a = make_app(kernel_a, "alice", now=lambda: APP_NOW)
    app_b = make_app(kernel_b, "bob", now=lambda: APP_NOW)
    try:
        async with app_a.run_test(size=(120, 40)) as pilot_a, app_b.run_test(size=(120, 40)) as pilot_b:
            await settle(pilot_a)
            await settle(pilot_b)
            assert {mine, theirs} <= set(queue_rows(app_b))
            # Bob opens the approval of his proposal: the plan closes JWT's window.
            app_b.screen.query_one("#queue", RowList).move_to(mine)
            await pilot_b.press("a")
            await settle(pilot_b)
            assert isinstance(app_b.screen, ConfirmDialog)
            assert f"Closes {jwt.id} on auth.tokens" in "\n".join(app_b.screen.lines)
            # Alice approves the other proposal first; it closes JWT's window too.
            app_a.screen.query_one("#queue", RowList).move_to(theirs)
            await pilot_a.press("a")
            await settle(pilot_a)
            assert isinstance(app_a.screen, ConfirmDialog)
            await pilot_a.press("y")
            await settle(pilot_a)  # alice's act is committed (bob's app may have seen it already)
            started = time.monotonic()
            while theirs in queue_rows(app_b) and time.monotonic() - started < 5:
                await asyncio.sleep(0.02)
            seen_after = time.monotonic() - started
            assert theirs not in queue_rows(app_b), "bob's queue never dropped alice's act"
            assert seen_after < WITHIN[backend], f"bob saw alice's act after {seen_after:.2f} s"
            # Bob confirms the plan he was shown: refused as stale, and shown again as it now stands.
            await pilot_b.press("y")
            await settle(pilot_b)
            assert isinstance(app_b.screen, ConfirmDialog)
            listed = "\n".join(app_b.screen.lines)
            assert f"The store changed: not ratified: {jwt.id} on auth.tokens" in listed
            assert "Supersedes nothing: the subject has no current decision." in listed
            await pilot_b.press("n")
            await settle(pilot_b)
            await settle(pilot_a)
    finally:
        kernel_a.close()
        kernel_b.close()
    with Ctx.open(where, embedder=None) as check:
        assert check.proposal(theirs).status == "ratified"
        assert check.proposal(mine).status == "pending"
        assert check.decision(jwt.id).closed_by == "superseded"
        assert check.audit.verify().ok


def test_the_facades_watch_wakes_on_another_connections_commit(location) -> None:  # type: ignore[no-untyped-def]
    backend, where = location
    kernel, _ = Ctx.init(where, embedder=None)
    with kernel:
        watch = kernel.watch_changes()
        try:
            assert watch.wait(0.05) is False
            with Ctx.open(where, embedder=None) as agent:
                agent.propose("ci.cache", "Cache pip downloads", proposer="codex")
            started = time.monotonic()
            # SQLite answers at the end of the wait, PostgreSQL at the notification.
            assert watch.wait(POLL_SECONDS) is True
            assert backend == "sqlite" or time.monotonic() - started < 0.5
            assert watch.wait(0.05) is False  # one wake per burst of commits
            kernel.propose("ci.runner", "Self-hosted runners", proposer="codex")
            # PostgreSQL leaves out the watched store's own commits; SQLite's own connection sees them.
            assert watch.wait(0.3) is (backend == "sqlite")
        finally:
            watch.close()
        assert watch.wait(0.01) is False
