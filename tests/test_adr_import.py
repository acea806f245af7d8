"""`ctx import adr` / `ctx export adr`: chains rebuilt, idempotent, round-trip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.adr import files as adr
from ctx_kernel.kernel.store.sqlite import driver

DATA = Path(__file__).resolve().parent / "data" / "adr"
CTX = str(Path(sys.executable).parent / "ctx")
SHARED = Path(
    os.environ.get("CTX_ADR_CORPUS") or Path(__file__).resolve().parents[2] / "shared" / "eval" / "adr"
)


def kernel_view(kernel: Ctx) -> list[tuple[object, ...]]:
    """A kernel's decisions as comparable tuples: windows, closings and link counts."""
    return sorted(
        (
            d.subject,
            d.decision,
            d.valid_from,
            d.valid_until,
            d.closed_by,
            len(d.supersedes),
            len(d.superseded_by),
        )
        for d in kernel.decisions(include_closed=True)
    )


@pytest.mark.parametrize("style", ["nygard", "madr"])
def test_import_rebuilds_chains_and_is_idempotent(cli, store_path: Path, style: str):
    assert cli("init").code == 0
    first = cli("import", "adr", str(DATA / style), "--yes", "--reviewer", "alice", "--json")
    assert first.code == 0, first.err
    report = json.loads(first.out)
    assert report["decisions"]
    with Ctx.open(store_path) as kernel:
        decisions = kernel.decisions(include_closed=True)
        assert all(d.source and d.ratified_by for d in decisions)
        for d in decisions:
            for new_id in d.superseded_by:
                assert kernel.decision(new_id).valid_from >= d.valid_from
            if d.superseded_by:
                assert d.valid_until == min(kernel.decision(n).valid_from for n in d.superseded_by)
        subjects = [d.subject for d in kernel.decisions()]
        assert len(subjects) == len(set(subjects))
        audit_rows = kernel.audit.verify().rows
        imported = sum(e.action.endswith(".imported") for e in kernel.audit.events())
        assert imported == len(report["decisions"]) + len(report["proposals"])
        view = kernel_view(kernel)
    again = json.loads(cli("import", "adr", str(DATA / style), "--yes", "--reviewer", "alice", "--json").out)
    assert again["decisions"] == [] and again["proposals"] == []
    with Ctx.open(store_path) as kernel:
        assert kernel_view(kernel) == view and kernel.audit.verify().rows == audit_rows


def test_chain_of_three_and_statuses(kernel: Ctx):
    report = kernel.import_adrs(DATA / "nygard", reviewer="alice")
    by_number = {d.adr_number: d for d in kernel.decisions(include_closed=True)}
    one, four, nine = by_number[1], by_number[4], by_number[9]
    assert one.superseded_by == [four.id] and four.superseded_by == [nine.id] and nine.current
    assert one.valid_until == four.valid_from and four.valid_until == nine.valid_from
    assert [d.id for d in kernel.history(nine.subject)][-1] == nine.id
    statuses = {p.adr_number: p.status for p in kernel.store.list_proposals(status=None)}
    assert "pending" in statuses.values() and "rejected" in statuses.values()
    assert any("0010" in s for s in report.skipped)
    assert any("not in the folder" in w for w in report.warnings)


def test_superseded_by_two_successors(kernel: Ctx):
    kernel.import_adrs(DATA / "madr", reviewer="alice")
    split = [d for d in kernel.decisions(include_closed=True) if len(d.superseded_by) == 2]
    assert split, "the corpus has an ADR superseded by two successors"
    assert split[0].valid_until == min(kernel.decision(n).valid_from for n in split[0].superseded_by)


def test_show_json_carries_source_and_number(kernel: Ctx, cli):
    kernel.import_adrs(DATA / "nygard", reviewer="alice")
    decision = next(d for d in kernel.decisions() if d.adr_number == 9)
    shown = json.loads(cli("show", decision.id, "--json").out)["record"]
    assert shown["adr_number"] == 9 and shown["source"].endswith(".md")


