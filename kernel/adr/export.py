"""``ctx export adr``: decisions and open proposals as ADR files, in place in the folder they came from.

A file ctx imported keeps its name and number and every line the team wrote: export only adds ctx's
front matter keys (``ctx-id``, the exact window, the subject) and, when the kernel's status differs
from the file's (a later decision superseded it), rewrites the status where the file states it. A
decision ctx holds no file for is written in the folder's own convention (file names, numbering
series, Nygard or MADR layout), with the next free number. A file is replaced only if ctx owns it:
it carries a ``ctx-id``, or it is byte for byte (after redaction) the file that was imported.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ctx_kernel.kernel import ids
from ctx_kernel.kernel.adr import files as adr
from ctx_kernel.kernel.adr.importer import (
    ADR_TAG,
    KEY_BY,
    KEY_FROM,
    KEY_ID,
    KEY_LINKS,
    KEY_UNTIL,
    rationale_of,
)
from ctx_kernel.kernel.errors import RefusedError, UsageError
from ctx_kernel.kernel.records import Record
from ctx_kernel.kernel.text import visible_document

if TYPE_CHECKING:
    from ctx_kernel.kernel.store.base import Store

# Exported files are ordinary readable text files, whatever mkstemp's private default.
EXPORT_MODE = 0o644
INDEX_NAME = "README.md"
INDEX_MARK = "<!-- ctx export adr writes this index and rewrites it on every export. -->"
IMPORTED_SUFFIX = " (imported ADR)"
_MADR_SECTIONS = ("## context and problem statement", "## decision outcome", "## considered options")
# log4brains names a record by its day: 20200925-use-log4brains-to-manage-the-adrs.md
_DATED_NAME_RE = re.compile(r"^\d{8}-.+\.md$")
_NAME_RE = re.compile(
    r"^(?P<prefix>[A-Za-z]{0,5}[-_ ]?)(?P<num>\d{1,6})(?P<sep>[-_ ]?)(?P<slug>.*)\.md$", re.I
)


@dataclass
class AdrExport(Record):
    """What ``ctx export adr`` did: files written, files already up to date, and what it warns about."""

    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    index: Path | None = None


@dataclass(frozen=True)
class Convention:
    """How a folder names and lays out its ADRs: ``0001-use-x.md`` (adr-tools), ``ADR001-x.md``, ..."""

    prefix: str = ""
    width: int = 4
    separator: str = "-"
    keep_case: bool = False
    style: str = "madr"  # "nygard": "# 1. Title", a Date line and a Status section; "log4brains"

    @property
    def series(self) -> str:
        """The numbering series new files join."""
        return adr.series(self.prefix)

    def filename(self, number: int, title: str) -> str:
        """A new file's name in this convention."""
        slug = adr.slug(title, keep_case=self.keep_case)
        return f"{self.prefix}{number:0{self.width}d}{self.separator}{slug}.md"

    def dated_filename(self, day: str, title: str, copy: int = 1) -> str:
        """A new file's name as log4brains names one: its day, then its slug (``20240501-use-x.md``)."""
        suffix = f"-{copy}" if copy > 1 else ""
        return f"{day.replace('-', '')}-{adr.slug(title)}{suffix}.md"


def detect_convention(folder: Path) -> Convention:
    """The convention most of a folder's ADR files follow (adr-tools' MADR default for an empty one)."""
    names = sorted(p.name for p in folder.iterdir() if adr.is_adr_file(p)) if folder.is_dir() else []
    if names and sum(bool(_DATED_NAME_RE.match(name)) for name in names) * 2 > len(names):
        return Convention(style="log4brains")
    shapes: Counter[tuple[str, int, str]] = Counter()
    cased = 0
    for name in names:
        match = _NAME_RE.match(name)
        if match is None:
            continue
        shapes[(match.group("prefix"), len(match.group("num")), match.group("sep"))] += 1
        cased += any(c.isupper() for c in match.group("slug"))
    if not shapes:
        return Convention()
    prefix, width, separator = shapes.most_common(1)[0][0]
    madr = sum(_looks_madr(folder / name) for name in names)
    return Convention(
        prefix=prefix,
        width=width,
        separator=separator or "-",
        keep_case=cased * 2 > len(names),
        style="madr" if madr * 2 > len(names) else "nygard",
    )


