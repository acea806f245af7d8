"""What ctx writes into the audit log, pinned: a session that performs every action, exported, must
give the rows in tests/data/audit/ byte for byte (the ``before`` and ``after`` texts are hashed into
the chain and signed in exports, so a changed key, value or omission would be a different log).

The expected rows were written by ctx itself; ids, times, random key ids and the chain's hashes
(which follow from them) are numbered in order of appearance, so only what the code decides is
compared. After an intended change of what the log says, write them again with
``CTX_WRITE_AUDIT_PINS=1 python -m pytest tests/test_audit_payloads.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from test_audit_replay import as_written_before

from ctx_kernel.kernel import limits
from ctx_kernel.kernel.audit import export as audit_export
from ctx_kernel.kernel.audit import replay
from ctx_kernel.kernel.payloads import (
    PAYLOADS,
    DecisionImported,
    EvidenceLogged,
    ProposalCreated,
    ProposalImported,
)
from ctx_kernel.kernel.records import ABSENT, may_be_absent

PINS = Path(__file__).resolve().parent / "data" / "audit"
SCHEMA = Path(__file__).resolve().parent.parent / "schemas" / "audit-record.schema.json"
MADR = Path(__file__).resolve().parent / "data" / "adr" / "madr"
PASSPHRASE = "correct horse battery staple"
VAULT_KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="  # bytes 0..31, base64

# The values a run chooses rather than the code: ids (the store's a bare ULID), times, vault key ids.
_VARIABLE = (
    ("id", re.compile(r"\b(?:(?:ev|pr|dc)_)?[0-9A-HJKMNP-TV-Z]{26}\b")),
    ("time", re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z\b")),
    ("key", re.compile(r"\b[0-9a-f]{16}\b")),
)

# A proposed ADR with deciders and a claimed ratifier: its proposal keeps them, and so does its
# ratification's audit row.
PROPOSED_ADR = """\
---
status: proposed
date: 2024-02-01
deciders: Ana, Bo
ctx-ratified-by: Ana
---

# Adopt trunk-based development

## Context and Problem Statement

Long-lived branches make every merge a negotiation.

## Decision Outcome

