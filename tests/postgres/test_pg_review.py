"""The review app on a PostgreSQL store: it sees another reviewer's commits, and an approval whose
plan went stale is refused and shown again, as on SQLite."""

from __future__ import annotations

import asyncio

from ctx_kernel.kernel import Ctx
from ctx_kernel.tui.app import make_app
from ctx_kernel.tui.dialogs.confirm import ConfirmDialog
from ctx_kernel.tui.widgets.rows import RowList
from tests.review_support import APP_NOW, settle


async def _until(pilot, condition, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.05)):
        await settle(pilot)
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the review app did not catch up")


async def test_the_review_app_follows_other_commits_and_refuses_a_stale_plan(pg) -> None:
    kernel, _ = Ctx.init(pg.url(), embedder=None)
    kernel.ratify(kernel.propose("db.driver", "Use psycopg 2").id, reviewer="carol")
    mine = kernel.propose("db.driver", "Use psycopg 3").id
    app = make_app(kernel, "alice", now=lambda: APP_NOW, poll=0.1)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        queue = app.screen.query_one("#queue", RowList)
        assert queue.keys == [mine]
        # Another reviewer's agent queues a proposal on another connection: the app polls and shows it.
        with Ctx.open(pg.url(), embedder=None) as other:
            theirs = other.propose("cache.backend", "Use Redis").id
        await _until(pilot, lambda: theirs in app.screen.query_one("#queue", RowList).keys)
        app.screen.query_one("#queue", RowList).move_to(mine)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        with Ctx.open(pg.url(), embedder=None) as other:
            winner = other.ratify(
                other.propose("db.driver", "Use asyncpg").id, reviewer="bob", settle=[]
            ).decision
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        listed = "\n".join(app.screen.lines)
        assert "The store changed" in listed and winner.id in listed and "bob" in listed
        await pilot.press("y")
        await settle(pilot)
    kernel.close()
    with Ctx.open(pg.url(), embedder=None) as check:
        assert check.proposal(mine).status == "ratified"
        assert check.decision(winner.id).closed_by == "superseded"