@pytest.mark.parametrize("style", ["nygard", "madr"])
def test_export_then_import_reproduces_the_kernel(kernel: Ctx, tmp_path: Path, cli, style: str):
    kernel.import_adrs(DATA / style, reviewer="alice")
    proposal = kernel.propose("auth.tokens", "Use JWT with refresh rotation")
    kernel.ratify(proposal.id, reviewer="bob")
    kernel.ratify(kernel.propose("auth.tokens", "Opaque session ids").id, reviewer="bob")
    out = tmp_path / "exported"
    assert cli("export", "adr", str(out)).code == 0
    first = sorted(p.name for p in out.iterdir())
    kernel.export_adrs(out)
    assert sorted(p.name for p in out.iterdir()) == first  # stable names
    before = kernel_view(kernel)
    assert kernel.import_adrs(out, reviewer="carol").decisions == []  # its own export: nothing new
    assert kernel_view(kernel) == before
    other, _ = Ctx.init(tmp_path / "other.db")
    report = other.import_adrs(out, reviewer="carol")
    assert report.skipped == []
    assert kernel_view(other) == kernel_view(kernel)
    other.close()


@pytest.mark.slow
@pytest.mark.skipif(not SHARED.is_dir(), reason="shared ADR corpus not present")
def test_real_adr_folders_import_cleanly(tmp_path: Path):
    for folder in sorted(p for p in SHARED.iterdir() if p.is_dir()):
        kernel, _ = Ctx.init(tmp_path / f"{folder.name}.db")
        report = kernel.import_adrs(folder, reviewer="alice")
        assert report.decisions, folder.name
        assert kernel.audit.verify().ok
        assert kernel.integrity_check() == "ok"
        kernel.close()


# -- files in: links, sizes, secrets, who ratifies ------------------------------------------------

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
DB_PASSWORD = "Xk9vQ2mL7pR4tZ8wQ"
SECRET_ADR = f"""---
status: accepted
---
# 1. Connect to the billing database

## Decision

Connect with DB_PASSWORD={DB_PASSWORD} and the AWS key {AWS_KEY}.
"""


def _adr(number: int, title: str, decision: str, **front: str) -> str:
    lines = "".join(f"{key}: {value}\n" for key, value in front.items())
    return f"---\n{lines}---\n# {number}. {title}\n\n## Decision\n\n{decision}\n"


def _every_text(store_path: Path) -> str:
    """Everything the store holds, as one text, to search for what must not be there."""
    conn = driver.connect(store_path, load_vec=False)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = [conn.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables if not t.startswith("vec")]
    finally:
        conn.close()
    return repr(rows)


def _import(cli, folder: Path, *extra: str):
    return cli("import", "adr", str(folder), "--yes", "--reviewer", "alice", *extra)


