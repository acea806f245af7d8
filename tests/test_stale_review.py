"""The review app's Stale view at 80x24: what may be stale, re-confirmed, retired or replaced by a
person through the real app over a store in a real git repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from review_support import review_app, settle
from test_stale import Repo
from textual.widgets import Static

from ctx_kernel.kernel import Ctx
from ctx_kernel.tui.screens.stale import StaleScreen
from ctx_kernel.tui.widgets.rows import RowList

SIZE = (80, 24)


@pytest.fixture
def linked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Repo, dict[str, str]]:
    """A store with two linked decisions, both stale after one edit."""
    repo = Repo(tmp_path / "work")
    repo.commit("Start", **{"kernel__store__base.py": "a\n", "kernel__cli.py": "b\n"})
    monkeypatch.chdir(repo.root)
    store = tmp_path / "ctx.db"
    kernel, _ = Ctx.init(store, embedder=None)
    with kernel:
        made = {}
        for subject, link in (("store.layout", "kernel/store/**"), ("cli.entry", "kernel/cli.py")):
            proposal = kernel.propose(subject, f"Decision on {subject}", links=[link])
            made[subject] = kernel.ratify(proposal.id, reviewer="alice").decision.id
    repo.commit("Edit both", author="Bo", **{"kernel__store__base.py": "a2\n", "kernel__cli.py": "b2\n"})
    return store, repo, made


def _rows(app) -> list[str]:
    return [row.cells[1].plain for row in app.screen.query_one("#stale", RowList).rows]


async def test_the_stale_view_lists_reconfirms_and_retires(linked) -> None:
    store, _repo, made = linked
    app, kernel = review_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        assert isinstance(app.screen, StaleScreen)
        assert sorted(_rows(app)) == ["cli.entry", "store.layout"]
        status = str(app.screen.query_one("#stale-status", Static).render())
        assert "2 decisions may be stale" in status
        rows = app.screen.query_one("#stale", RowList)
        rows.move_to(made["store.layout"])
        await pilot.press("c")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert _rows(app) == ["cli.entry"]
        await pilot.press("r")
        await settle(pilot)
        await pilot.press(*"moved to the new entry point")
        await pilot.press("enter")
        await settle(pilot)
        assert _rows(app) == []
    with Ctx.open(store, embedder=None) as again:
        assert [s.act for s in again.store.snapshots_of(made["store.layout"])] == ["ratified", "reconfirmed"]
        assert again.store.snapshots_of(made["store.layout"])[-1].taken_by == "alice"
        assert again.decision(made["cli.entry"]).closed_by == "retired"
        assert again.staleness.report().stale == []
    kernel.close()


async def test_a_replacement_is_proposed_with_the_links_and_nothing_is_reconfirmed(linked) -> None:
    store, _repo, made = linked
    app, kernel = review_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        app.screen.query_one("#stale", RowList).move_to(made["cli.entry"])
        await pilot.press("p")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert sorted(_rows(app)) == ["cli.entry", "store.layout"]
    with Ctx.open(store, embedder=None) as again:
        (pending,) = again.queue()
        assert pending.subject == "cli.entry" and pending.proposer == "alice"
        assert again.plan_ratification(pending.id).links == ["kernel/cli.py"]
        assert len(again.store.snapshots_of(made["cli.entry"])) == 1
    kernel.close()


async def test_a_request_to_reconfirm_shows_in_the_queue_and_beside_the_decision_and_c_approves_it(
    linked,
) -> None:
    store, _repo, made = linked
    decision = made["store.layout"]
    with Ctx.open(store, embedder=None) as agent:
        request = agent.propose(
            None, None, reconfirms=decision, rationale="Still one module", proposer="claude"
        )
    app, kernel = review_app(store)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        (row,) = app.screen.query_one("#queue", RowList).rows
        assert row.key == request.id and "reconf" in row.cells[4].plain
        peek = str(app.screen.query_one("#peek", Static).render())
        assert "asks a person to re-confirm" in peek and "changed in 1 commit" in peek and "by Bo" in peek
        await pilot.press("5")
        await settle(pilot)
        rows = app.screen.query_one("#stale", RowList)
        whys = {r.key: r.cells[2].plain for r in rows.rows}
        assert whys[decision].startswith("claude asks to re-confirm")
        assert not whys[made["cli.entry"]].startswith("claude")
        rows.move_to(decision)
        await pilot.press("c")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert _rows(app) == ["cli.entry"]
    with Ctx.open(store, embedder=None) as again:
        assert [s.act for s in again.store.snapshots_of(decision)] == ["ratified", "reconfirmed"]
        resolved = again.proposal(request.id)
        assert (resolved.status, resolved.decision_id, resolved.resolved_by) == (
            "ratified",
            decision,
            "alice",
        )
        assert len(again.decisions(include_closed=True)) == 2 and again.queue() == []
        assert again.audit.verify(state=True).ok
    kernel.close()
