"""Each ADR file keeps its own dialect through ``ctx export adr``, so the team's own tools still read it.

adr-tools reads a file's title from line 1 (``head -1 | cut -c 3-``), its status and links from the
lines of its ``## Status`` section, and lists ``[0-9]+-*.md`` files. The tests below check those rules
on the files themselves, and, where adr-tools is installed (Debian's ``adr-tools``), run it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.adr import files as adr

DATA = Path(__file__).resolve().parent / "data" / "adr"
# Made by adr-tools 3.0.0 (adr init; adr new; adr new -s 2; adr new -l "3:Amends:Amended by"), with the
# template's placeholder texts filled in.
ADR_TOOLS_FOLDER = DATA / "adr-tools"
ADR = shutil.which("adr")


def _copy(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "doc" / "adr"
    shutil.copytree(folder, target)
    return target


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).write_text(content, encoding="utf-8")
    return folder


def _view(kernel: Ctx) -> list[tuple[object, ...]]:
    """What a round trip must keep, by title (a decision ratified in ctx has a file only once exported)."""
    decisions = kernel.decisions(include_closed=True)
    title = {d.id: d.title for d in decisions}
    return sorted(
        (
            d.title or "",
            d.subject,
            d.decision,
            d.valid_from,
            d.valid_until or "",
            d.closed_by or "",
            tuple(sorted(title[o] or "" for o in d.supersedes)),
        )
        for d in decisions
    )


# -- adr-tools' own rules, as its scripts state them -------------------------------------------------


def _title(text: str) -> str:
    """``_adr_title``: ``head -1 | cut -c 3-``."""
    return text.split("\n", 1)[0][2:]


def _status(text: str) -> list[str]:
    """``_adr_status``: awk ``/^## Status/,/^#/ && !/^## Status/ { if (!/^(#|\\s*$)/) print }``."""
    printed: list[str] = []
    inside = False
    for line in text.split("\n"):
        if not inside and line.startswith("## Status"):
            inside = True
        elif inside and line.startswith("#") and not line.startswith("## Status"):
            inside = False
            continue
        if inside and not re.match(r"^(#|\s*$)", line):
            printed.append(line)
    return printed


def _links(text: str) -> list[str]:
    """``_adr_links``: ``sed -n -E 's/^(.+) \\[.*\\]\\(0*([1-9][0-9]*).*\\)/\\2=\\1/p'`` on the status."""
    found = []
    for line in _status(text):
        match = re.match(r"^(.+) \[.*\]\(0*([1-9][0-9]*).*\)", line)
        if match:
            found.append(f"{match.group(2)}={match.group(1)}")
    return found


def _listed(folder: Path) -> list[str]:
    """``adr list``: ``find | grep -E "^$adr_dir/[0-9]+-[^/]*\\.md" | sort``."""
    return sorted(p.name for p in folder.iterdir() if re.match(r"^[0-9]+-[^/]*\.md", p.name))


def _export_with_a_successor(kernel: Ctx, folder: Path) -> None:
    """Import the folder, ratify a decision that supersedes ADR 4, and export in place."""
    report = kernel.import_adrs(folder, reviewer="alice")
    assert report.skipped == [] and report.warnings == []
    postgres = next(d for d in kernel.decisions() if d.adr_number == 4)
    proposal = kernel.propose(postgres.subject, "Use CockroachDB for orders.", title="Use CockroachDB")
    kernel.ratify(proposal.id, reviewer="bob")
    assert kernel.export_adrs(folder).warnings == []


