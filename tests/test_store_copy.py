"""``ctx migrate --to``: a store copied row for row, resumable after any interruption, refused if unsafe."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_on_terminal

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.capture.ingest import EvidenceInput, Item
from ctx_kernel.kernel.errors import RefusedError
from tests.store_copy_support import fill, rows_at
from tests.test_json_schemas import assert_valid


@pytest.fixture
def source(kernel: Ctx) -> Ctx:
    """The test's store, filled with every kind of row."""
    fill(kernel)
    return kernel


def _count(path: Path, table: str) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def test_copy_holds_every_row_and_its_audit_chain_verifies(cli, source, store_path, tmp_path):
    target = tmp_path / "elsewhere" / "ctx.db"
    result = cli("migrate", "--to", f"sqlite:{target}")
    assert result.code == 0, result.err
    assert result.out.count("\n") == 1 and f"to {target}" in result.out
    assert rows_at(target) == rows_at(store_path)
    verify = cli("--db", str(target), "audit", "verify", "--json", db=False)
    assert verify.code == 0, verify.out
    report = json.loads(verify.out)
    assert report["ok"] and report["last_hash"] == source.audit.verify().last_hash
    with Ctx.open(target, embedder=None) as copy:
        # Derived data is rebuilt there: keyword search and the near-duplicate's queue both answer.
        assert copy.search("ledger postgres").evidence
        assert [p.subject for p in copy.queue()] == [p.subject for p in source.queue()]
        assert copy.history("auth.tokens")[0].valid_until is not None


def test_json_report_matches_its_schema_and_a_second_run_writes_nothing(cli, source, tmp_path):
    target = tmp_path / "copy.db"
    first = cli("migrate", "--to", str(target), "--json")
    assert first.code == 0, first.err
    report = json.loads(first.out)
    assert_valid("migrate", report)
    assert not report["resumed"] and all(t["copied"] == t["rows"] for t in report["tables"])
    again = json.loads(cli("migrate", "--to", str(target), "--json").out)
    assert_valid("migrate", again)
    assert again["resumed"] and all(t["copied"] == 0 for t in again["tables"])
    assert again["last_hash"] == report["last_hash"]


STAGES = [
    "evidence",
    "proposal",
    "proposal_evidence",
    "proposal_link",
    "decision",
    "decision_evidence",
    "supersession",
    "decision_snapshot",
    "resolved",
    "audit",
    "index",
]


def _stop_in(stage: str):
    """A progress callback that presses Ctrl-C once ``stage`` has written its first batch."""

    def progress(now: str, done: int, total: int | None) -> None:
        if now == stage and (done > 0 or stage == "index"):
            raise KeyboardInterrupt

    return progress


@pytest.mark.parametrize("stage", STAGES)
def test_ctrl_c_in_any_stage_then_the_same_command_finishes_an_identical_copy(
    source, store_path, tmp_path, stage
):
    target = tmp_path / "copy.db"
    with pytest.raises(KeyboardInterrupt):
        source.migrate(str(target), batch_size=3, progress=_stop_in(stage))
    report = source.migrate(str(target), batch_size=3)
    assert report.resumed
    written = {t.table: t.copied for t in report.tables}
    done = STAGES.index(stage)
    # What the stopped run committed stays; the rest is written now, once.
    assert all(written[t] == 0 for t in STAGES[: min(done, 6)] if t in written)
    assert rows_at(target) == rows_at(store_path)
    with Ctx.open(target, embedder=None) as copy:
        assert copy.audit.verify(state=True).ok


def _migrate_command(store: Path, target: Path) -> list[str]:
    """``ctx --db STORE migrate --to TARGET`` as a separate process runs it."""
    return [str(Path(sys.executable).parent / "ctx"), "--db", str(store), "migrate", "--to", str(target)]


