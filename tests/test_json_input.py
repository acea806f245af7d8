"""Hostile JSON at every entry point: too deep, duplicate keys, NaN; one line, and the good records kept.

Deep nesting used to end in a ``RecursionError`` traceback, and in ``--jsonl`` and transcript runs it
stopped the run before anything was stored. Each entry point reads JSON through
``kernel.json_input.read_json``; these tests go through the CLI, the hook and MCP as users do.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest
from conftest import REPO, run_ctx_process
from test_audit_export import (  # noqa: F401 - passphrase, signing_key and world are fixtures
    export,
    passphrase,
    rechain,
    records_of,
    rewrite,
    signing_key,
    verify,
    world,
)
from test_bad_input import assert_one_line_error, snapshot

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.audit import export as audit_export
from ctx_kernel.kernel.capture.json_input import MAX_DEPTH, JSONInputError, read_json

CLAUDE = next((REPO / "tests" / "data" / "transcripts" / "claude-code").glob("*.jsonl"))
# Far past the standard parser's recursion limit: the input that used to raise RecursionError.
DEEP = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"a":' * 3000 + "1" + "}" * 3000


def deep_field(document: dict, key: str, levels: int = 3000) -> str:
    """The document as JSON with ``key`` holding ``levels`` nested arrays."""
    text = json.dumps({**document, key: None})
    return text.replace(f'"{key}": null', f'"{key}": ' + "[" * levels + "]" * levels)


def claude_line(text: str, n: int) -> str:
    return json.dumps(
        {
            "type": "user",
            "sessionId": "7f3c2a4e-5b1d-4c8e-9a6f-2d0e8b1c4f73",
            "uuid": f"u{n}",
            "timestamp": "2025-03-04T10:00:0{n}Z",
            "message": {"role": "user", "content": text},
        }
    )


# -- the reader -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (DEEP, "deeper than"),
        (DEEP_OBJECT, "deeper than"),
        ("[" * 5000, "deeper than"),  # unbalanced, so only the parser can tell
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "deeper than"),
        ('{"subject": "a", "subject": "b"}', "duplicate key 'subject'"),
        ('{"a": {"k": 1, "k": 1}}', "duplicate key 'k'"),
        ('{"score": NaN}', "NaN is not a JSON value"),
        ("[Infinity]", "Infinity is not a JSON value"),
        ("[-Infinity]", "-Infinity is not a JSON value"),
        (b'{"a": "caf\xe9"}', "not valid UTF-8"),
        ('{"a": x}', "malformed JSON: Expecting value at column 7"),
        ('{\n"a": x}', "malformed JSON: Expecting value at line 2 column 6"),
    ],
)
def test_the_reader_refuses_in_one_line(raw, reason):
    with pytest.raises(JSONInputError) as caught:
        read_json(raw)
    assert reason in caught.value.message
    assert "\n" not in caught.value.message


def test_the_reader_takes_what_is_within_its_limits():
    shallow = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert read_json(shallow) == read_json(shallow.encode())
    # Brackets inside strings are text, not nesting.
    assert read_json(json.dumps({"text": "[" * 5000 + '\\"{'})) == {"text": "[" * 5000 + '\\"{'}
    with pytest.raises(JSONInputError, match="larger than 10 bytes"):
        read_json('{"a": "long"}', max_bytes=10)


# -- ctx propose --input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "document",
    [
        DEEP,
        deep_field({"subject": "a.b", "decision": "x"}, "rationale"),
        '{"subject": "a.b", "decision": "Use Redis", "decision": "Use Postgres"}',
    ],
    ids=["deep", "deep-field", "duplicate-key"],
)
def test_propose_json_refuses_deep_duplicate_and_nan(cli, kernel, store_path, document):
    before = snapshot(store_path)
    result = cli("propose", "--input", "-", stdin=document.encode())
    assert_one_line_error(result, 2)
    assert snapshot(store_path) == before


@pytest.mark.parametrize(
    "options",
    [
        ("--subject", "a.b"),
        ("--decision", "Use Postgres"),
        ("--rationale", "why"),
        ("--evidence", "ev_" + "0" * 26),
        ("--supersedes", "dc_" + "0" * 26),
    ],
    ids=lambda o: o[0],
)
def test_propose_json_with_field_options_is_a_usage_error(cli, kernel, store_path, options):
    """The options used to be dropped silently in favour of the document."""
    before = snapshot(store_path)
    document = json.dumps({"subject": "db.engine", "decision": "Use SQLite"}).encode()
    line = assert_one_line_error(cli("propose", "--input", "-", *options, stdin=document), 2)
    assert options[0] in line
    assert snapshot(store_path) == before


def test_propose_json_still_takes_proposer_and_session_as_defaults(cli, kernel):
    document = json.dumps({"subject": "db.engine", "decision": "Use SQLite"}).encode()
    result = cli("propose", "--input", "-", "--proposer", "claude", "--session", "s1", stdin=document)
    assert result.code == 0, result.err
    assert kernel.queue()[0].proposer == "claude"


# -- ctx log --jsonl ---------------------------------------------------------------------------------


@pytest.mark.parametrize("from_stdin", [False, True], ids=["file", "stdin"])
def test_log_jsonl_reports_hostile_lines_and_keeps_the_good_ones(cli, kernel, tmp_path, from_stdin):
    lines = [
        json.dumps({"text": "first good line"}),
        DEEP,
        deep_field({"text": "nested tags"}, "tags"),
        '{"text": "one", "text": "two"}',
        '{"text": "not a number", "agent": NaN}',
        json.dumps({"text": "last good line"}),
    ]
    data = ("\n".join(lines) + "\n").encode()
    path = tmp_path / "records.jsonl"
    path.write_bytes(data)
    result = (
        cli("log", "--jsonl", "-", "--json", stdin=data)
        if from_stdin
        else cli("log", "--jsonl", str(path), "--json")
    )
    assert "Traceback" not in result.err
    assert result.code == 1, result.err
    report = json.loads(result.out)
    by_line = {r["line"]: r["error"] for r in report["rejected"]}
    assert sorted(by_line) == [2, 3, 4, 5]
    assert "nested deeper than" in by_line[2] and "nested deeper than" in by_line[3]
    assert "duplicate key 'text'" in by_line[4]
    assert "NaN" in by_line[5]
    assert sorted(e.text for e in kernel.recent_evidence(10)) == ["first good line", "last good line"]


# -- ctx ingest transcript and ctx hook session-end ---------------------------------------------------


def hostile_transcript(tmp_path: Path) -> Path:
    path = tmp_path / "7f3c2a4e-5b1d-4c8e-9a6f-2d0e8b1c4f73.jsonl"
    lines = [
        claude_line("Use SQLite for the job queue.", 1),
        deep_field(json.loads(claude_line("deep", 2)), "toolUseResult"),
        claude_line("Keep the retry limit at five.", 3).replace(
            '"type": "user"', '"type": "user", "type": "user"'
        ),
        DEEP_OBJECT,
        claude_line("Ship it on Friday.", 5),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_ingest_transcript_skips_hostile_lines_and_stores_the_rest(cli, kernel, tmp_path):
    result = cli("ingest", "transcript", str(hostile_transcript(tmp_path)))
    assert "Traceback" not in result.err
    assert result.code == 0, result.err
    assert "3 damaged lines skipped" in result.out
    assert "  line 2: skipped: the line is refused: JSON nested deeper than" in result.out
    assert "  line 3: skipped: the line is refused: duplicate key 'type'" in result.out
    assert "  line 4: skipped: the line is refused: JSON nested deeper than" in result.out
    texts = sorted(e.text for e in kernel.recent_evidence(10))
    assert texts == ["Ship it on Friday.", "Use SQLite for the job queue."]


@pytest.mark.parametrize("first", [DEEP, DEEP_OBJECT], ids=["array", "object"])
def test_a_file_whose_first_line_is_too_deep_is_not_a_transcript(cli, kernel, tmp_path, first):
    """Format detection parses the first lines too."""
    path = tmp_path / "0d9f.jsonl"
    path.write_text(first + "\n" + claude_line("Use SQLite.", 2) + "\n", encoding="utf-8")
    result = cli("ingest", "transcript", str(path))
    assert "Traceback" not in result.err
    assert result.code == 1, result.err
    assert (
        result.err
        == f"ctx: error: {path}: not a transcript this version can read (claude-code, codex, aider)\n"
    )


def test_a_codex_envelope_too_deep_to_parse_is_skipped(cli, kernel, tmp_path):
    path = tmp_path / "rollout-2025-03-04T10-00-00-0d9f.jsonl"
    path.write_text('{"type": "session_meta", "payload": ' + DEEP + "}\n", encoding="utf-8")
    result = cli("ingest", "transcript", str(path))
    assert "Traceback" not in result.err
    assert "  line 1: skipped: the line is refused: JSON nested deeper than" in result.out


def test_session_end_hook_with_a_hostile_transcript_stores_the_good_turns(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    assert run_ctx_process("init", cwd=project).returncode == 0
    payload = {"transcript_path": str(hostile_transcript(tmp_path)), "cwd": str(project)}
    result = run_ctx_process("hook", "session-end", stdin=json.dumps(payload).encode(), cwd=project)
    assert b"Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr
    assert "2 new evidence texts" in result.stderr.decode()


@pytest.mark.parametrize(
    "payload",
    [
        deep_field({"transcript_path": str(CLAUDE)}, "cwd"),
        json.dumps({"transcript_path": str(CLAUDE)})[:-1] + ', "transcript_path": "/elsewhere.jsonl"}',
    ],
    ids=["deep", "duplicate-key"],
)
def test_session_end_hook_refuses_a_hostile_payload_in_one_line(tmp_path, payload):
    project = tmp_path / "project"
    project.mkdir()
    assert run_ctx_process("init", cwd=project).returncode == 0
    result = run_ctx_process("hook", "session-end", stdin=payload.encode(), cwd=project)
    assert b"Traceback" not in result.stderr
    assert result.returncode == 2, result.stderr
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctx: error: the hook payload"), lines
    with Ctx.open(project / ".ctx" / "ctx.db") as kernel:
        assert kernel.store.item_count("evidence") == 0


# -- ctx audit verify FILE ------------------------------------------------------------------------------


def _deep_record_line(path: Path) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[2] = DEEP.encode()
    path.write_bytes(b"\n".join(lines))


def _duplicate_key_record(path: Path) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2][:-1] + b', "actor": "mallory"}'
    path.write_bytes(b"\n".join(lines))


def _deep_after_rechained(path: Path) -> None:
    """A forger's record whose hash is right and whose ``after`` text is JSON nested 3,000 deep."""

    def change(records):
        records[2]["after"] = DEEP
        rechain(records, 2)

    rewrite(path, "jsonl", change)


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (_deep_record_line, "line 3: not a JSON record (JSON nested deeper than"),
        (_duplicate_key_record, "line 3: not a JSON record (duplicate key 'actor'"),
        (_deep_after_rechained, "the last record is not the manifest's last"),
    ],
    ids=["deep-line", "duplicate-key", "deep-after"],
)
@pytest.mark.usefixtures("world", "signing_key")
def test_audit_verify_reports_a_hostile_export_in_one_line(cli, tmp_path, tamper, message):
    path = export(cli, tmp_path, "jsonl")
    tamper(path)
    result = verify(cli, path)
    assert "Traceback" not in result.err
    assert result.code == 1, result.err
    assert result.err.count("\n") == 1 and message in result.err, result.err


