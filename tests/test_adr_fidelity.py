"""ADR folders in and out without losing a record, a title, a decider or a link.

The real corpora (``../shared/eval/adr``, or CTX_ADR_CORPUS) are skipped where absent.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.store.sqlite import driver

SHARED = Path(
    os.environ.get("CTX_ADR_CORPUS") or Path(__file__).resolve().parents[2] / "shared" / "eval" / "adr"
)
CORPORA = sorted(p for p in SHARED.iterdir() if p.is_dir()) if SHARED.is_dir() else []


def _view(kernel: Ctx) -> list[tuple]:
    """Everything a round trip must keep, by source file: no store-local ids or import times."""
    decisions = kernel.decisions(include_closed=True)
    source = {d.id: d.source for d in decisions}
    rows: list[tuple] = [
        (
            "decision",
            d.source,
            d.adr_number,
            d.subject,
            d.title,
            d.decision,
            d.rationale,
            tuple(d.deciders),
            d.valid_from,
            d.valid_until,
            d.closed_by,
            d.close_reason,
            tuple(sorted(source[o] or o for o in d.supersedes)),
            tuple(sorted(source[n] or n for n in d.superseded_by)),
        )
        for d in decisions
    ]
    rows += [
        (
            "proposal",
            p.source,
            p.adr_number,
            p.subject,
            p.title,
            p.decision,
            p.rationale,
            tuple(p.deciders),
            p.created_at,
            p.status,
            p.proposer,
        )
        for p in kernel.store.list_proposals(status=None)
    ]
    return sorted(rows, key=repr)


def _adr(number: int, title: str, body: str, *, front: str = "", status: str = "Accepted") -> str:
    head = f"---\n{front}---\n" if front else ""
    return (
        f"{head}# {number}. {title}\n\nDate: 2021-0{number % 9 + 1}-01\n\n## Status\n\n{status}\n\n{body}\n"
    )


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).write_text(content, encoding="utf-8")
    return folder


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


# -- the real corpora: import, export in place, import into a fresh store ----------------------------


@pytest.mark.skipif(not CORPORA, reason="shared ADR corpus not present")
@pytest.mark.parametrize("corpus", CORPORA, ids=lambda p: p.name)
def test_real_corpus_round_trips_exactly_through_an_export_in_place(tmp_path: Path, corpus: Path):
    folder = tmp_path / corpus.name
    shutil.copytree(corpus, folder)
    before = {p.name for p in folder.iterdir()}
    first, _ = Ctx.init(tmp_path / "first.db")
    report = first.import_adrs(folder, reviewer="alice")
    assert report.skipped == [], report.skipped
    markdown = [n for n in before if n.lower().endswith(".md") and n.lower() != "readme.md"]
    assert len(report.decisions) + len(report.proposals) == len(markdown)

    done = first.export_adrs(folder)
    assert done.warnings == [], done.warnings
    assert {p.name for p in folder.iterdir()} == before | {"README.md"}  # in place: no second 0001-...md
    assert first.import_adrs(folder, reviewer="alice").to_dict()["decisions"] == []
    again = first.export_adrs(folder)
    assert again.written == []  # stable: a second export changes nothing

    fresh, _ = Ctx.init(tmp_path / "fresh.db")
    assert fresh.import_adrs(folder, reviewer="bob").skipped == []
    assert _view(fresh) == _view(first)
    assert first.audit.verify().ok and fresh.audit.verify().ok
    first.close()
    fresh.close()


@pytest.mark.skipif(not CORPORA, reason="shared ADR corpus not present")
def test_the_longest_real_decisions_are_imported_whole(tmp_path: Path):
    folder = SHARED / "arachne-framework__architecture"
    if not folder.is_dir():
        pytest.skip("arachne corpus not present")
    kernel, _ = Ctx.init(tmp_path / "a.db")
    report = kernel.import_adrs(folder, reviewer="alice")
    assert report.skipped == []
    imported = {p.source: p for p in kernel.store.list_proposals(status=None)}
    imported |= {d.source: d for d in kernel.decisions(include_closed=True)}
    for name in ("adr-015-data-abstraction-model.md", "adr-016-db-migrations.md"):
        record = imported[name]
        assert len(record.decision) > 8000
        [evidence] = record.evidence
        kept = kernel.evidence(evidence)
        assert kept.source == name and record.decision.splitlines()[0] in kept.text
    kernel.close()


# -- texts: no cap below the file limit, no Decision section, the file kept as evidence --------------


def test_a_long_decision_is_imported_whole_and_its_file_kept_as_evidence(kernel: Ctx, tmp_path: Path):
    long_text = "\n\n".join(f"Paragraph {i}: we keep the schema in one place." for i in range(600))
    assert len(long_text) > 20_000
    folder = _write(
        tmp_path / "adr",
        {"0001-schema.md": _adr(1, "Keep the schema in one place", f"## Decision\n\n{long_text}")},
    )
    report = kernel.import_adrs(folder, reviewer="alice")
    assert report.skipped == []
    [decision] = kernel.decisions()
    assert decision.decision == long_text
    [evidence_id] = decision.evidence
    evidence = kernel.evidence(evidence_id)
    assert evidence.kind == "doc" and evidence.source == "0001-schema.md"
    assert evidence.text.startswith("# 1. Keep the schema in one place")
    assert kernel.recall("schema in one place").decisions  # the file's context is there for recall too


def test_an_adr_without_a_decision_section_round_trips(kernel: Ctx, tmp_path: Path):
    body = (
        "## Context\n\nLogs cost a lot.\n\n## Design discussion\n\nWe evaluate OpenSearch.\n\n"
        "### Options\n\n- a\n- b"
    )
    folder = _write(tmp_path / "adr", {"023-Logging.md": _adr(23, "Logging", body)})
    kernel.import_adrs(folder, reviewer="alice")
    [decision] = kernel.decisions()
    assert decision.decision == body and decision.title == "Logging"
    out = tmp_path / "out"
    kernel.export_adrs(out)
    fresh, _ = Ctx.init(tmp_path / "fresh.db")
    report = fresh.import_adrs(out, reviewer="bob")
    assert report.skipped == [] and len(report.decisions) == 1
    assert _view(fresh) == _view(kernel)
    fresh.close()


# -- titles and deciders ----------------------------------------------------------------------------


def test_titles_and_deciders_are_kept_shown_and_written_back(
    cli, kernel: Ctx, store_path: Path, tmp_path: Path
):
    folder = _write(
        tmp_path / "adr",
        {
            "0001-db.md": _adr(
                1, "Use PostgreSQL", "## Decision\n\nUse PostgreSQL 16.", front="deciders: [Alice, Bob]\n"
            ),
            "0002-cache.md": "# 2. Cache in Redis\n\nDate: 2021-05-01\nDeciders: Carol and Dave\n\n"
            "## Status\n\nAccepted\n\n## Decision\n\nCache sessions in Redis.\n",
        },
    )
    kernel.close()
    assert cli("import", "adr", str(folder), "--yes", "--reviewer", "erin").code == 0
    with Ctx.open(store_path) as reopened:
        by_number = {d.adr_number: d for d in reopened.decisions()}
        assert (by_number[1].title, by_number[1].deciders) == ("Use PostgreSQL", ["Alice", "Bob"])
        assert (by_number[2].title, by_number[2].deciders) == ("Cache in Redis", ["Carol", "Dave"])
        assert {d.ratified_by for d in by_number.values()} == {"erin"}
        imported = [json.loads(e.after) for e in reopened.audit.events() if e.action == "decision.imported"]
        assert sorted((row["title"], tuple(row["deciders"])) for row in imported) == [
            ("Cache in Redis", ("Carol", "Dave")),
            ("Use PostgreSQL", ("Alice", "Bob")),
        ]
        assert reopened.audit.verify().ok
        one = by_number[1]
    shown = cli("show", one.id).out
    assert "title: Use PostgreSQL" in shown and "deciders: ['Alice', 'Bob']" in shown
    history = cli("history", one.subject).out
    assert "title: Use PostgreSQL" in history and "deciders: Alice, Bob (ratified by erin)" in history

    out = tmp_path / "out"
    assert cli("export", "adr", str(out)).code == 0
    fresh, _ = Ctx.init(tmp_path / "fresh.db")
    fresh.import_adrs(out, reviewer="frank")
    with Ctx.open(store_path) as reopened:
        assert _view(fresh) == _view(reopened)
    fresh.close()


def test_propose_title_is_kept_and_exported(cli, kernel: Ctx, store_path: Path, tmp_path: Path):
    kernel.close()
    made = cli(
        "propose",
        "--subject",
        "db.engine",
        "--decision",
        "Use PostgreSQL 16 for orders.",
        "--title",
        "Use PostgreSQL",
        "--json",
    )
    proposal = json.loads(made.out)
    assert proposal["title"] == "Use PostgreSQL"
    assert cli("ratify", proposal["id"], "--yes", "--reviewer", "alice").code == 0
    with Ctx.open(store_path) as reopened:
        [decision] = reopened.decisions()
        assert decision.title == "Use PostgreSQL"
        assert reopened.audit.verify().ok
    out = tmp_path / "out"
    assert cli("export", "adr", str(out)).code == 0
    [written] = [p for p in out.iterdir() if p.name != "README.md"]
    assert written.name == "0001-use-postgresql.md"
    assert "\n# Use PostgreSQL\n" in written.read_text(encoding="utf-8")
    bad = cli("propose", "--subject", "db.engine", "--decision", "x", "--title", "two\nlines")
    assert bad.code == 2 and "Traceback" not in bad.err


# -- subjects ---------------------------------------------------------------------------------------


def test_a_successor_continues_its_predecessors_subject(kernel: Ctx, tmp_path: Path):
    folder = _write(
        tmp_path / "adr",
        {
            "0001-mysql.md": _adr(
                1,
                "Use MySQL for persistence",
                "## Decision\n\nUse MySQL 8.",
                status="Superseded by [2. Use PostgreSQL](0002-postgres.md)",
            ),
            "0002-postgres.md": _adr(
                2,
                "Use PostgreSQL",
                "## Decision\n\nUse PostgreSQL 16.",
                status="Accepted\n\nSupersedes [1. Use MySQL for persistence](0001-mysql.md)",
            ),
            "0003-queue.md": _adr(
                3, "Use RabbitMQ", "## Decision\n\nQueue with RabbitMQ.", front="subject: messaging.queue\n"
            ),
            "0004-kafka.md": _adr(
                4,
                "Use Kafka",
                "## Decision\n\nStream with Kafka.",
                status="Accepted\n\nSupersedes [3. Use RabbitMQ](0003-queue.md)",
            ),
        },
    )
    kernel.import_adrs(folder, reviewer="alice")
    by_number = {d.adr_number: d for d in kernel.decisions(include_closed=True)}
    assert by_number[1].subject == by_number[2].subject == "mysql-persistence"
    assert by_number[3].subject == by_number[4].subject == "messaging.queue"
    proposal = kernel.propose("mysql-persistence", "Use PostgreSQL 17.")
    assert proposal.supersedes == [by_number[2].id]  # a later proposal supersedes the current one


def test_a_record_split_in_two_leaves_each_successor_its_own_subject(kernel: Ctx, tmp_path: Path):
    folder = _write(
        tmp_path / "adr",
        {
            "0001-auth.md": _adr(
                1,
                "Use one auth service",
                "## Decision\n\nOne service.",
                status="Superseded by [2](0002-a.md) and [3](0003-b.md)",
            ),
            "0002-a.md": _adr(2, "Use OIDC for staff", "## Decision\n\nOIDC.", status="Accepted"),
            "0003-b.md": _adr(
                3, "Use magic links for citizens", "## Decision\n\nMagic links.", status="Accepted"
            ),
        },
    )
    kernel.import_adrs(folder, reviewer="alice")
    subjects = {d.adr_number: d.subject for d in kernel.decisions(include_closed=True)}
    assert len(set(subjects.values())) == 3


def test_dry_run_prints_every_subject_and_writes_nothing(cli, kernel: Ctx, store_path: Path, tmp_path: Path):
    folder = _write(
        tmp_path / "adr",
        {
            "0001-mysql.md": _adr(
                1,
                "Use MySQL for persistence",
                "## Decision\n\nUse MySQL 8.",
                status="Superseded by [2](0002-postgres.md)",
            ),
            "0002-postgres.md": _adr(
                2, "Use PostgreSQL", "## Decision\n\nUse PostgreSQL 16.", status="Accepted"
            ),
            "0003-elm.md": _adr(3, "Write the frontend in Elm", "## Decision\n\nElm.", status="Proposed"),
        },
    )
    kernel.close()
    result = cli("import", "adr", str(folder), "--dry-run")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert "0001-mysql.md  mysql-persistence  superseded decision" in lines
    assert "0002-postgres.md  mysql-persistence  current decision" in lines
    assert "0003-elm.md  write-frontend-elm  pending proposal" in lines
    assert "nothing written (dry run)" in lines[-1]
    as_json = json.loads(cli("import", "adr", str(folder), "--dry-run", "--json").out)
    assert as_json["dry_run"] and [f["subject"] for f in as_json["files"]] == [
        "mysql-persistence",
        "mysql-persistence",
        "write-frontend-elm",
    ]
    conn = driver.connect(store_path, load_vec=False)
    try:
        for table in ("decision", "proposal", "evidence", "audit"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
    finally:
        conn.close()


# -- export in place --------------------------------------------------------------------------------

NYGARD_REPO = {
    "0001-record-architecture-decisions.md": "# 1. Record architecture decisions\n\nDate: 2020-01-10\n\n"
    "## Status\n\nAccepted\n\n## Context\n\nWe need to record decisions.\n\n## Decision\n\n"
    "We will use ADRs.\n\n## Consequences\n\nSee Nygard.\n",
    "0002-use-mysql.md": "# 2. Use MySQL for persistence\n\nDate: 2020-02-01\n\n## Status\n\nAccepted\n\n"
    "## Context\n\nWe need a database.\n\n## Decision\n\nUse MySQL 8.\n\n"
    "## Options considered\n\n- MySQL\n- SQLite\n",
}


def test_export_in_place_updates_imported_files_and_numbers_new_ones(
    cli, kernel: Ctx, store_path: Path, tmp_path: Path
):
    folder = _write(tmp_path / "docs" / "adr", NYGARD_REPO)
    kernel.import_adrs(folder, reviewer="alice")
    mysql = next(d for d in kernel.decisions() if d.adr_number == 2)
    kernel.ratify(
        kernel.propose(mysql.subject, "Use PostgreSQL 16.", title="Use PostgreSQL").id, reviewer="bob"
    )
    kernel.propose("frontend.language", "Write the frontend in Elm.", title="Write the frontend in Elm")
    theirs = (
        "# 3. Their own record\n\nDate: 2020-03-01\n\n## Status\n\nAccepted\n\n## Decision\n\nKept as is.\n"
    )
    (folder / "0003-their-own.md").write_text(theirs, encoding="utf-8")
    kernel.close()

    result = cli("export", "adr", str(folder))
    assert result.code == 0, result.err
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "0001-record-architecture-decisions.md",
        "0002-use-mysql.md",
        "0003-their-own.md",
        "0004-use-postgresql.md",
        "0005-write-the-frontend-in-elm.md",
        "README.md",
    ]
    assert (folder / "0003-their-own.md").read_text(encoding="utf-8") == theirs  # never touched
    old = (folder / "0002-use-mysql.md").read_text(encoding="utf-8")
    original = NYGARD_REPO["0002-use-mysql.md"]
    assert old.endswith(
        original.split("## Status")[1].replace(
            "Accepted", "Superseded by [4. Use PostgreSQL](0004-use-postgresql.md)", 1
        )
    )
    assert "## Options considered\n\n- MySQL\n- SQLite\n" in old  # the team's own sections are kept
    new = (folder / "0004-use-postgresql.md").read_text(encoding="utf-8")
    assert (
        new.startswith("# 4. Use PostgreSQL\n") and "## Status\n\nAccepted\n" in new
    )  # as adr-tools reads it
    assert "Supersedes [2. Use MySQL for persistence](0002-use-mysql.md)" in new
    proposed = (folder / "0005-write-the-frontend-in-elm.md").read_text(encoding="utf-8")
    assert "## Status\n\nProposed\n" in proposed
    index = (folder / "README.md").read_text(encoding="utf-8")
    assert (
        "| [2](0002-use-mysql.md) | Use MySQL for persistence | "
        "Superseded by [4. Use PostgreSQL](0004-use-postgresql.md) | 2020-02-01 |" in index
    )
    assert "| [3](0003-their-own.md) | Their own record | Accepted | 2020-03-01 |" in index
    assert "| [5](0005-write-the-frontend-in-elm.md) | Write the frontend in Elm | Proposed |" in index

    exported = _snapshot(folder)
    assert cli("export", "adr", str(folder)).code == 0
    assert _snapshot(folder) == exported  # stable, index included
    again = cli("import", "adr", str(folder), "--yes", "--reviewer", "alice", "--json")
    report = json.loads(again.out)
    assert report["proposals"] == [] and len(report["decisions"]) == 1  # only their new file is new
    assert "0003-their-own.md" not in report["unchanged"] and len(report["unchanged"]) == 4
    fresh, _ = Ctx.init(tmp_path / "fresh.db")
    fresh.import_adrs(folder, reviewer="carol")
    [current] = [d for d in fresh.decisions() if d.subject == mysql.subject]
    assert current.decision == "Use PostgreSQL 16." and current.title == "Use PostgreSQL"
    assert [p.status for p in fresh.store.list_proposals(status=None)] == ["pending"]
    fresh.close()

    with Ctx.open(store_path) as reopened:  # the proposal, once ratified, stays in its own file
        [elm] = reopened.queue()
        reopened.ratify(elm.id, reviewer="bob")
        reopened.export_adrs(folder)
    assert sorted(p.name for p in folder.iterdir()) == names
    assert "## Status\n\nAccepted\n" in (folder / "0005-write-the-frontend-in-elm.md").read_text(
        encoding="utf-8"
    )


def test_export_refuses_an_imported_file_changed_since(cli, kernel: Ctx, tmp_path: Path):
    folder = _write(tmp_path / "adr", NYGARD_REPO)
    kernel.import_adrs(folder, reviewer="alice")
    kernel.close()
    edited = NYGARD_REPO["0002-use-mysql.md"] + "\nA note added by hand.\n"
    (folder / "0002-use-mysql.md").write_text(edited, encoding="utf-8")
    before = _snapshot(folder)
    result = cli("export", "adr", str(folder))
    assert result.code == 1 and "Traceback" not in result.err
    [line] = result.err.splitlines()
    assert "0002-use-mysql.md" in line and "--force" in line and "nothing written" in line
    assert _snapshot(folder) == before
    assert cli("export", "adr", str(folder), "--force").code == 0
    assert "ctx-id: dc_" in (folder / "0002-use-mysql.md").read_text(encoding="utf-8")


def test_export_follows_the_folders_own_convention(kernel: Ctx, tmp_path: Path):
    madr = (
        "---\nstatus: accepted\ndate: 2022-01-0{n}\n---\n# {title}\n\n"
        "## Context and Problem Statement\n\nWhy.\n\n## Decision Outcome\n\n{text}\n"
    )
    folder = _write(
        tmp_path / "adr",
        {
            "ADR001-use-terraform.md": madr.format(
                n=1, title="Use Terraform", text="Terraform for infrastructure."
            ),
            "ADR002-use-concourse.md": madr.format(n=2, title="Use Concourse", text="Concourse for CI."),
        },
    )
    kernel.import_adrs(folder, reviewer="alice")
    ci = next(d for d in kernel.decisions() if d.adr_number == 2)
    kernel.ratify(
        kernel.propose(ci.subject, "GitHub Actions for CI.", title="Use GitHub Actions").id, reviewer="bob"
    )
    kernel.export_adrs(folder)
    new = folder / "ADR003-use-github-actions.md"
    assert sorted(p.name for p in folder.iterdir()) == [
        "ADR001-use-terraform.md",
        "ADR002-use-concourse.md",
        new.name,
        "README.md",
    ]
    text = new.read_text(encoding="utf-8")
    assert text.startswith("---\nstatus: Accepted\n") and "\n# Use GitHub Actions\n" in text
    assert "## Decision Outcome\n\nGitHub Actions for CI.\n" in text
    old = (folder / "ADR002-use-concourse.md").read_text(encoding="utf-8")
    assert "status: Superseded by [3. Use GitHub Actions](ADR003-use-github-actions.md)" in old


def test_a_readme_of_the_team_is_left_alone(kernel: Ctx, tmp_path: Path):
    folder = _write(tmp_path / "adr", {**NYGARD_REPO, "README.md": "# Our decisions\n\nHand written.\n"})
    kernel.import_adrs(folder, reviewer="alice")
    done = kernel.export_adrs(folder)
    assert (folder / "README.md").read_text(encoding="utf-8") == "# Our decisions\n\nHand written.\n"
    assert any("README.md was not written by ctx export" in w for w in done.warnings)
