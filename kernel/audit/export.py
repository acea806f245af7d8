"""Signed, tamper-evident audit exports that a reviewer can check without the store.

An export is two files. ``FILE`` holds one record per audit event (JSON Lines or CSV): the exact
hashed fields (so ``row_hash`` can be recomputed), the chain hashes, and readable fields derived
from them. ``FILE.manifest.json`` holds the manifest (counts per event type, the anchor hash the
first record links to, the first and last hash, the store's id and head, the time range, the
records file's sha256, the public key) and an Ed25519 signature over the manifest's canonical
JSON, the same serialisation the chain hashes. Verifying needs only these two files and a public
key the reviewer trusts.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctx_kernel.kernel.capture.json_input import JSONInputError, read_json
from ctx_kernel.kernel.chain import HASHED_FIELDS, canonical_json
from ctx_kernel.kernel.errors import RefusedError, StoreError, UsageError
from ctx_kernel.kernel.limits import AUDIT_EVENT_TYPES, AUDIT_EVENTS
from ctx_kernel.kernel.store.served import SERVED_COLUMNS

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from ctx_kernel.kernel.audit.signing import KeyInfo

EXPORT_FORMAT = "ctx-audit-export"
FORMAT_VERSION = 1
RECORD_FORMATS = ("jsonl", "csv")
MANIFEST_SUFFIX = ".manifest.json"
SERVED_SUFFIX = ".served.jsonl"

EVENT_TYPES = AUDIT_EVENT_TYPES
EVENTS = AUDIT_EVENTS
# Events that are a person's act: the actor is the reviewer.
PERSON_ACTS = frozenset({"ratification", "rejection", "retirement", "supersession", "import"})
# The order of a record's fields in both formats (and of the CSV columns).
RECORD_FIELDS = (
    "seq",
    "at",
    "event",
    "actor",
    "reviewer",
    "action",
    "target",
    "subject",
    "text",
    "amended_from",
    "reason",
    "decision_id",
    "superseded_by",
    "settled_by",
    "evidence",
    "content_hash",
    "before",
    "after",
    "prev_hash",
    "hash",
)
DERIVED_FIELDS = tuple(f for f in RECORD_FIELDS if f not in HASHED_FIELDS and f not in ("prev_hash", "hash"))
# A spreadsheet runs a cell that starts with one of these as a formula (OWASP "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# A leading apostrophe marks an escaped cell; a value that itself starts with one is escaped too.
ESCAPE = "'"
_DIGITS = re.compile(r"^[1-9][0-9]{0,17}$")


# -- records --------------------------------------------------------------------------------------


def event_type(action: str) -> str:
    """The kind of event an audit action records (``other`` for actions this version does not know)."""
    return EVENT_TYPES.get(action, "other")


def _after_object(after: Any) -> dict[str, Any]:
    if not isinstance(after, str):
        return {}
    try:
        value = read_json(after)
    except JSONInputError:
        return {}
    return value if isinstance(value, dict) else {}


def derived_fields(row: Mapping[str, Any]) -> dict[str, Any]:
    """The readable fields of a record, computed from its hashed fields alone."""
    event = event_type(row["action"])
    after = _after_object(row["after"])

    def text(key: str) -> str | None:
        value = after.get(key)
        return value if isinstance(value, str) and value else None

    evidence = after.get("evidence")
    return {
        "event": event,
        "reviewer": row["actor"] if event in PERSON_ACTS else None,
        "subject": text("subject"),
        "text": text("decision"),
        "amended_from": text("amended_from"),
        "reason": text("reason"),
        "decision_id": text("decision_id"),
        "superseded_by": text("superseded_by"),
        "settled_by": text("settled_by"),
        "evidence": [e for e in evidence if isinstance(e, str)] if isinstance(evidence, list) else [],
        "content_hash": text("content_hash"),
    }


def record_for(row: Mapping[str, Any]) -> dict[str, Any]:
    """An audit row as an export record: hashed fields, derived fields and chain hashes."""
    values = {**{f: row[f] for f in HASHED_FIELDS}, **derived_fields(row)}
    values["prev_hash"], values["hash"] = row["prev_hash"], row["hash"]
    return {f: values[f] for f in RECORD_FIELDS}


def select_range(
    rows: Sequence[Mapping[str, Any]], since: str | None, until: str | None
) -> list[Mapping[str, Any]]:
    """The contiguous run of rows from the first at or after ``since`` to the last at or before ``until``.

    A chain segment must be contiguous to verify, so a row inside the run is kept even if a clock
    step put its time outside the range.
    """
    first = next((i for i, r in enumerate(rows) if since is None or r["at"] >= since), None)
    last = next((i for i in range(len(rows) - 1, -1, -1) if until is None or rows[i]["at"] <= until), None)
    if first is None or last is None or first > last:
        return []
    return list(rows[first : last + 1])


# -- the two formats ------------------------------------------------------------------------------


def escape_cell(value: str) -> str:
    """Make a text cell inert in a spreadsheet, reversibly: prefix ``'`` to formula starts and to ``'``.

    The empty string becomes a lone ``'`` so that an empty cell can mean "no value".
    """
    if value == "" or value.startswith((*FORMULA_STARTS, ESCAPE)):
        return ESCAPE + value
    return value


def unescape_cell(cell: str) -> str | None:
    """The value :func:`escape_cell` wrote (None for an empty cell)."""
    if cell == "":
        return None
    return cell[1:] if cell.startswith(ESCAPE) else cell


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        raise TypeError("no boolean fields in a record")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return " ".join(value)
    return escape_cell(value)


def render(records: Sequence[Mapping[str, Any]], fmt: str) -> bytes:
    """The records file's bytes: JSON Lines, or CSV (UTF-8 with a BOM so spreadsheets detect it)."""
    if fmt == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(RECORD_FIELDS)
    for record in records:
        writer.writerow([_csv_cell(record[f]) for f in RECORD_FIELDS])
    return ("\ufeff" + buffer.getvalue()).encode("utf-8")


