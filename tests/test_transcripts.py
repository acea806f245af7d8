"""Agent session transcripts read as turns (kernel.transcripts): Claude Code, Codex CLI and aider."""

from __future__ import annotations

import collections
import itertools
import json
import os
import subprocess
import sys
import time
import tracemalloc
from datetime import UTC, timedelta, timezone
from pathlib import Path

import pytest
from conftest import run_ctx_process

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.capture.transcripts import (
    BLOB_MIN_CHARS,
    FORMATS,
    MAX_TOOL_CHARS,
    ParseReport,
    Turn,
    detect,
    parse,
    read_head,
)
from ctx_kernel.kernel.capture.transcripts.base import MAX_WARNINGS, normalise_ts
from ctx_kernel.kernel.capture.transcripts.clean import looks_binary, scrub_binary, trim
from ctx_kernel.kernel.errors import UsageError

DATA = Path(__file__).resolve().parent / "data" / "transcripts"
CLAUDE = DATA / "claude-code" / "7f3c2a4e-5b1d-4c8e-9a6f-2d0e8b1c4f73.jsonl"
CODEX = DATA / "codex" / "rollout-2025-10-29T09-14-05-019a2d7a-41c4-78b1-b7cc-a45d62a89cd5.jsonl"
CODEX_LEGACY = DATA / "codex" / "rollout-2025-05-07T17-24-21-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"
# Newer codex-rs: turns also recorded as completed turn items (event_msg item_completed).
CODEX_ITEMS = DATA / "codex" / "rollout-2026-09-28T13-47-48-019d8f2e-5a41-7c03-b2e6-8d1f4a9c3e70.jsonl"
AIDER = DATA / "aider" / ".aider.chat.history.md"
MALFORMED = DATA / "malformed"
REPO = Path(__file__).resolve().parent.parent


def _turns(path: Path, **kwargs) -> list[Turn]:
    return list(parse(path, **kwargs))


def _line(turn: Turn) -> int:
    return int(turn.source.rsplit("#L", 1)[1])


def _record(path: Path, line: int) -> dict:
    return json.loads(path.read_text(encoding="utf-8").splitlines()[line - 1])


def _claude_line(kind: str, text: str, n: int, session: str = "s-1") -> str:
    record = {
        "parentUuid": None,
        "sessionId": session,
        "type": kind,
        "uuid": f"u-{n}",
        "timestamp": "2025-01-01T00:00:00.000Z",
        "message": {"role": kind, "content": text},
    }
    return json.dumps(record) + "\n"


# --- Claude Code ------------------------------------------------------------------------------------


def test_claude_code_session_reads_as_turns_in_file_order():
    turns = _turns(CLAUDE)
    assert [(t.speaker, _line(t)) for t in turns] == [
        ("user", 4),
        ("assistant", 6),
        ("assistant", 7),
        ("tool", 8),
        ("assistant", 9),
        ("tool", 10),
        ("user", 11),
        ("assistant", 12),
        ("tool", 13),
        ("assistant", 14),
        ("tool", 15),
        ("system", 16),
        ("system", 17),
        ("assistant", 19),
    ]
    assert {t.session for t in turns} == {"7f3c2a4e-5b1d-4c8e-9a6f-2d0e8b1c4f73"}
    assert {t.agent for t in turns} == {"claude-code"}
    assert all(t.source.startswith(f"{CLAUDE}#L") for t in turns)
    assert turns[0].text.startswith("Add rate limiting to the /login endpoint.")
    assert turns[0].at == "2025-05-26T07:27:40.079000Z"
    assert turns[-1].at == "2025-05-26T07:41:09.870000Z"


def test_claude_code_metadata_records_give_no_turns():
    lines = {_line(t) for t in _turns(CLAUDE)}
    # 1 summary, 2 file-history-snapshot, 3 the isMeta caveat, 18 queue-operation
    assert lines.isdisjoint({1, 2, 3, 18})
    assert not any("Caveat: The messages below" in t.text for t in _turns(CLAUDE))