Chosen option: merge to main at least daily behind feature flags.
"""


def normalise(records: list[dict], names: dict[str, str]) -> list[dict]:
    """The records with what a run chooses numbered in order of appearance, and ``names`` replaced."""
    text = "\n".join(
        json.dumps({k: v for k, v in r.items() if k not in ("prev_hash", "hash")}) for r in records
    )
    for kind, pattern in _VARIABLE:
        seen: dict[str, str] = {}
        text = pattern.sub(lambda m, k=kind, s=seen: s.setdefault(m.group(0), f"<{k} {len(s) + 1}>"), text)
    for name, stand_in in names.items():
        # A name is a whole JSON string, in a record's fields or inside its before and after texts.
        text = text.replace(f'"{name}"', f'"{stand_in}"').replace(f'\\"{name}\\"', f'\\"{stand_in}\\"')
    return [json.loads(line) for line in text.split("\n")]


def session(ctx: Callable[..., str], folder: Path, *, vault: bool, login: str | None = None) -> None:
    """Every act that writes an audit row, through the CLI, each way its row can differ; on a server
    (``login``) every person and agent named is the login, as the server insists."""

    def who(name: str) -> str:
        return login or name

    def json_of(*args: str) -> dict:
        return json.loads(ctx(*args, "--json"))

    ctx("init")
    note = ctx(
        "log",
        "We agreed on JWT",
        "--agent",
        who("claude"),
        "--session",
        "s1",
        "--tag",
        "auth",
        "--tag",
        "security",
        "--source",
        "notes.md#L3",
    ).strip()
    chat = ctx("log", "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789", "--kind", "log").strip()
    said = {"text": "I prefer opaque ids", "speaker": "user", "created_at": "2024-05-01T10:00:00Z"}
    ctx("log", "--jsonl", "-", "--agent", who("codex"), "--session", "s2", stdin=json.dumps(said).encode())

    first = json_of(
        "propose",
        "--subject",
        "auth.tokens",
        "--decision",
        "Use JWT",
        "--title",
        "JWT tokens",
        "--rationale",
        "Stateless checks at the edge",
        "--evidence",
        note,
        "--agent",
        who("claude"),
        "--session",
        "s1",
    )
    jwt = json_of("ratify", first["id"], "--yes", "--reviewer", who("alice"))["decision"]["id"]
    opaque = json_of(
        "propose",
        "--subject",
        "auth.tokens",
        "--decision",
        "Use opaque session ids",
        "--evidence",
        chat,
        "--agent",
        who("claude"),
    )
    twin = json_of(
        "propose",
        "--subject",
        "auth.tokens",
        "--decision",
        "Use opaque session ids!",
        "--agent",
        who("gemini"),
    )
    assert twin["near_duplicate_of"] == opaque["id"]
    amended = json_of(
        "ratify",
        opaque["id"],
        "--decision",
        "Use opaque session ids in Redis",
        "--yes",
        "--reviewer",
        who("bob"),
    )
    assert amended["superseded"] == [jwt] and amended["settled"] == [twin["id"]]

    make = json_of("propose", "--subject", "build.tool", "--decision", "Use make", "--agent", who("claude"))
    retired = json_of("ratify", make["id"], "--yes", "--reviewer", who("alice"))["decision"]["id"]
    ctx("retire", "build.tool", "--reason", "moved to just", "--yes", "--reviewer", who("alice"))
    just = json_of(
        "propose",
        "--subject",
        "build.runner",
        "--decision",
        "Use just",
        "--supersedes",
        retired,
        "--agent",
        who("claude"),
    )
    assert json_of("ratify", just["id"], "--yes", "--reviewer", who("bob"))["superseded"] == [retired]

    mongo = json_of(
        "propose", "--subject", "db.engine", "--decision", "Use MongoDB", "--agent", who("claude")
    )
    ctx("reject", mongo["id"], "--reason", "we need SQL", "--yes", "--reviewer", who("alice"))
    jenkins = json_of(
        "propose", "--subject", "ci.provider", "--decision", "Use Jenkins", "--agent", who("claude")
    )
    ctx("withdraw", jenkins["id"], "--reason", "changed my mind", "--agent", who("claude"))
    travis = json_of(
        "propose", "--subject", "ci.provider", "--decision", "Use Travis", "--agent", who("claude")
    )
    ctx("withdraw", travis["id"], "--agent", who("claude"))

    madr = json_of("import", "adr", str(MADR), "--yes", "--reviewer", who("carol"))
    assert madr["decisions"] and madr["proposals"]
    extra = folder / "extra-adrs"
    extra.mkdir()
    (extra / "0001-adopt-trunk-based-development.md").write_text(PROPOSED_ADR, encoding="utf-8")
    (trunk,) = json_of("import", "adr", str(extra), "--yes", "--reviewer", who("carol"))["proposals"]
    ctx("ratify", trunk, "--yes", "--reviewer", who("alice"))
    pending = [p["id"] for p in json_of("queue")["proposals"]]
    for proposal in pending:
        ctx("ratify", proposal, "--yes", "--reviewer", who("bob"))

    if vault:
        ctx("encrypt")
        ctx("log", "Sealed from the start", "--agent", who("claude"))
        ctx("rekey")

    # A decision that governs code: its ratification and re-confirmation snapshot a git checkout
    # whose commits are made at fixed times by a fixed author, so their ids are the same every run.
    repo, git = pinned_repo(folder / "repo")
    previous = Path.cwd()
    os.chdir(repo)
    try:
        governs = json_of(
            "propose",
            "--subject",
            "store.layout",
            "--decision",
            "Keep one store module",
            "--link",
            "src/**",
            "--link",
            "README.md",
            "--agent",
            who("claude"),
        )
        ratified = json_of(
            "ratify", governs["id"], "--yes", "--reviewer", who("alice"), "--review-every", "90d"
        )["decision"]["id"]
        (repo / "src" / "store.py").write_text("STORE = 2\n", encoding="utf-8")
        git("commit", "-q", "-am", "Store two")
        ctx("reconfirm", ratified, "--yes", "--reviewer", who("alice"), "--review-by", "2030-01-01")
    finally:
        os.chdir(previous)


def pinned_repo(repo: Path) -> tuple[Path, Callable[..., None]]:
    """A git repository whose commits have fixed authors and times (so fixed ids), and its git."""
    fixed = {
        "GIT_AUTHOR_NAME": "Ann",
        "GIT_AUTHOR_EMAIL": "ann@example.org",
        "GIT_COMMITTER_NAME": "Ann",
        "GIT_COMMITTER_EMAIL": "ann@example.org",
        "GIT_AUTHOR_DATE": "2024-05-01T10:00:00Z",
        "GIT_COMMITTER_DATE": "2024-05-01T10:00:00Z",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, env={**os.environ, **fixed}, check=True, capture_output=True)

    (repo / "src").mkdir(parents=True)
    (repo / "src" / "store.py").write_text("STORE = 1\n", encoding="utf-8")
    (repo / "README.md").write_text("A project\n", encoding="utf-8")
    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-q", "-m", "Start")
    return repo, git


def exported(ctx: Callable[..., str], folder: Path) -> list[dict]:
    """The store's whole log as a signed export's records, after checking the chain and the export."""
    assert ctx("audit", "verify").startswith("audit chain ok")
    out = folder / "audit.jsonl"
    ctx("audit", "export", "--out", str(out))
    assert ctx("audit", "verify", str(out)).startswith("export ok")
    return [record for _, record in audit_export.parse_records(out.read_bytes(), "jsonl")]


def check_described(records: list[dict]) -> None:
    """Each record's payloads match what the audit-record schema says its action's hold, and so do
    the rows an earlier ctx wrote; the schema's record validates as it did before it said so."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    said = {
        block["if"]["properties"]["action"]["const"]: block["then"]["properties"] for block in schema["allOf"]
    }
    assert set(said) == set(PAYLOADS)
    for row in [*records, *as_written_before([dict(r) for r in records])]:
        for name in ("before", "after"):
            if row[name] is None:
                assert name not in said[row["action"]], (row["seq"], name)
                continue
            content = said[row["action"]][name]
            assert content["contentMediaType"] == "application/json"
            Draft202012Validator(content["contentSchema"]).validate(json.loads(row[name]))
    # Content keywords are annotations: a record whose payload says something else still validates.
    assert Draft202012Validator(schema).is_valid({**records[0], "after": '{"unknown": 1}'})
    assert Draft202012Validator(schema).is_valid({**records[0], "after": "not JSON"})


