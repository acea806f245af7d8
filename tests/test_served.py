"""The served log: what each agent was told, through the hook, `ctx inject` and the MCP tools that
read; `ctx audit served` answering who was told what; verify catching a changed, deleted or
reordered entry; folding old entries into signed daily digests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import types
from mcp_support import Agent, server_params
from test_audit_replay import checkpoint, tamper, verify_fails
from test_json_schemas import assert_valid

from ctx_kernel.kernel import Ctx, clock, paths
from ctx_kernel.kernel.chain import row_hash
from ctx_kernel.kernel.store.served import SERVED_COLUMNS, SERVED_FIELDS
from ctx_kernel.kernel.store.sqlite import driver

PASSPHRASE = "correct horse battery staple"


@pytest.fixture
def history(kernel: Ctx) -> dict[str, str]:
    """A decision, evidence, and a second decision on another subject."""
    note = kernel.log("Sessions expire mid-upload; tokens are never refreshed.", agent="claude").id
    first = kernel.propose("auth.tokens", "Use JWT with refresh-token rotation", evidence=[note])
    jwt = kernel.ratify(first.id, reviewer="alice").decision.id
    db = kernel.propose("db.engine", "Use PostgreSQL 16 for every service")
    postgres = kernel.ratify(db.id, reviewer="alice").decision.id
    return {"note": note, "jwt": jwt, "postgres": postgres}


def supersede_jwt(store_path: Path) -> str:
    with Ctx.open(store_path, embedder=None) as kernel:
        second = kernel.propose("auth.tokens", "Use opaque session ids stored in Redis")
        return kernel.ratify(second.id, reviewer="alice").decision.id


def served(cli, *args: str) -> dict:
    result = cli("audit", "served", "--json", *args)
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert_valid("audit-served", report)
    return report


def items(entry: dict) -> dict[str, str]:
    return {item["id"]: item["validity"] for item in entry["items"]}


def raw(store_path: Path) -> driver.dbapi.Connection:
    return driver.connect(store_path, load_vec=False)


# -- what is logged, through each surface ----------------------------------------------------------


def test_the_session_start_hook_logs_what_it_injected(cli, history):
    result = cli("hook", "session-start", stdin=json.dumps({"session_id": "sess-1"}).encode())
    assert result.code == 0 and "Use JWT" in result.out
    (entry,) = served(cli, "--session", "sess-1")["entries"]
    assert (entry["host"], entry["operation"], entry["session"]) == ("hook", "inject", "sess-1")
    assert items(entry) == {
        history["jwt"]: "current",
        history["postgres"]: "current",
        history["note"]: "unratified",
    }
    assert all(len(item["digest"]) == 64 for item in entry["items"])


def test_a_person_running_inject_is_not_logged_unless_asked(cli, history, monkeypatch):
    assert cli("inject").code == 0
    assert served(cli)["entries"] == []
    assert cli("inject", "--record", "--json").code == 0
    monkeypatch.setenv("CTX_AGENT", "codex")
    monkeypatch.setenv("CTX_SESSION", "run-7")
    assert cli("inject", "-q", "tokens").code == 0
    entries = served(cli)["entries"]
    assert [(e["host"], e["agent"], e["session"]) for e in entries] == [
        ("shell", "cli", None),
        ("shell", "codex", "run-7"),
    ]
    # The request's digest tells the two requests apart; the texts are never stored.
    assert entries[0]["request"] != entries[1]["request"]


READ_TOOLS = {
    "inject_context": {},
    "recall": {"query": "tokens"},
    "search": {"query": "tokens"},
    "get_decision": {"subject": "auth.tokens"},
    "decision_history": {"subject": "auth.tokens"},
    "list_decisions": {},
    "timeline": {"target": "auth.tokens"},
}


def test_every_mcp_read_tool_is_logged_under_the_servers_agent_and_session(
    kernel, store_path, history, tmp_path, model_cache, cli
):
    kernel.close()
    env = {
        "CTX_CONFIG_DIR": str(tmp_path / "config"),
        "CTX_CACHE_DIR": str(model_cache),
        "CTX_VECTORS": "off",
    }
    with (
        (tmp_path / "err.txt").open("w") as errlog,
        Agent(server_params(store_path, env, "--agent", "claude", "--session", "s-mcp"), errlog) as agent,
    ):
        for tool, arguments in READ_TOOLS.items():
            assert not agent.call(tool, arguments).is_error, tool
        assert not agent.call("show", {"id": history["jwt"]}).is_error
        # A write is not a serving; and a read cannot name another session or agent.
        assert not agent.call("log_evidence", {"text": "a note"}).is_error
        faked = agent.call("recall", {"query": "tokens", "session": "someone-else"})
        assert faked.is_error and "session" in faked.content[0].text
    entries = served(cli)["entries"]
    assert [e["operation"] for e in entries] == [
        *(
            {
                "inject_context": "inject",
                "get_decision": "get",
                "decision_history": "history",
                "list_decisions": "decisions",
            }.get(t, t)
            for t in READ_TOOLS
        ),
        "show",
    ]
    assert {(e["host"], e["agent"], e["session"]) for e in entries} == {("mcp", "claude", "s-mcp")}
    by_operation = {e["operation"]: items(e) for e in entries}
    assert by_operation["get"] == {history["jwt"]: "current"}
    assert by_operation["show"] == {history["jwt"]: "current"}
    assert history["jwt"] in by_operation["recall"] and history["jwt"] in by_operation["timeline"]
    assert history["note"] in by_operation["search"]


def test_an_answer_whose_entry_cannot_be_written_still_answers_and_verify_reports_the_gap(
    kernel, store_path, history, tmp_path, model_cache, cli
):
    kernel.close()
    conn = raw(store_path)
    conn.execute("CREATE TRIGGER jam BEFORE INSERT ON served BEGIN SELECT RAISE(ABORT, 'disk full'); END")
    conn.commit()
    env = {
        "CTX_CONFIG_DIR": str(tmp_path / "config"),
        "CTX_CACHE_DIR": str(model_cache),
        "CTX_VECTORS": "off",
    }
    with (
        (tmp_path / "err.txt").open("w") as errlog,
        Agent(server_params(store_path, env, "--agent", "claude"), errlog) as agent,
    ):
        answer = agent.call("get_decision", {"subject": "auth.tokens"})
        assert not answer.is_error
        texts = [c.text for c in answer.content if isinstance(c, types.TextContent)]
        assert "Use JWT" in texts[0]
        assert texts[1:] == [texts[1]] and texts[1].startswith("ctx: note: this answer was not recorded")
        assert "\n" not in texts[1]
        conn.execute("DROP TRIGGER jam")
        conn.commit()
        again = agent.call("get_decision", {"subject": "auth.tokens"})
        assert len(again.content) == 1
    conn.close()
    (entry,) = served(cli)["entries"]
    assert entry["missed"] == 1
    verified = cli("audit", "verify")
    assert verified.code == 0
    assert "served entry 1: 1 answer(s) served just before it were not recorded" in verified.out


# -- who was told what -------------------------------------------------------------------------------


def test_the_queries_on_a_scripted_history_with_a_supersession(cli, store_path, history, monkeypatch):
    def at(moment: str) -> None:
        monkeypatch.setattr(clock, "now", lambda: moment)

    at("2026-03-01T09:00:00.000000Z")
    cli("hook", "session-start", stdin=b'{"session_id": "monday"}')
    monkeypatch.undo()
    redis = supersede_jwt(store_path)
    at("2099-01-01T09:00:00.000000Z")
    monkeypatch.setenv("CTX_AGENT", "codex")
    monkeypatch.setenv("CTX_SESSION", "later")
    cli("inject")
    monkeypatch.delenv("CTX_AGENT")
    monkeypatch.delenv("CTX_SESSION")

    monday = served(cli, "--session", "monday")["entries"]
    assert [items(e)[history["jwt"]] for e in monday] == ["current"]
    told = served(cli, "--decision", history["jwt"])
    assert [(e["session"], items(e)[history["jwt"]]) for e in told["entries"]] == [
        ("monday", "current"),
        ("later", "superseded"),
    ]
    assert [e["session"] for e in served(cli, "--decision", redis)["entries"]] == ["later"]
    until = served(cli, "--at", "2026-06-01", "--agent", "codex")
    assert until["entries"] == []
    assert [e["session"] for e in served(cli, "--at", "2099-12-31", "--agent", "codex")["entries"]] == [
        "later"
    ]
    clean = cli("audit", "served", "--after-superseded")
    assert clean.code == 0 and "no decision was served as in force after it was superseded" in clean.out


def test_a_decision_served_as_in_force_after_its_successor_is_named(cli, store_path, history):
    with Ctx.open(store_path, embedder=None) as stale:
        held = stale.decision(history["jwt"])  # what a warm process kept before the supersession
        redis = supersede_jwt(store_path)
        assert (
            stale.served.record(
                host="mcp", agent="claude", session="stale", operation="get", arguments={}, result=held
            )
            is None
        )
    result = cli("audit", "served", "--after-superseded", "--json")
    assert result.code == 1
    report = json.loads(result.out)
    assert_valid("audit-served", report)
    (late,) = report["after_superseded"]
    assert (late["decision_id"], late["session"], late["superseded_by"]) == (history["jwt"], "stale", [redis])
    assert "1 decision served as in force after being superseded" in result.err


def test_bad_input_is_one_line(cli, history):
    result = cli("audit", "served", "--at", "yesterday-ish")
    assert result.code == 2 and result.err.count("\n") == 1 and "Traceback" not in result.err
    assert cli("audit", "served", "--decision", "nothing-like-it").code == 2


# -- tamper evidence ---------------------------------------------------------------------------------


@pytest.fixture
def three_entries(cli, history) -> None:
    for session in ("a", "b", "c"):
        assert cli("hook", "session-start", stdin=json.dumps({"session_id": session}).encode()).code == 0


def test_the_database_refuses_to_change_or_delete_an_entry(store_path, three_entries):
    conn = raw(store_path)
    with pytest.raises(driver.dbapi.IntegrityError, match="append-only"):
        conn.execute("UPDATE served SET session = 'x' WHERE seq = 1")
    with pytest.raises(driver.dbapi.IntegrityError, match="signed fold"):
        conn.execute("DELETE FROM served WHERE seq = 1")
    with pytest.raises(driver.dbapi.IntegrityError, match="does not link"):
        conn.execute(
            f"INSERT INTO served ({', '.join(SERVED_COLUMNS)}) "
            f"VALUES (9, 'x', 'mcp', 'a', NULL, 'get', 'r', '[]', 0, '{'1' * 64}', '{'2' * 64}')"
        )
    conn.close()


def test_verify_fails_on_a_changed_entry(cli, store_path, three_entries):
    assert "served log ok: 3 entries" in cli("audit", "verify").out
    tamper(store_path, "UPDATE served SET session = 'nobody' WHERE seq = 2", bypass="served_no_update")
    line, _ = verify_fails(cli)
    assert "served entry 2 was altered" in line


def test_verify_fails_on_a_deleted_entry(cli, store_path, three_entries):
    tamper(store_path, "DELETE FROM served WHERE seq = 2", bypass="served_delete_folded")
    line, _ = verify_fails(cli)
    assert "served entry 3 follows served entry 1" in line


def test_verify_fails_on_reordered_entries(cli, store_path, three_entries):
    conn = raw(store_path)
    definition = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'served_no_update'").fetchone()[0]
    conn.execute("DROP TRIGGER served_no_update")
    conn.execute("UPDATE served SET seq = -1 WHERE seq = 2")
    conn.execute("UPDATE served SET seq = 2 WHERE seq = 3")
    conn.execute("UPDATE served SET seq = 3 WHERE seq = -1")
    conn.execute(definition)
    conn.commit()
    conn.close()
    line, _ = verify_fails(cli)
    assert "served entry 2" in line


def rehash_served(store_path: Path, keep) -> None:
    """An attacker with the file: rewrite the whole served chain consistently (``keep`` edits the rows)."""
    conn = raw(store_path)
    rows = [
        dict(zip(SERVED_COLUMNS, r, strict=True)) for r in conn.execute("SELECT * FROM served ORDER BY seq")
    ]
    names = ("served_no_update", "served_delete_folded", "served_linked")
    definitions = [
        conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (n,)).fetchone()[0] for n in names
    ]
    for name in names:
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("DELETE FROM served")
    prev = "0" * 64
    for seq, row in enumerate(keep(rows), start=1):
        row["seq"], row["prev_hash"] = seq, prev
        row["hash"] = prev = row_hash(prev, row, SERVED_FIELDS)
        conn.execute(
            f"INSERT INTO served VALUES ({', '.join('?' * len(SERVED_COLUMNS))})",
            [row[c] for c in SERVED_COLUMNS],
        )
    for definition in definitions:
        conn.execute(definition)
    conn.commit()
    conn.close()


@pytest.fixture
def signing_key(cli, monkeypatch) -> None:
    monkeypatch.setenv("CTX_KEY_PASSPHRASE", PASSPHRASE)
    assert cli("keys", "init", db=False).code == 0


def test_a_rewritten_served_chain_passes_alone_and_fails_against_a_checkpoint(
    cli, store_path, tmp_path, three_entries, signing_key
):
    document = checkpoint(cli, "--out", str(tmp_path / "away.json"))
    assert document["checkpoint"]["served_seq"] == 3

    def hide_session_b(rows):
        return [r for r in rows if r["session"] != "b"]

    rehash_served(store_path, hide_session_b)
    (store_path.parent / "checkpoints" / f"checkpoint-{document['checkpoint']['seq']:08d}.json").unlink()
    conn = raw(store_path)
    conn.execute("DELETE FROM meta WHERE key = 'audit_checkpoint'")
    conn.commit()
    conn.close()
    assert cli("audit", "verify").code == 0  # the store alone cannot tell
    line, _ = verify_fails(cli, "--checkpoint", str(tmp_path / "away.json"))
    assert "the served log ends at entry 2, but checkpoint" in line

    rehash_served(store_path, lambda rows: [*rows, {**rows[-1], "session": "forged"}])
    line, _ = verify_fails(cli, "--checkpoint", str(tmp_path / "away.json"))
    assert "served entry 3 differs from checkpoint" in line


# -- folding ----------------------------------------------------------------------------------------


def test_folding_old_days_keeps_the_log_verifiable(
    cli, store_path, tmp_path, history, signing_key, monkeypatch
):
    for day, session in (("2026-01-10", "old-1"), ("2026-01-10", "old-2"), ("2026-01-11", "old-3")):
        monkeypatch.setattr(clock, "now", lambda day=day: f"{day}T10:00:00.000000Z")
        cli("hook", "session-start", stdin=json.dumps({"session_id": session}).encode())
    monkeypatch.setattr(clock, "now", lambda: "2026-06-01T10:00:00.000000Z")
    cli("hook", "session-start", stdin=b'{"session_id": "recent"}')
    folded = cli("audit", "fold", "--older-than", "90")
    assert folded.code == 0, folded.err
    assert (
        "folded 2026-01-10: 2 entries (seq 1..2)" in folded.out and "folded 2026-01-11: 1 entry" in folded.out
    )
    report = served(cli)
    assert [e["session"] for e in report["entries"]] == ["recent"] and report["folded"] == 3
    verified = cli("audit", "verify")
    assert verified.code == 0 and "served log ok: 1 entry" in verified.out
    assert cli("hook", "session-start", stdin=b'{"session_id": "after"}').code == 0
    assert cli("audit", "verify").code == 0
    assert "no served entries older than 90 days" in cli("audit", "fold", "--older-than", "90").out
    # A teammate with keys of their own trusts the folds once given the signer's public key.
    public = tmp_path / "signer.pub.pem"
    public.write_text(cli("keys", "export-public", db=False).out)
    monkeypatch.setenv("CTX_CONFIG_DIR", str(tmp_path / "teammate"))
    line, _ = verify_fails(cli)
    assert "served fold 2026-01-10 is signed by key" in line and "not one you trust" in line
    assert cli("audit", "verify", "--pubkey", str(public)).code == 0


def test_the_retention_setting_is_the_folds_default(cli, store_path, history, signing_key, monkeypatch):
    for day, session in (("2026-01-10", "old"), ("2026-05-30", "recent")):
        monkeypatch.setattr(clock, "now", lambda day=day: f"{day}T10:00:00.000000Z")
        cli("hook", "session-start", stdin=json.dumps({"session_id": session}).encode())
    monkeypatch.setattr(clock, "now", lambda: "2026-06-01T10:00:00.000000Z")
    unset = cli("audit", "fold")
    assert unset.code == 2 and "retention_days under [served]" in unset.err and not unset.out
    config = paths.config_dir() / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[served]\nretention_days = "ninety"\n', encoding="utf-8")
    wrong = cli("audit", "fold")
    assert wrong.code == 2 and "whole number of days" in wrong.err
    assert [e["session"] for e in served(cli)["entries"]] == ["old", "recent"]
    config.write_text("[served]\nretention_days = 30\n", encoding="utf-8")
    folded = cli("audit", "fold")
    assert folded.code == 0 and "folded 2026-01-10: 1 entry" in folded.out, folded.err
    assert [e["session"] for e in served(cli)["entries"]] == ["recent"]
    assert cli("audit", "fold", "--older-than", "1").code == 0  # the option overrides the setting
    assert served(cli)["entries"] == [] and cli("audit", "verify").code == 0


def test_a_fold_forged_without_the_key_fails_verify(cli, store_path, three_entries):
    """An agent with the file but not the person's key: its fold is not signed by a trusted key."""
    conn = raw(store_path)
    last = conn.execute("SELECT hash FROM served WHERE seq = 2").fetchone()[0]
    conn.execute(
        "INSERT INTO served_fold VALUES ('2026-01-01', 1, 2, 2, 6, ?, ?, ?, '2026-06-01T00:00:00.000000Z', "
        "'deadbeef', 'c2lnbmF0dXJl')",
        ("0" * 64, "0" * 64, last),
    )
    conn.execute("DELETE FROM served WHERE seq <= 2")  # the trigger lets a fold's entries go
    conn.commit()
    conn.close()
    line, _ = verify_fails(cli)
    assert "served fold 2026-01-01 is signed by key deadbeef" in line