def test_claude_code_thinking_is_kept_only_when_asked():
    assert not any("[thinking]" in t.text for t in _turns(CLAUDE))
    turns = _turns(CLAUDE, thinking=True)
    thought = [t for t in turns if _line(t) == 5]
    assert len(thought) == 1
    assert thought[0].speaker == "assistant"
    assert thought[0].text.startswith("[thinking] The user wants Redis-backed limits.")
    assert len(turns) == len(_turns(CLAUDE)) + 1


def test_claude_code_tool_calls_and_results_are_labelled_with_the_tool():
    by_line = {_line(t): t for t in _turns(CLAUDE)}
    assert by_line[7].text == (
        '[tool call: Bash] {"command": "git diff HEAD~3 -- src/api", '
        '"description": "Show recent API changes"}'
    )
    assert by_line[10].text == "[tool error: Read]\nFile does not exist."
    assert by_line[13].text == (
        "[tool result: Write]\nFile created successfully at: /home/dev/shop/src/api/limits.py"
    )


def test_claude_code_huge_tool_output_is_trimmed_at_the_limit():
    diff = _record(CLAUDE, 8)["message"]["content"][0]["content"].strip()
    assert len(diff) > 5 * MAX_TOOL_CHARS
    turn = next(t for t in _turns(CLAUDE) if _line(t) == 8)
    header, body = turn.text.split("\n", 1)
    assert header == "[tool result: Bash]"
    cut = len(diff) - MAX_TOOL_CHARS
    marker = f"\n[… {cut} characters trimmed]\n"
    assert marker in body
    head, tail = body.split(marker)
    assert diff.startswith(head) and diff.endswith(tail)
    assert len(head) + len(tail) == MAX_TOOL_CHARS


def test_claude_code_text_and_tool_call_of_one_record_are_one_assistant_turn():
    turn = next(t for t in _turns(CLAUDE) if _line(t) == 12)
    text, call = turn.text.split("\n\n[tool call: Write] ")
    assert text.startswith("The spike matches a credential-stuffing pattern.")
    assert json.loads(call)["file_path"] == "/home/dev/shop/src/api/limits.py"


def test_claude_code_images_and_binary_output_are_replaced_by_placeholders():
    turns = _turns(CLAUDE)
    by_line = {_line(t): t for t in turns}
    assert by_line[11].speaker == "user"
    assert by_line[11].text == (
        "[image omitted: image/png, 5 KB]\n\n"
        "Here's the Grafana panel showing the login spike from last night."
    )
    assert by_line[15].text == "[tool result: Bash]\n[binary content omitted: 1 KB]"
    image_data = _record(CLAUDE, 11)["message"]["content"][0]["source"]["data"]
    for turn in turns:
        assert "\x00" not in turn.text
        assert image_data[:64] not in turn.text
        assert max(len(word) for word in turn.text.split()) < BLOB_MIN_CHARS


def test_claude_code_compaction_is_a_system_turn():
    by_line = {_line(t): t for t in _turns(CLAUDE)}
    assert (by_line[16].speaker, by_line[16].text) == ("system", "Conversation compacted")
    assert by_line[17].speaker == "system"
    assert by_line[17].text.startswith("This session is being continued from a previous conversation")


def test_source_and_speaker_name_one_turn_in_every_fixture():
    for path in (CLAUDE, CODEX, CODEX_LEGACY, AIDER):
        keys = [(t.source, t.speaker) for t in _turns(path, thinking=True)]
        assert len(keys) == len(set(keys)), path


# --- Codex ------------------------------------------------------------------------------------------


def test_codex_rollout_reads_as_turns():
    turns = _turns(CODEX)
    assert [(t.speaker, _line(t)) for t in turns] == [
        ("system", 2),
        ("user", 4),
        ("assistant", 9),
        ("tool", 10),
        ("assistant", 12),
        ("assistant", 13),
        ("tool", 14),
        ("user", 15),
        ("assistant", 16),
        ("tool", 17),
        ("system", 18),
        ("assistant", 19),
    ]
    assert {t.session for t in turns} == {"019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"}
    assert {t.agent for t in turns} == {"codex"}
    assert turns[1].text == "Why does test_checkout fail on CI but not locally?"
    assert turns[1].at == "2025-10-29T09:15:12.491000Z"