def test_an_adr_tools_folder_stays_readable_by_adr_tools_after_export(kernel: Ctx, tmp_path: Path):
    folder = _copy(ADR_TOOLS_FOLDER, tmp_path)
    original = {p.name: p.read_text(encoding="utf-8") for p in folder.iterdir()}
    _export_with_a_successor(kernel, folder)

    assert _listed(folder) == [*sorted(original), "0006-use-cockroachdb.md"]
    for name in _listed(folder):
        text = (folder / name).read_text(encoding="utf-8")
        number = int(name[:4])
        assert re.fullmatch(rf"{number}\. \S.*", _title(text)), (name, _title(text))
        assert not any("ctx" in line for line in _status(text)), name  # ctx's fields are not status
        assert "ctx-id: dc_" in text

    def status_of(name: str) -> list[str]:
        return _status((folder / name).read_text(encoding="utf-8"))

    assert status_of("0004-use-postgresql-for-persistence.md") == [
        "Superseded by [6. Use CockroachDB](0006-use-cockroachdb.md)",
        "Supersedes [2. Use MySQL for persistence](0002-use-mysql-for-persistence.md)",
    ]
    assert status_of("0006-use-cockroachdb.md") == [
        "Accepted",
        "Supersedes [4. Use PostgreSQL for persistence](0004-use-postgresql-for-persistence.md)",
    ]
    assert _links((folder / "0003-publish-events-to-a-queue.md").read_text(encoding="utf-8")) == [
        "5=Amended by"
    ]
    for name, written in original.items():  # every line the team wrote is still there, in order
        exported = (folder / name).read_text(encoding="utf-8")
        successor = "Superseded by [6. Use CockroachDB](0006-use-cockroachdb.md)"
        text = written.replace("Accepted", successor) if name.startswith("0004") else written
        assert adr.ctx_fields_of(exported)["ctx-id"].startswith("dc_")
        without_block = re.sub(r"<!-- ctx[^\n]*\n(?:[^\n]*\n)*?-->\n\n", "", exported)
        assert without_block == text, name

    again = kernel.import_adrs(folder, reviewer="alice")
    assert again.decisions == [] and again.proposals == []  # re-import is a no-op
    assert kernel.export_adrs(folder).written == []  # and so is a second export
    fresh, _ = Ctx.init(tmp_path / "fresh.db")
    assert fresh.import_adrs(folder, reviewer="carol").skipped == []
    assert _view(fresh) == _view(kernel)
    fresh.close()