def test_fold_needs_the_signing_keys_passphrase(cli, three_entries, monkeypatch):
    monkeypatch.setenv("CTX_KEY_PASSPHRASE", PASSPHRASE)
    result = cli("audit", "fold", "--older-than", "1")
    assert result.code != 0 and result.err.count("\n") == 1


# -- the review app ---------------------------------------------------------------------------------


async def test_the_review_apps_history_shows_how_often_and_to_whom_a_decision_was_served(
    tmp_path: Path, monkeypatch
) -> None:
    from textual.widgets import Static

    from ctx_kernel.tui.screens.history import HistoryScreen
    from tests.review_support import VIEWS, review_app, seeded_store, settle

    store = seeded_store(tmp_path / "demo")
    with Ctx.open(store, embedder=None) as kernel:
        block = kernel.inject()
        for session in ("monday", "tuesday"):
            assert (
                kernel.served.record(
                    host="hook",
                    agent="claude",
                    session=session,
                    operation="inject",
                    arguments={},
                    result=block,
                )
                is None
            )
    app, kernel = review_app(store)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(*VIEWS["history"].keys)
        await settle(pilot)
        assert isinstance(app.screen, HistoryScreen)
        shown = str(app.screen.query_one("#history", Static).render())
    kernel.close()
    assert "served 2 times to monday, tuesday" in shown