def test_codex_harness_context_is_system_or_dropped_and_ui_events_are_not_repeated():
    turns = _turns(CODEX)
    assert turns[0].text.startswith("# AGENTS.md instructions for /home/dev/shop")
    assert not any("<environment_context>" in t.text for t in turns)
    assert sum("Why does test_checkout fail" in t.text for t in turns) == 1  # event_msg repeats it
    assert not any(t.text.startswith("[thinking]") for t in turns)


def test_codex_tool_calls_show_the_command_and_unwrap_shell_output():
    by_line = {_line(t): t for t in _turns(CODEX)}
    assert by_line[9].text == "[tool call: shell] pytest tests/test_checkout.py -x -q"
    assert by_line[10].text.startswith("[tool error: shell, exit code 1]\nF\n=====")
    assert by_line[10].text.endswith("1 failed in 0.84s")
    assert '"metadata"' not in by_line[10].text
    assert by_line[13].text.startswith("[tool call: apply_patch] *** Begin Patch\n")
    assert (
        by_line[14].text
        == "[tool result: apply_patch]\nSuccess. Updated the following files:\nM shop/receipts.py"
    )
    assert by_line[18].text.startswith("[compacted] The user asked why test_checkout fails on CI")


def test_codex_long_output_is_trimmed_and_images_omitted():
    by_line = {_line(t): t for t in _turns(CODEX)}
    log = _record(CODEX, 17)["payload"]["output"].strip()
    assert f"[… {len(log) - MAX_TOOL_CHARS} characters trimmed]" in by_line[17].text
    assert (
        by_line[15].text
        == "Also check the CI build log from this screenshot.\n\n[image omitted: image/png, 3 KB]"
    )


def test_codex_reasoning_summary_is_kept_only_when_asked():
    turns = _turns(CODEX, thinking=True)
    thought = next(t for t in turns if _line(t) == 7)
    assert thought.speaker == "assistant"
    assert thought.text.startswith("[thinking] **Checking time zone assumptions**")
    assert "gAAAA" not in thought.text  # the encrypted content is not reasoning anyone can read


def test_codex_legacy_rollout_reads_as_turns_without_times():
    turns = _turns(CODEX_LEGACY)
    assert [(t.speaker, _line(t)) for t in turns] == [
        ("user", 2),
        ("assistant", 4),
        ("tool", 5),
        ("assistant", 7),
        ("assistant", 8),
        ("tool", 9),
    ]
    assert {t.session for t in turns} == {"5973b6c0-94b8-487b-a530-2aeb6098ae0e"}
    assert {t.at for t in turns} == {None}
    assert turns[1].text == "[tool call: shell] rg -n '\\.total\\b' src"
    assert turns[2].text.splitlines() == [
        "[tool result: shell]",
        "src/orders.py:12:    def total(self):",
        "src/invoice.py:30:        amount = order.total",
    ]
    assert turns[4].text == "[tool call: shell] pytest -q"


def test_codex_session_falls_back_to_the_id_in_the_file_name(tmp_path):
    path = tmp_path / "rollout-2025-11-02T08-00-00-0a1b2c3d-0000-4000-8000-123456789abc.jsonl"
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}
    path.write_text(
        json.dumps({"timestamp": "2025-11-02T08:00:01+02:00", "type": "response_item", "payload": item})
    )
    [turn] = _turns(path)
    assert turn.session == "0a1b2c3d-0000-4000-8000-123456789abc"
    assert turn.at == "2025-11-02T06:00:01.000000Z"


