"""Signed audit exports: every way of tampering with an export or the store is caught and named."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import stat
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ctx_kernel.kernel import Ctx, limits
from ctx_kernel.kernel.audit import export as audit_export
from ctx_kernel.kernel.audit import signing
from ctx_kernel.kernel.audit.service import AuditService
from ctx_kernel.kernel.chain import canonical_json, row_hash
from ctx_kernel.kernel.store.sqlite import driver

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
PASSPHRASE = "correct horse battery staple"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
FORMATS = ["jsonl", "csv"]
# The audit events the world fixture writes.
EVENTS = 17


def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def assert_valid(name: str, document: object) -> None:
    errors = [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(name).iter_errors(document)
    ]
    assert not errors, f"does not match schemas/{name}.schema.json: {errors}"


def one_line_error(result, code: int) -> str:
    assert result.code == code, (result.code, result.out, result.err)
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctx: error: "), result.err
    assert "Traceback" not in result.err
    return lines[0]


@pytest.fixture
def passphrase(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CTX_KEY_PASSPHRASE", PASSPHRASE)
    return PASSPHRASE


@pytest.fixture
def signing_key(cli, passphrase: str) -> signing.KeyInfo:
    result = cli("keys", "init", db=False)
    assert result.code == 0, result.err
    return AuditService.signing_key()


@pytest.fixture
def world(kernel: Ctx) -> dict[str, str]:
    """Every kind of event, with user text that a spreadsheet would run as a formula."""
    note = kernel.log("User: sessions expire mid-upload.", agent="claude").id
    first = kernel.propose(
        "auth.tokens",
        '=HYPERLINK("http://evil.example","click me")',
        rationale="Stateless\nverification",
        evidence=[note],
        proposer="claude",
    )
    kernel.ratify(first.id, reviewer="alice")
    second = kernel.propose("auth.tokens", "Use opaque session ids", evidence=[note], proposer="claude")
    kernel.ratify(second.id, reviewer="bob", decision="@SUM(A1:A9) opaque session ids in Redis")
    rejected = kernel.propose("db.engine", "Use MongoDB", proposer="claude").id
    kernel.reject(rejected, reviewer="alice", reason="-1 we need SQL")
    withdrawn = kernel.propose("ci.provider", "+Jenkins", proposer="claude").id
    kernel.withdraw(withdrawn, actor="claude", reason="'changed my mind'")
    build = kernel.propose("build.tool", "Use make — ünïcode 日本", proposer="claude")
    kernel.ratify(build.id, reviewer="alice")
    kernel.retire("build.tool", reviewer="alice", reason="moved to just")
    kept = kernel.propose("api.style", "Use REST", proposer="claude")
    other = kernel.propose("api.style", "Use GraphQL", proposer="gemini")
    kernel.ratify(kept.id, reviewer="carol", settle=[other.id])
    return {
        "note": note,
        "first": first.id,
        "second": second.id,
        "rejected": rejected,
        "withdrawn": withdrawn,
    }


def export(cli, tmp_path: Path, fmt: str, *args: str, name: str | None = None) -> Path:
    out = tmp_path / (name or f"audit.{fmt}")
    result = cli("audit", "export", "--out", str(out), "--format", fmt, *args)
    assert result.code == 0, result.err
    return out


def manifest_of(path: Path) -> dict:
    return json.loads(audit_export.manifest_path_for(path).read_text(encoding="utf-8"))


def records_of(path: Path, fmt: str) -> list[dict]:
    return [record for _, record in audit_export.parse_records(path.read_bytes(), fmt)]


def verify(cli, path: Path, *args: str):
    return cli("audit", "verify", str(path), *args, db=False)


# -- exporting --------------------------------------------------------------------------------------


def test_every_action_written_is_a_named_action_with_an_event_type(kernel: Ctx, world: dict[str, str]):
    kernel.import_adrs(Path(__file__).resolve().parent / "data" / "adr" / "nygard", reviewer="alice")
    kernel.encrypt()
    kernel.rekey()
    governs = kernel.propose("store.layout", "Keep one store module", proposer="claude", links=["src/**"])
    kernel.ratify(governs.id, reviewer="alice")
    written = {event.action for event in kernel.audit.events()}
    named = {v for k, v in vars(limits).items() if k.isupper() and isinstance(v, str) and "." in v}
    assert written == named == set(limits.AUDIT_EVENT_TYPES)
    assert set(limits.AUDIT_EVENT_TYPES.values()) < set(limits.AUDIT_EVENTS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_verifies_and_matches_the_schemas(cli, tmp_path, world, signing_key, fmt):
    path = export(cli, tmp_path, fmt)
    document = manifest_of(path)
    assert_valid("audit-manifest", document)
    records = records_of(path, fmt)
    for record in records:
        assert_valid("audit-record", record)
    manifest = document["manifest"]
    assert manifest["records"] == len(records) == EVENTS
    assert manifest["records_format"] == fmt
    assert manifest["anchor_hash"] == "0" * 64 and manifest["first_seq"] == 1
    assert manifest["last_hash"] == records[-1]["hash"]
    assert manifest["key"]["key_id"] == signing_key.key_id
    assert manifest["records_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert manifest["counts"] == {
        "proposal": 7,
        "ratification": 4,
        "rejection": 2,
        "withdrawal": 1,
        "supersession": 1,
        "retirement": 1,
        "evidence": 1,
        "import": 0,
        "vault": 0,
        "other": 0,
    }
    with Ctx.open(tmp_path / "project" / ".ctx" / "ctx.db") as kernel:
        assert manifest["store_id"] == kernel.store.get_meta("store_id")
        assert [r["hash"] for r in records] == [e.hash for e in kernel.audit.events()]
    result = verify(cli, path)
    assert result.code == 0, result.err
    assert f"export ok: {EVENTS} records" in result.out and signing_key.key_id in result.out
    assert "local key" in result.out  # says which key it trusted


@pytest.mark.parametrize("fmt", FORMATS)
def test_records_say_who_ratified_what_on_which_evidence(cli, tmp_path, world, signing_key, fmt):
    records = records_of(export(cli, tmp_path, fmt), fmt)
    by = {(r["action"], r["target"]): r for r in records}
    ratified = by["proposal.ratified", world["first"]]
    assert ratified["event"] == "ratification" and ratified["reviewer"] == "alice"
    assert ratified["text"].startswith("=HYPERLINK") and ratified["evidence"] == [world["note"]]
    amended = by["proposal.ratified", world["second"]]
    assert amended["reviewer"] == "bob" and amended["amended_from"] == "Use opaque session ids"
    assert amended["text"] == "@SUM(A1:A9) opaque session ids in Redis"
    assert by["proposal.rejected", world["rejected"]]["reason"] == "-1 we need SQL"
    assert by["proposal.withdrawn", world["withdrawn"]]["reason"] == "'changed my mind'"
    logged = by["evidence.logged", world["note"]]
    assert logged["content_hash"] == hashlib.sha256(b"User: sessions expire mid-upload.").hexdigest()
    assert "sessions expire" not in json.dumps(records)  # the evidence text itself never leaves
    superseded = next(r for r in records if r["event"] == "supersession")
    assert superseded["superseded_by"] == amended["decision_id"]
    settled = next(r for r in records if r["settled_by"])
    assert settled["event"] == "rejection" and settled["reviewer"] == "carol"
    assert next(r for r in records if r["event"] == "retirement")["reason"] == "moved to just"


def _independent_row_hash(prev_hash: str, record: dict) -> str:
    """The documented recipe, without importing ctx: sha256(prev_hash + canonical JSON)."""
    body = {k: record[k] for k in ("seq", "at", "actor", "action", "target", "before", "after")}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256((prev_hash + text).encode("utf-8")).hexdigest()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_reviewer_recomputes_every_hash_without_the_store(cli, tmp_path, world, signing_key, fmt):
    records = records_of(export(cli, tmp_path, fmt), fmt)
    prev = "0" * 64
    for record in records:
        assert record["prev_hash"] == prev
        assert _independent_row_hash(prev, record) == record["hash"] == row_hash(prev, record)
        prev = record["hash"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_guide_verifier_checks_an_export_without_ctx(cli, tmp_path, world, signing_key, fmt):
    """The standalone script in the guide verifies an export and catches a tampered one."""
    import subprocess

    guide = (Path(__file__).resolve().parent.parent / "docs" / "guide.md").read_text(encoding="utf-8")
    script = guide.split("<!-- verify-export.py -->")[1].split("```python\n")[1].split("```")[0]
    (tmp_path / "verify_export.py").write_text(script, encoding="utf-8")
    (tmp_path / "ctx-audit.pub.pem").write_text(cli("keys", "export-public", db=False).out)
    path = export(cli, tmp_path, fmt)

    def run() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-I", str(tmp_path / "verify_export.py"), str(path), "ctx-audit.pub.pem"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
        )

    good = run()
    assert good.returncode == 0 and good.stdout.startswith(f"OK: {EVENTS} records"), good.stdout + good.stderr
    rewrite(path, fmt, _edit_and_rechain)
    assert run().returncode != 0
    _resign(path, lambda m: m.update(records_sha256=hashlib.sha256(path.read_bytes()).hexdigest()))
    forged = run()
    assert forged.returncode != 0 and "InvalidSignature" in forged.stderr


def test_export_json_output_is_the_manifest(cli, tmp_path, world, signing_key):
    result = cli("audit", "export", "--out", str(tmp_path / "a.jsonl"), "--json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert_valid("audit-manifest", document)
    assert document == manifest_of(tmp_path / "a.jsonl")


@pytest.mark.parametrize(
    ("name", "document"),
    [
        ("audit-record", {"seq": 1}),
        ("audit-manifest", {"manifest": {}, "signature": {"algorithm": "ed25519", "value": "x"}}),
        ("audit-export-verify", {"ok": True}),
    ],
)
def test_the_export_schemas_are_strict(name, document):
    assert not validator(name).is_valid(document)


def test_a_record_with_an_extra_field_is_invalid(cli, tmp_path, world, signing_key):
    record = records_of(export(cli, tmp_path, "jsonl"), "jsonl")[0]
    assert validator("audit-record").is_valid(record)
    assert not validator("audit-record").is_valid({**record, "note": "x"})
    assert not validator("audit-record").is_valid({**record, "event": "deletion"})


def test_facade_exports_and_verifies(kernel, world, tmp_path, signing_key):
    result = kernel.audit.export(tmp_path / "f.csv", passphrase=PASSPHRASE, fmt="csv")
    assert result.manifest_path == tmp_path / "f.csv.manifest.json"
    report = AuditService.verify_export(tmp_path / "f.csv")
    assert report.ok and report.records == result.manifest["records"]
    assert_valid("audit-export-verify", report.to_dict())


# -- CSV in a spreadsheet ---------------------------------------------------------------------------


def test_csv_cells_never_start_a_formula_and_still_verify(cli, tmp_path, world, signing_key):
    path = export(cli, tmp_path, "csv")
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # UTF-8 BOM: spreadsheets read the text as UTF-8
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline="")))
    cells = [cell for row in rows for cell in row]
    assert not [c for c in cells if c.startswith(FORMULA_STARTS)]
    assert '\'=HYPERLINK("http://evil.example","click me")' in cells
    assert "'@SUM(A1:A9) opaque session ids in Redis" in cells
    assert "'-1 we need SQL" in cells and "'+Jenkins" in cells
    assert "''changed my mind'" in cells  # a leading apostrophe is escaped too, so unescaping is exact
    assert "Use make — ünïcode 日本" in cells
    assert verify(cli, path).code == 0


@given(st.text())
def test_cell_escaping_is_reversible_and_inert(value):
    cell = audit_export.escape_cell(value)
    assert not cell.startswith(FORMULA_STARTS)
    assert audit_export.unescape_cell(cell) == value
    assert audit_export.unescape_cell("") is None


# -- tampering with an export -------------------------------------------------------------------------


def rewrite(path: Path, fmt: str, change) -> None:
    """Parse the records, let ``change`` edit the list, write them back in the same format."""
    records = records_of(path, fmt)
    change(records)
    path.write_bytes(audit_export.render(records, fmt))


def rechain(records: list[dict], start: int) -> None:
    """What a careful forger does after editing: renumber, rederive and rehash from ``start`` on."""
    for index in range(start, len(records)):
        record = records[index]
        if index:
            record["seq"] = records[index - 1]["seq"] + 1
            record["prev_hash"] = records[index - 1]["hash"]
        record.update(audit_export.derived_fields(record))
        record["hash"] = row_hash(record["prev_hash"], record)


def _edit_field(records):
    records[2]["actor"] = "mallory"


def _edit_derived_field(records):
    records[2]["reviewer"] = "mallory"


def _insert_duplicate(records):
    records.insert(3, dict(records[2]))


def _insert_forged(records):
    forged = dict(records[2], actor="mallory", target="pr_" + "0" * 26)
    records.insert(3, forged)
    rechain(records, 3)


def _delete_middle(records):
    del records[3]


def _delete_first(records):
    del records[0]


def _delete_last(records):
    del records[-1]


def _reorder(records):
    records[2], records[3] = records[3], records[2]


def _edit_and_rechain(records):
    records[2]["actor"] = "mallory"
    rechain(records, 2)


TAMPERS = {
    "edit-a-hashed-field": (_edit_field, "(seq 3): the record was altered"),
    "edit-a-derived-field": (_edit_derived_field, "(seq 3): its 'reviewer' field does not match"),
    "insert-a-copied-record": (_insert_duplicate, "(seq 3): follows seq 3"),
    "insert-a-forged-record-and-rechain": (_insert_forged, "the file holds 18 records, the manifest 17"),
    "delete-a-record": (_delete_middle, "(seq 5): follows seq 3"),
    "delete-the-first-record": (_delete_first, "(seq 2): does not link to the manifest's anchor"),
    "delete-the-last-record": (_delete_last, "the file holds 16 records, the manifest 17"),
    "reorder": (_reorder, "(seq 4): follows seq 2"),
    "edit-and-rechain-everything": (_edit_and_rechain, "the last record is not the manifest's last"),
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("tamper", TAMPERS, ids=list(TAMPERS))
def test_tampered_records_are_caught(cli, tmp_path, world, signing_key, fmt, tamper):
    change, message = TAMPERS[tamper]
    path = export(cli, tmp_path, fmt)
    rewrite(path, fmt, change)
    result = verify(cli, path, "--json")
    line = one_line_error(result, 1)
    assert message in line, line
    assert str(path) in line
    report = json.loads(result.out)
    assert_valid("audit-export-verify", report)
    assert report["ok"] is False and report["problem"] in line
    if "(seq" in message:
        where = "line" if fmt == "jsonl" else "row"
        assert f"{where} {report['first_bad_line']} (seq {report['first_bad_seq']})" in line


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_byte_edited_in_place_is_caught(cli, tmp_path, world, signing_key, fmt):
    path = export(cli, tmp_path, fmt)
    data = path.read_bytes()
    assert data.count(b"carol") >= 1
    path.write_bytes(data.replace(b"carol", b"carl!", 1))
    line = one_line_error(verify(cli, path), 1)
    assert "was altered" in line or "does not match" in line


@pytest.mark.parametrize("fmt", FORMATS)
def test_truncation_is_caught(cli, tmp_path, world, signing_key, fmt):
    path = export(cli, tmp_path, fmt)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    line = one_line_error(verify(cli, path), 1)
    assert ("line " if fmt == "jsonl" else "row ") in line


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_trailing_newline_or_whitespace_is_caught(cli, tmp_path, world, signing_key, fmt):
    path = export(cli, tmp_path, fmt)
    path.write_bytes(path.read_bytes() + b"\n")
    one_line_error(verify(cli, path), 1)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_manifest_from_another_export_is_caught(cli, kernel, tmp_path, world, signing_key, fmt):
    first = export(cli, tmp_path, fmt, name=f"first.{fmt}")
    kernel.log("one more event")
    second = export(cli, tmp_path, fmt, name=f"second.{fmt}")
    result = verify(cli, first, "--manifest", str(audit_export.manifest_path_for(second)))
    line = one_line_error(result, 1)
    assert "the file holds 17 records, the manifest 18" in line


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_manifest_from_another_store_is_caught(cli, tmp_path, world, signing_key, fmt):
    path = export(cli, tmp_path, fmt)
    other_db = tmp_path / "other" / "ctx.db"
    other, _ = Ctx.init(other_db)
    other.log("a different store")
    other.close()
    other_out = tmp_path / f"other.{fmt}"
    result = cli("--db", str(other_db), "audit", "export", "--out", str(other_out), "--format", fmt, db=False)
    assert result.code == 0, result.err
    audit_export.manifest_path_for(path).write_bytes(audit_export.manifest_path_for(other_out).read_bytes())
    one_line_error(verify(cli, path), 1)


def _resign(path: Path, edit, key: Ed25519PrivateKey | None = None, claim_key: bool = False) -> None:
    """Edit the manifest, then sign it with ``key`` (naming that key unless ``claim_key``)."""
    manifest_path = audit_export.manifest_path_for(path)
    document = json.loads(manifest_path.read_text(encoding="utf-8"))
    edit(document["manifest"])
    if key is not None:
        if not claim_key:
            public = key.public_key()
            document["manifest"]["key"]["key_id"] = signing.key_id(public)
            document["manifest"]["key"]["public_key"] = signing.public_raw_b64(public)
        message = canonical_json(document["manifest"]).encode("utf-8")
        document["signature"]["value"] = base64.b64encode(key.sign(message)).decode("ascii")
    manifest_path.write_text(json.dumps(document), encoding="utf-8")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_manifest_signed_with_another_key_is_caught(cli, tmp_path, world, signing_key, fmt):
    path = export(cli, tmp_path, fmt)
    _resign(path, lambda m: None, Ed25519PrivateKey.generate())
    line = one_line_error(verify(cli, path), 1)
    assert "names signing key" in line and "not the trusted key" in line


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_manifest_signed_with_another_key_claiming_ours_is_caught(cli, tmp_path, world, signing_key, fmt):
    path = export(cli, tmp_path, fmt)
    _resign(path, lambda m: None, Ed25519PrivateKey.generate(), claim_key=True)
    line = one_line_error(verify(cli, path), 1)
    assert "signature does not verify" in line


MANIFEST_EDITS = {
    "counts": lambda m: m["counts"].update(rejection=0, other=2),
    "records": lambda m: m.update(records=EVENTS - 1),
    "time-range": lambda m: m.update(first_at="2020-01-01T00:00:00.000000Z"),
    "store-id": lambda m: m.update(store_id="somewhere-else"),
    "exported-at": lambda m: m.update(exported_at="2020-01-01T00:00:00.000000Z"),
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("edit", MANIFEST_EDITS, ids=list(MANIFEST_EDITS))
def test_an_edited_manifest_is_caught(cli, tmp_path, world, signing_key, fmt, edit):
    path = export(cli, tmp_path, fmt)
    _resign(path, MANIFEST_EDITS[edit])
    line = one_line_error(verify(cli, path), 1)
    assert "signature does not verify" in line


@pytest.mark.parametrize("fmt", FORMATS)
def test_records_edited_with_a_matching_manifest_still_fail_the_signature(
    cli, tmp_path, world, signing_key, fmt
):
    """A forger who rewrites the records and updates the manifest to match cannot re-sign it."""
    path = export(cli, tmp_path, fmt)
    rewrite(path, fmt, _edit_and_rechain)
    records = records_of(path, fmt)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    _resign(path, lambda m: m.update(last_hash=records[-1]["hash"], records_sha256=digest))
    result = verify(cli, path, "--json")
    line = one_line_error(result, 1)
    assert "signature does not verify" in line
    assert json.loads(result.out)["signature_ok"] is False


@pytest.mark.parametrize(
    "content",
    [b"", b"not json", b"[]", b'{"manifest": {}, "signature": {}}'],
    ids=["empty", "not-json", "a-list", "missing-fields"],
)
def test_a_malformed_manifest_is_one_line(cli, tmp_path, world, signing_key, content):
    path = export(cli, tmp_path, "jsonl")
    audit_export.manifest_path_for(path).write_bytes(content)
    result = verify(cli, path, "--json")
    line = one_line_error(result, 1)
    assert "manifest" in line
    report = json.loads(result.out)
    assert_valid("audit-export-verify", report)
    assert report["ok"] is False and report["format"] is None


def test_a_missing_manifest_is_one_line(cli, tmp_path, world, signing_key):
    path = export(cli, tmp_path, "jsonl")
    audit_export.manifest_path_for(path).unlink()
    line = one_line_error(verify(cli, path), 1)
    assert "no manifest" in line


# -- trusting a key ---------------------------------------------------------------------------------


@pytest.mark.parametrize("key_format", ["pem", "raw"])
def test_verify_with_the_exporters_public_key(cli, tmp_path, world, signing_key, monkeypatch, key_format):
    path = export(cli, tmp_path, "jsonl")
    pub = tmp_path / "exporter.pub"
    pub.write_text(cli("keys", "export-public", "--format", key_format, db=False).out)
    # The reviewer has no key of their own.
    monkeypatch.setenv("CTX_CONFIG_DIR", str(tmp_path / "reviewer-config"))
    result = verify(cli, path, "--pubkey", str(pub), "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert_valid("audit-export-verify", report)
    assert report["ok"] and report["trusted_key"] == signing_key.key_id
    assert report["trusted_key_source"] == f"--pubkey {pub}"


def test_verify_with_someone_elses_public_key_fails(cli, tmp_path, world, signing_key):
    path = export(cli, tmp_path, "jsonl")
    other = tmp_path / "other.pem"
    other.write_text(signing.public_pem(Ed25519PrivateKey.generate().public_key()))
    line = one_line_error(verify(cli, path, "--pubkey", str(other)), 1)
    assert "not the trusted key" in line


def test_verify_without_any_key_asks_for_pubkey(cli, tmp_path, world, signing_key, monkeypatch):
    path = export(cli, tmp_path, "jsonl")
    monkeypatch.setenv("CTX_CONFIG_DIR", str(tmp_path / "reviewer-config"))
    line = one_line_error(verify(cli, path), 2)
    assert "--pubkey" in line


@pytest.mark.parametrize(
    "content", [b"", b"garbage", b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"]
)
def test_a_bad_pubkey_file_is_one_line(cli, tmp_path, world, signing_key, content):
    path = export(cli, tmp_path, "jsonl")
    bad = tmp_path / "bad.pem"
    bad.write_bytes(content)
    one_line_error(verify(cli, path, "--pubkey", str(bad)), 1)


def test_an_rsa_public_key_is_refused(cli, tmp_path, world, signing_key):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = export(cli, tmp_path, "jsonl")
    rsa_pub = tmp_path / "rsa.pem"
    rsa_pub.write_bytes(
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    line = one_line_error(verify(cli, path, "--pubkey", str(rsa_pub)), 1)
    assert "Ed25519" in line


def test_verify_options_for_the_other_mode_are_usage_errors(cli, tmp_path, world, signing_key):
    store = str(tmp_path / "project" / ".ctx" / "ctx.db")
    one_line_error(cli("audit", "verify", "--manifest", store), 2)
    path = export(cli, tmp_path, "jsonl")
    manifest = str(audit_export.manifest_path_for(path))
    one_line_error(cli("audit", "verify", str(path), "--checkpoint", manifest), 2)


def test_a_pubkey_that_is_not_a_key_is_refused_when_verifying_the_store(cli, tmp_path, world):
    line = one_line_error(
        cli("audit", "verify", "--pubkey", str(tmp_path / "project" / ".ctx" / "ctx.db")), 1
    )
    assert "public key" in line


def test_verify_a_file_that_does_not_exist(cli, tmp_path):
    one_line_error(cli("audit", "verify", str(tmp_path / "nope.jsonl"), db=False), 2)


# -- partial exports --------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_partial_export_anchors_to_the_hash_before_it(cli, kernel, tmp_path, world, signing_key, fmt):
    events = kernel.audit.events()
    since, until = events[6].at, events[11].at
    path = export(cli, tmp_path, fmt, "--since", since, "--until", until, name=f"part.{fmt}")
    manifest = manifest_of(path)["manifest"]
    records = records_of(path, fmt)
    assert [r["seq"] for r in records] == list(range(7, 13))
    assert manifest["anchor_hash"] == events[5].hash == records[0]["prev_hash"]
    assert manifest["first_seq"] == 7 and manifest["last_seq"] == 12
    assert manifest["since"] == since and manifest["until"] == until
    assert manifest["store_head_seq"] == len(events) and manifest["store_head_hash"] == events[-1].hash
    result = verify(cli, path)
    assert result.code == 0, result.err
    assert f"anchored at {events[5].hash}" in result.out
    # Continuity: an earlier export's last hash is this export's anchor.
    before = export(cli, tmp_path, fmt, "--until", events[5].at, name=f"before.{fmt}")
    assert manifest_of(before)["manifest"]["last_hash"] == manifest["anchor_hash"]


def test_partial_exports_with_dates(cli, kernel, tmp_path, world, signing_key):
    today = datetime.now(UTC).date()
    whole = export(cli, tmp_path, "jsonl", "--since", today.isoformat(), "--until", today.isoformat())
    assert manifest_of(whole)["manifest"]["records"] == EVENTS
    assert manifest_of(whole)["manifest"]["since"] == f"{today.isoformat()}T00:00:00.000000Z"
    only_new = kernel.audit.events()[-1].at
    kernel.log("after the cut")
    tail = export(cli, tmp_path, "csv", "--since", only_new.replace("Z", "+00:00"), name="tail.csv")
    # The last ratification and the rejection it settled share one moment: both are in the range.
    assert [r["seq"] for r in records_of(tail, "csv")] == [EVENTS - 1, EVENTS, EVENTS + 1]
    assert verify(cli, tail).code == 0


def test_an_empty_range_exports_nothing(cli, tmp_path, world, signing_key):
    future = (datetime.now(UTC) + timedelta(days=3)).date().isoformat()
    out = tmp_path / "none.jsonl"
    line = one_line_error(cli("audit", "export", "--out", str(out), "--since", future), 1)
    assert "no audit events" in line
    assert not out.exists()


@pytest.mark.parametrize(
    "args",
    [
        ("--since", "yesterday"),
        ("--until", "2026-13-01"),
        ("--since", "2026-02-01", "--until", "2026-01-01"),
        ("--format", "xml"),
    ],
    ids=["word", "bad-month", "since-after-until", "format"],
)
def test_bad_export_arguments_are_usage_errors(cli, tmp_path, world, signing_key, args):
    out = tmp_path / "x.jsonl"
    one_line_error(cli("audit", "export", "--out", str(out), *args), 2)
    assert not out.exists()


def test_export_into_a_missing_folder_is_one_line(cli, tmp_path, world, signing_key):
    one_line_error(cli("audit", "export", "--out", str(tmp_path / "no" / "such" / "a.jsonl")), 2)


# -- tampering with the store -----------------------------------------------------------------------


def _sql(store_path: Path, *statements: str) -> None:
    """Run raw SQL as an attacker who puts back every trigger they dropped (so the schema verifies)."""
    conn = driver.connect(store_path, load_vec=False)
    dropped = []
    for statement in statements:
        if statement.startswith("DROP TRIGGER "):
            name = statement.removeprefix("DROP TRIGGER ")
            dropped += conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        conn.execute(statement)
    for definition in dropped:
        conn.execute(definition)
    conn.commit()
    conn.close()


def _store_tampers(world: dict[str, str]) -> dict[str, tuple[tuple[str, ...], str]]:
    return {
        "update-an-audit-row": (
            ("DROP TRIGGER audit_no_update", "UPDATE audit SET actor = 'mallory' WHERE seq = 3"),
            "row 3 was altered",
        ),
        "delete-an-audit-row": (
            ("DROP TRIGGER audit_no_delete", "DELETE FROM audit WHERE seq = 4"),
            "row 5 follows row 3",
        ),
        "delete-the-last-audit-row": (
            ("DROP TRIGGER audit_no_delete", "DELETE FROM audit WHERE seq = (SELECT max(seq) FROM audit)"),
            "(status differs)",
        ),
        "edit-a-decision": (
            (
                "DROP TRIGGER decision_close_once",
                "UPDATE decision SET decision = 'Use MD5 for passwords' WHERE subject = 'build.tool'",
            ),
            "(decision differs)",
        ),
        "edit-who-ratified": (
            ("DROP TRIGGER decision_close_once", "UPDATE decision SET ratified_by = 'mallory'"),
            "(ratified_by differs)",
        ),
        # The trigger allows closing a window once; doing it without an audit row is still caught.
        "close-a-window-silently": (
            (
                "UPDATE decision SET valid_until = '2030-01-01T00:00:00.000000Z', closed_by = 'retired' "
                "WHERE valid_until IS NULL",
            ),
            "(valid_until differs)",
        ),
        "resolve-a-proposal-silently": (
            (
                "DROP TRIGGER proposal_resolve_once",
                "UPDATE proposal SET status = 'pending', resolved_by = NULL "
                f"WHERE id = '{world['rejected']}'",
            ),
            f"proposal {world['rejected']} does not match",
        ),
        "edit-an-evidence-text": (
            ("DROP TRIGGER evidence_no_update", "UPDATE evidence SET text = 'User: all is well.'"),
            "text does not match its content hash",
        ),
    }


@pytest.mark.parametrize(
    "tamper",
    [
        "update-an-audit-row",
        "delete-an-audit-row",
        "delete-the-last-audit-row",
        "edit-a-decision",
        "edit-who-ratified",
        "close-a-window-silently",
        "resolve-a-proposal-silently",
        "edit-an-evidence-text",
    ],
)
def test_tampering_with_the_store_is_caught_by_verify_and_export(
    cli, kernel, store_path, tmp_path, world, signing_key, tamper
):
    assert kernel.audit.verify(state=True).ok
    statements, message = _store_tampers(world)[tamper]
    _sql(store_path, *statements)
    result = cli("audit", "verify", "--json")
    line = one_line_error(result, 1)
    assert message in line, line
    report = json.loads(result.out)
    assert_valid("audit-verify", report)
    assert report["ok"] is False
    assert not kernel.audit.verify(state=True).ok
    out = tmp_path / "after.jsonl"
    refused = one_line_error(cli("audit", "export", "--out", str(out)), 1)
    assert "not exporting" in refused and message in refused
    assert not out.exists()


def test_an_export_taken_before_the_store_was_tampered_still_verifies(
    cli, store_path, tmp_path, world, signing_key
):
    path = export(cli, tmp_path, "jsonl")
    _sql(store_path, "DROP TRIGGER audit_no_update", "UPDATE audit SET actor = 'mallory' WHERE seq = 3")
    assert verify(cli, path).code == 0
    assert cli("audit", "verify").code == 1


def test_state_check_accepts_imported_adrs_and_splits(kernel, tmp_path, signing_key):
    data = Path(__file__).resolve().parent / "data" / "adr"
    kernel.import_adrs(data / "nygard", reviewer="alice")
    kernel.import_adrs(data / "madr", reviewer="bob")
    decisions = kernel.decisions()
    # A split: one proposal names an already closed decision, which stays as it was.
    closed = next(d for d in kernel.decisions(include_closed=True) if not d.current)
    proposal = kernel.propose(decisions[0].subject, "A successor", supersedes=[closed.id])
    kernel.ratify(proposal.id, reviewer="carol")
    report = kernel.audit.verify(state=True)
    assert report.ok, report
    result = kernel.audit.export(tmp_path / "adr.jsonl", passphrase=PASSPHRASE)
    assert result.manifest["counts"]["import"] > 0
    assert AuditService.verify_export(tmp_path / "adr.jsonl").ok


# -- keys -------------------------------------------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")
def test_keys_init_writes_an_encrypted_key_only_you_can_read(cli, tmp_path, passphrase):
    result = cli("keys", "init", db=False)
    assert result.code == 0, result.err
    private, public = signing.key_paths()
    assert private.parent == tmp_path / "config" / "keys"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert stat.S_IMODE(private.parent.stat().st_mode) == 0o700
    assert private.read_bytes().startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----")
    assert public.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    assert PASSPHRASE.encode() not in private.read_bytes()
    key_id = AuditService.signing_key().key_id
    assert key_id in result.out and str(private) in result.out


def test_keys_init_refuses_to_overwrite_without_force(cli, tmp_path, signing_key):
    before = signing.key_paths()[0].read_bytes()
    line = one_line_error(cli("keys", "init", db=False), 1)
    assert "--force" in line
    assert signing.key_paths()[0].read_bytes() == before
    assert cli("keys", "init", "--force", db=False).code == 0
    assert AuditService.signing_key().key_id != signing_key.key_id
    kept = signing.key_paths()[1].with_name(f"audit-signing-key.{signing_key.key_id[:16]}.pub.pem")
    assert signing.load_public_key(kept)[1] == signing_key.key_id


def test_an_old_export_verifies_with_the_replaced_keys_public_half(cli, tmp_path, world, signing_key):
    path = export(cli, tmp_path, "jsonl")
    assert cli("keys", "init", "--force", db=False).code == 0
    assert verify(cli, path).code == 1
    kept = signing.key_paths()[1].with_name(f"audit-signing-key.{signing_key.key_id[:16]}.pub.pem")
    assert verify(cli, path, "--pubkey", str(kept)).code == 0


def test_wrong_passphrase_is_one_line_exit_1(cli, tmp_path, world, signing_key, monkeypatch):
    monkeypatch.setenv("CTX_KEY_PASSPHRASE", "not the passphrase")
    out = tmp_path / "a.jsonl"
    line = one_line_error(cli("audit", "export", "--out", str(out)), 1)
    assert "wrong passphrase" in line
    assert not out.exists() and not audit_export.manifest_path_for(out).exists()


def test_empty_passphrase_is_refused(cli, monkeypatch):
    monkeypatch.setenv("CTX_KEY_PASSPHRASE", "")
    line = one_line_error(cli("keys", "init", db=False), 2)
    assert "empty" in line
    assert not signing.key_paths()[0].exists()


def test_no_passphrase_without_a_terminal(cli, monkeypatch):
    monkeypatch.delenv("CTX_KEY_PASSPHRASE", raising=False)
    line = one_line_error(cli("keys", "init", db=False), 2)
    assert "CTX_KEY_PASSPHRASE" in line


def test_export_without_a_key_says_to_run_keys_init(cli, tmp_path, world, passphrase):
    line = one_line_error(cli("audit", "export", "--out", str(tmp_path / "a.jsonl")), 1)
    assert "ctx keys init" in line


def test_export_public_without_a_key(cli):
    line = one_line_error(cli("keys", "export-public", db=False), 1)
    assert "ctx keys init" in line


def test_export_public_formats(cli, signing_key):
    pem = cli("keys", "export-public", db=False).out
    assert pem.startswith("-----BEGIN PUBLIC KEY-----") and pem.endswith("-----END PUBLIC KEY-----\n")
    raw = cli("keys", "export-public", "--format", "raw", db=False).out.strip()
    assert raw == signing_key.public_raw and len(base64.b64decode(raw)) == 32
    assert hashlib.sha256(base64.b64decode(raw)).hexdigest() == signing_key.key_id


def test_a_damaged_key_file_is_one_line(cli, tmp_path, world, signing_key):
    signing.key_paths()[0].write_bytes(b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n")
    one_line_error(cli("audit", "export", "--out", str(tmp_path / "a.jsonl")), 1)


def test_an_unencrypted_key_file_is_refused(cli, tmp_path, world, signing_key):
    from cryptography.hazmat.primitives import serialization

    key = Ed25519PrivateKey.generate()
    signing.key_paths()[0].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    line = one_line_error(cli("audit", "export", "--out", str(tmp_path / "a.jsonl")), 1)
    assert "not encrypted" in line


def _on_terminal(args: list[str], answers: list[bytes], env: dict[str, str]) -> tuple[int, str]:
    """Run ``ctx`` on a pseudo-terminal, typing each answer once a prompt (a line ending in ': ') shows."""
    import select
    import subprocess
    import time

    master, slave = os.openpty()
    ctx = str(Path(sys.executable).parent / "ctx")
    proc = subprocess.Popen([ctx, *args], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    output, pending = b"", list(answers)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            output += chunk
            if pending and output.rstrip(b" ").endswith(b":"):
                os.write(master, pending.pop(0))
        elif proc.poll() is not None:
            break
    proc.wait(timeout=60)
    os.close(master)
    return proc.returncode, output.decode(errors="replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_keys_init_and_export_prompt_on_a_terminal(kernel, store_path, tmp_path, world):
    env = {**os.environ, "CTX_DB": str(store_path), "CTX_CONFIG_DIR": str(tmp_path / "config")}
    env.pop("CTX_KEY_PASSPHRASE", None)
    code, output = _on_terminal(["keys", "init"], [b"s3cret phrase\n", b"s3cret phrase\n"], env)
    assert code == 0, output
    assert "Passphrase for the signing key" in output and "Repeat for confirmation" in output
    assert "s3cret" not in output  # hidden input
    assert stat.S_IMODE((tmp_path / "config" / "keys" / "audit-signing-key.pem").stat().st_mode) == 0o600
    out = tmp_path / "t.jsonl"
    code, output = _on_terminal(["audit", "export", "--out", str(out)], [b"wrong\n"], env)
    assert code == 1 and "wrong passphrase" in output, output
    code, output = _on_terminal(["audit", "export", "--out", str(out)], [b"s3cret phrase\n"], env)
    assert code == 0, output
    assert out.is_file()
