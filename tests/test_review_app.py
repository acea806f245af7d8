"""The review app driven through Textual's Pilot: every act lands in the store and the audit log."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from textual.widgets import TextArea

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.store.sqlite import driver
from ctx_kernel.tui.dialogs.confirm import ConfirmDialog
from ctx_kernel.tui.dialogs.edit import EditDialog
from ctx_kernel.tui.dialogs.reason import ReasonDialog
from ctx_kernel.tui.dialogs.text import TextDialog
from ctx_kernel.tui.screens.browser import BrowserScreen
from ctx_kernel.tui.screens.detail import DetailScreen
from ctx_kernel.tui.screens.queue import QueueScreen
from ctx_kernel.tui.widgets.rows import RowList
from tests.review_support import freeze_clock, review_app, seeded_store, settle


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    freeze_clock(monkeypatch)
    return seeded_store(tmp_path / "project")


def _queue(store: Path) -> dict[str, str]:
    with Ctx.open(store, embedder=None) as kernel:
        return {p.id: p.subject for p in kernel.queue()}


def _audit(store: Path) -> list[tuple[str, str, str, dict]]:
    with Ctx.open(store, embedder=None) as kernel:
        assert kernel.audit.verify().ok
        return [(e.actor, e.action, e.target, json.loads(e.after or "{}")) for e in kernel.audit.events()]


def _rows(app) -> list[str]:
    return [row.key for row in app.screen.query_one("#queue", RowList).rows]


async def _move_to(pilot, key: str) -> None:
    pilot.app.screen.query_one("#queue", RowList).move_to(key)
    await pilot.pause()


def _first_on(store: Path, subject: str) -> str:
    return next(pid for pid, subj in _queue(store).items() if subj == subject)


async def test_queue_lists_pending_proposals_with_badges(store: Path) -> None:
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        assert set(_rows(app)) == set(_queue(store))
        rows = {r.key: r for r in app.screen.query_one("#queue", RowList).rows}
        storybook = _first_on(store, "frontend.storybook")
        assert "contra" in rows[storybook].cells[4].plain
        auth = [pid for pid, subj in _queue(store).items() if subj == "auth.tokens"]
        assert all("×2" in rows[pid].cells[4].plain for pid in auth)
        assert "dup" in rows[auth[1]].cells[4].plain
        status = str(app.screen.query_one("#queue-status").render())
        assert "5 pending" in status and "5 stale" in status
    kernel.close()


async def test_approve_ratifies_settles_the_group_and_audits(store: Path) -> None:
    target, duplicate = [pid for pid, subj in _queue(store).items() if subj == "auth.tokens"]
    with Ctx.open(store, embedder=None) as kernel:
        old = kernel.decisions("auth.tokens")[0]
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await _move_to(pilot, target)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        listed = "\n".join(app.screen.lines)
        assert old.id in listed and duplicate in listed
        await pilot.press("y")
        await settle(pilot)
        assert target not in _rows(app) and duplicate not in _rows(app)
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        current = check.decisions("auth.tokens")[0]
        assert current.proposal_id == target and current.ratified_by == "alice"
        assert check.decision(old.id).valid_until == current.valid_from
        settled = check.proposal(duplicate)
        assert settled.status == "rejected" and target in (settled.resolution_note or "")
    events = _audit(store)
    assert ("alice", "proposal.ratified", target) in [e[:3] for e in events]
    assert ("alice", "decision.superseded", old.id) in [e[:3] for e in events]
    settled_event = next(e for e in events if e[2] == duplicate and e[1] == "proposal.rejected")
    assert settled_event[3]["settled_by"] == target


async def test_cancelling_the_confirmation_changes_nothing(store: Path) -> None:
    before = _queue(store)
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
    kernel.close()
    assert _queue(store) == before


async def test_reject_requires_a_reason(store: Path) -> None:
    target = _first_on(store, "testing.integration")
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await _move_to(pilot, target)
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, ReasonDialog)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ReasonDialog), "an empty reason must not reject"
        assert "required" in str(app.screen.query_one("#reason-error").render())
        assert target in _queue(store)
        await pilot.press(*"flaky against shared staging")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        assert target not in _rows(app)
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        rejected = check.proposal(target)
    assert rejected.status == "rejected"
    assert rejected.resolution_note == "flaky against shared staging"
    assert rejected.resolved_by == "alice"
    event = next(e for e in _audit(store) if e[2] == target and e[1] == "proposal.rejected")
    assert event[3]["reason"] == "flaky against shared staging"


async def test_edit_then_approve_records_the_amendment(store: Path) -> None:
    target = _first_on(store, "db.driver")
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await _move_to(pilot, target)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, EditDialog)
        area = app.screen.query_one("#text")
        area.text = "Use asyncpg for ingest only; keep psycopg 3 elsewhere."
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        assert "(amended)" in app.screen.lines[0]
        await pilot.press("y")
        await settle(pilot)
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        current = check.decisions("db.driver")[0]
    assert current.decision == "Use asyncpg for ingest only; keep psycopg 3 elsewhere."
    assert current.amended and current.proposal_id == target
    event = next(e for e in _audit(store) if e[2] == target and e[1] == "proposal.ratified")
    assert event[3]["amended_from"].startswith("Avoid psycopg")


async def test_the_edit_dialog_starts_with_the_cursor_at_the_end(store: Path) -> None:
    target = _first_on(store, "db.driver")
    app, kernel = review_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await _move_to(pilot, target)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, EditDialog)
        area = app.screen.query_one("#text", TextArea)
        assert area.has_focus
        assert area.cursor_location == area.document.end != (0, 0)
        await pilot.press("space", *"now")
        assert area.text.endswith("admin scripts. now")
    kernel.close()


async def _edit(pilot, text: str) -> None:
    """Open the editor on the proposal under the cursor, add ``text`` at its end and save."""
    await pilot.press("e")
    await settle(pilot)
    assert isinstance(pilot.app.screen, EditDialog)
    pilot.app.screen.query_one("#text", TextArea).insert(text)
    await pilot.press("ctrl+s")
    await settle(pilot)


async def test_a_cancelled_approval_keeps_the_edit_for_the_next_approval(store: Path) -> None:
    target = _first_on(store, "db.driver")
    with Ctx.open(store, embedder=None) as check:
        proposed = check.proposal(target).decision
    edited = proposed + " Except the nightly export, which keeps psycopg 3."
    app, kernel = review_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await _move_to(pilot, target)
        await _edit(pilot, " Except the nightly export, which keeps psycopg 3.")
        assert isinstance(app.screen, ConfirmDialog) and edited in app.screen.lines
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        assert _queue(store)[target] == "db.driver", "cancelled: nothing ratified"
        # The preview says which text approving now ratifies.
        assert f"your edit, not yet approved: {edited}" in str(app.screen.query_one("#peek").render())
        # A second approval shows the edited text again, in full, as the one being ratified.
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        assert app.screen.lines[:2] == ["New current decision on db.driver (amended):", edited]
        await pilot.press("y")
        await settle(pilot)
        assert app.drafts == {}
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        current = check.decisions("db.driver")[0]
    assert current.proposal_id == target and current.decision == edited and current.amended
    event = next(e for e in _audit(store) if e[2] == target and e[1] == "proposal.ratified")
    assert event[3]["amended_from"] == proposed


async def test_the_detail_screen_shows_a_kept_edit_as_the_change_approval_makes(store: Path) -> None:
    target = _first_on(store, "db.driver")
    app, kernel = review_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await _move_to(pilot, target)
        await pilot.press("enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        await _edit(pilot, " Reviewed by the DBA.")
        await pilot.press("n")
        await settle(pilot)
        assert app.screen is detail
        change = str(detail.query_one("#d-change").render())
        assert "(amended)" in change and "admin scripts. Reviewed by the DBA." in change
        # The editor opens on the kept edit; Ctrl+R puts the proposed text back, which drops it.
        await pilot.press("e")
        await settle(pilot)
        area = app.screen.query_one("#text", TextArea)
        assert area.text.endswith("Reviewed by the DBA.")
        await pilot.press("ctrl+r")
        assert not area.text.endswith("Reviewed by the DBA.")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        assert app.screen.lines[0] == "New current decision on db.driver:"
        await pilot.press("n")
        await settle(pilot)
        assert app.drafts == {}
        assert "(amended)" not in str(detail.query_one("#d-change").render())
    kernel.close()


async def test_approving_a_selection_ratifies_the_kept_edits(store: Path) -> None:
    target = _first_on(store, "db.driver")
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await _move_to(pilot, target)
        await _edit(pilot, " Reviewed.")
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("space", "A")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        assert any(
            line.startswith("• db.driver: ") and line.endswith("scripts. Reviewed.")
            for line in app.screen.lines
        )
        await pilot.press("y")
        await settle(pilot)
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        assert check.decisions("db.driver")[0].decision.endswith("scripts. Reviewed.")


async def test_withdraw_and_skip(store: Path) -> None:
    rows_before = list(_queue(store))
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#queue", RowList)
        await pilot.press("s")
        assert table.current_key == _rows(app)[1], "skip moves on without acting"
        await pilot.press("w")
        await settle(pilot)
        assert isinstance(app.screen, ReasonDialog)
        await pilot.press("enter")
        await settle(pilot)
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        withdrawn = [p for p in rows_before if check.proposal(p).status == "withdrawn"]
    assert len(withdrawn) == 1


async def test_filter_by_proposer_subject_and_fuzzy_words(store: Path) -> None:
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"by:gemini")
        await pilot.pause()
        with Ctx.open(store, embedder=None) as check:
            gemini = {p.id for p in check.queue(proposer="gemini")}
        assert set(_rows(app)) == gemini and len(gemini) == 2
        app.screen.query_one("#filter").value = "subject:auth revokd"
        await pilot.pause()
        assert {_queue(store)[k] for k in _rows(app)} == {"auth.tokens"}
        app.screen.query_one("#filter").value = "nothing-like-this-anywhere"
        await pilot.pause()
        assert _rows(app) == []
        assert "No proposal matches" in str(app.screen.query_one("#peek").render())
        await pilot.press("escape")
        await pilot.pause()
        assert len(_rows(app)) == 5
    kernel.close()


async def _wait_for_row(pilot, key: str) -> None:
    for _ in range(80):
        await asyncio.sleep(0.05)
        await settle(pilot)
        if key in _rows(pilot.app):
            return


async def test_new_proposal_appears_while_the_app_is_open(store: Path) -> None:
    app, kernel = review_app(store, poll=0.1)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await asyncio.sleep(0.3)  # past the first change checks
        assert len(_rows(app)) == 5
        with Ctx.open(store, embedder=None) as agent:
            new = agent.propose("ci.cache", "Cache pip downloads between CI runs.", proposer="codex")
        await _wait_for_row(pilot, new.id)
        assert new.id in _rows(app)
    kernel.close()


async def test_a_proposal_made_before_the_first_change_check_still_appears(store: Path) -> None:
    app, kernel = review_app(store, poll=1.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert len(_rows(app)) == 5
        with Ctx.open(store, embedder=None) as agent:
            new = agent.propose("ci.cache", "Cache pip downloads between CI runs.", proposer="codex")
        await _wait_for_row(pilot, new.id)
        assert new.id in _rows(app)
    kernel.close()


async def test_approving_a_selection_lists_it_and_refuses_two_from_one_group(store: Path) -> None:
    queue = _queue(store)
    auth = [pid for pid, subj in queue.items() if subj == "auth.tokens"]
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        for pid in auth:
            await _move_to(pilot, pid)
            await pilot.press("space")
        await pilot.press("A")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen), "two proposals of one group cannot both be approved"
        await _move_to(pilot, auth[1])
        await pilot.press("space")
        driver = _first_on(store, "db.driver")
        await _move_to(pilot, driver)
        await pilot.press("space")
        await pilot.press("A")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        listed = "\n".join(app.screen.lines)
        assert "auth.tokens" in listed and "db.driver" in listed
        await pilot.press("y")
        await settle(pilot)
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        assert check.proposal(auth[0]).status == "ratified"
        assert check.proposal(auth[1]).status == "rejected"
        assert check.proposal(driver).status == "ratified"


async def test_a_failed_act_is_a_notification_not_a_crash(store: Path) -> None:
    target = _first_on(store, "testing.integration")
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await _move_to(pilot, target)
        with Ctx.open(store, embedder=None) as other:
            other.reject(target, reviewer="bob", reason="done elsewhere")
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
        messages = [n.message for n in app._notifications]
        assert any(f"{target} is rejected, not pending" in m for m in messages)
    kernel.close()


async def test_detail_shows_the_change_the_diff_and_the_evidence(store: Path) -> None:
    target = _first_on(store, "frontend.storybook")
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await _move_to(pilot, target)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        conflicts = str(app.screen.query_one("#d-conflicts").render())
        assert "frontend.build" in conflicts and "Use Vite" in conflicts
        change = str(app.screen.query_one("#d-change").render())
        assert "Supersedes nothing" in change and "Contradicts" in change
        evidence = app.screen.query_one("#d-evidence")
        evidence.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert "Vite" in app.screen.body
        await pilot.press("escape", "escape")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen)
    kernel.close()


async def test_undo_offers_a_superseding_proposal(store: Path) -> None:
    target = _first_on(store, "db.driver")
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await _move_to(pilot, target)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        await pilot.press("u")
        await settle(pilot)
        assert isinstance(app.screen, EditDialog)
        assert "cannot be changed or undone in place" in app.screen.note
        app.screen.query_one("#text").text = "Use psycopg 3 for all PostgreSQL access, sync and async."
        await pilot.press("ctrl+s")
        await settle(pilot)
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        ratified = check.decisions("db.driver")[0]
        revert = [p for p in check.queue("db.driver") if ratified.id in p.explicit_supersedes]
    assert ratified.proposal_id == target
    assert len(revert) == 1 and revert[0].proposer == "alice"


async def test_kernel_browser_time_travel(store: Path) -> None:
    with Ctx.open(store, embedder=None) as check:
        first, second = check.history("auth.tokens")
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        assert second.id in screen.decisions and first.id not in screen.decisions
        await pilot.press("slash", *first.valid_from, "enter")
        await settle(pilot)
        assert first.id in screen.decisions and second.id not in screen.decisions
        await pilot.press("escape")
        await settle(pilot)
        assert second.id in screen.decisions
    kernel.close()


async def test_text_that_looks_like_markup_is_shown_literally(store: Path) -> None:
    text = "Use [bold]brackets[/bold], [link=http://x]links[/link] and [red unclosed"
    with Ctx.open(store, embedder=None) as agent:
        proposal = agent.propose("docs.markup", text, rationale="[i]why[/i]", proposer="[agent]")
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await _move_to(pilot, proposal.id)
        assert text in str(app.screen.query_one("#peek").render())
        await pilot.press("enter")
        await settle(pilot)
        assert text in str(app.screen.query_one("#d-new").render())
        assert "[i]why[/i]" in str(app.screen.query_one("#d-head").render())
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        assert text in app.screen.lines
        await pilot.press("y")
        await settle(pilot)
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        assert check.decisions("docs.markup")[0].decision == text


async def test_the_audit_screen_names_a_decision_changed_beside_the_log(store: Path) -> None:
    """The screen gives `ctx audit verify`'s verdict: an intact chain is not enough."""
    conn = driver.connect(store, load_vec=False)
    conn.execute(
        "UPDATE decision SET valid_until = '2030-01-01T00:00:00.000000Z', closed_by = 'retired' "
        "WHERE valid_until IS NULL AND subject = 'db.driver'"
    )
    conn.commit()
    conn.close()
    with Ctx.open(store, embedder=None) as kernel:
        assert kernel.audit.verify().ok  # the chain alone still verifies
        expected = kernel.audit.verify(state=True)
    assert not expected.ok
    app, kernel = review_app(store)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        status = str(app.screen.query_one("#chain").render())
        assert f"AUDIT LOG BROKEN at row {expected.first_bad_seq}" in status
        assert "valid_until differs" in status
    kernel.close()