def test_codex_unknown_records_and_structured_outputs(tmp_path):
    def envelope(kind, payload):
        return json.dumps({"timestamp": "2025-11-02T08:00:00Z", "type": kind, "payload": payload}) + "\n"

    path = tmp_path / "rollout-2025-11-02T08-00-00-0a1b2c3d-0000-4000-8000-123456789abc.jsonl"
    call = {
        "type": "function_call",
        "name": "docs.search",
        "arguments": '{"q": "rate limit"}',
        "call_id": "c1",
    }
    output = [
        {"type": "input_text", "text": "Found 2 pages"},
        {"type": "input_image", "image_url": "https://x/y.png"},
    ]
    path.write_text(
        envelope("world_state", {"agents_md": "..."})  # a record type newer than this parser
        + envelope("compacted", {"message": ""})
        + envelope("response_item", call)
        + envelope("response_item", {"type": "function_call_output", "call_id": "c1", "output": output})
        + envelope("response_item", {"type": "function_call_output", "call_id": "gone", "output": "plain"})
    )
    report = ParseReport()
    assert [t.text for t in parse(path, report=report)] == [
        '[tool call: docs.search] {"q": "rate limit"}',
        "[tool result: docs.search]\nFound 2 pages\n[image: https://x/y.png]",
        "[tool result: tool]\nplain",
    ]
    assert report.warnings == []


def test_codex_item_based_rollout_reads_as_turns_each_kept_once():
    turns = _turns(CODEX_ITEMS)
    assert [(t.speaker, _line(t)) for t in turns] == [
        ("system", 2),
        ("system", 3),
        ("user", 7),
        ("assistant", 10),
        ("tool", 11),
        ("tool", 12),
        ("assistant", 13),
        ("tool", 14),
        ("tool", 15),
        ("assistant", 16),
        ("assistant", 18),
    ]
    assert {t.session for t in turns} == {"019d8f2e-5a41-7c03-b2e6-8d1f4a9c3e70"}
    # The prompt is recorded only as a completed UserMessage item (and a UI event, not repeated).
    assert (
        turns[2].text
        == "Receipts show tomorrow's date for late orders. Fix it and keep the store's time zone."
    )
    assert turns[2].at == "2026-09-28T13:47:50.006000Z"
    # The final answer is recorded twice, as a response item and as an AgentMessage item.
    assert sum(t.text.startswith("Fixed: receipts compute the date") for t in turns) == 1
    assert turns[-1].text.startswith("[plan] 1. Use STORE_TZ in receipt_date (done)")


def test_codex_exec_headers_give_the_exit_code_and_are_not_kept():
    by_line = {_line(t): t for t in _turns(CODEX_ITEMS)}
    assert by_line[10].text == "[tool call: exec_command] pytest -q tests/test_receipts.py"
    assert by_line[11].text.splitlines() == [  # unified exec: "Process exited with code 1"
        "[tool error: exec_command, exit code 1]",
        "F",
        "E       AssertionError: assert datetime.date(2026, 9, 29) == datetime.date(2026, 9, 28)",
        "1 failed in 0.84s",
    ]
    assert by_line[14].text == (  # freeform: "Exit code: 0 / Wall time: ... / Output:"
        "[tool result: apply_patch]\nSuccess. Updated the following files:\nM shop/receipts.py\n"
        "A tests/test_receipt_dates.py"
    )
    assert not any("Wall time" in t.text or "Chunk ID" in t.text for t in by_line.values())


def test_codex_completed_command_and_mcp_items_are_tool_turns():
    by_line = {_line(t): t for t in _turns(CODEX_ITEMS)}
    assert by_line[12].text == (
        "[tool result: shell] rg -n 'astimezone\\(\\)' shop\n"
        "shop/receipts.py:14:    return order.placed_at.astimezone().date()"
    )
    assert by_line[15].text.startswith("[tool result: ctx.recall]\nDecisions in force")


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (
            "Exit code: 2\nWall time: 0.3 seconds\nTotal output lines: 1\nOutput:\nboom\n",
            "exit code 2]\nboom",
        ),
        (
            "Chunk ID: a1\nWall time: 1.0000 seconds\nProcess exited with code 0\nOutput:\nok\n",
            "result: sh]\nok",
        ),
        (
            "Wall time: 5.0 seconds\nProcess running with session ID 7\nOutput:\nstill going",
            "result: sh]\nstill going",
        ),
        ("Exit code: lots\nOutput:\nnot a header", "result: sh]\nExit code: lots\nOutput:\nnot a header"),
    ],
)
def test_codex_exec_output_headers(tmp_path, output, expected):
    path = tmp_path / "rollout-2026-01-01T00-00-00-0a1b2c3d-0000-4000-8000-123456789abc.jsonl"
    call = {"type": "function_call", "name": "sh", "arguments": "{}", "call_id": "c1"}
    result = {"type": "function_call_output", "call_id": "c1", "output": output}
    path.write_text(
        "".join(
            json.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": "response_item", "payload": p}) + "\n"
            for p in (call, result)
        )
    )
    assert _turns(path)[1].text.endswith(expected)