@dataclass(frozen=True)
class BadRecord(Exception):
    """A record that cannot be read at all."""

    line: int
    problem: str


def _parse_jsonl(data: str) -> list[tuple[int, Any]]:
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    else:
        raise BadRecord(len(lines), "the last line is cut short (the file was truncated)")
    parsed = []
    for number, line in enumerate(lines, start=1):
        try:
            parsed.append((number, read_json(line)))
        except JSONInputError as exc:
            raise BadRecord(number, f"not a JSON record ({exc.message})") from None
    return parsed


def _csv_value(name: str, cell: str, row: int) -> Any:
    if name == "seq":
        if not _DIGITS.match(cell):
            raise BadRecord(row, f"seq {cell!r} is not a positive integer")
        return int(cell)
    if name == "evidence":
        return cell.split(" ") if cell else []
    return unescape_cell(cell)


def _parse_csv(data: str) -> list[tuple[int, Any]]:
    reader = csv.reader(io.StringIO(data.removeprefix("\ufeff"), newline=""), strict=True)
    parsed: list[tuple[int, Any]] = []
    row = 1  # spreadsheet numbering: the header is row 1
    try:
        header = next(reader, None)
        if header is None or tuple(header) != RECORD_FIELDS:
            raise BadRecord(1, "the header row is not ctx's audit record columns")
        for cells in reader:
            row += 1
            if len(cells) != len(RECORD_FIELDS):
                raise BadRecord(row, f"{len(cells)} cells where {len(RECORD_FIELDS)} were expected")
            values = {n: _csv_value(n, c, row) for n, c in zip(RECORD_FIELDS, cells, strict=True)}
            parsed.append((row, values))
    except csv.Error as exc:
        raise BadRecord(row + 1, f"malformed CSV ({exc})") from None
    return parsed


def parse_records(data: bytes, fmt: str) -> list[tuple[int, Any]]:
    """``(line or row, record)`` pairs of a records file; :class:`BadRecord` names an unreadable one."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BadRecord(line, "not valid UTF-8") from None
    return _parse_jsonl(text) if fmt == "jsonl" else _parse_csv(text)


# -- writing --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoreFacts:
    """What the manifest says about the store an export came from."""

    store_id: str
    schema_version: int
    head_seq: int
    head_hash: str


@dataclass(frozen=True)
class ExportResult:
    """What ``ctx audit export`` wrote."""

    records_path: Path
    manifest_path: Path
    document: dict[str, Any]

    @property
    def manifest(self) -> dict[str, Any]:
        """The signed manifest."""
        manifest: dict[str, Any] = self.document["manifest"]
        return manifest

    def to_dict(self) -> dict[str, Any]:
        """The manifest document (``schemas/audit-manifest.schema.json``)."""
        return self.document


def manifest_path_for(records_path: Path) -> Path:
    """Where an export's manifest sits: next to the records file, named after it."""
    return records_path.with_name(records_path.name + MANIFEST_SUFFIX)


def served_path_for(records_path: Path) -> Path:
    """Where an export's served entries sit: next to the records file, named after it."""
    return records_path.with_name(records_path.name + SERVED_SUFFIX)


def render_served(entries: Sequence[Mapping[str, Any]]) -> bytes:
    """The served entries as JSON Lines, each with exactly its stored columns."""
    return "".join(
        json.dumps({c: e[c] for c in SERVED_COLUMNS}, ensure_ascii=False) + "\n" for e in entries
    ).encode("utf-8")