def _looks_madr(path: Path) -> bool:
    """MADR keeps the status in front matter and names its sections its own way."""
    try:
        body = adr.read_text(path, path.parent.resolve())
    except adr.AdrParseError:
        return False
    lowered = body.lower()
    return "status" in adr.front_matter_of(body) or any(s in lowered for s in _MADR_SECTIONS)


@dataclass
class _Item:
    """One decision or proposal to write, with everything its file says."""

    id: str
    kind: str
    subject: str
    text: str
    rationale: str | None
    title: str
    deciders: list[str]
    start: str
    end: str | None
    status: str  # accepted, superseded, deprecated, proposed or rejected
    retired_as: str | None  # the status an imported file stated for a decision closed without successor
    source: str | None
    number: int | None
    base: str | None  # the file as imported (redacted), kept as evidence
    base_hash: str | None
    older: list[str]
    newer: list[str]
    ratified_by: str | None
    proposal_id: str | None = None
    name: str = ""
    links: tuple[str, ...] = ()  # what the decision governs: its newest snapshot's, or the proposal's


def export_adrs(store: Store, folder: Path, *, force: bool = False) -> AdrExport:
    """Write every decision, and every pending (or imported) proposal, as an ADR file in ``folder``.

    Nothing is written if any target is a link, not a regular file, or a file ctx does not own,
    unless ``force`` (which replaces links and files, never writing through a link).
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise UsageError(f"{folder} is not a folder") from None
    except OSError as exc:
        raise UsageError(f"cannot create the folder {folder}: {exc.strerror or exc}") from None
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder")
    inside = folder.resolve()
    convention = detect_convention(folder)
    marked = _marked_files(folder, inside)
    items = _items(store, marked)
    by_id = {item.id: item for item in items}
    _name(items, convention, folder, marked)
    report = AdrExport()
    contents: dict[Path, tuple[str, _Item]] = {}
    for item in items:
        content = _content(item, by_id, convention)
        report.warnings += _reads_back(content, item, by_id)
        contents[folder / item.name] = (content, item)
    refused = [(p, why) for p, (_, item) in contents.items() if (why := _refusal(p, item, force, inside))]
    if refused:
        path, why = refused[0]
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise RefusedError(f"{path} {why}{more}; nothing written")
    for path, (content, _) in contents.items():
        _write_if_changed(path, content, report)
    _write_index(folder, items, by_id, inside, force, report)
    return report


# ---------------------------------------------------------------------------------------------------------
# What to write
# ---------------------------------------------------------------------------------------------------------


def _marked_files(folder: Path, inside: Path) -> dict[str, str]:
    """File names in the folder by the ctx id their front matter carries."""
    found: dict[str, str] = {}
    for path in sorted(folder.iterdir()):
        if not adr.is_adr_file(path) or path.is_symlink():
            continue
        try:
            item_id = adr.ctx_fields(path, inside).get(KEY_ID, "")
        except adr.AdrParseError:
            continue
        if ids.ID_RE.match(item_id):
            found.setdefault(item_id, path.name)
    return found


def _file_evidence(store: Store, evidence: list[str]) -> tuple[str | None, str | None]:
    """The text and hash of the ADR file an item cites as evidence, if it was imported from one."""
    for evidence_id in evidence:
        found = store.get_evidence(evidence_id)
        if (
            found is not None
            and found.kind == "doc"
            and ADR_TAG in found.tags
            and isinstance(found.text, str)
        ):
            return found.text, found.content_hash
    return None, None


def _items(store: Store, marked: dict[str, str]) -> list[_Item]:
    proposals = {p.id: p for p in store.list_proposals(status=None)}
    # all_snapshots is ordered by time within a decision: the last one read is the newest.
    governs = {s.decision_id: tuple(x.link for x in s.links) for s in store.all_snapshots()}
    items: list[_Item] = []
    for d in store.decisions(include_closed=True):
        origin = proposals.get(d.proposal_id) if d.proposal_id else None
        from_origin = d.source is None and origin is not None and origin.source is not None
        base, base_hash = _file_evidence(store, d.evidence)
        if d.current:
            status = "accepted"
        elif d.closed_by == "superseded" and d.superseded_by:
            status = "superseded"
        else:
            status = "deprecated"
        reason = d.close_reason or ""
        items.append(
            _Item(
                id=d.id,
                kind="decision",
                subject=d.subject,
                text=d.decision,
                rationale=d.rationale,
                title=d.title or _title_from(d.decision),
                deciders=list(d.deciders),
                start=d.valid_from,
                end=d.valid_until,
                status=status,
                retired_as=reason[: -len(IMPORTED_SUFFIX)] if reason.endswith(IMPORTED_SUFFIX) else None,
                source=origin.source if from_origin and origin else d.source,
                number=origin.adr_number if from_origin and origin else d.adr_number,
                base=base,
                base_hash=base_hash,
                older=list(d.supersedes),
                newer=list(d.superseded_by),
                ratified_by=d.ratified_by,
                proposal_id=d.proposal_id,
                links=governs.get(d.id, ()),
            )
        )
    for p in proposals.values():
        if p.status == "ratified" or (p.status != "pending" and p.source is None and p.id not in marked):
            continue
        if p.reconfirms is not None:
            continue  # a request to re-confirm a decision written above: an ADR of it would restate it
        base, base_hash = _file_evidence(store, p.evidence)
        items.append(
            _Item(
                id=p.id,
                kind="proposal",
                subject=p.subject,
                text=p.decision,
                rationale=p.rationale,
                title=p.title or _title_from(p.decision),
                deciders=list(p.deciders),
                start=p.created_at,
                end=None,
                status="proposed" if p.status == "pending" else "rejected",
                retired_as=None,
                source=p.source,
                number=p.adr_number,
                base=base,
                base_hash=base_hash,
                older=[],
                newer=[],
                ratified_by=None,
                links=tuple(store.proposal_links(p.id)) if p.status == "pending" else (),
            )
        )
    items.sort(key=lambda i: (i.start, i.id))
    return items


def _title_from(decision: str) -> str:
    """A title for a record that has none: its first sentence, shortened."""
    first = re.split(r"(?<=[.!?])\s", decision.strip(), maxsplit=1)[0]
    first = " ".join(first.split())
    return first if len(first) <= 90 else first[:87].rstrip() + "..."


def _safe_name(name: str | None) -> str | None:
    """A stored file name usable in the folder: a plain ``.md`` name, no path."""
    if not name or "/" in name or "\\" in name or name.startswith(".") or not name.lower().endswith(".md"):
        return None
    return name


def _name(items: list[_Item], convention: Convention, folder: Path, marked: dict[str, str]) -> None:
    """Give every item its file name: the one it came from, the one ctx wrote it to, or the next number."""
    taken: set[str] = set()
    used: set[int] = set()
    for path in folder.iterdir():
        match = _NAME_RE.match(path.name)
        if match and adr.series(match.group("prefix")) == convention.series:
            used.add(int(match.group("num")))
    fresh: list[_Item] = []
    for item in items:
        name = _safe_name(item.source) or marked.get(item.id) or marked.get(item.proposal_id or "")
        if name is None or name.lower() in taken:
            fresh.append(item)
            continue
        item.name = name
        taken.add(name.lower())
        numbered = adr.file_number(name)
        if item.number is None and numbered is not None:
            item.number = numbered[1]
        if numbered is not None and adr.series(numbered[0]) == convention.series and item.number is not None:
            used.add(item.number)
    next_number = max(used, default=0) + 1
    for item in fresh:
        if convention.style == "log4brains":  # no numbers: a day and a slug, and a copy number if taken
            item.number, copy = None, 1
            while (dated := convention.dated_filename(item.start[:10], item.title, copy)).lower() in taken:
                copy += 1
            item.name = dated
            taken.add(dated.lower())
            continue
        while next_number in used:
            next_number += 1
        item.number = next_number
        item.name = convention.filename(next_number, item.title)
        while item.name.lower() in taken:  # the same title and number: never overwrite a sibling
            next_number += 1
            item.number = next_number
            item.name = convention.filename(next_number, item.title)
        used.add(next_number)
        taken.add(item.name.lower())


def _link(item: _Item) -> str:
    text = f"{item.number}. {item.title}" if item.number is not None else item.title
    escaped = text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    return f"[{escaped}]({item.name})"


def status_text(item: _Item, by_id: dict[str, _Item]) -> str:
    """The status line of an item's file: ``Accepted``, ``Superseded by [5. X](0005-x.md)``, ..."""
    newer = [by_id[n] for n in item.newer if n in by_id]
    if item.status == "superseded" and newer:
        return "Superseded by " + ", ".join(_link(n) for n in newer)
    if item.status in ("superseded", "deprecated"):
        return item.retired_as or "Deprecated"
    return item.status.capitalize()