def check_pinned(records: list[dict], pin: str) -> None:
    """The normalised records are the pinned ones, row for row (or, when asked, become them)."""
    path = PINS / pin
    if os.environ.get("CTX_WRITE_AUDIT_PINS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        pytest.skip(f"wrote {path.name}")
    expected = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == len(expected)
    for got, wanted in zip(records, expected, strict=True):
        assert got == wanted, (
            f"audit row {wanted['seq']} ({wanted['action']}) differs from tests/data/audit/{pin}"
        )


@pytest.fixture
def run_ctx(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Callable[..., str]]:
    """``ctx`` on a given store (a path or a server), with the signing key and vault key set."""
    monkeypatch.setenv("CTX_KEY_PASSPHRASE", PASSPHRASE)
    monkeypatch.setenv("CTX_VAULT_KEY", VAULT_KEY)
    monkeypatch.setattr("getpass.getuser", lambda: "tester")
    assert cli("keys", "init", db=False).code == 0

    def on(store: str) -> Callable[..., str]:
        def ctx(*args: str, stdin: bytes = b"") -> str:
            result = cli("--db", store, *args, stdin=stdin, db=False)
            assert result.code == 0, (args, result.err)
            return result.out

        return ctx

    return on


def test_every_action_is_pinned_and_has_its_payload_records():
    pinned = {
        json.loads(line)["action"]
        for line in (PINS / "sqlite.jsonl").read_text(encoding="utf-8").splitlines()
    }
    assert pinned == set(PAYLOADS) == set(limits.AUDIT_EVENT_TYPES)


@pytest.mark.parametrize("pin", ["sqlite.jsonl", "postgresql.jsonl"])
def test_each_pinned_payload_is_read_and_written_again_byte_for_byte_by_its_record(pin: str):
    for line in (PINS / pin).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for record, text in zip(PAYLOADS[row["action"]], (row["before"], row["after"]), strict=True):
            if record is None:
                assert text is None, row
                continue
            again = record.from_audit(json.loads(text)).to_dict()
            assert json.dumps(again, sort_keys=True) == text, (row["seq"], record.__name__)


def test_a_key_a_row_lacks_reads_as_absent_where_a_row_may_lack_it_else_as_none():
    first = EvidenceLogged.from_audit({"content_hash": "0" * 64, "kind": "note", "session": None, "tags": []})
    assert (first.kind, first.session, first.tags) == ("note", None, [])
    assert (first.agent, first.source, first.speaker, first.occurred_at, first.redacted) == (ABSENT,) * 5
    assert first.to_dict() == {"content_hash": "0" * 64, "kind": "note", "session": None, "tags": []}
    assert EvidenceLogged.from_audit({}).content_hash is None  # a damaged row: compared as none


def test_the_keys_replay_leaves_unchecked_when_absent_are_keys_a_row_may_lack():
    for record, keys in (
        (EvidenceLogged, replay._EVIDENCE_OPTIONAL),
        (ProposalCreated, replay._PROPOSAL_OPTIONAL),
        (ProposalImported, replay._IMPORTED_PROPOSAL_OPTIONAL),
        (DecisionImported, replay._IMPORTED_DECISION_OPTIONAL),
    ):
        assert set(keys) <= may_be_absent(record), record.__name__


def test_the_log_a_session_writes_is_pinned_byte_for_byte(run_ctx, store_path: Path, tmp_path: Path):
    ctx = run_ctx(str(store_path))
    session(ctx, tmp_path, vault=True)
    records = exported(ctx, tmp_path)
    check_described(records)
    check_pinned(normalise(records, {}), "sqlite.jsonl")


def test_the_log_a_session_writes_on_postgresql_is_pinned_byte_for_byte(run_ctx, pg_empty, tmp_path: Path):
    from psycopg.conninfo import conninfo_to_dict

    url = pg_empty.url()
    ctx = run_ctx(url)
    # On a server every act is the login's (the administrator's here, whatever its name).
    login = str(conninfo_to_dict(url).get("user") or "postgres")
    session(ctx, tmp_path, vault=False, login=login)
    records = exported(ctx, tmp_path)
    check_described(records)
    check_pinned(normalise(records, {login: "<login>"}), "postgresql.jsonl")
