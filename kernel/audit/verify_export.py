"""Verify a signed audit export with nothing but its two files and a public key the reviewer trusts.

The first problem found is named: a record that cannot be read, does not follow or link to the one
before (or to the manifest's anchor), does not match its hash, or whose readable fields disagree with
its hashed ones; then a signature that does not verify with the trusted key; then a file that is
not the one the manifest describes (count, first and last record, counts per event, times, sha256).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctx_kernel.kernel.audit.export import (
    DERIVED_FIELDS,
    EVENTS,
    BadRecord,
    derived_fields,
    manifest_path_for,
    parse_records,
    sha256_hex,
    signed_message,
)
from ctx_kernel.kernel.capture.json_input import JSONInputError, read_json
from ctx_kernel.kernel.chain import row_hash, verify_chain
from ctx_kernel.kernel.errors import RefusedError, StoreError
from ctx_kernel.kernel.reports import ExportReport
from ctx_kernel.kernel.store.served import SERVED_COLUMNS, SERVED_FIELDS
from ctx_kernel.kernel.text import plural

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

# A manifest is about 1.5 KB; refuse to parse anything far larger.
MAX_MANIFEST_BYTES = 1_000_000


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    first = errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "document"
    return f"{where}: {first['msg']}"


def read_manifest(path: Path) -> dict[str, Any]:
    """A manifest document, checked against ``schemas/audit-manifest.schema.json``'s model."""
    from pydantic import ValidationError  # noqa: PLC0415 - only to verify an export

    from ctx_kernel.kernel.contracts import AuditManifestOut  # noqa: PLC0415

    if not path.is_file():
        raise RefusedError(f"no manifest {path}: an export's manifest sits beside it (or pass --manifest)")
    try:
        raw = path.read_bytes()[: MAX_MANIFEST_BYTES + 1]
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        document: dict[str, Any] = read_json(raw, max_bytes=MAX_MANIFEST_BYTES)
    except JSONInputError as exc:
        if exc.kind == "size":
            raise RefusedError(f"{path} is too large to be a ctx audit manifest") from None
        raise RefusedError(f"{path} is not a JSON manifest: {exc.message}") from None
    try:
        AuditManifestOut.model_validate(document, strict=True)
    except ValidationError as exc:
        raise RefusedError(f"{path} is not a ctx audit manifest: {_first_error(exc)}") from None
    return document


def _validate_record(value: Any) -> str | None:
    from pydantic import ValidationError  # noqa: PLC0415

    from ctx_kernel.kernel.contracts import AuditRecordOut  # noqa: PLC0415

    if not isinstance(value, dict):
        return "not a JSON object"
    try:
        AuditRecordOut.model_validate(value, strict=True)
    except ValidationError as exc:
        return f"malformed record ({_first_error(exc)})"
    return None


def _check_records(
    parsed: Sequence[tuple[int, Any]], manifest: Mapping[str, Any], report: ExportReport, where: str
) -> None:
    """Walk the chain from the manifest's anchor; record the first bad record in ``report``."""
    prev_hash, prev_seq = manifest["anchor_hash"], None
    for line, record in parsed:
        seq = record.get("seq") if isinstance(record, dict) else None
        label = f"{where} {line}" + (f" (seq {seq})" if isinstance(seq, int) else "")
        problem = _validate_record(record)
        if problem is None:
            if prev_seq is not None and seq != prev_seq + 1:
                problem = f"follows seq {prev_seq} (a record was inserted, removed or moved)"
            elif record["prev_hash"] != prev_hash:
                problem = (
                    "does not link to the manifest's anchor hash (the first record was removed or replaced)"
                    if prev_seq is None
                    else "does not link to the record before it (prev_hash differs)"
                )
            elif row_hash(prev_hash, record) != record["hash"]:
                problem = "the record was altered (its hash does not match its fields)"
            else:
                expected = derived_fields(record)
                wrong = [f for f in DERIVED_FIELDS if record[f] != expected[f]]
                if wrong:
                    problem = f"its {wrong[0]!r} field does not match its hashed fields"
        if problem is not None:
            report.first_bad_line = line
            report.first_bad_seq = seq if isinstance(seq, int) else None
            report.problems.append(f"{label}: {problem}")
            return
        report.records += 1
        report.last_seq, report.last_hash = seq, record["hash"]
        if report.first_seq is None:
            report.first_seq = seq
        prev_hash, prev_seq = record["hash"], seq