@pytest.mark.parametrize(
    "content",
    [
        DEEP.encode(),
        b'{"manifest": ' + b"[" * 3000 + b"]" * 3000 + b', "signature": {}}',
        b'{"manifest": {}, "manifest": {}, "signature": {}}',
    ],
    ids=["deep", "deep-field", "duplicate-key"],
)
@pytest.mark.usefixtures("world", "signing_key")
def test_audit_verify_reports_a_hostile_manifest_in_one_line(cli, tmp_path, content):
    path = export(cli, tmp_path, "jsonl")
    audit_export.manifest_path_for(path).write_bytes(content)
    result = verify(cli, path)
    assert "Traceback" not in result.err
    assert result.code == 1, result.err
    assert result.err.count("\n") == 1 and "is not a JSON manifest" in result.err, result.err
    assert records_of(path, "jsonl")  # the records file itself is untouched


# -- ctx recall --min -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "Infinity"])
def test_recall_min_refuses_scores_that_are_not_finite(cli, kernel, value):
    """``--min vector=nan`` used to drop every hit silently (no score is >= NaN)."""
    line = assert_one_line_error(cli("recall", "auth", "--mode", "keyword", "--min", f"keyword={value}"), 2)
    assert "finite" in line


def test_recall_through_the_facade_refuses_scores_that_are_not_finite(kernel):
    from ctx_kernel.kernel.errors import UsageError

    with pytest.raises(UsageError, match="finite"):
        kernel.recall("auth", mode="keyword", min_scores={"keyword": float("nan")})