async def test_command_palette_switches_screens_and_runs_actions(store: Path) -> None:
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"Audit", "enter")
        await settle(pilot)
        assert type(app.screen).__name__ == "AuditScreen"
        assert "audit log verified" in str(app.screen.query_one("#chain").render())
        await pilot.press("1")
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"Sort", "enter")
        await settle(pilot)
        assert isinstance(app.screen, QueueScreen) and app.screen.sort == "subject"
    kernel.close()


async def test_no_thread_touches_the_store_once_the_app_has_quit(store: Path) -> None:
    app, kernel = review_app(store, poll=0.01)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await asyncio.sleep(0.1)  # change checks are running in threads
        await pilot.press("q")
    with pytest.raises(RuntimeError, match="closed"):
        app.backend.run(lambda k: k.queue())
    assert app.backend.changed() is False
    kernel.close()


async def test_the_app_names_records_by_the_handles_commands_take(store: Path) -> None:
    """The queue's preview and the decision browser show the handle `ctx queue` prints, not the id."""
    with Ctx.open(store, embedder=None) as check:
        pending = check.queue()
        names = check.handles([p.id for p in pending])
        current = check.decisions("auth.tokens")[0]
        decision_name = check.handles([current.id])[current.id]
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        first = _rows(app)[0]
        peek = str(app.screen.query_one("#peek").render())
        assert peek.startswith(f"{names[first]} ") and first not in peek
        await pilot.press("2")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        assert screen.names[current.id] == decision_name
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        assert check.resolve_id(names[first], "proposal") == first


async def test_an_audit_row_shows_its_payload_as_parsed_json(store: Path) -> None:
    app, kernel = review_app(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, TextDialog)
        last = kernel.audit.events()[-1]
        shown = json.loads(dialog.body)
        assert '\\"' not in dialog.body
        assert shown["seq"] == last.seq and shown["hash"] == last.hash
        assert shown["before"] is None and isinstance(shown["after"], dict)
        assert shown["after"] == json.loads(last.after or "")
        # Indented: one field a line, so the payload reads as its fields.
        assert '\n    "decision": ' in dialog.body
        drawn = str(dialog.query_one("#text-body Static").render())
        assert drawn == dialog.body
    kernel.close()