def test_import_does_not_follow_links_out_of_the_folder(cli, kernel: Ctx, store_path: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.md").write_text(SECRET_ADR, encoding="utf-8")
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-notes.md").symlink_to("../outside/notes.md")
    (folder / "0002-passwd.md").symlink_to("/etc/passwd")
    (folder / "0003-environ.md").symlink_to("/proc/self/environ")
    (folder / "0004-kept.md").write_text(_adr(4, "Use Postgres", "Use PostgreSQL 16."), encoding="utf-8")
    (folder / "0005-same-folder.md").symlink_to("0004-kept.md")
    kernel.close()

    result = _import(cli, folder, "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    skipped = "\n".join(report["skipped"])
    for name in ("0001-notes.md", "0002-passwd.md", "0003-environ.md"):
        assert f"{name}: a link to " in skipped and "outside the folder" in skipped
    assert len(report["decisions"]) == 2  # the file and the link to it inside the folder
    held = _every_text(store_path)
    assert "billing" not in held and AWS_KEY not in held and "root:" not in held


def test_import_checks_the_size_before_reading(tmp_path: Path, store_path: Path):
    """An 8 GiB sparse file is refused from its size, loudly: nothing is imported, the file is named.
    The import runs under a 1 GiB memory cap."""
    resource = pytest.importorskip("resource")
    folder = tmp_path / "adr"
    folder.mkdir()
    big = folder / "0001-huge.md"
    big.touch()
    os.truncate(big, 8 * 1024**3)
    (folder / "0002-small.md").write_text(_adr(2, "Use Postgres", "Use PostgreSQL 16."), encoding="utf-8")
    Ctx.init(store_path)[0].close()

    def cap_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1024**3, 1024**3))

    done = subprocess.run(
        [CTX, "--db", str(store_path), "import", "adr", str(folder), "--yes", "--reviewer", "alice"],
        capture_output=True,
        text=True,
        preexec_fn=cap_memory,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert f"0001-huge.md: larger than {adr.MAX_ADR_BYTES} bytes" in line and "nothing imported" in line
    assert done.stdout == ""
    with Ctx.open(store_path) as kernel:
        assert kernel.decisions(include_closed=True) == []


def test_imported_text_is_redacted(cli, kernel: Ctx, store_path: Path, tmp_path: Path):
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-billing.md").write_text(SECRET_ADR, encoding="utf-8")
    kernel.close()
    result = _import(cli, folder)
    assert result.code == 0, result.err
    assert "0001-billing.md: 2 secrets redacted (aws-access-key, password)" in result.err
    with Ctx.open(store_path) as reopened:
        [decision] = reopened.decisions()
        assert "[REDACTED:aws-access-key]" in decision.decision
        assert "DB_PASSWORD=[REDACTED:password]" in decision.decision
    held = _every_text(store_path)
    assert AWS_KEY not in held and DB_PASSWORD not in held


def test_the_ratifier_of_an_import_is_the_reviewer(cli, kernel: Ctx, store_path: Path, tmp_path: Path):
    folder = tmp_path / "adr"
    folder.mkdir()
    claims = {"ctx-ratified-by": "mallory", "deciders": "carol, dave"}
    (folder / "0001-db.md").write_text(_adr(1, "Use Postgres", "Use PostgreSQL 16.", **claims), "utf-8")
    (folder / "0002-ui.md").write_text(
        _adr(2, "Use Elm", "Write the frontend in Elm.", status="proposed", **claims), "utf-8"
    )
    kernel.close()
    assert _import(cli, folder).code == 0
    with Ctx.open(store_path) as reopened:
        [decision] = reopened.decisions()
        assert decision.ratified_by == "alice"
        events = [e for e in reopened.audit.events() if e.action.endswith(".imported")]
        assert {e.actor for e in events} == {"alice"}
        for event in events:
            after = json.loads(event.after)
            assert after["attribution"] == {"ratified_by": "mallory", "deciders": "carol, dave"}
        assert reopened.audit.verify().ok


@pytest.mark.parametrize(
    ("front", "code", "words"),
    [
        ({"ctx-valid-from": "0999-01-01"}, 2, "out of range"),
        ({"date": "0999-01-01"}, 2, "out of range"),
        ({"ctx-valid-from": "9000-01-01"}, 1, "later than now"),
        ({"date": "9000-01-01"}, 1, "later than now"),
        ({"ctx-valid-from": "2020-01-01", "ctx-valid-until": "9000-01-01"}, 1, "later than now"),
        ({"ctx-valid-from": "2020-01-01", "ctx-valid-until": "2019-01-01"}, 1, "earlier than its start"),
        ({"ctx-valid-from": "the day before yesterday"}, 2, "invalid date"),
    ],
)
def test_import_refuses_a_time_it_cannot_keep(cli, kernel: Ctx, store_path, tmp_path, front, code, words):
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-db.md").write_text(_adr(1, "Use Postgres", "Use PostgreSQL 16."), encoding="utf-8")
    (folder / "0002-cache.md").write_text(_adr(2, "Use Redis", "Cache in Redis.", **front), encoding="utf-8")
    kernel.close()
    result = _import(cli, folder)
    assert result.code == code, result.err
    assert "Traceback" not in result.err
    [line] = result.err.splitlines()
    assert "0002-cache.md" in line and words in line and "nothing imported" in line
    with Ctx.open(store_path) as reopened:
        assert reopened.decisions(include_closed=True) == [] and reopened.audit.events() == []


def test_a_successor_dated_the_day_its_predecessor_started_starts_later_that_day(kernel: Ctx, tmp_path: Path):
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-use-a.md").write_text(
        "---\nctx-valid-from: 2024-05-01T09:30:00Z\n---\n# 1. Use A\n\n## Status\n\n"
        "Superseded by [2. Use B](0002-use-b.md)\n\n## Decision\n\nUse A.\n",
        encoding="utf-8",
    )
    (folder / "0002-use-b.md").write_text(  # as adr-tools dates it: the day only
        "# 2. Use B\n\nDate: 2024-05-01\n\n## Status\n\nAccepted\n\n## Decision\n\nUse B.\n", encoding="utf-8"
    )
    assert kernel.import_adrs(folder, reviewer="alice").skipped == []
    by_number = {d.adr_number: d for d in kernel.decisions(include_closed=True)}
    assert by_number[1].valid_from == "2024-05-01T09:30:00.000000Z"
    assert by_number[2].valid_from == by_number[1].valid_until == "2024-05-01T23:59:59.999999Z"