def _adr_tools(folder: Path, *args: str, date: str = "2022-01-01") -> str:
    env = {**os.environ, "VISUAL": "true", "EDITOR": "true", "ADR_DATE": date}
    done = subprocess.run(
        [str(ADR), *args], cwd=folder, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.skipif(ADR is None, reason="adr-tools is not installed (Debian: apt-get install adr-tools)")
def test_adr_tools_itself_reads_and_extends_an_exported_folder(kernel: Ctx, tmp_path: Path):
    project = tmp_path / "repository"
    project.mkdir()
    _adr_tools(project, "init", "doc/adr")
    _adr_tools(project, "new", "Use MySQL for persistence")
    _adr_tools(project, "new", "Publish events to a queue")
    _adr_tools(project, "new", "-s", "2", "Use PostgreSQL for persistence")
    folder = project / "doc" / "adr"
    report = kernel.import_adrs(folder, reviewer="alice")
    assert report.skipped == []
    postgres = next(d for d in kernel.decisions() if d.adr_number == 4)
    kernel.ratify(
        kernel.propose(postgres.subject, "Use CockroachDB for orders.", title="Use CockroachDB").id,
        reviewer="bob",
    )
    assert kernel.export_adrs(folder).warnings == []

    assert _adr_tools(project, "list").split() == [
        "doc/adr/0001-record-architecture-decisions.md",
        "doc/adr/0002-use-mysql-for-persistence.md",
        "doc/adr/0003-publish-events-to-a-queue.md",
        "doc/adr/0004-use-postgresql-for-persistence.md",
        "doc/adr/0005-use-cockroachdb.md",
    ]
    toc = _adr_tools(project, "generate", "toc")
    assert "* [5. Use CockroachDB](0005-use-cockroachdb.md)" in toc
    assert "* [2. Use MySQL for persistence](0002-use-mysql-for-persistence.md)" in toc
    assert "* [-]" not in toc and "* [--" not in toc
    graph = _adr_tools(project, "generate", "graph")
    assert '_5 -> _4 [label="Supersedes", weight=0]' in graph
    assert '_4 -> _2 [label="Supersedes", weight=0]' in graph

    # adr-tools goes on working in the folder: a new ADR supersedes the one ctx wrote.
    # The same day: adr-tools writes the day, ctx's successor started at a time of that day.
    _adr_tools(
        project, "new", "-s", "5", "Use SQLite at the edge", date=dt.datetime.now(dt.UTC).date().isoformat()
    )
    written = (folder / "0005-use-cockroachdb.md").read_text(encoding="utf-8")
    assert "Superseded by [6. Use SQLite at the edge](0006-use-sqlite-at-the-edge.md)" in written
    assert adr.ctx_fields_of(written)["ctx-id"].startswith("dc_")
    fresh, _ = Ctx.init(tmp_path / "fresh.db")
    assert fresh.import_adrs(folder, reviewer="carol").skipped == []
    by_number = {d.adr_number: d for d in fresh.decisions(include_closed=True)}
    assert by_number[5].superseded_by == [by_number[6].id] and by_number[6].current
    assert by_number[4].superseded_by == [by_number[5].id]
    fresh.close()


# -- where ctx's fields go, by dialect --------------------------------------------------------------


def test_ctx_front_matter_from_an_earlier_export_moves_into_the_comment_block(kernel: Ctx, tmp_path: Path):
    nygard = (ADR_TOOLS_FOLDER / "0001-record-architecture-decisions.md").read_text(encoding="utf-8")
    earlier = "---\nsubject: record-adrs\n---\n" + nygard  # as a file looked after ctx exported it before
    folder = _write(tmp_path / "adr", {"0001-record-architecture-decisions.md": earlier})
    kernel.import_adrs(folder, reviewer="alice")
    assert kernel.decisions()[0].subject == "record-adrs"
    kernel.export_adrs(folder)
    text = (folder / "0001-record-architecture-decisions.md").read_text(encoding="utf-8")
    assert text.startswith("# 1. Record architecture decisions\n")
    assert adr.ctx_fields_of(text)["subject"] == "record-adrs"
    assert _status(text) == ["Accepted"]


def test_madr_front_matter_keeps_ctx_keys_and_gets_no_comment_block(kernel: Ctx, tmp_path: Path):
    madr = (
        "---\nstatus: accepted\ndate: 2022-01-01\n---\n# Use Terraform\n\n## Decision Outcome\n\nTerraform.\n"
    )
    folder = _write(tmp_path / "adr", {"0001-use-terraform.md": madr})
    kernel.import_adrs(folder, reviewer="alice")
    kernel.export_adrs(folder)
    text = (folder / "0001-use-terraform.md").read_text(encoding="utf-8")
    assert text.startswith("---\nstatus: accepted\ndate: 2022-01-01\nsubject: ")
    assert "ctx-id: dc_" in text.split("\n---\n", 1)[0] and "<!-- ctx" not in text
    assert text.endswith("# Use Terraform\n\n## Decision Outcome\n\nTerraform.\n")


LOG4BRAINS = (
    "# Use Log4brains to manage the ADRs\n\n"
    "- Status: accepted\n"
    "- Deciders: Alice, Bob\n"
    "- Date: 2020-09-25\n"
    "- Tags: doc\n\n"
    "## Context and Problem Statement\n\nWe want to record decisions.\n\n"
    "## Decision Outcome\n\nWe use Log4brains.\n"
)


def test_a_log4brains_file_keeps_its_layout(kernel: Ctx, tmp_path: Path):
    folder = _write(tmp_path / "adr", {"20200925-use-log4brains-to-manage-the-adrs.md": LOG4BRAINS})
    kernel.import_adrs(folder, reviewer="alice")
    [decision] = kernel.decisions()
    assert decision.deciders == ["Alice", "Bob"] and decision.decision == "We use Log4brains."
    kernel.export_adrs(folder)
    text = (folder / "20200925-use-log4brains-to-manage-the-adrs.md").read_text(encoding="utf-8")
    # log4brains reads the title from the first h1 and its fields from the first list under it.
    assert text.startswith(LOG4BRAINS.split("## Context", maxsplit=1)[0] + "<!-- ctx")
    assert text.endswith(
        "## Context and Problem Statement\n\nWe want to record decisions.\n\n"
        "## Decision Outcome\n\nWe use Log4brains.\n"
    )
    fresh, _ = Ctx.init(tmp_path / "fresh.db")
    fresh.import_adrs(folder, reviewer="carol")
    assert _view(fresh) == _view(kernel)
    fresh.close()


def test_new_files_in_a_log4brains_folder_are_written_as_log4brains_writes_them(kernel: Ctx, tmp_path: Path):
    folder = _write(tmp_path / "adr", {"20200925-use-log4brains-to-manage-the-adrs.md": LOG4BRAINS})
    kernel.import_adrs(folder, reviewer="alice")
    first = kernel.propose("cache", "Cache in Redis.", title="Use Redis", rationale="Pages are slow.")
    redis = kernel.ratify(first.id, reviewer="bob").decision
    kernel.ratify(kernel.propose("cache", "Cache in Memcached.", title="Use Memcached").id, reviewer="bob")
    assert kernel.export_adrs(folder).warnings == []
    day = redis.valid_from[:10].replace("-", "")
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [
            "20200925-use-log4brains-to-manage-the-adrs.md",
            f"{day}-use-redis.md",
            f"{day}-use-memcached.md",
            "README.md",
        ]
    )
    text = (folder / f"{day}-use-redis.md").read_text(encoding="utf-8")
    assert text.startswith(
        f"# Use Redis\n\n- Status: superseded by [Use Memcached]({day}-use-memcached.md)\n- Date: "
    )
    assert "\n## Context and Problem Statement\n\nPages are slow.\n" in text and "\n---\n" not in text
    newer = (folder / f"{day}-use-memcached.md").read_text(encoding="utf-8")
    assert newer.startswith("# Use Memcached\n\n- Status: accepted\n")
    assert newer.endswith(f"## Links\n\n- Supersedes [Use Redis]({day}-use-redis.md)\n")
    fresh, _ = Ctx.init(tmp_path / "fresh.db")
    assert fresh.import_adrs(folder, reviewer="carol").skipped == []
    assert _view(fresh) == _view(kernel)
    fresh.close()