# -- ctx mcp -----------------------------------------------------------------------------------------------


def read_replies(stream: IO[bytes], count: int, timeout: float = 60) -> list[dict]:
    """``count`` JSON-RPC replies from the server's stdout; fewer once ``timeout`` seconds pass."""
    data = b""
    deadline = time.monotonic() + timeout
    while data.count(b"\n") < count and time.monotonic() < deadline:
        if select.select([stream], [], [], max(0, deadline - time.monotonic()))[0]:
            chunk = os.read(stream.fileno(), 65_536)
            if not chunk:
                break
            data += chunk
    return [json.loads(line) for line in data.splitlines()]


def _initialize() -> bytes:
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    return (
        json.dumps(request) + "\n" + '{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
    ).encode()


@pytest.mark.slow
def test_mcp_answers_messages_the_sdk_cannot_parse(kernel, store_path):
    """Each unreadable line gets a JSON-RPC error, with the request's id when it can be read."""
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    lines = [
        # A lone surrogate escape: valid JSON for Python, refused by the SDK's parser.
        json.dumps({**call, "params": {"name": "log_evidence", "arguments": {"text": "a\udc00b"}}}),
        DEEP,
        deep_field({**call, "id": 3, "params": {"name": "recall"}}, "arguments"),
        json.dumps({"id": 4, "hello": "world"}),
        "garbage",
        # An id past Python's integer digit limit once killed the server (ValueError, not JSON's).
        '{"jsonrpc": "2.0", "id": ' + "9" * 5000 + ', "method": "tools/list"}',
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
    ]
    with subprocess.Popen(
        [str(Path(sys.executable).parent / "ctx"), "--db", str(store_path), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(_initialize() + ("\n".join(lines) + "\n").encode())
        server.stdin.flush()
        replies = read_replies(server.stdout, 8)
        _, err = server.communicate(timeout=60)
    assert b"Traceback" not in err
    assert [r["id"] for r in replies] == [1, 2, None, None, 4, None, None, 5]
    errors = [r["error"] for r in replies[1:7]]
    assert [e["code"] for e in errors] == [-32700, -32700, -32700, -32600, -32700, -32700]
    assert "surrogate" in errors[0]["message"]
    assert "recursion limit" in errors[1]["message"]
    assert "tools" in replies[7]["result"]
    assert kernel.recent_evidence(5) == []