def test_codex_compressed_rollout_reads_like_the_plain_one(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    for plain in (CODEX, CODEX_ITEMS):
        packed = tmp_path / (plain.name + ".zst")
        packed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
        assert detect(packed, read_head(packed)) == "codex"
        expected = [(t.speaker, t.text, t.session, t.at, _line(t)) for t in _turns(plain)]
        assert [(t.speaker, t.text, t.session, t.at, _line(t)) for t in _turns(packed)] == expected
    # the session id comes from a compressed file's name too
    named = tmp_path / "rollout-2025-11-02T08-00-00-0a1b2c3d-0000-4000-8000-123456789abc.jsonl.zst"
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}
    line = json.dumps({"timestamp": "2025-11-02T08:00:01Z", "type": "response_item", "payload": item})
    named.write_bytes(zstandard.ZstdCompressor().compress(line.encode()))
    [turn] = _turns(named)
    assert turn.session == "0a1b2c3d-0000-4000-8000-123456789abc"


def test_a_damaged_compressed_rollout_is_one_clear_error(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    packed = zstandard.ZstdCompressor().compress(CODEX_ITEMS.read_bytes())
    broken = tmp_path / "rollout-broken.jsonl.zst"
    broken.write_bytes(packed[:4] + b"\xff" * 64)
    with pytest.raises(UsageError, match=r"rollout-broken\.jsonl\.zst: the zstd stream is damaged"):
        _turns(broken, fmt="codex")


# --- aider ------------------------------------------------------------------------------------------


def test_aider_history_reads_as_turns_across_two_sessions():
    turns = _turns(AIDER, local_tz=UTC)
    assert [(t.speaker, _line(t), t.session) for t in turns] == [
        ("tool", 4, "2024-05-01 10:00:00"),
        ("user", 10, "2024-05-01 10:00:00"),
        ("tool", 11, "2024-05-01 10:00:00"),
        ("user", 13, "2024-05-01 10:00:00"),
        ("assistant", 15, "2024-05-01 10:00:00"),
        ("tool", 30, "2024-05-01 10:00:00"),
        ("user", 34, "2024-05-01 10:00:00"),
        ("tool", 35, "2024-05-01 10:00:00"),
        ("tool", 44, "2024-05-02 14:30:12"),
        ("user", 50, "2024-05-02 14:30:12"),
        ("assistant", 53, "2024-05-02 14:30:12"),
        ("tool", 70, "2024-05-02 14:30:12"),
    ]
    assert {t.agent for t in turns} == {"aider"}
    assert turns[3].text == "Switch the cache from memcached to Redis. We need entries to survive deploys."
    assert turns[9].text == "why is the redis client created at import time?\ncan we make it lazy?"
    assert turns[5].text.splitlines() == [
        "Tokens: 2.1k sent, 180 received. Cost: $0.01 message, $0.01 session.",
        "Applied edit to app/cache.py",
        "Commit 3f9a2c1 feat: Switch cache backend from memcached to Redis",
    ]
    assert not any("<blank>" in t.text for t in turns)


def test_aider_reply_keeps_its_code_fences_whole():
    turns = _turns(AIDER, local_tz=UTC)
    edit = turns[4].text
    assert edit.startswith("Here are the changes to switch the cache backend to Redis:")
    assert "<<<<<<< SEARCH\nimport memcache" in edit and edit.endswith(">>>>>>> REPLACE\n```")
    lazy = turns[10].text
    assert "#### cached client, built on first use\n> (this line is code, not aider output)" in lazy
    assert lazy.endswith("Callers then use `get_client()` instead of the module-level `client`.")


def test_aider_session_times_are_read_in_the_given_zone():
    turns = _turns(AIDER, local_tz=timezone(timedelta(hours=2)))
    assert turns[0].at == "2024-05-01T08:00:00.000000Z"
    assert turns[-1].at == "2024-05-02T12:30:12.000000Z"


def test_aider_session_times_default_to_this_machines_zone():
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is POSIX only")
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "XYZ-3"  # POSIX: a zone three hours east of UTC, no tz database needed
    time.tzset()
    try:
        assert _turns(AIDER)[0].at == "2024-05-01T07:00:00.000000Z"
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()


# --- detection and refusal --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [(CLAUDE, "claude-code"), (CODEX, "codex"), (CODEX_LEGACY, "codex"), (AIDER, "aider")],
)
def test_each_format_is_detected(path, expected):
    assert detect(path, read_head(path)) == expected
    report = ParseReport()
    list(parse(path, report=report))
    assert report.format == expected


