"""What the reviewer sees is what gets ratified: hidden text, look-alike subjects, two reviewers at
once, one plan for every surface, and who the record says acted."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx, text
from ctx_kernel.kernel.errors import RefusedError, StalePlanError, UsageError
from ctx_kernel.tui.dialogs.confirm import ConfirmDialog
from ctx_kernel.tui.dialogs.edit import EditDialog
from ctx_kernel.tui.dialogs.reviewer import ReviewerDialog
from ctx_kernel.tui.dialogs.text import TextDialog
from ctx_kernel.tui.screens.detail import DetailScreen
from ctx_kernel.tui.widgets.rows import RowList
from tests.review_support import freeze_clock, review_app, seeded_store, settle

CTX = str(Path(sys.executable).parent / "ctx")

# Each hides or forges what a terminal shows: a carriage return with erase-line, clipboard and
# window-title OSC sequences, a C1 CSI, bidi overrides and isolates, zero-width and tag characters.
HOSTILE = {
    "erase-line": "Store user passwords in plaintext\r\x1b[2KUse bcrypt with cost 12 for user passwords",
    "osc52-clipboard": "Use bcrypt\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07 for passwords",
    "osc0-title": "Use bcrypt\x1b]0;all checks passed\x07 for passwords",
    "c1-csi": "Use bcrypt\x9b8m hidden\x9b0m for passwords",
    "bidi-override": "Use bcrypt for \u202epasswords\u202c",
    "bidi-isolate": "Use bcrypt \u2066cost 4\u2069 for passwords",
    "zero-width": "Use bcr\u200bypt for passwords",
    "tag-characters": "Use bcrypt\U000e0069\U000e0067\U000e006e for passwords",
    "soft-hyphen": "Use bc\u00adrypt for passwords",
}
HIDDEN_AT = {name: next(i for i in range(len(s)) if text.hidden_at(s, i)) for name, s in HOSTILE.items()}
ALL_HOSTILE = " | ".join(HOSTILE.values())


def raw_hidden(output: str) -> list[str]:
    """Hidden characters that reached the output as they are (a pty's CR before LF is its own)."""
    output = output.replace("\r\n", "\n")
    return [f"U+{ord(c):04X}" for i, c in enumerate(output) if c not in "\n\t" and text.hidden_at(output, i)]


def _store_state(kernel: Ctx) -> tuple[int, int, int]:
    rows = kernel.store.audit_rows()
    return len(list(rows)), len(kernel.queue()), len(kernel.decisions(include_closed=True))


# -- 1. hidden text is refused in what a person ratifies ----------------------------------------


@pytest.mark.parametrize("name", list(HOSTILE))
def test_the_facade_refuses_hidden_characters_in_every_ratified_field(kernel: Ctx, name: str) -> None:
    hostile = HOSTILE[name]
    clean = kernel.propose("auth.passwords", "Use bcrypt with cost 12")
    before = _store_state(kernel)
    code = f"U+{ord(hostile[HIDDEN_AT[name]]):04X}"
    attempts = [
        lambda: kernel.propose("auth.passwords", hostile),
        lambda: kernel.propose("auth.passwords", "Use bcrypt", rationale=hostile),
        lambda: kernel.propose("auth.passwords", "Use bcrypt", proposer=hostile),
        lambda: kernel.ratify(clean.id, reviewer="alice", decision=hostile),
        lambda: kernel.plan_ratification(clean.id, decision=hostile),
        lambda: kernel.ratify(clean.id, reviewer=hostile),
        lambda: kernel.reject(clean.id, reviewer="alice", reason=hostile),
        lambda: kernel.reject(clean.id, reviewer=hostile, reason="no"),
        lambda: kernel.withdraw(clean.id, actor="agent", reason=hostile),
    ]
    for attempt in attempts:
        with pytest.raises(UsageError) as refused:
            attempt()
        message = refused.value.message
        assert code in message and f"at character {HIDDEN_AT[name] + 1}" in message
        assert "\n" not in message and not raw_hidden(message)
    assert _store_state(kernel) == before
    assert kernel.proposal(clean.id).status == "pending"


def test_line_breaks_and_joined_emoji_are_ordinary_text(kernel: Ctx) -> None:
    proposal = kernel.propose(
        "team.mood", "First line\r\nsecond line\u2028third line 🤷\u200d♂ and نامه\u200cها", rationale="a\tb"
    )
    assert proposal.decision == "First line\nsecond line\nthird line 🤷\u200d♂ and نامه\u200cها"
    assert text.visible(proposal.decision) == proposal.decision


def test_cli_and_json_input_refuse_hidden_text_with_one_line(cli, kernel: Ctx) -> None:
    hostile = HOSTILE["erase-line"]
    result = cli("propose", "--subject", "auth.passwords", "--decision", hostile)
    assert result.code == 2 and result.out == ""
    assert result.err.count("\n") == 1 and "U+000D" in result.err and "Traceback" not in result.err
    document = json.dumps({"subject": "auth.passwords", "decision": HOSTILE["bidi-override"]}).encode()
    result = cli("propose", "--input", "-", stdin=document)
    assert result.code == 2 and "U+202E RIGHT-TO-LEFT OVERRIDE" in result.err
    assert kernel.queue() == []


def test_adr_import_refuses_a_record_with_hidden_text(cli, tmp_path: Path, kernel: Ctx) -> None:
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-passwords.md").write_text(
        "# 1. Password storage\n\n## Status\n\nAccepted\n\n## Decision\n\n" + HOSTILE["bidi-isolate"] + "\n",
        encoding="utf-8",
    )
    result = cli("import", "adr", str(folder), "--reviewer", "alice", "--yes")
    assert "0001-passwords.md" in result.err and "U+2066 LEFT-TO-RIGHT ISOLATE" in result.err
    assert kernel.decisions() == []