def _status_agrees(parsed: adr.AdrRecord, item: _Item, by_id: dict[str, _Item]) -> bool:
    """Whether a file's own status already says what the kernel holds (then it is left as written)."""
    if item.status in ("accepted", "proposed", "rejected"):
        return parsed.status == item.status
    if item.retired_as is not None:  # closed at import from what the file itself states
        return True
    if parsed.status not in ("superseded", "deprecated"):
        return False
    newer = [by_id[n] for n in item.newer if n in by_id]
    refs = set(parsed.superseded_by)
    return all(n.name in refs or (n.number is not None and n.number in refs) for n in newer)


def _front(item: _Item) -> dict[str, str | None]:
    """ctx's own fields for an item's file."""
    return {
        "subject": item.subject,
        KEY_ID: item.id,
        KEY_FROM: item.start,
        KEY_UNTIL: item.end,
        KEY_BY: item.ratified_by,
        KEY_LINKS: ", ".join(item.links) or None,
    }


def _content(item: _Item, by_id: dict[str, _Item], convention: Convention) -> str:
    if item.base is not None:
        content = item.base
        try:
            agrees = _status_agrees(adr.parse_text(content, item.name), item, by_id)
        except adr.AdrParseError:
            agrees = False
        if not agrees:
            content = adr.set_status(content, status_text(item, by_id))
        content = adr.set_ctx_fields(content, _front(item))
        return content if content.endswith("\n") else content + "\n"
    return _render(item, by_id, convention)