@pytest.mark.parametrize("name", ["events.jsonl", "notes.md", "blob.jsonl"])
def test_files_in_no_known_format_are_refused_before_reading(name):
    path = MALFORMED / name
    assert detect(path, read_head(path)) is None
    with pytest.raises(UsageError, match="not a transcript"):
        parse(path)  # raised by the call itself, not on the first next()


def test_detection_sees_past_a_first_line_longer_than_the_head(tmp_path):
    pasted = "x " * 100_000
    claude = tmp_path / "session.jsonl"
    claude.write_text(_claude_line("user", pasted, 1) + _claude_line("assistant", "ok", 2))
    assert detect(claude, read_head(claude)) == "claude-code"
    codex = tmp_path / "today.jsonl"
    meta = {"timestamp": "2025-11-02T08:00:00Z", "type": "session_meta", "payload": {"id": "s", "x": pasted}}
    codex.write_text(json.dumps(meta, separators=(",", ":")) + "\n")
    assert detect(codex, read_head(codex)) == "codex"


def test_claude_code_is_detected_behind_bookkeeping_records(tmp_path):
    path = tmp_path / "0d9e.jsonl"
    snapshot = {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}, "isSnapshotUpdate": False}
    path.write_text(json.dumps(snapshot) + "\n" + _claude_line("user", "hi", 1))
    assert detect(path, read_head(path)) == "claude-code"
    summary_only = tmp_path / "0d9f.jsonl"
    summary_only.write_text(json.dumps({"type": "summary", "summary": "Fix login", "leafUuid": "u"}) + "\n")
    assert detect(summary_only, read_head(summary_only)) == "claude-code"
    assert list(parse(summary_only)) == []


def test_aider_history_is_detected_by_its_header_under_any_name(tmp_path):
    copy = tmp_path / "chat.md"
    copy.write_bytes(AIDER.read_bytes())
    assert detect(copy, read_head(copy)) == "aider"


def test_empty_missing_and_unknown_inputs_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="empty"):
        parse(MALFORMED / "empty.jsonl")
    with pytest.raises(UsageError, match="cannot read"):
        parse(tmp_path / "missing.jsonl")
    with pytest.raises(UsageError, match="cannot read"):
        parse(tmp_path)
    with pytest.raises(UsageError, match="unknown transcript format 'cursor'"):
        parse(CLAUDE, "cursor")


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_a_markdown_file_forced_through_a_json_format_is_refused(fmt):
    with pytest.raises(UsageError, match=f"line 2 is not JSON; no line reads as a {fmt} record"):
        list(parse(AIDER, fmt))


def test_formats_are_named_and_described():
    assert list(FORMATS) == ["claude-code", "codex", "aider"]
    assert all(fmt.description for fmt in FORMATS.values())


