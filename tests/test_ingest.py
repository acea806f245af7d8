"""Bulk evidence: ``ctx log --jsonl``, ``ctx ingest transcript`` and ``ctx hook session-end``."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from conftest import REPO, ctx_on_path, git_init, run_ctx_process

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.capture import transcripts
from ctx_kernel.kernel.capture.ingest import TRANSCRIPT_FORMATS, EvidenceInput, Item
from ctx_kernel.kernel.store.sqlite import driver

DATA = REPO / "tests" / "data" / "transcripts"
CLAUDE = next((DATA / "claude-code").glob("*.jsonl"))
CODEX = sorted((DATA / "codex").glob("*.jsonl"))
AIDER = DATA / "aider" / ".aider.chat.history.md"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def schema(name: str) -> dict:
    return json.loads((REPO / "schemas" / f"{name}.schema.json").read_text())


def write_jsonl(path: Path, records: list[object]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rows(store: Path, sql: str) -> list[tuple]:
    conn = driver.connect(store)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def notes(count: int, start: int = 0) -> list[dict]:
    return [
        {"text": f"note {i}: the cache uses redis with a {i} second ttl", "source": f"notes.md#L{i + 1}"}
        for i in range(start, start + count)
    ]


# -- ctx log --jsonl ----------------------------------------------------------------------


def test_jsonl_logs_every_record_with_its_fields_and_reports_totals(cli, kernel, tmp_path, store_path):
    records = [
        {
            "text": "We chose Postgres for the ledger",
            "source": "docs/meeting.md#L4",
            "kind": "doc",
            "tags": ["db", "ledger"],
            "created_at": "2025-03-01T09:30:00+01:00",
            "speaker": "alice",
            "session": "s-1",
            "agent": "importer",
        },
        {"text": "plain note, defaults apply"},
    ]
    path = write_jsonl(tmp_path / "in.jsonl", records)
    result = cli("log", "--jsonl", str(path), "--kind", "log", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    jsonschema.validate(report, schema("log-batch"))
    assert (report["added"], report["duplicates"], report["rejected_count"]) == (2, 0, 0)
    assert report["lines"] == 2
    found = {e.text: e for e in kernel.recent_evidence(10)}
    first = found["We chose Postgres for the ledger"]
    assert (first.kind, first.tags, first.source, first.speaker, first.session, first.agent) == (
        "doc",
        ["db", "ledger"],
        "docs/meeting.md#L4",
        "alice",
        "s-1",
        "importer",
    )
    assert first.occurred_at == "2025-03-01T08:30:00.000000Z"
    assert first.created_at > first.occurred_at
    second = found["plain note, defaults apply"]
    assert (second.kind, second.source, second.occurred_at) == ("log", None, None)
    shown = cli("show", first.id, "--json")
    jsonschema.validate(json.loads(shown.out), schema("show"))
    assert kernel.audit.verify().ok


def test_rerunning_the_same_file_adds_nothing(cli, kernel, tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", [*notes(40), notes(1)[0]])
    first = cli("log", "--jsonl", str(path))
    assert first.code == 0, first.err
    assert first.out.splitlines()[0].startswith("added 40, duplicates 1, rejected 0")
    again = cli("log", "--jsonl", str(path), "--json")
    report = json.loads(again.out)
    assert (report["added"], report["duplicates"]) == (0, 41)
    assert kernel.store.item_count("evidence") == 40


def test_bad_lines_are_reported_by_number_and_skipped(cli, kernel, tmp_path, store_path):
    path = tmp_path / "mixed.jsonl"
    good = json.dumps({"text": "a good line"}).encode()
    path.write_bytes(
        b"\n".join(
            [
                good,
                b"{not json",
                b"",
                b"[1, 2]",
                json.dumps({"txt": "typo in the field name"}).encode(),
                json.dumps({"text": "x", "kind": "diary"}).encode(),
                json.dumps({"text": "x", "created_at": "yesterday"}).encode(),
                json.dumps({"text": "   "}).encode(),
                b'{"text": "caf\xe9"}',
                json.dumps({"text": "another good line", "tags": ["t"]}).encode(),
            ]
        )
        + b"\n"
    )
    result = cli("log", "--jsonl", str(path), "--json")
    assert result.code == 1, result.err  # a script must notice; the good lines are still stored
    assert result.err == "ctx: error: 7 lines were rejected; the other lines were logged\n"
    report = json.loads(result.out)
    jsonschema.validate(report, schema("log-batch"))
    assert (report["added"], report["rejected_count"]) == (2, 7)
    by_line = {r["line"]: r["error"] for r in report["rejected"]}
    assert sorted(by_line) == [2, 4, 5, 6, 7, 8, 9]
    assert by_line[2].startswith("malformed JSON")
    assert "text" in by_line[5]
    assert "kind" in by_line[6]
    assert by_line[7].startswith("created_at: invalid date")
    assert "UTF-8" in by_line[9]
    assert sorted(e.text for e in kernel.recent_evidence(10)) == ["a good line", "another good line"]
    text = cli("log", "--jsonl", str(path))
    assert text.code == 1
    assert "  line 2: malformed JSON" in text.out
    assert text.out.startswith("added 0, duplicates 2, rejected 7")


def test_jsonl_from_stdin(cli, kernel):
    data = "\n".join(json.dumps(n) for n in notes(3)).encode()
    result = cli("log", "--jsonl", "-", stdin=data)
    assert result.code == 0, result.err
    assert result.out.startswith("added 3, duplicates 0, rejected 0")
    assert kernel.store.item_count("evidence") == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--jsonl", "missing.jsonl"), "missing.jsonl: cannot read"),
        (("some text", "--jsonl", "x.jsonl"), "give either TEXT or --jsonl FILE, not both"),
        ((), "missing TEXT"),
    ],
)
def test_jsonl_usage_errors_are_one_line(cli, kernel, args, message):
    result = cli("log", *args)
    assert result.code == 2
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert kernel.store.item_count("evidence") == 0


# -- redaction on the way in --------------------------------------------------------------


def test_log_redacts_secrets_by_default_and_says_how_many(cli, kernel):
    result = cli("log", f"deploy with {AWS_KEY} and token {GITHUB_TOKEN}", "--json")
    out = json.loads(result.out)
    jsonschema.validate(out, schema("log"))
    assert out["redacted"] == 2
    stored = kernel.evidence(out["id"]).text
    assert AWS_KEY not in stored and GITHUB_TOKEN not in stored
    assert "[REDACTED:aws-access-key]" in stored
    assert "[REDACTED:github-token]" in stored
    plain = cli("log", "the password in the URL https://bob:hunter2x@db.example.com/app")
    assert "redacted 1 secret before storing" in plain.err
    assert "hunter2x" not in kernel.evidence(plain.out.split()[0]).text


def test_no_redact_keeps_text_as_it_is(cli, kernel, tmp_path):
    result = cli("log", f"key {AWS_KEY}", "--no-redact", "--json")
    out = json.loads(result.out)
    assert out["redacted"] == 0
    assert kernel.evidence(out["id"]).text == f"key {AWS_KEY}"
    path = write_jsonl(tmp_path / "s.jsonl", [{"text": f"line with {GITHUB_TOKEN}"}])
    report = json.loads(cli("log", "--jsonl", str(path), "--no-redact", "--json").out)
    assert report["redacted"] == 0
    assert any(GITHUB_TOKEN in e.text for e in kernel.recent_evidence(5))


def test_jsonl_counts_redactions_of_added_records_only(cli, kernel, tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [{"text": f"aws {AWS_KEY}"}, {"text": "clean text"}])
    assert json.loads(cli("log", "--jsonl", str(path), "--json").out)["redacted"] == 1
    assert json.loads(cli("log", "--jsonl", str(path), "--json").out)["redacted"] == 0


def test_clean_text_is_not_touched(kernel):
    body = "commit 3f9c2a1b7e4d6c8a0b2e4f6a8c0e2b4d6f8a0c2e fixed uuid 123e4567-e89b-12d3-a456-426614174000"
    result = kernel.log(body)
    assert result.redacted == 0
    assert kernel.evidence(result.id).text == body


# -- interruption -------------------------------------------------------------------------


def test_an_interrupted_run_keeps_committed_batches_and_a_rerun_completes(kernel):
    records = [EvidenceInput(text=f"record number {i}") for i in range(1_300)]

    def interrupted():
        for number, record in enumerate(records, start=1):
            if number == 1_234:
                raise KeyboardInterrupt
            yield Item(number, record)

    from ctx_kernel.kernel.capture.ingest import BatchReport

    report = BatchReport()
    with pytest.raises(KeyboardInterrupt):
        kernel.log_many(interrupted(), report=report)
    assert report.added == 1_000  # two full batches of 500 committed; the third rolled back
    assert kernel.store.item_count("evidence") == 1_000
    again = kernel.log_many(Item(n, r) for n, r in enumerate(records, start=1))
    assert (again.added, again.duplicates) == (300, 1_000)
    assert kernel.store.item_count("evidence") == 1_300
    assert kernel.audit.verify().ok


def _count(store: Path) -> int:
    try:
        return rows(store, "SELECT count(*) FROM evidence")[0][0]
    except driver.dbapi.Error:  # the writer may hold a lock for a moment
        return 0


def _wait_for_rows(store: Path, process, minimum: int = 1) -> None:
    deadline = time.monotonic() + 60
    while _count(store) < minimum:
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline, "no batch was committed within a minute"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_real_process_stopped_mid_run_loses_nothing_committed(tmp_path, store_path, sig):
    import subprocess

    assert run_ctx_process("--db", str(store_path), "init").returncode == 0
    path = write_jsonl(tmp_path / "big.jsonl", notes(30_000))
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "ctx"), "--db", str(store_path), "log", "--jsonl", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for_rows(store_path, process)
    os.kill(process.pid, sig)
    out, _ = process.communicate(timeout=60)
    committed = _count(store_path)
    assert 0 < committed < 30_000, "the run finished before it was stopped"
    assert committed % 500 == 0, "a batch was half committed"
    if sig == signal.SIGINT:
        assert process.returncode == 130
        assert out.decode().startswith(f"added {committed}, ")
        assert "interrupted: everything counted above is committed" in out.decode()
    rerun = run_ctx_process("--db", str(store_path), "log", "--jsonl", str(path))
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.decode().startswith(f"added {30_000 - committed}, duplicates {committed}, ")
    assert _count(store_path) == 30_000
    with Ctx.open(store_path) as kernel:
        assert kernel.audit.verify().ok


# -- transcripts --------------------------------------------------------------------------


def test_transcript_format_names_match_the_parsers():
    assert tuple(transcripts.FORMATS) == TRANSCRIPT_FORMATS


@pytest.mark.parametrize("path", [CLAUDE, *CODEX, AIDER], ids=lambda p: p.name[:24])
def test_each_turn_becomes_evidence_with_speaker_session_time_and_source(cli, kernel, path):
    expected = list(transcripts.parse(path))
    result = cli("ingest", "transcript", str(path), "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    jsonschema.validate(report, schema("ingest"))
    assert report["files"][0]["turns"] == len(expected)
    assert report["added"] + report["duplicates"] == len(expected)
    stored = {e.source: e for e in kernel.recent_evidence(1_000)}
    for turn in expected:
        source = f"{path.absolute()}#L{turn.source.rpartition('#L')[2]}"
        if source not in stored:  # the same text said twice: kept once, under its first source
            continue
        evidence = stored[source]
        assert (evidence.speaker, evidence.session) == (turn.speaker, turn.session)
        assert evidence.occurred_at == turn.at
        assert (evidence.kind, evidence.agent) == ("conversation", turn.agent)
    assert len(stored) == report["added"]
    assert {e.speaker for e in stored.values()} >= {"user", "assistant"}


def test_reingesting_transcripts_adds_nothing(cli, kernel):
    folders = (str(DATA / "claude-code"), str(DATA / "codex"))
    first = json.loads(cli("ingest", "transcript", *folders, "--json").out)
    assert first["added"] > 20
    again = json.loads(cli("ingest", "transcript", *folders, "--json").out)
    assert again["added"] == 0
    assert again["duplicates"] == first["added"] + first["duplicates"]
    assert kernel.store.item_count("evidence") == first["added"]


def test_forced_format_and_unreadable_files(cli, kernel, tmp_path):
    wrong = cli("ingest", "transcript", str(AIDER), "--format", "codex")
    assert wrong.code == 1
    notes_file = tmp_path / "notes.txt"
    notes_file.write_text("just some notes\n")
    result = cli("ingest", "transcript", str(notes_file), str(CLAUDE))
    assert result.code == 1
    assert "notes.txt: not a transcript this version can read" in result.err
    assert f"{CLAUDE.absolute()}: claude-code" in result.out, "the good file is still ingested"
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    none = cli("ingest", "transcript", str(empty_dir))
    assert none.code == 1
    assert "no transcript files found" in none.err


def test_malformed_transcript_lines_are_reported_and_the_rest_ingested(cli, kernel):
    result = cli("ingest", "transcript", str(DATA / "malformed" / "truncated.jsonl"))
    assert result.code == 0, result.err
    assert "3 damaged lines skipped" in result.out
    assert "  line 2: skipped: the line is not JSON" in result.out
    assert kernel.store.item_count("evidence") == 3


def test_transcript_secrets_are_redacted(cli, kernel, tmp_path):
    line = {
        "type": "user",
        "sessionId": "s1",
        "timestamp": "2025-05-26T07:27:40.000Z",
        "cwd": "/w",
        "message": {"role": "user", "content": f"use this key {AWS_KEY} please"},
    }
    path = write_jsonl(tmp_path / "session.jsonl", [line])
    result = cli("ingest", "transcript", str(path), "--format", "claude-code")
    assert result.code == 0, result.err
    assert "secrets redacted 1" in result.out
    (evidence,) = kernel.recent_evidence(1)
    assert "[REDACTED:aws-access-key]" in evidence.text and AWS_KEY not in evidence.text


# -- the session-end hook -----------------------------------------------------------------


def setup_session_end_command(project: Path) -> str:
    """The SessionEnd command `ctx setup claude-code` writes in ``project`` (made a git repository)."""
    git_init(project)
    done = run_ctx_process("setup", "claude-code", "--yes", env=ctx_on_path(), cwd=project)
    assert done.returncode == 0, done.stderr.decode()
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    return settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]


def test_session_end_hook_ingests_the_transcript_named_in_the_payload(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    assert run_ctx_process("init", cwd=project).returncode == 0
    payload = {
        "session_id": "7f3c2a4e",
        "transcript_path": str(CLAUDE),
        "cwd": str(project),
        "hook_event_name": "SessionEnd",
        "reason": "exit",
    }
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = setup_session_end_command(project).split()
    assert command[0] == "ctx"
    result = run_ctx_process(*command[1:], stdin=json.dumps(payload).encode(), cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert "new evidence texts" in result.stderr.decode()
    with Ctx.open(project / ".ctx" / "ctx.db") as kernel:
        count = kernel.store.item_count("evidence")
        assert count == len({t.text for t in transcripts.parse(CLAUDE)})
    again = run_ctx_process("hook", "session-end", stdin=json.dumps(payload).encode(), cwd=elsewhere)
    assert "0 new evidence texts" in again.stderr.decode()


def test_session_end_hook_outside_a_project_and_with_bad_payloads(tmp_path):
    payload = {"transcript_path": str(CLAUDE), "cwd": str(tmp_path)}
    skipped = run_ctx_process("hook", "session-end", stdin=json.dumps(payload).encode(), cwd=tmp_path)
    assert skipped.returncode == 0
    assert "transcript not ingested" in skipped.stderr.decode()
    for bad in (b"[1]", b"{", json.dumps({"cwd": str(tmp_path)}).encode()):
        result = run_ctx_process("hook", "session-end", stdin=bad, cwd=tmp_path)
        assert result.returncode == 2, bad
        assert len(result.stderr.decode().strip().splitlines()) == 1
        assert b"Traceback" not in result.stderr


NO_TRANSCRIPT = "the session has no transcript file (transcript_path is null)"


def test_session_end_hook_with_empty_input_or_no_transcript_exits_0_with_a_note(tmp_path):
    """A hook's exit code means something to its host (Claude Code reads 2 as a blocking error)."""
    project = tmp_path / "project"
    project.mkdir()
    assert run_ctx_process("init", cwd=project).returncode == 0
    no_file = {
        "session_id": "0199",
        "cwd": str(project),
        "hook_event_name": "SessionEnd",
        "transcript_path": None,
    }
    for stdin, note in (
        (b"", "ctx: the hook payload on stdin is empty; no transcript ingested\n"),
        (b" \n", "ctx: the hook payload on stdin is empty; no transcript ingested\n"),
        (json.dumps(no_file).encode(), f"ctx: {NO_TRANSCRIPT}; nothing ingested\n"),
    ):
        result = run_ctx_process("hook", "session-end", stdin=stdin, cwd=project)
        assert result.returncode == 0
        assert result.stdout == b""
        assert result.stderr.decode() == note