@pytest.mark.slow
def test_a_killed_process_resumes_and_no_row_is_written_twice(source, store_path, tmp_path):
    source.log_many([Item(i, EvidenceInput(f"row {i} of the long copy")) for i in range(1500)])
    target = tmp_path / "copy.db"
    command = _migrate_command(store_path, target)
    process = subprocess.Popen([*command, "--batch-size", "2"], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(sqlite3.OperationalError):  # not created yet
            if target.exists() and _count(target, "evidence") >= 200:
                break
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    held = _count(target, "evidence")
    total = _count(store_path, "evidence")
    assert 200 <= held < total  # killed in the middle of the evidence
    done = subprocess.run([*command, "--json"], capture_output=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["resumed"]
    copied = {t["table"]: t["copied"] for t in report["tables"]}
    assert copied["evidence"] == total - held
    assert rows_at(target) == rows_at(store_path)


def test_a_source_that_moved_on_between_runs_is_copied_as_it_is_now(source, store_path, tmp_path):
    target = tmp_path / "copy.db"
    with pytest.raises(KeyboardInterrupt):
        source.migrate(str(target), batch_size=4, progress=_stop_in("decision"))
    pending = source.queue()
    source.ratify(pending[0].id, reviewer="carol")  # resolves a copied proposal, supersedes a decision
    source.retire("cache.layer", reviewer="carol", reason="no cache")  # closes a copied window
    source.log("a note written while the copy was stopped")
    report = source.migrate(str(target), batch_size=4)
    assert report.resumed and report.resolved >= 1
    assert rows_at(target) == rows_at(store_path)
    with Ctx.open(target, embedder=None) as copy:
        assert copy.audit.verify(state=True).ok


@pytest.mark.parametrize(
    ("table", "change"),
    [
        ("evidence", "UPDATE evidence SET agent = 'mallory' WHERE rowid = 2"),
        ("audit", "UPDATE audit SET actor = 'mallory' WHERE seq = 2"),
        ("proposal", "UPDATE proposal SET decision = 'Use MongoDB everywhere' WHERE rowid = 1"),
    ],
)
def test_a_tampered_target_row_refuses_the_resume(cli, source, tmp_path, table, change):
    target = tmp_path / "copy.db"
    assert cli("migrate", "--to", str(target)).code == 0
    conn = sqlite3.connect(target)
    for trigger in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {trigger[0]}")
    conn.execute(change)
    conn.commit()
    conn.close()
    before = rows_at(target)
    again = cli("migrate", "--to", str(target))
    assert again.code == 1 and again.out == ""
    assert again.err.count("\n") == 1 and "differs from this store's" in again.err
    assert table in again.err and "Traceback" not in again.err
    assert rows_at(target) == before


def test_a_target_holding_another_store_is_refused_and_left_alone(cli, source, tmp_path):
    other = tmp_path / "other" / "ctx.db"
    with Ctx.init(other)[0] as kernel:
        kernel.log("another project's note")
    before = rows_at(other)
    result = cli("migrate", "--to", str(other))
    assert result.code == 1 and "holds another store" in result.err
    assert rows_at(other) == before


def test_an_empty_initialised_target_becomes_the_copy(cli, source, store_path, tmp_path):
    target = tmp_path / "fresh" / "ctx.db"
    Ctx.init(target)[0].close()
    assert cli("migrate", "--to", str(target)).code == 0
    assert rows_at(target) == rows_at(store_path)


def test_a_target_with_rows_the_source_lacks_is_refused(cli, source, tmp_path):
    target = tmp_path / "copy.db"
    assert cli("migrate", "--to", str(target)).code == 0
    with Ctx.open(target, embedder=None) as copy:
        copy.log("written on the copy only")
    result = cli("migrate", "--to", str(target))
    assert result.code == 1 and "holds 1 evidence row this store does not" in result.err


@pytest.mark.parametrize("spelling", ["same", "sqlite", "link", "hardlink"])
def test_the_source_itself_is_refused_under_any_name(cli, source, store_path, tmp_path, spelling):
    if spelling == "same":
        to = str(store_path)
    elif spelling == "sqlite":
        to = f"sqlite:{store_path}"
    else:
        alias = tmp_path / "alias.db"
        (alias.symlink_to if spelling == "link" else alias.hardlink_to)(store_path)
        to = str(alias)
    before = rows_at(store_path)
    result = cli("migrate", "--to", to)
    assert result.code == 1 and "is this store itself" in result.err
    assert rows_at(store_path) == before


@pytest.mark.parametrize(
    "to",
    [
        "mysql://admin:hunter2secret@db.example/ctx",
        "postgresql://admin:hunter2secret@127.0.0.1:1/ctx?sslmode=disable",
        "postgresql://127.0.0.1:1/ctx?password=hunter2secret",
    ],
)
def test_a_url_target_never_prints_its_password(cli, source, to):
    result = cli("migrate", "--to", to)
    assert result.code != 0 and result.out == ""
    assert result.err.count("\n") == 1 and "Traceback" not in result.err
    assert "hunter2secret" not in result.err


def test_an_unknown_scheme_is_a_usage_error(cli, source):
    result = cli("migrate", "--to", "mysql://db.example/ctx")
    assert result.code == 2 and "unknown store scheme mysql" in result.err


def test_an_encrypted_store_is_not_copied(cli, store_path, tmp_path, monkeypatch):
    assert cli("init", "--encrypt").code == 0
    with Ctx.open(store_path) as kernel:
        kernel.log("a sealed note")
    target = tmp_path / "copy.db"
    result = cli("migrate", "--to", str(target))
    assert result.code == 1 and "encrypted" in result.err
    assert not target.exists()


def test_a_store_refuses_a_restored_row_that_breaks_its_invariants(source, tmp_path):
    target = tmp_path / "copy.db"
    source.migrate(str(target))
    with Ctx.open(target, embedder=None) as copy:
        row = copy.store.export_rows("audit", None, 1)[0]
        with pytest.raises(RefusedError), copy.store.transaction():
            copy.store.restore_rows("audit", [{**row, "seq": 10_000}])  # does not link to the last row


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_on_a_terminal_each_table_gets_a_progress_bar(source, store_path, tmp_path):
    target = tmp_path / "copy.db"
    env = {**os.environ, "CTX_DB": str(store_path), "COLUMNS": "120"}
    code, output = run_on_terminal(["migrate", "--to", str(target)], b"", env)
    assert code == 0, output
    for label in ("evidence", "proposals", "decisions", "supersession links", "audit chain", "index"):
        assert label in output
    assert "42/42" in output  # the evidence bar ends full: 2 notes and 40 bulk ones
    assert rows_at(target) == rows_at(store_path)


@pytest.mark.parametrize("where", ["folder", "under a file"])
def test_a_target_that_cannot_be_a_store_file_is_one_line(cli, source, tmp_path, where):
    (tmp_path / "blocker").write_text("a file where a folder should be")
    (tmp_path / "folder").mkdir()
    to = tmp_path / "folder" if where == "folder" else tmp_path / "blocker" / "ctx.db"
    result = cli("migrate", "--to", str(to))
    assert result.code in (1, 2) and result.out == ""
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


def test_a_writer_on_the_source_during_the_copy_is_left_for_the_next_run(source, store_path, tmp_path):
    target = tmp_path / "copy.db"
    before = rows_at(store_path)
    writer = Ctx.open(store_path, embedder=None)
    wrote = []

    def progress(stage: str, done: int, total: int | None) -> None:
        if stage == "proposal" and not wrote:  # evidence is copied; proposals are next
            wrote.append(writer.log("logged by another agent in the middle of the copy").id)
            writer.ratify(writer.queue()[0].id, reviewer="dave")

    try:
        first = source.migrate(str(target), batch_size=5, progress=progress)
    finally:
        writer.close()
    assert wrote and not first.resumed
    assert rows_at(target) == before  # what was committed when the copy started, whole
    second = source.migrate(str(target), batch_size=5)
    assert second.resumed and second.resolved == 2  # the ratified one and its settled near-duplicate
    assert rows_at(target) == rows_at(store_path) != before
    with Ctx.open(target, embedder=None) as copy:
        assert copy.audit.verify(state=True).ok


def _embedded(store_path: Path) -> Ctx:
    from tests.embedders import HashEmbedder

    kernel = Ctx.open(store_path, embedder=HashEmbedder())
    kernel.prepare_vectors(backfill=10_000)
    return kernel


def test_vectors_of_the_same_model_are_copied_and_not_embedded_again(source, store_path, tmp_path):
    from tests.embedders import HashEmbedder

    with _embedded(store_path) as embedded:
        report = embedded.migrate(str(tmp_path / "copy.db"))
        query = HashEmbedder().embed_query("ledger postgres")
        expected = embedded.store.nearest("evidence", query, 50, 5)
    assert report.vector_model == "test/hash-64"
    assert report.vectors == 42 + 6  # every evidence text and decision
    embedder = HashEmbedder()
    with Ctx.open(tmp_path / "copy.db", embedder=embedder) as copy:
        _, status = copy.prepare_vectors(backfill=10_000)
        assert status.state == "on" and embedder.calls == 0
        assert copy.store.nearest("evidence", query, 50, 5) == expected


def test_vectors_of_another_model_are_left_for_the_target_to_embed(source, store_path, tmp_path):
    from tests.embedders import HashEmbedder

    target = tmp_path / "copy.db"
    with Ctx.init(target, embedder=HashEmbedder(32, "test/hash-32"))[0] as other:
        other.prepare_vectors()  # the target chose its model first
    with _embedded(store_path) as embedded:
        report = embedded.migrate(str(target))
    assert report.vectors == 0 and report.vector_model is None
    embedder = HashEmbedder(32, "test/hash-32")
    with Ctx.open(target, embedder=embedder) as copy:
        _, status = copy.prepare_vectors(backfill=10_000)
        assert status.state == "on" and embedder.calls == 42 + 6


def test_an_encrypted_target_is_refused_even_empty(cli, source, tmp_path, monkeypatch):
    target = tmp_path / "sealed" / "ctx.db"
    assert cli("--db", str(target), "init", "--encrypt", db=False).code == 0
    result = cli("migrate", "--to", str(target))
    assert result.code == 1 and "is encrypted" in result.err
    with Ctx.open(target, embedder=None) as sealed:
        assert sealed.store.count_rows("evidence") == 0


def test_two_copies_to_one_target_at_the_same_moment_write_every_row_once(source, store_path, tmp_path):
    target = tmp_path / "copy.db"
    Ctx.init(target)[0].close()
    command = _migrate_command(store_path, target)
    runs = [
        subprocess.Popen([*command, "--batch-size", "2", "--json"], stdout=subprocess.PIPE) for _ in range(2)
    ]
    reports = [json.loads(run.communicate(timeout=120)[0]) for run in runs]
    assert all(run.returncode == 0 for run in runs)
    tables = [{t["table"]: t for t in report["tables"]} for report in reports]
    for name, table in tables[0].items():
        assert table["copied"] + tables[1][name]["copied"] == table["rows"]  # each row by one of them
    assert rows_at(target) == rows_at(store_path)


def test_a_copy_into_a_projects_ctx_folder_is_kept_out_of_git(cli, source, tmp_path):
    target = tmp_path / "laptop" / "project" / ".ctx" / "ctx.db"
    assert cli("migrate", "--to", str(target)).code == 0
    assert "*" in (target.parent / ".gitignore").read_text(encoding="utf-8")


def test_the_signed_checkpoint_comes_along_and_the_copy_matches_it(cli, source, tmp_path, monkeypatch):
    monkeypatch.setenv("CTX_KEY_PASSPHRASE", "correct horse battery staple")
    assert cli("keys", "init", db=False).code == 0
    assert cli("audit", "checkpoint").code == 0
    target = tmp_path / "elsewhere" / "ctx.db"
    assert cli("migrate", "--to", str(target)).code == 0
    verify = cli("--db", str(target), "audit", "verify", db=False)
    assert verify.code == 0, verify.err
    assert "matches 1 signed checkpoints" in verify.out


def test_a_source_that_does_not_verify_is_not_copied_unless_forced(cli, source, store_path, tmp_path):
    conn = sqlite3.connect(store_path)
    conn.execute("PRAGMA foreign_keys = OFF")
    definition = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'decision_close_once'").fetchone()
    if definition is not None:
        conn.execute("DROP TRIGGER decision_close_once")
    conn.execute("UPDATE decision SET decision = 'rewritten behind the audit log' WHERE rowid = 1")
    if definition is not None:
        conn.execute(definition[0])
    conn.commit()
    conn.close()
    target = tmp_path / "copy.db"
    refused = cli("migrate", "--to", str(target))
    assert refused.code == 1 and refused.err.count("\n") == 1 and "does not verify" in refused.err, refused
    assert "--force" in refused.err and not target.exists()
    forced = cli("migrate", "--to", str(target), "--force")
    assert forced.code == 0, forced.err and target.exists()


def test_a_target_that_is_a_symbolic_link_to_nothing_is_refused_unless_forced(cli, source, tmp_path):
    pointed = tmp_path / "elsewhere" / "planted.db"
    pointed.parent.mkdir()
    link = tmp_path / "copy.db"
    link.symlink_to(pointed)
    refused = cli("migrate", "--to", str(link))
    assert refused.code == 1 and refused.err.count("\n") == 1, refused
    assert "symbolic link" in refused.err and str(pointed) in refused.err
    assert not pointed.exists()
    assert cli("migrate", "--to", str(link), "--force").code == 0
    assert pointed.is_file()