# -- exports -----------------------------------------------------------------------------------------


def test_a_signed_export_carries_the_served_log_and_its_verifier_checks_it(
    cli, store_path, tmp_path, three_entries, signing_key
):
    out = tmp_path / "audit.jsonl"
    exported = cli("audit", "export", "--out", str(out), "--served", "--json")
    assert exported.code == 0, exported.err
    manifest = json.loads(exported.out)
    assert_valid("audit-manifest", manifest)
    assert manifest["manifest"]["served"]["entries"] == 3
    entries = (tmp_path / "audit.jsonl.served.jsonl").read_text().splitlines()
    assert [json.loads(e)["session"] for e in entries] == ["a", "b", "c"]
    checked = cli("audit", "verify", str(out), "--json", db=False)
    assert checked.code == 0, checked.err
    report = json.loads(checked.out)
    assert_valid("audit-export-verify", report)
    assert report["served_entries"] == 3
    # The export is a signed head for the served log too: a shortened served log fails against it.
    rehash_served(store_path, lambda rows: rows[:-1])
    line, _ = verify_fails(cli)
    assert "the served log ends at entry 2" in line
    # An entry changed in the exported file fails the export's verification.
    (tmp_path / "audit.jsonl.served.jsonl").write_text(
        "\n".join([*entries[:1], entries[1].replace('"b"', '"z"'), *entries[2:]]) + "\n"
    )
    broken = cli("audit", "verify", str(out), db=False)
    assert broken.code == 1 and "audit.jsonl.served.jsonl is not the served entries file" in broken.err