def test_import_refuses_a_successor_that_starts_before_its_predecessor(cli, kernel, store_path, tmp_path):
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-db.md").write_text(
        _adr(1, "Use MySQL", "Use MySQL 8.", date="2021-06-01", status="superseded by [2](0002-db.md)"),
        "utf-8",
    )
    (folder / "0002-db.md").write_text(
        _adr(2, "Use Postgres", "Use PostgreSQL 16.", date="2020-01-01", supersedes="1"), "utf-8"
    )
    kernel.close()
    result = _import(cli, folder)
    assert result.code == 1
    [line] = result.err.splitlines()
    assert "0002-db.md" in line and "earlier than 0001-db.md" in line
    with Ctx.open(store_path) as reopened:
        assert reopened.decisions(include_closed=True) == []


# -- files out: links, other files, atomic writes -------------------------------------------------


def _exported_names(kernel: Ctx, tmp_path: Path) -> list[str]:
    scratch = tmp_path / "scratch"
    kernel.export_adrs(scratch)
    return sorted(p.name for p in scratch.iterdir() if p.name != "README.md")


def _import_sample(kernel: Ctx, tmp_path: Path, count: int = 1) -> None:
    """Decisions imported from files, so an export names its files after them."""
    folder = tmp_path / "sample"
    folder.mkdir()
    for number, (title, text) in enumerate(
        [("Use Postgres", "Use PostgreSQL 16."), ("Use Redis", "Cache in Redis.")]
    ):
        if number < count:
            (folder / f"000{number + 1}-x.md").write_text(_adr(number + 1, title, text), encoding="utf-8")
    kernel.import_adrs(folder, reviewer="alice")