def _render(item: _Item, by_id: dict[str, _Item], convention: Convention) -> str:
    """A new file for an item ctx holds no file for, in the folder's layout."""
    if convention.style == "nygard":
        return _render_nygard(item, by_id)
    if convention.style == "log4brains":
        return _render_log4brains(item, by_id)
    status = status_text(item, by_id)
    older = [by_id[o] for o in item.older if o in by_id]
    front: dict[str, str | list[str] | None] = {"status": status, "date": item.start[:10]}
    if item.deciders:
        front["deciders"] = ", ".join(item.deciders)
    front |= _front(item)
    if older:
        front["supersedes"] = [o.name for o in older]
    body = "\n".join([f"# {item.title}", "", *_madr_sections(item)]).rstrip("\n") + "\n"
    return adr.set_front_matter(body, front)


def _madr_sections(item: _Item) -> list[str]:
    """MADR's sections of a record: its context and its outcome. A text with its own top-level
    headings cannot sit under a heading of ours: it is then the whole body."""
    if adr.has_top_headings(item.text):
        return [item.text.strip(), ""]
    context = ["## Context and Problem Statement", "", item.rationale.strip(), ""] if item.rationale else []
    return [*context, "## Decision Outcome", "", item.text.strip(), ""]


def _render_nygard(item: _Item, by_id: dict[str, _Item]) -> str:
    """A new file as adr-tools writes one: the title on line 1, a ``## Status`` section holding the status
    and links, and ctx's fields in a comment block that adr-tools does not read."""
    status = [status_text(item, by_id)]
    status += [line for o in item.older if o in by_id for line in ("", f"Supersedes {_link(by_id[o])}")]
    out = [f"# {item.number}. {item.title}" if item.number is not None else f"# {item.title}", ""]
    out.append(f"Date: {item.start[:10]}")
    if item.deciders:
        out.append(f"Deciders: {', '.join(item.deciders)}")
    out.append("")
    if adr.has_top_headings(item.text):
        # The whole body is the text, and the Status section follows it, where it ends no section of the
        # text's own (a Status section first would take in the text up to its first heading).
        out += [item.text.strip(), "", "## Status", "", *status, ""]
    else:
        out += ["## Status", "", *status, ""]
        if item.rationale:
            out += ["## Context", "", item.rationale.strip(), ""]
        out += ["## Decision", "", item.text.strip(), ""]
    body = "\n".join(out).rstrip("\n") + "\n"
    return adr.set_ctx_fields(body, _front(item))