def test_new_files_in_an_adr_tools_folder_have_no_front_matter(kernel: Ctx, tmp_path: Path):
    folder = _copy(ADR_TOOLS_FOLDER, tmp_path)
    kernel.import_adrs(folder, reviewer="alice")
    text = "## Options\n\n- A\n- B\n\n## Outcome\n\nA, with its own headings."
    kernel.ratify(kernel.propose("build.tool", text, title="Choose a build tool").id, reviewer="bob")
    kernel.export_adrs(folder)
    written = (folder / "0006-choose-a-build-tool.md").read_text(encoding="utf-8")
    assert written.startswith("# 6. Choose a build tool\n\nDate: ")
    assert _status(written) == ["Accepted"]
    fresh, _ = Ctx.init(tmp_path / "fresh.db")
    fresh.import_adrs(folder, reviewer="carol")
    [again] = [d for d in fresh.decisions() if d.adr_number == 6]
    assert again.decision == text and again.subject == "build.tool"
    fresh.close()


# -- the comment block is untrusted input too -------------------------------------------------------


def test_the_comment_block_cannot_be_closed_early_or_claim_other_fields():
    text = "# 1. X\n\nDate: 2020-01-01\n\n## Status\n\nAccepted\n"
    fields = {"subject": "x", "ctx-id": "dc_01", "ctx-ratified-by": "Eve --> <script>"}
    written = adr.set_ctx_fields(text, fields)
    block = written.split("<!-- ctx", 1)[1].split("\n-->\n", 1)[0]
    assert "-->" not in block and "--" not in block
    assert adr.ctx_fields_of(written) == fields
    assert adr.set_ctx_fields(written, fields) == written

    forged = text + "\n<!-- ctx\nstatus: rejected\nsubject: forged\nctx-id: dc_02\n-->\n"
    record = adr.parse_text(forged, "0001-x.md")
    assert record.status == "accepted" and record.subject == "forged"  # status is not a ctx field
    assert "status" not in record.meta
    in_code = text + "\n```\n<!-- ctx\nsubject: forged\n-->\n```\n"
    assert adr.ctx_fields_of(in_code) == {}
    unclosed = text + "\n<!-- ctx\n" + "subject: a\n" * 10_000
    assert adr.ctx_fields_of(unclosed) == {}


def test_unclosed_comments_are_read_in_linear_time():
    hostile = "# 1. X\n\n## Status\n\nAccepted\n\n" + "<!-- x\n" * 70_000  # ~500 KB
    started = time.perf_counter()
    record = adr.parse_text(hostile, "0001-x.md")
    adr.set_ctx_fields(adr.set_status(hostile, "Deprecated"), {"subject": "x"})
    assert record.status == "accepted"
    assert time.perf_counter() - started < 10  # a regular expression took minutes on this file


# -- links the reader did not see before ------------------------------------------------------------


def test_a_reference_style_link_in_a_status_line_supersedes(kernel: Ctx, tmp_path: Path):
    folder = _write(
        tmp_path / "adr",
        {
            "0003-use-redis.md": "# 3. Use Redis\n\nDate: 2021-01-01\n\n## Status\n\n"
            "Superseded by [ADR 12][adr12]\n\n## Decision\n\nCache in Redis.\n\n"
            "[adr12]: 0012-use-memcached.md\n",
            "0012-use-memcached.md": "# 12. Use Memcached\n\nDate: 2021-06-01\n\n## Status\n\n"
            "Accepted\n\nSupersedes [3][]\n\n## Decision\n\nCache in Memcached.\n\n"
            "[3]: ./0003-use-redis.md\n",
        },
    )
    records, _, warnings = adr.read_adr_folder(folder)
    assert warnings == []
    by_number = {r.number: r for r in records}
    assert by_number[3].superseded_by == [12] and by_number[3].status == "superseded"
    assert by_number[12].supersedes == [3]
    kernel.import_adrs(folder, reviewer="alice")
    decisions = {d.adr_number: d for d in kernel.decisions(include_closed=True)}
    assert decisions[3].superseded_by == [decisions[12].id]