# --- damaged lines ----------------------------------------------------------------------------------


def test_bad_lines_are_skipped_and_reported_with_their_numbers():
    report = ParseReport()
    turns = list(parse(MALFORMED / "truncated.jsonl", report=report))
    assert [(t.speaker, _line(t)) for t in turns] == [("user", 1), ("assistant", 3), ("user", 5)]
    assert [str(w) for w in report.warnings] == [
        "line 2: skipped: the line is not JSON",
        "line 4: skipped: the line is not a JSON object",
        "line 6: skipped: the line is cut off",
    ]
    assert (report.format, report.lines, report.turns, report.problems) == ("claude-code", 6, 3, 3)


def test_lines_of_broken_utf8_are_read_with_the_bytes_replaced():
    for name, line in (("latin1.jsonl", 3), ("latin1.aider.chat.history.md", 4)):
        report = ParseReport()
        turns = list(parse(MALFORMED / name, report=report))
        assert [str(w) for w in report.warnings] == [
            f"line {line}: the line is not UTF-8; undecodable bytes replaced"
        ]
        damaged = next(t for t in turns if _line(t) == line)
        assert "\ufffd" in damaged.text


def test_warnings_are_capped_but_every_problem_is_counted(tmp_path):
    path = tmp_path / "noisy.jsonl"
    path.write_text(_claude_line("user", "keep me", 1) + "{not json\n" * 300)
    report = ParseReport()
    assert [t.text for t in parse(path, report=report)] == ["keep me"]
    assert len(report.warnings) == MAX_WARNINGS
    assert report.problems == 300


# --- cleaning ---------------------------------------------------------------------------------------


def test_trim_keeps_head_and_tail_and_counts_the_cut():
    assert trim("a" * 100, 100) == "a" * 100
    text = "".join(chr(ord("a") + i % 26) for i in range(101))
    assert trim(text, 100) == f"{text[:75]}\n[… 1 character trimmed]\n{text[-25:]}"
    assert trim("x" * 5000, 2000).count("[… 3000 characters trimmed]") == 1


def test_scrub_binary_replaces_blobs_and_keeps_text_around_them():
    blob = "iVBORw0KGgoAAAANSUhEUgAA" * 50  # 1200 base64 characters
    assert scrub_binary(f"before {blob} after") == "before [binary content omitted: 1 KB] after"
    url = f"data:image/png;base64,{blob}"
    assert scrub_binary(f"<img src='{url}'>") == "<img src='[binary content omitted: 1 KB]'>"
    rule = "=" * 600
    assert scrub_binary(rule) == rule  # a separator, not data
    assert scrub_binary("ok\x00\x01\x02") == "[binary content omitted: 1 KB]"
    assert not looks_binary("r\ufffdsum\ufffd the plan")  # stray bytes in a short line
    assert looks_binary("\ufffd\x01" * 40 + "text")


def test_timestamps_are_normalised_to_utc():
    assert normalise_ts("2025-05-26T07:27:40.079Z") == "2025-05-26T07:27:40.079000Z"
    assert normalise_ts("2025-05-26T09:27:40+02:00") == "2025-05-26T07:27:40.000000Z"
    assert normalise_ts("2025-05-26T07:27:40") == "2025-05-26T07:27:40.000000Z"
    assert normalise_ts("yesterday") is None
    assert normalise_ts(1716708460) is None


# --- scale and hygiene ------------------------------------------------------------------------------


def _write_big_session(path: Path, cycles: int) -> None:
    output = "test_case ... ok\n" * 40
    with path.open("w", encoding="utf-8") as handle:
        for n in range(cycles):
            handle.write(_claude_line("user", f"step {n}: run the suite", 4 * n))
            handle.write(_claude_line("assistant", f"Running step {n}.", 4 * n + 1))
            call = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "pytest -q"}}
            result = {
                "type": "tool_result",
                "tool_use_id": f"t{n}",
                "content": output * (1 if n % 100 else 10),
            }
            for offset, (kind, block) in enumerate((("assistant", call), ("user", result)), start=2):
                record = {"sessionId": "big", "type": kind, "uuid": f"u{4 * n + offset}"}
                record["message"] = {"role": kind, "content": [block]}
                handle.write(json.dumps(record) + "\n")