# -- 1. stored text is shown visibly on every surface ---------------------------------------------


@pytest.fixture
def hostile_store(kernel: Ctx, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Evidence with every hostile string (evidence keeps its bytes), and kernel rows written as an
    older ctx (before hidden characters were refused) would have: a decision, a supersession, a
    pending proposal, a rejection, all carrying hidden characters."""
    evidence = kernel.log(ALL_HOSTILE, agent="agent\u202eevil", tags=["t\x1b[31m"], source="x\x1b]0;t\x07")
    with monkeypatch.context() as older:
        older.setattr(text, "refuse_hidden", lambda value, _field: value)
        first = kernel.propose("auth.passwords", HOSTILE["erase-line"], evidence=[evidence.id])
        decided = kernel.ratify(first.id, reviewer="al\u202eice", settle=[]).decision
        second = kernel.propose(
            "auth.passwords", HOSTILE["osc52-clipboard"], rationale=HOSTILE["osc0-title"], proposer="bo\x9bb"
        )
        rejected = kernel.propose("auth.passwords", HOSTILE["zero-width"], proposer="agent")
        kernel.reject(rejected.id, reviewer="alice", reason=HOSTILE["tag-characters"])
    return {"evidence": evidence.id, "decision": decided.id, "pending": second.id, "rejected": rejected.id}


def test_evidence_keeps_its_bytes(kernel: Ctx, hostile_store: dict[str, str]) -> None:
    assert kernel.evidence(hostile_store["evidence"]).text == ALL_HOSTILE


def test_every_cli_command_shows_hidden_characters_visibly(cli, hostile_store: dict[str, str]) -> None:
    commands = [
        ["show", hostile_store["evidence"]],
        ["show", hostile_store["decision"]],
        ["show", hostile_store["pending"]],
        ["show", hostile_store["rejected"]],
        ["queue"],
        ["decisions"],
        ["decisions", "--all"],
        ["history", "auth.passwords"],
        ["search", "bcrypt"],
        ["recall", "bcrypt passwords", "--mode", "keyword"],
        ["recall", "bcrypt passwords", "--mode", "keyword", "--explain"],
        ["inject"],
        ["inject", "--query", "bcrypt passwords"],
        ["inject", "--query", "bcrypt passwords", "--format", "json"],
        ["audit", "verify"],
    ]
    for json_form in (
        ["show", hostile_store["evidence"], "--json"],
        ["queue", "--json"],
        ["history", "auth.passwords", "--json"],
    ):
        commands.append(json_form)
    seen = ""
    for command in commands:
        result = cli(*command)
        assert result.code == 0, (command, result.err)
        assert raw_hidden(result.out) == [], (command, raw_hidden(result.out))
        assert raw_hidden(result.err) == [], command
        seen += result.out
    for escaped in ("\\x1b[2K", "\\x0d", "\\u202e", "\\x9b", "\\u200b", "\\U000e0069", "\\x07"):
        assert escaped in seen, escaped
    # JSON output escapes them too, and parses back to the stored bytes
    shown = cli("show", hostile_store["evidence"], "--json")
    assert json.loads(shown.out)["record"]["text"] == ALL_HOSTILE


async def test_every_review_app_screen_shows_hidden_characters_visibly(
    store_path: Path, hostile_store: dict[str, str]
) -> None:
    app, kernel = review_app(store_path)
    screens: list[str] = []

    def capture(where: str) -> None:
        svg = app.export_screenshot()
        assert raw_hidden(svg) == [], (where, raw_hidden(svg))
        screens.append(svg)

    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot)
        capture("queue")
        app.screen.query_one("#queue", RowList).move_to(hostile_store["pending"])
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        capture("detail")
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        capture("approve dialog")
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)
        capture("history")
        await pilot.press("escape", "escape")
        await settle(pilot)
        for mode in ("2", "3", "4"):
            await pilot.press(mode)
            await settle(pilot)
            capture(f"mode {mode}")
            if mode == "2":
                await pilot.press("down", "down", "down")
                await settle(pilot)
                capture("kernel decision")
            else:
                await pilot.press("enter")
                await settle(pilot)
                assert isinstance(app.screen, TextDialog)
                capture(f"mode {mode} opened")
                await pilot.press("escape")
                await settle(pilot)
    kernel.close()
    everything = "".join(screens)
    # Rich writes a backslash as itself in the SVG: the escapes are visible text
    for escaped in ("\\x1b", "\\u202e", "\\x9b"):
        assert escaped in everything, escaped


# -- 1. subjects are identifiers: look-alikes are refused ------------------------------------------


def test_a_subject_that_looks_like_an_existing_one_is_refused(kernel: Ctx, cli) -> None:
    kernel.ratify(kernel.propose("auth.tokens", "Use JWT with refresh rotation").id, reviewer="alice")
    before = _store_state(kernel)
    for lookalike in ("\u0430uth.tokens", "auth.t\u043ekens", "\u0391UTH.TOKENS"):
        with pytest.raises(RefusedError, match=r"looks like the existing subject auth\.tokens") as refused:
            kernel.propose(lookalike, "Use opaque session ids")
        assert "CYRILLIC" in refused.value.message or "GREEK" in refused.value.message
    result = cli("propose", "--subject", "\u0430uth.tokens", "--decision", "Use opaque ids")
    assert result.code == 1 and "auth.tokens" in result.err and result.err.count("\n") == 1
    # the same subject typed in full width or upper case is the same subject, not a look-alike
    same = kernel.propose("ＡＵＴＨ.Tokens", "Use opaque session ids")
    assert same.subject == "auth.tokens" and same.supersedes
    assert _store_state(kernel)[0] == before[0] + 1
    # a pending proposal's subject counts too
    kernel.propose("db.driver", "Use psycopg 3")
    with pytest.raises(RefusedError, match=r"db\.driver"):
        kernel.propose("db.dr\u0456ver", "Use asyncpg")


def test_a_subject_that_differs_only_by_a_combining_mark_is_refused(kernel: Ctx, cli) -> None:
    """auth.tokens + U+0301 folds to auth.tokenś, which looks like auth.tokens: refused."""
    kernel.propose("auth.tokens", "Use JWT")
    # U+1F41 (omicron with a mark) has no confusables entry of its own; the bare omicron has one.
    for lookalike in ("auth.tokens\u0301", "auth.t\u00f6kens", "a\u0300uth.tokens", "auth.t\u1f41kens"):
        with pytest.raises(RefusedError, match=r"looks like the existing subject auth\.tokens"):
            kernel.propose(lookalike, "Use opaque ids")
    result = cli("propose", "--subject", "auth.tokens\u0301", "--decision", "Use opaque ids")
    assert result.code == 1 and "auth.tokens" in result.err and result.err.count("\n") == 1
    blank = cli("propose", "--subject", "ops.cache", "--decision", "x", "--agent", "   ")
    assert blank.code == 2 and "blank" in blank.err


def test_non_latin_subjects_are_allowed_and_compared_by_their_skeleton(kernel: Ctx) -> None:
    kernel.propose("сервис.кэш", "Используем Redis")
    assert kernel.propose("сервис.кэш", "Используем Memcached").subject == "сервис.кэш"
    # Latin letters that look like the Cyrillic ones still look alike
    with pytest.raises(RefusedError, match="сервис"):
        kernel.propose("cepвиc.кэш", "Use Redis")


# -- 2. two reviewers, one subject ----------------------------------------------------------------


def test_a_stale_plan_is_refused_naming_what_is_now_current(kernel: Ctx, store_path: Path) -> None:
    kernel.ratify(kernel.propose("auth.tokens", "Use JWT").id, reviewer="carol")
    mine = kernel.propose("auth.tokens", "Use opaque ids in Redis")
    theirs = kernel.propose("auth.tokens.rotation", "Rotate refresh tokens")
    shown = kernel.plan_ratification(mine.id)
    assert [c.decision.decision for c in shown.closes] == ["Use JWT"]
    # a second reviewer, on another connection, ratifies a decision on the same subject first
    with Ctx.open(store_path, embedder=None) as other:
        winner = other.ratify(other.propose("auth.tokens", "Use PASETO v4").id, reviewer="bob", settle=[])
    before = _store_state(kernel)
    with pytest.raises(StalePlanError) as stale:
        kernel.ratify(shown, reviewer="alice")
    message = stale.value.message
    assert winner.decision.id in message and "bob" in message and winner.decision.ratified_at[:19] in message
    assert _store_state(kernel) == before and kernel.proposal(mine.id).status == "pending"
    # planning again shows the new state, and that plan goes through
    again = kernel.plan_ratification(mine.id)
    assert [c.decision.id for c in again.closes] == [winner.decision.id]
    assert kernel.ratify(again, reviewer="alice").superseded == [winner.decision.id]
    assert kernel.proposal(theirs.id).status == "pending"


def test_a_plan_whose_settled_proposal_was_resolved_is_refused(kernel: Ctx, store_path: Path) -> None:
    first = kernel.propose("cache.backend", "Use Redis")
    second = kernel.propose("cache.backend", "Use Memcached")
    shown = kernel.plan_ratification(first.id)
    assert [p.id for p in shown.settles] == [second.id]
    with Ctx.open(store_path, embedder=None) as other:
        other.reject(second.id, reviewer="bob", reason="not now")
    with pytest.raises(StalePlanError, match=f"{second.id}.*rejected by bob"):
        kernel.ratify(shown, reviewer="alice")
    assert kernel.proposal(first.id).status == "pending"


def test_retired_since_the_plan_is_refused(kernel: Ctx, store_path: Path) -> None:
    old = kernel.ratify(
        kernel.propose("ci.runner", "Use GitHub-hosted runners").id, reviewer="carol"
    ).decision
    mine = kernel.propose("ci.runner", "Use self-hosted runners")
    shown = kernel.plan_ratification(mine.id)
    with Ctx.open(store_path, embedder=None) as other:
        other.retire("ci.runner", reviewer="bob", reason="CI moves elsewhere")
    with pytest.raises(StalePlanError, match=f"{old.id} on ci.runner.*retired"):
        kernel.ratify(shown, reviewer="alice")


def test_approving_several_plans_is_all_or_nothing(kernel: Ctx, store_path: Path) -> None:
    kernel.ratify(kernel.propose("db.driver", "Use psycopg 3").id, reviewer="carol")
    one = kernel.propose("cache.backend", "Use Redis")
    two = kernel.propose("db.driver", "Use asyncpg")
    plans = [kernel.plan_ratification(one.id), kernel.plan_ratification(two.id)]
    with Ctx.open(store_path, embedder=None) as other:
        other.ratify(other.propose("db.driver", "Use SQLAlchemy core").id, reviewer="bob", settle=[])
    before = _store_state(kernel)
    with pytest.raises(StalePlanError, match=r"db\.driver now has current decision"):
        kernel.ratify_all(plans, reviewer="alice")
    assert _store_state(kernel) == before
    assert kernel.proposal(one.id).status == "pending" and kernel.proposal(two.id).status == "pending"
    fresh = [kernel.plan_ratification(one.id), kernel.plan_ratification(two.id)]
    assert [r.proposal_id for r in kernel.ratify_all(fresh, reviewer="alice")] == [one.id, two.id]


def _pty_session(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    master, slave = os.openpty()
    proc = subprocess.Popen([CTX, *args], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    return proc, master


def _read_until(master: int, proc: subprocess.Popen[bytes], marker: str, seen: bytearray) -> str:
    deadline = time.monotonic() + 60
    while marker not in seen.decode(errors="replace") and time.monotonic() < deadline:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen.extend(chunk)
    return seen.decode(errors="replace")


def _finish(master: int, proc: subprocess.Popen[bytes], seen: bytearray) -> tuple[int, str]:
    proc.wait(timeout=60)
    try:
        while chunk := os.read(master, 4096):
            seen.extend(chunk)
    except OSError:
        pass
    os.close(master)
    return proc.returncode, seen.decode(errors="replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_cli_ratify_on_a_terminal_shows_the_plan_and_refuses_when_another_reviewer_won(
    kernel: Ctx, store_path: Path
) -> None:
    kernel.ratify(kernel.propose("auth.tokens", "Use JWT").id, reviewer="carol")
    mine = kernel.propose("auth.tokens", "Use opaque session ids in Redis")
    env = {**os.environ, "CTX_DB": str(store_path), "CTX_REVIEWER": "alice"}
    proc, master = _pty_session(["ratify", mine.id], env)
    seen = bytearray()
    shown = _read_until(master, proc, "as alice?", seen)
    plan = kernel.plan_ratification(mine.id)
    for line in plan.lines():
        assert line in shown, line
    # bob ratifies on the same subject while alice reads the prompt
    other = subprocess.run(
        [
            CTX,
            "ratify",
            kernel.propose("auth.tokens", "Use PASETO v4").id,
            "--yes",
            "--reviewer",
            "bob",
            "--no-settle",
        ],
        env=env,
        capture_output=True,
        check=False,
    )
    assert other.returncode == 0, other.stderr
    os.write(master, b"y\n")
    code, output = _finish(master, proc, seen)
    assert code == 1, output
    last = output.replace("\r\n", "\n").strip().splitlines()[-1]
    assert last.startswith("ctx: error: not ratified: auth.tokens now has current decision")
    assert "bob" in last and "Traceback" not in output
    assert kernel.proposal(mine.id).status == "pending"


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_cli_ratify_on_a_terminal_shows_hostile_text_visibly(
    kernel: Ctx, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as older:
        older.setattr(text, "refuse_hidden", lambda value, _field: value)
        legacy = kernel.propose("auth.passwords", HOSTILE["erase-line"])
    env = {**os.environ, "CTX_DB": str(store_path), "CTX_REVIEWER": "alice"}
    proc, master = _pty_session(["ratify", legacy.id], env)
    seen = bytearray()
    shown = _read_until(master, proc, "as alice?", seen)
    assert "Store user passwords in plaintext\\x0d\\x1b[2KUse bcrypt" in shown
    assert raw_hidden(shown) == []
    os.write(master, b"n\n")
    code, _ = _finish(master, proc, seen)
    assert code == 1 and kernel.proposal(legacy.id).status == "pending"


# -- 3. one path for a person's act -----------------------------------------------------------------


def test_cli_ratify_settles_the_review_group_as_the_app_does(cli, tmp_path: Path, monkeypatch) -> None:
    freeze_clock(monkeypatch)
    store = seeded_store(tmp_path / "demo")
    with Ctx.open(store, embedder=None) as kernel:
        first, second = [p.id for p in kernel.queue() if p.subject == "auth.tokens"]
        plan = kernel.plan_ratification(first)
        assert [p.id for p in plan.settles] == [second]
    result = cli("--db", str(store), "ratify", first, "--yes", "--reviewer", "alice", db=False)
    assert result.code == 0, result.err
    assert f"settled {second}" in result.err
    with Ctx.open(store, embedder=None) as kernel:
        settled = kernel.proposal(second)
        assert settled.status == "rejected" and first in (settled.resolution_note or "")
        assert len([d for d in kernel.history("auth.tokens") if d.current]) == 1
    again = cli("--db", str(store), "ratify", second, "--yes", "--reviewer", "alice", db=False)
    assert again.code == 1 and "not pending" in again.err


def test_no_settle_leaves_the_group_pending(cli, kernel: Ctx) -> None:
    first = kernel.propose("cache.backend", "Use Redis")
    second = kernel.propose("cache.backend", "Use Memcached")
    result = cli("ratify", first.id, "--yes", "--reviewer", "alice", "--no-settle")
    assert result.code == 0, result.err
    assert kernel.proposal(second.id).status == "pending"


def test_an_amended_decision_shows_its_word_diff_in_history(cli, kernel: Ctx) -> None:
    proposal = kernel.propose("auth.tokens", "Use opaque session ids in Redis")
    result = cli(
        "ratify",
        proposal.id,
        "--yes",
        "--reviewer",
        "alice",
        "--decision",
        "Use opaque session ids in Redis, revocable per user",
    )
    assert result.code == 0, result.err
    history = cli("history", "auth.tokens")
    assert "amended by alice: Use opaque session ids in [-Redis-]{+Redis, revocable per user+}" in history.out


async def test_the_approve_dialog_starts_on_cancel(tmp_path: Path, monkeypatch) -> None:
    freeze_clock(monkeypatch)
    store = seeded_store(tmp_path / "demo")
    app, kernel = review_app(store)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        target = app.screen.query_one("#queue", RowList).rows[0].key
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        assert app.screen.focused is not None and app.screen.focused.id == "no"
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDialog)
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        assert check.proposal(target).status == "pending"


async def test_the_edit_dialog_confirmation_shows_the_word_diff(tmp_path: Path, monkeypatch) -> None:
    freeze_clock(monkeypatch)
    store = seeded_store(tmp_path / "demo")
    app, kernel = review_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, EditDialog)
        area = app.screen.query_one("TextArea")
        original = area.text
        area.text = original + " Reviewed by security."
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        listed = "\n".join(app.screen.lines)
        assert "Changed from the proposed text:" in listed and "Reviewed by security.+}" in listed
        await pilot.press("n")
        await settle(pilot)
    kernel.close()


async def test_the_review_app_shows_the_new_plan_when_another_reviewer_acted(
    tmp_path: Path, monkeypatch
) -> None:
    freeze_clock(monkeypatch)
    store = seeded_store(tmp_path / "demo")
    app, kernel = review_app(store)
    with Ctx.open(store, embedder=None) as setup:
        mine = next(p.id for p in setup.queue() if p.subject == "db.driver")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.screen.query_one("#queue", RowList).move_to(mine)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        with Ctx.open(store, embedder=None) as other:
            winner = other.ratify(
                other.propose("db.driver", "Use psycopg 3 with a pool").id, reviewer="bob", settle=[]
            ).decision
        await pilot.press("y")
        await settle(pilot)
        # not ratified: the dialog opens again on the plan as it now stands
        assert isinstance(app.screen, ConfirmDialog)
        listed = "\n".join(app.screen.lines)
        assert "The store changed" in listed and winner.id in listed and "bob" in listed
        assert f"Closes {winner.id} on db.driver" in listed
        await pilot.press("y")
        await settle(pilot)
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        assert check.proposal(mine).status == "ratified"
        assert check.decision(winner.id).closed_by == "superseded"


async def test_approving_a_selection_is_all_or_nothing_in_the_app(tmp_path: Path, monkeypatch) -> None:
    freeze_clock(monkeypatch)
    store = seeded_store(tmp_path / "demo")
    with Ctx.open(store, embedder=None) as setup:
        chosen = [
            next(p.id for p in setup.queue() if p.subject == subject)
            for subject in ("db.driver", "testing.integration")
        ]
    app, kernel = review_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        rows = app.screen.query_one("#queue", RowList)
        for pid in chosen:
            rows.move_to(pid)
            await pilot.press("space")
        await pilot.press("A")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        with Ctx.open(store, embedder=None) as other:
            other.ratify(
                other.propose("db.driver", "Use psycopg 3 with a pool").id, reviewer="bob", settle=[]
            )
        await pilot.press("y")
        await settle(pilot)
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        assert [check.proposal(pid).status for pid in chosen] == ["pending", "pending"]


# -- 4. who proposed it, who reviewed it --------------------------------------------------------------


async def test_a_login_name_reviewer_is_confirmed_once(tmp_path: Path, monkeypatch) -> None:
    freeze_clock(monkeypatch)
    store = seeded_store(tmp_path / "demo")
    kernel = Ctx.open(store, embedder=None)
    from ctx_kernel.tui.app import make_app
    from tests.review_support import APP_NOW

    app = make_app(kernel, "login-guess", now=lambda: APP_NOW, poll=None, reviewer_confirmed=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "login name, unconfirmed" in app.sub_title
        target = app.screen.query_one("#queue", RowList).rows[0].key
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ReviewerDialog)
        field = app.screen.query_one("#reviewer-name")
        assert field.value == "login-guess"
        field.value = "Dana Reviewer"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog) and "Dana Reviewer" in app.screen.title_text
        await pilot.press("y")
        await settle(pilot)
        assert app.sub_title == "reviewer: Dana Reviewer"
        # the second act does not ask again
        await pilot.press("r")
        await settle(pilot)
        assert not isinstance(app.screen, ReviewerDialog)
        await pilot.press("escape")
    kernel.close()
    with Ctx.open(store, embedder=None) as check:
        assert check.proposal(target).resolved_by == "Dana Reviewer"


def test_mcp_refuses_hidden_text_with_a_tool_error(tmp_path: Path, model_cache: Path) -> None:
    from tests.mcp_support import Agent, error_text, server_params

    db = tmp_path / ".ctx" / "ctx.db"
    Ctx.init(db, embedder=None)[0].close()
    env = {"CTX_CONFIG_DIR": str(tmp_path / "config"), "CTX_CACHE_DIR": str(model_cache)}
    with (tmp_path / "stderr.txt").open("w") as errlog, Agent(server_params(db, env), errlog) as agent:
        for name in ("erase-line", "osc52-clipboard", "bidi-override"):
            result = agent.call("propose_decision", {"subject": "auth.passwords", "decision": HOSTILE[name]})
            code = f"U+{ord(HOSTILE[name][HIDDEN_AT[name]]):04X}"
            assert code in error_text(result)
    with Ctx.open(db, embedder=None) as kernel:
        assert kernel.queue() == []


def test_subject_alphabet_errors_name_the_character() -> None:
    with pytest.raises(UsageError, match=r"U\+200B ZERO WIDTH SPACE at character 5"):
        text.normalise_subject("auth\u200b.tokens")
    assert re.fullmatch(r"[\w.-]+", text.normalise_subject("Auth Tokens.Refresh_Rotation"))