SUCCESSOR_IN_TEXT = {
    "0003-use-redis.md": "# 3. Use Redis\n\nDate: 2021-01-01\n\n## Status\n\nAccepted\n\n"
    "## Decision\n\nCache in Redis.\n",
    "0007-use-memcached.md": "# 7. Use Memcached\n\nDate: 2021-06-01\n\n## Status\n\nAccepted\n\n"
    "## Context\n\nRedis costs too much for what we cache.\n"
    "This replaces\nADR 3, which we keep for history.\n\n"
    "## Decision\n\nCache in Memcached.\n",
}


def test_a_successor_named_only_in_the_text_is_suggested_not_linked(cli, kernel: Ctx, tmp_path: Path):
    folder = _write(tmp_path / "adr", SUCCESSOR_IN_TEXT)
    kernel.close()
    dry = cli("import", "adr", str(folder), "--dry-run")
    assert dry.code == 0, dry.err
    [line] = [line for line in dry.out.splitlines() if line.startswith("suggested")]
    assert "0007-use-memcached.md supersedes 0003-use-redis.md?" in line
    assert "This replaces ADR 3, which we keep for history." in line
    assert "Supersedes [3. Use Redis](0003-use-redis.md)" in line

    done = json.loads(cli("import", "adr", str(folder), "--yes", "--reviewer", "alice", "--json").out)
    assert done["suggested_links"] == [
        {
            "path": "0007-use-memcached.md",
            "supersedes": "0003-use-redis.md",
            "said": "This replaces ADR 3, which we keep for history.",
            "said_in": "0007-use-memcached.md",
            "status_line": "Supersedes [3. Use Redis](0003-use-redis.md)",
        }
    ]
    with Ctx.open(kernel.store.location) as reopened:  # not guessed: both stay current, unlinked
        assert all(d.current and not d.supersedes for d in reopened.decisions(include_closed=True))


def test_a_suggested_link_is_confirmed_by_writing_its_status_line(kernel: Ctx, tmp_path: Path):
    folder = _write(tmp_path / "adr", SUCCESSOR_IN_TEXT)
    with Ctx.open(kernel.store.location) as probe:
        [suggestion] = probe.import_adrs(folder, reviewer="alice", dry_run=True).suggested_links
    successor = folder / suggestion["path"]
    text = successor.read_text(encoding="utf-8")
    successor.write_text(
        text.replace("## Status\n\nAccepted\n", f"## Status\n\nAccepted\n\n{suggestion['status_line']}\n"),
        encoding="utf-8",
    )
    report = kernel.import_adrs(folder, reviewer="alice")
    assert report.suggested_links == []
    decisions = {d.adr_number: d for d in kernel.decisions(include_closed=True)}
    assert decisions[3].superseded_by == [decisions[7].id]


def test_mentions_that_are_links_already_or_name_nothing_are_not_suggested(tmp_path: Path):
    folder = _write(
        tmp_path / "adr",
        {
            **SUCCESSOR_IN_TEXT,
            "0007-use-memcached.md": SUCCESSOR_IN_TEXT["0007-use-memcached.md"].replace(
                "## Status\n\nAccepted\n", "## Status\n\nAccepted\n\nSupersedes [3](0003-use-redis.md)\n"
            )
            + "\nIt replaces ADR 99 too, and the decision 3 weeks ago.\n\n```\nThis replaces ADR 3.\n```\n",
        },
    )
    records, _, _ = adr.read_adr_folder(folder)
    assert all(r.suggested == [] for r in records)


# -- the index a tool writes for itself ---------------------------------------------------------------


def test_an_index_adr_tools_generated_is_never_replaced(kernel: Ctx, tmp_path: Path):
    folder = _copy(ADR_TOOLS_FOLDER, tmp_path)
    toc = "# Architecture Decision Records\n\n" + "".join(
        f"* [{int(name[:4])}. x]({name})\n" for name in _listed(folder)
    )
    (folder / "README.md").write_text(toc, encoding="utf-8")
    kernel.import_adrs(folder, reviewer="alice")
    done = kernel.export_adrs(folder, force=True)
    assert (folder / "README.md").read_text(encoding="utf-8") == toc
    assert any("adr-tools's own index" in w or "adr-tools' own index" in w for w in done.warnings)