def _check_manifest(
    parsed: Sequence[tuple[int, Any]] | None, data: bytes, manifest: Mapping[str, Any], report: ExportReport
) -> None:
    """Compare the records file with what the signed manifest says (``parsed`` is None if unreadable)."""
    problems = report.problems
    records = [r for _, r in parsed or () if isinstance(r, dict)]
    if parsed is not None and len(parsed) != manifest["records"]:
        problems.append(
            f"the file holds {plural(len(parsed), 'record')}, the manifest {manifest['records']} "
            "(records were added or removed)"
        )
    if records:
        last, first = records[-1], records[0]
        if last.get("hash") != manifest["last_hash"] or last.get("seq") != manifest["last_seq"]:
            problems.append("the last record is not the manifest's last (the file was truncated or extended)")
        if first.get("hash") != manifest["first_hash"] or first.get("seq") != manifest["first_seq"]:
            problems.append("the first record is not the manifest's first")
        counts = Counter(r.get("event") for r in records)
        if any(counts.get(e, 0) != manifest["counts"][e] for e in EVENTS) or set(counts) - set(EVENTS):
            problems.append("the counts per event type differ from the manifest's")
        if first.get("at") != manifest["first_at"] or last.get("at") != manifest["last_at"]:
            problems.append("the time range differs from the manifest's")
    if sha256_hex(data) != manifest["records_sha256"]:
        problems.append("the records file is not the one the manifest signs (its sha256 differs)")


def verify_export(
    records_path: Path,
    *,
    manifest_path: Path | None = None,
    trusted: Ed25519PublicKey,
    trusted_source: str,
) -> ExportReport:
    """Check an export: its signature by the trusted key, its chain from the anchor, and its manifest."""
    from ctx_kernel.kernel.audit import signing  # noqa: PLC0415 - cryptography loads only to sign or verify

    manifest_path = manifest_path or manifest_path_for(records_path)
    report = ExportReport(
        file=str(records_path),
        manifest=str(manifest_path),
        trusted_key=signing.key_id(trusted),
        trusted_key_source=trusted_source,
    )
    try:
        document = read_manifest(manifest_path)
    except RefusedError as exc:  # no signed manifest: nothing else can be trusted
        report.problems.append(exc.message)
        return report
    manifest = document["manifest"]
    report.format = manifest["records_format"]
    report.anchor_hash = manifest["anchor_hash"]
    report.signed_by = manifest["key"]["key_id"]
    try:
        data = records_path.read_bytes()
    except OSError as exc:
        raise StoreError(f"cannot read {records_path}: {exc.strerror or exc}") from exc
    where = "line" if report.format == "jsonl" else "row"
    parsed: list[tuple[int, Any]] | None
    try:
        parsed = parse_records(data, report.format)
    except BadRecord as bad:
        report.first_bad_line = bad.line
        report.problems.append(f"{where} {bad.line}: {bad.problem}")
        parsed = None
    else:
        _check_records(parsed, manifest, report, where)
    report.signature_ok = signing.signature_valid(
        trusted, document["signature"]["value"], signed_message(manifest)
    )
    if report.signed_by != report.trusted_key:
        report.problems.append(
            f"the manifest names signing key {report.signed_by[:16]}…, "
            f"not the trusted key {report.trusted_key[:16]}…"
        )
    elif not report.signature_ok:
        report.problems.append(
            f"the manifest's signature does not verify with the trusted key {report.trusted_key[:16]}… "
            "(the manifest was edited or signed by another key)"
        )
    _check_manifest(parsed, data, manifest, report)
    if manifest.get("served") is not None:
        report.served_entries = manifest["served"]["entries"]
        report.problems.extend(_served_problems(records_path, manifest["served"]))
    return report


def _served_problems(records_path: Path, section: Mapping[str, Any]) -> list[str]:
    """The served entries' file against the manifest: its sha256, its chain from the anchor, its ends."""
    path = records_path.with_name(section["file"])
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [f"cannot read the served entries {path}: {exc.strerror or exc}"]
    if sha256_hex(data) != section["sha256"]:
        return [f"{path.name} is not the served entries file the manifest signs (its sha256 differs)"]
    try:
        rows = [read_json(line) for line in data.decode("utf-8").splitlines()]
    except (UnicodeDecodeError, JSONInputError):
        return [f"{path.name} is not JSON Lines"]
    if any(not isinstance(r, dict) or set(r) != set(SERVED_COLUMNS) for r in rows):
        return [f"{path.name}: an entry lacks the served log's columns"]
    chain = verify_chain(rows, section["anchor_hash"], SERVED_FIELDS, "served entry")
    if not chain.ok:
        return [f"{path.name}: {chain.problem}"]
    if len(rows) != section["entries"] or chain.last_hash != section["last_hash"]:
        return [f"{path.name} holds other entries than the manifest counts (entries were added or removed)"]
    return []