def test_the_parallel_path_stores_what_the_serial_one_does(tmp_path):
    records = [EvidenceInput(text=f"worker `alpha_{i}` note with {AWS_KEY}") for i in range(600)]
    items = [Item(n, r) for n, r in enumerate(records, start=1)]
    items.insert(10, Item(999, None, "broken line"))
    items.append(Item(1000, EvidenceInput(text="x", kind="diary")))
    stored = {}
    for parallel in (False, True):
        with Ctx.init(tmp_path / f"{parallel}.db")[0] as kernel:
            report = kernel.log_many(items, parallel=parallel)
            assert (report.added, report.rejected_count, report.redacted) == (600, 2, 600)
            assert [r.line for r in report.rejected] == [999, 1000]
            hits = kernel.recall("alpha_17", mode="entity").evidence
            texts = [e.text for e in kernel.recent_evidence(600)]
            stored[parallel] = (texts, [h.evidence.text for h in hits])
    assert stored[False] == stored[True]
    assert stored[True][1][0] == "worker `alpha_17` note with [REDACTED:aws-access-key]"


def test_the_ingest_benchmark_runs_and_prints_its_figures():
    import subprocess

    result = subprocess.run(
        [sys.executable, str(REPO / "bench" / "ingest_bench.py"), "--lines", "300"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    figures = [line for line in result.stdout.splitlines() if "records/s" in line]
    assert len(figures) == 4
    assert "(added 300, duplicates 0, rejected 0, redacted 6)" in figures[0]
    assert "(added 0, duplicates 300, " in figures[1]


def test_parallel_logging_from_code_read_on_stdin_falls_back_to_one_process(tmp_path):
    import subprocess

    code = f"""
from pathlib import Path
from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.capture.ingest import EvidenceInput, Item
kernel, _ = Ctx.init(Path({str(tmp_path / "s.db")!r}))
report = kernel.log_many((Item(n, EvidenceInput(text=f"note {{n}}")) for n in range(50)), parallel=True)
print(report.added)
"""
    result = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "50"