def _render_log4brains(item: _Item, by_id: dict[str, _Item]) -> str:
    """A new file as log4brains writes one: the title, the list of its fields under it (which log4brains
    reads), MADR's sections, the links in a Links section, and ctx's fields in a comment block."""
    status = status_text(item, by_id)
    out = [f"# {item.title}", "", f"- Status: {status[:1].lower()}{status[1:]}"]
    if item.deciders:
        out.append(f"- Deciders: {', '.join(item.deciders)}")
    out += [f"- Date: {item.start[:10]}", "", *_madr_sections(item)]
    older = [by_id[o] for o in item.older if o in by_id]
    if older:
        out += ["## Links", "", *(f"- Supersedes {_link(o)}" for o in older), ""]
    body = "\n".join(out).rstrip("\n") + "\n"
    return adr.set_ctx_fields(body, _front(item))


def _reads_back(content: str, item: _Item, by_id: dict[str, _Item]) -> list[str]:
    """Warnings for a file that would not import back as the item it was written from."""
    try:
        parsed = adr.parse_text(content, item.name)
    except adr.AdrParseError as exc:
        return [f"{item.name}: would not read back ({exc.reason})"]
    differs = []
    if " ".join(parsed.title.split()) != item.title:
        differs.append("title")
    if parsed.decision != item.text:
        differs.append("decision")
    if rationale_of(parsed.context, parsed.consequences) != item.rationale:
        differs.append("rationale")
    if parsed.deciders != item.deciders:
        differs.append("deciders")
    closed = item.status in ("superseded", "deprecated")
    if (parsed.status in ("superseded", "deprecated")) != closed and not (closed and item.end):
        differs.append("status")
    if not differs:
        return []
    return [f"{item.name}: would read back with a different {', '.join(differs)} than {item.id} holds"]


# ---------------------------------------------------------------------------------------------------------
# Whose file it is, and writing it
# ---------------------------------------------------------------------------------------------------------


def owned_by_ctx(path: Path, inside: Path | None = None) -> bool:
    """Whether an existing file is one ctx wrote: a regular file with a ``ctx-id`` in its front matter or
    in ctx's comment block."""
    try:
        meta = adr.ctx_fields(path, inside)
    except adr.AdrParseError:
        return False
    found = meta.get(KEY_ID, "")
    return bool(ids.ID_RE.match(found)) and found.startswith(("dc_", "pr_"))


def unchanged_since_import(path: Path, base_hash: str | None, inside: Path | None = None) -> bool:
    """Whether a file is still the one imported: its text, redacted as the import kept it, hashes the same."""
    if base_hash is None:
        return False
    from ctx_kernel.kernel.capture.ingest import EvidenceInput, prepare  # noqa: PLC0415

    try:
        body = adr.read_text(path, inside)
        return prepare(EvidenceInput(body, kind="doc"), redact=True).digest == base_hash
    except (adr.AdrParseError, UsageError):
        return False