def served_section(
    entries: Sequence[Mapping[str, Any]], anchor: str, name: str, data: bytes
) -> dict[str, Any]:
    """The manifest's ``served`` section for these entries."""
    return {
        "file": name,
        "sha256": sha256_hex(data),
        "entries": len(entries),
        "first_seq": entries[0]["seq"] if entries else None,
        "last_seq": entries[-1]["seq"] if entries else None,
        "anchor_hash": anchor,
        "last_hash": entries[-1]["hash"] if entries else anchor,
    }


def sha256_hex(data: bytes) -> str:
    """The sha256 of ``data`` in hex."""
    return hashlib.sha256(data).hexdigest()


def build_manifest(
    records: Sequence[Mapping[str, Any]],
    data: bytes,
    *,
    records_file: str,
    fmt: str,
    since: str | None,
    until: str | None,
    exported_at: str,
    store: StoreFacts,
    key: KeyInfo,
) -> dict[str, Any]:
    """The manifest of ``records`` serialised as ``data`` (unsigned)."""
    counts = Counter(r["event"] for r in records)
    return {
        "format": EXPORT_FORMAT,
        "format_version": FORMAT_VERSION,
        "records_file": records_file,
        "records_format": fmt,
        "records_sha256": sha256_hex(data),
        "records": len(records),
        "counts": {event: counts.get(event, 0) for event in EVENTS},
        "first_seq": records[0]["seq"],
        "last_seq": records[-1]["seq"],
        "anchor_hash": records[0]["prev_hash"],
        "first_hash": records[0]["hash"],
        "last_hash": records[-1]["hash"],
        "since": since,
        "until": until,
        "first_at": records[0]["at"],
        "last_at": records[-1]["at"],
        "exported_at": exported_at,
        "store_id": store.store_id,
        "store_schema_version": store.schema_version,
        "store_head_seq": store.head_seq,
        "store_head_hash": store.head_hash,
        "key": {"algorithm": "ed25519", "key_id": key.key_id, "public_key": key.public_raw},
    }


def signed_message(manifest: Mapping[str, Any]) -> bytes:
    """The bytes the signature covers: the manifest's canonical JSON in UTF-8."""
    return canonical_json(manifest).encode("utf-8")


def _write_atomic(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc


def write_export(
    rows: Sequence[Mapping[str, Any]],
    out: Path,
    *,
    fmt: str,
    since: str | None,
    until: str | None,
    exported_at: str,
    store: StoreFacts,
    key: Ed25519PrivateKey,
    key_info: KeyInfo,
    before_writing: Callable[[dict[str, Any]], object] | None = None,
    served: tuple[Sequence[Mapping[str, Any]], str] | None = None,
) -> ExportResult:
    """Write the records of ``rows`` (a verified, contiguous run of the chain) and the signed manifest.

    ``served`` (entries of the served log, verified and contiguous, and the hash the first links to)
    go to ``OUT.served.jsonl``, which the manifest signs too.

    ``before_writing`` gets the signed document before any file is written: where it refuses
    (a login that may not keep the signed head in its store), nothing is written.
    """
    from ctx_kernel.kernel.audit import signing  # noqa: PLC0415 - cryptography loads only to sign or verify

    if fmt not in RECORD_FORMATS:
        raise UsageError(f"unknown format {fmt!r}: use one of {', '.join(RECORD_FORMATS)}")
    if not rows:
        raise RefusedError("no audit events: nothing to export")
    if out.is_dir():
        raise UsageError(f"{out} is a folder: give a file name for the records")
    if not out.parent.is_dir():
        raise UsageError(f"folder {out.parent} does not exist")
    records = [record_for(r) for r in rows]
    data = render(records, fmt)
    manifest = build_manifest(
        records,
        data,
        records_file=out.name,
        fmt=fmt,
        since=since,
        until=until,
        exported_at=exported_at,
        store=store,
        key=key_info,
    )
    served_data = None
    if served is not None:
        entries, anchor = served
        served_data = render_served(entries)
        manifest["served"] = served_section(entries, anchor, served_path_for(out).name, served_data)
    document = {
        "manifest": manifest,
        "signature": {"algorithm": "ed25519", "value": signing.sign(key, signed_message(manifest))},
    }
    manifest_path = manifest_path_for(out)
    if before_writing is not None:
        before_writing(document)
    if served_data is not None:
        _write_atomic(served_path_for(out), served_data)
    _write_atomic(out, data)
    _write_atomic(manifest_path, (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    return ExportResult(out, manifest_path, document)