def test_export_never_writes_through_a_link(cli, kernel: Ctx, tmp_path: Path):
    _import_sample(kernel, tmp_path)
    [name] = _exported_names(kernel, tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(victim)

    result = cli("export", "adr", str(out))
    assert result.code == 1 and "Traceback" not in result.err
    [line] = result.err.splitlines()
    assert name in line and "symbolic link" in line and "nothing written" in line
    assert victim.read_text(encoding="utf-8") == "precious" and (out / name).is_symlink()

    assert cli("export", "adr", str(out), "--force").code == 0
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not (out / name).is_symlink() and "ctx-id: dc_" in (out / name).read_text(encoding="utf-8")


def test_export_leaves_files_it_did_not_write(cli, kernel: Ctx, tmp_path: Path):
    _import_sample(kernel, tmp_path, 2)
    mine, theirs = _exported_names(kernel, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / theirs).write_text("# My own notes\n\nNot from ctx.\n", encoding="utf-8")

    result = cli("export", "adr", str(out))
    assert result.code == 1
    [line] = result.err.splitlines()
    assert theirs in line and "not written by ctx export" in line and "--force" in line
    assert sorted(p.name for p in out.iterdir()) == [theirs]  # nothing written, not even the other file
    assert (out / theirs).read_text(encoding="utf-8") == "# My own notes\n\nNot from ctx.\n"

    assert cli("export", "adr", str(out), "--force").code == 0
    first = {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()}
    assert set(first) == {mine, theirs, "README.md"} and "ctx-id: dc_" in first[theirs]
    assert cli("export", "adr", str(out)).code == 0  # its own files are replaced without --force
    assert {p.name: p.read_text(encoding="utf-8") for p in out.iterdir()} == first  # no temporary files left


def test_export_refuses_a_folder_in_place_of_a_file(cli, kernel: Ctx, tmp_path: Path):
    _import_sample(kernel, tmp_path)
    [name] = _exported_names(kernel, tmp_path)
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    for extra in ((), ("--force",)):
        result = cli("export", "adr", str(out), *extra)
        assert result.code == 1 and "is not a regular file" in result.err
    assert (out / name).is_dir()


def test_a_ring_of_supersessions_is_refused_naming_the_files(cli, kernel: Ctx, tmp_path: Path):
    """21 superseded by 22, 22 by 23, 23 by 21: no windows can hold it, so nothing is imported."""
    folder = tmp_path / "adr"
    folder.mkdir()
    ring = {21: 22, 22: 23, 23: 21}
    for number, successor in ring.items():
        text = f"# {number}. Decision {number}\n\nDate: 2024-01-{number - 10:02d}\n\n## Status\n\n"
        text += (
            f"Superseded by [{successor}. Decision {successor}]({successor:04d}-decision-{successor}.md)\n\n"
        )
        text += f"## Decision\n\nDo thing {number}.\n"
        (folder / f"{number:04d}-decision-{number}.md").write_text(text, encoding="utf-8")
    kernel.close()
    result = _import(cli, folder)
    assert result.code == 1 and result.out == "" and result.err.count("\n") == 1, result
    for number in ring:
        assert f"{number:04d}-decision-{number}.md" in result.err
    assert "ring" in result.err and "nothing imported" in result.err
    assert json.loads(cli("decisions", "--all", "--json").out)["decisions"] == []


def test_export_spells_out_hidden_characters_that_got_past_the_input_rules(
    cli, kernel: Ctx, store_path: Path, tmp_path: Path
):
    """A row written round the facade (raw SQL) with terminal escapes and a bidi override."""
    decided = kernel.ratify(kernel.propose("ops.deploy", "Deploy on Tuesdays").id, reviewer="alice")
    kernel.close()
    hostile = "Deploy on Tuesdays\x1b[2J\x1b]0;owned\x07 \u202eeno siht daer\r"
    conn = driver.connect(store_path, load_vec=False)
    trigger = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'decision_close_once'").fetchone()[0]
    conn.execute("DROP TRIGGER decision_close_once")
    conn.execute("UPDATE decision SET decision = ? WHERE id = ?", (hostile, decided.decision.id))
    conn.execute(trigger)
    conn.commit()
    conn.close()
    out = tmp_path / "adr"
    assert cli("export", "adr", str(out)).code == 0
    written = "".join(p.read_text(encoding="utf-8") for p in out.glob("*.md"))
    assert "Deploy on Tuesdays" in written
    for raw in ("\x1b", "\x07", "\u202e", "\r"):
        assert raw not in written
    assert "\\x1b[2J" in written and "\\u202e" in written
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.md")}
    assert cli("export", "adr", str(out)).code == 0
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.md")} == before  # nothing rewritten