def _refusal(path: Path, item: _Item, force: bool, inside: Path) -> str | None:
    """Why export must not replace ``path`` (None when it may)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return None if force else "is a symbolic link (never written through; --force replaces the link)"
    if not stat.S_ISREG(info.st_mode):
        return "exists and is not a regular file"
    if force or owned_by_ctx(path, inside) or unchanged_since_import(path, item.base_hash, inside):
        return None
    if item.base_hash is not None:
        return "exists and was not written by ctx export, nor is it the file imported (--force overwrites it)"
    return "exists and was not written by ctx export (--force overwrites it)"


def _write_if_changed(path: Path, content: str, report: AdrExport) -> None:
    # Hidden characters (terminal controls, bidi overrides, zero-width) that reached the store by a
    # way round the input rules are written spelled out (``\x1b``), never raw: a file a person
    # reviews shows what it holds.
    content = visible_document(content)
    try:
        if not path.is_symlink() and path.is_file() and path.read_bytes() == content.encode("utf-8"):
            report.unchanged.append(path)
            return
        _write_atomic(path, content)
    except OSError as exc:
        raise RefusedError(f"cannot write {path}: {exc.strerror or exc}") from None
    report.written.append(path)


def _write_atomic(path: Path, content: str) -> None:
    """Write a file by renaming a finished temporary file over it: a reader never sees half of it,
    and a link at ``path`` is replaced, never written through."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            os.fchmod(handle.fileno(), EXPORT_MODE)
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


# ---------------------------------------------------------------------------------------------------------
# The index
# ---------------------------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render_index(items: list[_Item], by_id: dict[str, _Item], others: list[adr.AdrRecord]) -> str:
    """README.md: a table of every ADR in the folder with its status and links, in number order."""
    rows: list[tuple[tuple[bool, int, str], str]] = []
    for item in items:
        number = str(item.number) if item.number is not None else "-"
        status = _cell(status_text(item, by_id))
        row = f"| [{number}]({item.name}) | {_cell(item.title)} | {status} | {item.start[:10]} |"
        rows.append(((item.number is None, item.number or 0, item.name), row))
    for record in others:  # the folder's files ctx does not hold, as they state themselves
        number = str(record.number) if record.number is not None else "-"
        status = record.raw_status or record.status.capitalize()
        row = f"| [{number}]({record.path}) | {_cell(record.title)} | {_cell(status)} | {record.date or ''} |"
        rows.append(((record.number is None, record.number or 0, record.path), row))
    rows.sort(key=lambda r: r[0])
    head = [
        INDEX_MARK,
        "",
        "# Architecture Decision Records",
        "",
        "| ADR | Title | Status | Date |",
        "| --- | --- | --- | --- |",
    ]
    return "\n".join([*head, *(row for _, row in rows)]) + "\n"


_TOC_LINE_RE = re.compile(r"^\* \[[^\n]*\]\([^)\n]*\.md\)$", re.M)


def _index_tool(text: str) -> str | None:
    """The ADR tool whose own index a README is, if it is one: ``adr generate toc``'s (adr-tools),
    adr-log's (its ``<!-- adrlog -->`` marks) or log4brains'."""
    if text.startswith(INDEX_MARK):
        return None
    if "<!-- adrlog -->" in text:
        return "adr-log"
    if "log4brains" in text.lower():
        return "log4brains"
    if text.startswith("# Architecture Decision Records\n") and _TOC_LINE_RE.search(text):
        return "adr-tools"
    return None


def _write_index(
    folder: Path, items: list[_Item], by_id: dict[str, _Item], inside: Path, force: bool, report: AdrExport
) -> None:
    path = folder / INDEX_NAME
    if path.is_symlink() and not force:
        report.warnings.append(f"{path} is a symbolic link; the index was not written (--force replaces it)")
        return
    if path.exists() and not path.is_symlink():
        try:
            existing = adr.read_text(path, inside)
        except adr.AdrParseError:
            existing = ""
        mine, tool = existing.startswith(INDEX_MARK), _index_tool(existing)
        if tool is not None:  # the tool rewrites its index: ctx's would be lost, or would replace the tool's
            report.warnings.append(
                f"{path} is {tool}'s own index; ctx's index was not written (not even with --force)"
            )
            return
        if not path.is_file() or (not mine and not force):
            report.warnings.append(
                f"{path} was not written by ctx export; the index was not written (--force replaces it)"
            )
            return
    names = {item.name.lower() for item in items}
    records, _, _ = adr.read_adr_folder(folder)
    others = [r for r in records if Path(r.path).name.lower() not in names]
    content = visible_document(render_index(items, by_id, others))
    try:
        if path.is_symlink() or not path.is_file() or path.read_bytes() != content.encode("utf-8"):
            _write_atomic(path, content)
    except OSError as exc:
        raise RefusedError(f"cannot write {path}: {exc.strerror or exc}") from None
    report.index = path
