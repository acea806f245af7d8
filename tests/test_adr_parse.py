"""Reading and writing Architecture Decision Records (kernel.adr): our own corpus and real ADR folders."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from ctx_kernel.kernel.adr.files import (
    STATUSES,
    AdrParseError,
    AdrRecord,
    adr_filename,
    derive_subject,
    file_number,
    normalise_status,
    parse_adr,
    parse_date,
    read_adr_folder,
    render_adr,
)

DATA = Path(__file__).resolve().parent / "data" / "adr"
NYGARD = DATA / "nygard"
MADR = DATA / "madr"
REAL = Path(
    os.environ.get("CTX_ADR_CORPUS") or Path(__file__).resolve().parents[2] / "shared" / "eval" / "adr"
)


def _by_number(records: list[AdrRecord]) -> dict[int | None, AdrRecord]:
    return {record.number: record for record in records}


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


# --- our own corpus: adr-tools / Nygard -----------------------------------------------------------


def test_nygard_folder_reads_records_in_order_and_skips_readme_and_template():
    records, errors, _ = read_adr_folder(NYGARD)
    assert [r.number for r in records] == [1, 2, 3, 4, 5, 6, 7, 9]
    assert all(r.path.endswith(".md") and "/" not in r.path for r in records)
    assert not any(r.path in {"README.md", "template.md"} for r in records)
    assert [Path(e.path).name for e in errors] == ["0010-notes-from-the-offsite.md"]


def test_chain_of_three_superseded_records():
    records = _by_number(read_adr_folder(NYGARD)[0])
    first, middle, last = records[1], records[4], records[9]
    assert (first.status, middle.status, last.status) == ("superseded", "superseded", "accepted")
    assert first.superseded_by == [4] and first.supersedes == []
    assert middle.supersedes == [1] and middle.superseded_by == [9]
    assert last.supersedes == [4] and last.superseded_by == []
    assert first.raw_status.startswith("Superseded by [4. Use CockroachDB")


def test_nygard_fields():
    record = parse_adr(NYGARD / "0001-use-postgresql-for-persistence.md", NYGARD)
    assert record.title == "Use PostgreSQL for persistence"
    assert record.date == "2016-02-12"
    assert record.context.startswith("The order service needs a transactional store.")
    assert (
        record.decision == "We will store orders, customers and invoices in a single PostgreSQL 9.5 database."
    )
    assert record.consequences.startswith("Backups and failover")
    assert record.subject == "postgresql-persistence"
    assert record.path == "0001-use-postgresql-for-persistence.md"


def test_links_inside_code_blocks_are_ignored_and_long_dates_are_read():
    record = parse_adr(NYGARD / "0002-record-architecture-decisions.md", NYGARD)
    assert record.date == "2016-02-12"  # written "12 February 2016"
    assert record.superseded_by == [] and record.status == "accepted"
    assert "## Status" in record.decision  # the fenced example stays part of the decision text


def test_nested_subsections_stay_in_the_decision():
    record = parse_adr(NYGARD / "0009-use-managed-postgresql.md", NYGARD)
    assert "### Migration" in record.decision and "Dual-write" in record.decision


def test_amendments_are_read_both_ways():
    records = _by_number(read_adr_folder(NYGARD)[0])
    assert records[3].amended_by == [7] and records[3].status == "accepted"
    assert records[7].amends == [3]


def test_proposed_and_rejected_statuses():
    records = _by_number(read_adr_folder(NYGARD)[0])
    assert (records[5].status, records[5].raw_status) == ("proposed", "Proposed")
    assert (records[6].status, records[6].raw_status) == ("rejected", "Rejected")


def test_link_to_a_missing_file_is_kept_and_warned_about():
    records, _, warnings = read_adr_folder(NYGARD)
    assert _by_number(records)[7].supersedes == [8]
    assert len(warnings) == 1
    assert "0007-version-the-public-api-in-the-url.md" in warnings[0]
    assert "0008-use-content-negotiation-for-api-versions.md is not in the folder" in warnings[0]


# --- our own corpus: MADR -------------------------------------------------------------------------


def test_madr_front_matter_and_sections():
    record = parse_adr(MADR / "0001-use-markdown-architectural-decision-records.md", MADR)
    assert record.number == 1  # from the file name; the MADR title has no number
    assert (record.title, record.status, record.date) == (
        "Use Markdown Architectural Decision Records",
        "accepted",
        "2021-03-01",
    )
    assert record.context.startswith("We want to record architectural decisions")
    assert (
        record.decision == 'Chosen option: "MADR 3.0.0", because it is lean and fits our development style.'
    )
    assert record.consequences.startswith("* Good, because the structure")
    assert record.meta == {"deciders": "Ana, Bo"}


def test_superseded_by_two_successors():
    records, errors, warnings = read_adr_folder(MADR)
    by_number = _by_number(records)
    assert by_number[2].status == "superseded"
    assert by_number[2].superseded_by == [4, 5]
    assert by_number[4].supersedes == [2]  # from a "More Information" bullet
    assert by_number[5].supersedes == [2]  # from front matter "supersedes: [2]"
    assert [Path(e.path).name for e in errors] == ["0006-use-kafka-for-events.md"]
    assert errors[0].reason == "empty file"
    assert not any("template" in r.path for r in records)
    assert len(warnings) == 1 and "0008-cache-search-results-in-redis.md" in warnings[0]


def test_madr_bullet_status_deprecated_ignores_html_comments():
    record = parse_adr(MADR / "0003-use-moment-js-for-dates.md", MADR)
    assert (record.status, record.raw_status, record.date) == ("deprecated", "deprecated", "2021-05-03")
    assert record.superseded_by == []  # the example link sits in an HTML comment
    assert "Positive Consequences" in record.consequences and "Negative Consequences" in record.consequences


def test_madr_statuses_subject_override_and_self_referential_sentence():
    by_number = _by_number(read_adr_folder(MADR)[0])
    assert by_number[5].subject == "auth.refresh-tokens"
    assert by_number[5].superseded_by == []  # "the reason ADR-0002 was replaced" is not a link
    assert (by_number[7].status, by_number[7].supersedes) == ("proposed", [8])
    assert by_number[9].status == "rejected"
    assert by_number[4].subject == "opaque-session-ids"


# --- file names, titles, dates, statuses, subjects ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "heading", "number", "title"),
    [
        ("0007-use-postgres.md", "# 7. Use Postgres", 7, "Use Postgres"),
        ("ADR007-use-postgres.md", "# ADR007: Use Postgres", 7, "Use Postgres"),
        ("adr-007-use-postgres.md", "# Architecture Decision Record: Use Postgres", 7, "Use Postgres"),
        ("007_use_postgres.md", "# Use Postgres", 7, "Use Postgres"),
        ("use-postgres.md", "# ADR-012: Use Postgres", 12, "Use Postgres"),
        ("use-postgres.md", "# 12. Use Postgres", 12, "Use Postgres"),
        ("use-postgres.md", "# Use Postgres", None, "Use Postgres"),
        ("0033-ip-ranges.md", "# 3. Networking Outline", 33, "Networking Outline"),
        ("029-audit.md", "# 29 Kubernetes auditing", 29, "Kubernetes auditing"),
        ("0004-two-factor.md", "# 2FA for admins", 4, "2FA for admins"),
    ],
)
def test_number_and_title(tmp_path: Path, name: str, heading: str, number: int | None, title: str):
    record = parse_adr(_write(tmp_path, name, f"{heading}\n\nDate: 2020-01-02\n\nSome text.\n"), tmp_path)
    assert (record.number, record.title) == (number, title)
    assert record.decision == "Some text."  # no Decision section: the body
    assert (record.status, record.raw_status) == ("accepted", "")  # no status: accepted


def test_file_number_patterns():
    assert file_number("0007-use-postgres.md") == ("", 7)
    assert file_number("ADR007-x.md") == ("adr", 7)
    assert file_number("adr-007-x.md") == ("adr", 7)
    assert file_number("DR002-x.MD") == ("dr", 2)
    assert file_number("007_x.md") == ("", 7)
    assert file_number("2021-03-01-x.md") is None
    assert file_number("use-postgres.md") is None


def test_title_forms(tmp_path: Path):
    setext = parse_adr(_write(tmp_path, "a.md", "Use Redis\n=========\n\nText.\n"), tmp_path)
    assert setext.title == "Use Redis"
    loose = parse_adr(_write(tmp_path, "0025-b.md", "#25. Automatic merging\n\n## Context\n\nx\n"), tmp_path)
    assert (loose.number, loose.title, loose.context) == (25, "Automatic merging", "x")
    second_level = parse_adr(
        _write(tmp_path, "0033-c.md", "## 33. User permissions\n\n## Context\n\ny\n"), tmp_path
    )
    assert (second_level.title, second_level.context) == ("User permissions", "y")


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("Date: 2016-02-12", "2016-02-12"),
        ("2019-05-13, updated 2023-02-05", "2019-05-13"),
        ("12 February 2016", "2016-02-12"),
        ("February 12th, 2016", "2016-02-12"),
        ("17/08/2020", "2020-08-17"),
        ("04/07/2019", "2019-07-04"),
        ("10/04/18", "2018-04-10"),
        ("2020/07/21", "2020-07-21"),
        ("2016-02-30", None),
        ("last modified", None),
    ],
)
def test_parse_date(text: str, iso: str | None):
    assert parse_date(text) == iso


@pytest.mark.parametrize(
    "line",
    [
        "Date: 2021-03-01",
        "**Date:** 2021-03-01",
        "**Date**: 2021-03-01",
        "* Date: 2021-03-01",
        "Date 01/03/2021",
    ],
)
def test_date_lines(tmp_path: Path, line: str):
    record = parse_adr(_write(tmp_path, "0001-x.md", f"# 1. X\n\n{line}\n\n## Decision\n\nY\n"), tmp_path)
    assert record.date == "2021-03-01"


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        ("Accepted", "accepted"),
        ("✅ Accepted (documenting an existing thing)", "accepted"),
        ("Approved", "accepted"),
        ("Accepted, amended by [ADR039](ADR039-x.md)", "accepted"),
        ("Accepted or Rejected", "accepted"),
        ("PROPOSED", "proposed"),
        ("🤔 Incomplete", "proposed"),
        ("Pending", "proposed"),
        ("Draft", "proposed"),
        ("❌ Rejected (see [019](019-Shared-Ingress-Controllers.md))", "rejected"),
        ("Not accepted", "rejected"),
        ("Deprecated", "deprecated"),
        ("Reverted by [discussion #1198](https://example.org/1198).", "deprecated"),
        ("Superseded by [ADR024 - Accepted ideas](ADR024-x.md)", "superseded"),
        ("⌛️ Superseded by [036. Multi-cluster](036-multi-cluster.md)", "superseded"),
        ("This decision has been superseded by decision: [22](0022-x.md)", "superseded"),
        ("Partly superseded", "accepted"),
        ("", "accepted"),
        ("Something else", "accepted"),
    ],
)
def test_normalise_status(raw: str, status: str):
    assert normalise_status(raw) == status
    assert status in STATUSES


@pytest.mark.parametrize(
    ("status_text", "expected"),
    [
        ("Superseded by ADR-0012", [12]),
        ("Superseded by 12", [12]),
        ("Superseded by #12 and 13", [12, 13]),
        ("Superseded by [the new one](0012-new.md) and [the other](notes.md)", [12, "notes.md"]),
        ("Superseded by [ADR-0012](https://example.org/adr/0012-new.md)", [12]),
        ("Superseded by [a discussion](https://example.org/discussions/12)", []),
    ],
)
def test_plain_and_linked_supersession(tmp_path: Path, status_text: str, expected: list[int | str]):
    text = f"# 3. Old\n\nDate: 2020-01-01\n\n## Status\n\n{status_text}\n\n## Decision\n\nX\n"
    record = parse_adr(_write(tmp_path, "0003-old.md", text), tmp_path)
    assert record.superseded_by == expected
    assert record.status == "superseded"


def test_status_section_with_accepted_then_superseded_line(tmp_path: Path):
    text = "# 3. Old\n\n## Status\n\nAccepted\n\nSuperseded by [5. New](0005-new.md)\n\n## Decision\n\nX\n"
    record = parse_adr(_write(tmp_path, "0003-old.md", text), tmp_path)
    assert (record.raw_status, record.status, record.superseded_by) == ("Accepted", "superseded", [5])


def test_partly_superseded_stays_accepted(tmp_path: Path):
    text = (
        "# 3. Networks\n\n## Status\n\nPartly superseded\n\n## Decision\n\n"
        "**These ranges have been superseded by [ADR #0033](0033-ip-ranges.md).**\n"
    )
    record = parse_adr(_write(tmp_path, "0003-networks.md", text), tmp_path)
    assert (record.status, record.superseded_by) == ("accepted", [33])


def test_links_between_series_and_duplicate_numbers(tmp_path: Path):
    _write(tmp_path, "ADR002-notify.md", "# ADR002: Use Notify\n\n## Status\n\nSuperseded by ADR008\n")
    _write(tmp_path, "DR002-charges.md", "# DR002: No charges\n\n## Status\n\nSuperseded by DR008\n")
    _write(tmp_path, "ADR008-ses.md", "# ADR008: Use SES\n\n## Status\n\nAccepted\n")
    _write(tmp_path, "DR008-free.md", "# DR008: Free for all\n\n## Status\n\nApproved\n")
    records, errors, warnings = read_adr_folder(tmp_path)
    by_path = {r.path: r for r in records}
    assert not errors
    assert by_path["ADR002-notify.md"].superseded_by == ["ADR008-ses.md"]
    assert by_path["DR002-charges.md"].superseded_by == ["DR008-free.md"]
    assert by_path["DR008-free.md"].supersedes == ["DR002-charges.md"]
    assert sum("used by more than one file" in w for w in warnings) == 2


def test_duplicate_number_is_resolved_by_a_link_back_or_else_warned(tmp_path: Path):
    _write(tmp_path, "ADR013-paper-trail.md", "# ADR013: Paper trail\n\n## Status\n\nSuperseded by ADR025\n")
    _write(
        tmp_path,
        "ADR025-remove-paper-trail.md",
        "# ADR025: Remove it\n\n## Context\n\nWe added [PaperTrail](ADR013-paper-trail.md) earlier.\n",
    )
    _write(tmp_path, "ADR025-use-aasm.md", "# ADR025: Use AASM\n\n## Decision\n\nUse AASM.\n")
    _write(tmp_path, "ADR030-x.md", "# ADR030: X\n\n## Status\n\nSuperseded by ADR025\n")
    records, _, warnings = read_adr_folder(tmp_path)
    by_path = {r.path: r for r in records}
    assert by_path["ADR013-paper-trail.md"].superseded_by == ["ADR025-remove-paper-trail.md"]
    assert by_path["ADR025-remove-paper-trail.md"].supersedes == [13]
    assert by_path["ADR030-x.md"].superseded_by == [25]  # ambiguous: kept as written
    assert any("ADR030-x.md: superseded by ADR25: ambiguous" in w for w in warnings)


def test_missing_folder_is_a_usage_error(tmp_path: Path):
    from ctx_kernel.kernel.errors import UsageError

    with pytest.raises(UsageError):
        read_adr_folder(tmp_path / "nope")


def test_subject_derivation():
    assert derive_subject("Use PostgreSQL for form creation in form admin") == "postgresql-form-creation-form"
    assert derive_subject("Won't charge lower-volume services") == "wont-charge-lower-volume"
    assert derive_subject("Use Zürich’s café API") == "zurichs-cafe-api"
    assert derive_subject("Use the") == "use-the"
    assert derive_subject("!!!", number=7) == "adr-7"


# --- errors ---------------------------------------------------------------------------------------


def test_malformed_files_raise(tmp_path: Path):
    cases = {
        "empty.md": b"",
        "blank.md": b"  \n\n",
        "latin1.md": "# 1. Caf\u00e9\n".encode("latin-1"),
        "no-heading.md": b"Just some notes.\n\n## Context\n\nx\n",
        "binary.md": b"# 1. X\n\x00\x01",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(AdrParseError) as caught:
            parse_adr(tmp_path / name, tmp_path)
        assert caught.value.path == tmp_path / name and caught.value.reason
    records, errors, _ = read_adr_folder(tmp_path)
    assert records == [] and len(errors) == len(cases)


def test_template_and_index_files_are_skipped_but_template_topics_are_not(tmp_path: Path):
    for name in ("index.md", "README.md", "template.md", "0000-adr-template.md", "notes.txt"):
        _write(tmp_path, name, "# Something\n")
    _write(tmp_path, "0014-project-templates.md", "# 14. Project templates\n")
    records, errors, _ = read_adr_folder(tmp_path)
    assert [r.path for r in records] == ["0014-project-templates.md"] and not errors


# --- writing --------------------------------------------------------------------------------------


def test_adr_filename():
    assert adr_filename(7, "Use PostgreSQL for persistence") == "0007-use-postgresql-for-persistence.md"
    assert adr_filename(12, "Won't use C++ / Rust?") == "0012-wont-use-c-rust.md"
    assert adr_filename(3, "!!!") == "0003-adr.md"
    assert len(adr_filename(1, "word " * 40)) <= len("0001-") + 60 + len(".md")


def test_round_trip(tmp_path: Path):
    fields = {
        "number": 4,
        "title": "Use JWT with refresh rotation: the 2nd try",
        "status": "superseded",
        "date": "2024-03-01",
        "context": "Sessions expired mid-upload.\n\n* web\n* mobile",
        "decision": "Use short-lived JWTs, rotate refresh tokens.\n\n### Details\n\nRotation on every use.",
        "consequences": "Clients must store the refresh token securely.",
        "subject": "auth.tokens",
    }
    text = render_adr(
        **fields,
        supersedes=[(1, "Use server sessions"), 2, "notes.md"],
        superseded_by=[(9, "Use opaque ids")],
        extra={"ctx-id": "dc_01HX8Z", "ctx_proposal": "pr_01: with colon"},
    )
    path = _write(tmp_path, adr_filename(4, fields["title"]), text)
    assert path.name == "0004-use-jwt-with-refresh-rotation-the-2nd-try.md"
    record = parse_adr(path, tmp_path)
    for key, value in fields.items():
        assert getattr(record, key) == value, key
    assert record.supersedes == [1, 2, "notes.md"]
    assert record.superseded_by == [9]
    assert record.meta == {"ctx-id": "dc_01HX8Z", "ctx_proposal": "pr_01: with colon"}
    assert record.path == path.name


def test_round_trip_minimal_and_derived_subject(tmp_path: Path):
    text = render_adr(1, "Record architecture decisions", "We will use ADRs.")
    record = parse_adr(_write(tmp_path, "0001-record-architecture-decisions.md", text), tmp_path)
    assert (record.number, record.title, record.status, record.date) == (
        1,
        "Record architecture decisions",
        "accepted",
        None,
    )
    assert (record.context, record.decision, record.consequences) == (None, "We will use ADRs.", None)
    assert (record.supersedes, record.superseded_by) == ([], [])
    assert record.subject == "record-architecture-decisions"


def test_rendered_links_resolve_in_a_folder(tmp_path: Path):
    old = render_adr(
        1, "Use sessions", "Server sessions.", status="superseded", superseded_by=[(2, "Use JWT")]
    )
    new = render_adr(2, "Use JWT", "JWTs.", supersedes=[(1, "Use sessions")])
    _write(tmp_path, adr_filename(1, "Use sessions"), old)
    _write(tmp_path, adr_filename(2, "Use JWT"), new)
    records, errors, warnings = read_adr_folder(tmp_path)
    assert not errors and not warnings
    assert [(r.number, r.supersedes, r.superseded_by) for r in records] == [(1, [], [2]), (2, [1], [])]


def test_render_rejects_bad_input():
    with pytest.raises(ValueError, match="status"):
        render_adr(1, "X", "Y", status="Accepted")
    with pytest.raises(ValueError, match="date"):
        render_adr(1, "X", "Y", date="12/02/2016")
    with pytest.raises(ValueError, match="title"):
        render_adr(1, "Two\nlines", "Y")
    with pytest.raises(ValueError, match="front matter"):
        render_adr(1, "X", "Y", extra={"status": "rejected"})
    with pytest.raises(ValueError, match="one line"):
        render_adr(1, "X", "Y", extra={"ctx-id": "a\nb"})


# --- real ADR folders -----------------------------------------------------------------------------


def _manifest_target(records: list[AdrRecord], ref: int | str) -> str:
    if isinstance(ref, str):
        return Path(ref).name
    matches = [r for r in records if r.number == ref]
    return Path(matches[0].path).name if len(matches) == 1 else f"ambiguous:{ref}"


@pytest.mark.skipif(not (REAL / "MANIFEST.tsv").is_file(), reason="real ADR corpus not present")
def test_real_adr_folders_against_manifest():
    with (REAL / "MANIFEST.tsv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    folders: dict[str, list[AdrRecord]] = {}
    for folder in sorted(p for p in REAL.iterdir() if p.is_dir()):
        records, errors, _ = read_adr_folder(folder)
        assert not errors, [str(e) for e in errors]
        markdown = [
            p for p in folder.iterdir() if p.suffix.lower() == ".md" and p.name.lower() != "readme.md"
        ]
        assert len(records) == len(markdown), folder.name
        assert all(r.status in STATUSES and r.title and r.subject for r in records)
        folders[folder.name] = records

    wanted = found = parsed = agreeing = 0
    statuses_read = 0
    for row in rows:
        records = folders[row["repo"].replace("/", "__")]
        name = Path(row["path"]).name
        record = next(r for r in records if Path(r.path).name == name)
        statuses_read += record.raw_status == row["status"]
        for column in ("supersedes", "superseded_by", "amended_by"):
            want = {target for target in row[column].split(";") if target}
            got = {_manifest_target(records, ref) for ref in getattr(record, column)}
            wanted += len(want)
            found += len(want & got)
            parsed += len(got)
            agreeing += len(got & want)
    recall, precision = found / wanted, agreeing / parsed
    print(
        f"\nreal ADRs: {len(rows)} files; manifest links found {found}/{wanted} ({recall:.0%}), "
        f"parsed links confirmed {agreeing}/{parsed} ({precision:.0%}), "
        f"status as written {statuses_read}/{len(rows)}"
    )
    assert wanted >= 50
    assert recall >= 0.95 and precision >= 0.95
    assert statuses_read / len(rows) >= 0.95