def test_a_50k_line_session_streams_quickly_in_little_memory(tmp_path):
    path = tmp_path / "big.jsonl"
    _write_big_session(path, 12_500)
    size = path.stat().st_size
    assert size > 10 * 1024 * 1024

    tracemalloc.start()  # only for a first stretch: tracing every allocation is five times slower
    try:
        first = sum(1 for _ in itertools.islice(parse(path), 2_000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert first == 2_000
    assert peak < size / 20, f"peak {peak} bytes for a {size}-byte file: the file is read whole"

    report = ParseReport()
    started = time.perf_counter()
    speakers = collections.Counter(turn.speaker for turn in parse(path, report=report))
    elapsed = time.perf_counter() - started
    assert (report.lines, report.turns, report.problems) == (50_000, 50_000, 0)
    assert speakers == {"user": 12_500, "assistant": 25_000, "tool": 12_500}
    assert elapsed < 20, f"{elapsed:.1f} s for 50 000 lines"


def test_transcripts_import_no_host_framework():
    code = "import ctx_kernel.kernel.capture.transcripts, sys; print(' '.join(sys.modules))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
        ).stdout.split()
    )
    for host in ("click", "textual", "mcp", "ctx_kernel.kernel.hosts", "ctx_kernel.tui"):
        assert host not in loaded, host


# --- through the CLI ----------------------------------------------------------------------------------


def test_ctx_ingest_transcript_reads_item_based_and_compressed_codex_rollouts(cli, kernel, tmp_path):
    """A Codex sessions folder: a compressed rollout is read; one beside its plain file is not read twice."""
    zstandard = pytest.importorskip("zstandard")
    sessions = tmp_path / "sessions" / "2026" / "09" / "28"
    sessions.mkdir(parents=True)
    packed = sessions / (CODEX_ITEMS.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(CODEX_ITEMS.read_bytes()))
    both = sessions / CODEX.name
    both.write_bytes(CODEX.read_bytes())
    (sessions / (CODEX.name + ".zst")).write_bytes(zstandard.ZstdCompressor().compress(CODEX.read_bytes()))
    result = cli("ingest", "transcript", str(tmp_path / "sessions"), "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert sorted(Path(f["path"]).name for f in report["files"]) == sorted([packed.name, both.name])
    expected = _turns(CODEX_ITEMS)
    stored = {e.source: e for e in kernel.recent_evidence(1_000)}
    kept = [f"{packed.absolute()}#L{_line(turn)}" for turn in expected]
    assert sum(source in stored for source in kept) >= len(expected) - 1  # AGENTS.md is in both files
    for turn, source in zip(expected, kept, strict=True):
        if source not in stored:  # the same text in two files: kept once, under its first source
            continue
        evidence = stored[source]
        assert (evidence.speaker, evidence.session, evidence.occurred_at) == (
            turn.speaker,
            turn.session,
            turn.at,
        )
        assert evidence.agent == "codex"


def test_codex_session_end_hook_ingests_a_compressed_rollout(tmp_path):
    """Codex's hook payload may name a rollout Codex has since compressed."""
    zstandard = pytest.importorskip("zstandard")
    project = tmp_path / "shop"
    project.mkdir()
    Ctx.init(project / ".ctx" / "ctx.db", embedder=None)[0].close()
    packed = tmp_path / (CODEX_ITEMS.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(CODEX_ITEMS.read_bytes()))
    payload = {
        "session_id": "019d8f2e-5a41-7c03-b2e6-8d1f4a9c3e70",
        "transcript_path": str(packed),
        "cwd": str(project),
    }
    result = run_ctx_process("hook", "session-end", stdin=json.dumps(payload).encode(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with Ctx.open(project / ".ctx" / "ctx.db", embedder=None) as kernel:
        assert kernel.store.item_count("evidence") == len({t.text for t in _turns(CODEX_ITEMS)})