def test_a_warm_process_records_a_decision_closed_since_it_first_served_it_as_superseded(
    cli, kernel, store_path, history
):
    before = kernel.timeline("auth.tokens")
    assert (
        kernel.served.record(
            host="mcp", agent="claude", session="w", operation="timeline", arguments={}, result=before
        )
        is None
    )
    supersede_jwt(store_path)
    after = kernel.timeline("auth.tokens")
    assert (
        kernel.served.record(
            host="mcp", agent="claude", session="w", operation="timeline", arguments={}, result=after
        )
        is None
    )
    first, second = served(cli, "--session", "w")["entries"]
    assert items(first)[history["jwt"]] == "current"
    assert items(second)[history["jwt"]] == "superseded"
    digests = [{i["id"]: i["digest"] for i in e["items"]}[history["jwt"]] for e in (first, second)]
    assert digests[0] == digests[1]


def test_a_migrated_store_keeps_its_served_log_and_verifies(cli, tmp_path, three_entries):
    copy = tmp_path / "copy" / "ctx.db"
    assert cli("migrate", "--to", str(copy)).code == 0
    moved = cli("--db", str(copy), "audit", "served", "--json", db=False)
    assert [e["session"] for e in json.loads(moved.out)["entries"]] == ["a", "b", "c"]
    verified = cli("--db", str(copy), "audit", "verify", db=False)
    assert verified.code == 0 and "served log ok: 3 entries" in verified.out
