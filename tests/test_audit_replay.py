"""`ctx audit verify` on a store: every raw SQL change to what agents are told is named, and signed
checkpoints catch a history rewritten and rehashed from the start."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jsonschema import Draft202012Validator

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.audit import checkpoints as audit_checkpoint
from ctx_kernel.kernel.audit import signing
from ctx_kernel.kernel.audit.schema import expected_objects
from ctx_kernel.kernel.audit.service import AuditService
from ctx_kernel.kernel.chain import GENESIS_HASH, row_hash
from ctx_kernel.kernel.store.sqlite import driver

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
ADRS = Path(__file__).resolve().parent / "data" / "adr" / "nygard"
PASSPHRASE = "correct horse battery staple"
LATER = "2099-01-01T00:00:00.000000Z"


def assert_valid(name: str, document: object) -> None:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(document)]
    assert not errors, errors


def one_line_error(result, code: int) -> str:
    assert result.code == code, (result.code, result.out, result.err)
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctx: error: "), result.err
    return lines[0]


@pytest.fixture
def signing_key(cli, monkeypatch: pytest.MonkeyPatch) -> signing.KeyInfo:
    monkeypatch.setenv("CTX_KEY_PASSPHRASE", PASSPHRASE)
    assert cli("keys", "init", db=False).code == 0
    return AuditService.signing_key()


@pytest.fixture
def world(kernel: Ctx) -> dict[str, str]:
    """Decisions, links, citations, conflicts, pending proposals, imported ADRs and evidence with metadata."""
    note = kernel.log(
        "Audit found admin accounts without MFA", agent="claude", tags=["security"], source="notes.md#L3"
    ).id
    other = kernel.log("Redis already runs in production", agent="codex", kind="log").id
    old = kernel.propose("auth.admin", "MFA is optional for admins", proposer="claude")
    kernel.ratify(old.id, reviewer="alice")
    mfa = kernel.propose(
        "auth.admin",
        "Require MFA for admins",
        rationale="Admins hold the keys",
        evidence=[note],
        proposer="claude",
    )
    mfa_id = kernel.ratify(mfa.id, reviewer="alice").decision.id
    cache = kernel.propose("cache.backend", "Use `redis` for the HTTP response cache.", evidence=[other])
    cache_id = kernel.ratify(cache.id, reviewer="bob").decision.id
    infra = kernel.propose("infra.datastores", "Never use redis in production; remove it from the stack.")
    infra_id = kernel.ratify(infra.id, reviewer="bob").decision.id
    pending = kernel.propose(
        "ci.provider",
        "Use GitHub Actions",
        evidence=[other],
        supersedes=[cache_id],
        proposer="gemini",
        session="s1",
    )
    kernel.import_adrs(ADRS, reviewer="carol")
    imported = next(d for d in kernel.decisions(include_closed=True) if d.source and d.rationale)
    linked = next(d for d in kernel.decisions(include_closed=True) if d.source and d.superseded_by)
    assert kernel.facts.conflicts(), "the world needs a recorded conflict"
    return {
        "note": note,
        "other": other,
        "old": kernel.decision(mfa_id).supersedes[0],
        "mfa": mfa_id,
        "mfa_proposal": mfa.id,
        "cache": cache_id,
        "infra": infra_id,
        "pending": pending.id,
        "imported": imported.id,
        "linked_old": linked.id,
        "linked_new": linked.superseded_by[0],
    }


def tamper(store_path: Path, statement: str, params: tuple = (), bypass: str | None = None) -> None:
    """One raw SQL statement; ``bypass`` names a trigger that would refuse it, dropped and put back."""
    conn = driver.connect(store_path, load_vec=False)
    conn.execute("PRAGMA foreign_keys = OFF")  # a raw connection does not enforce them
    definition = None
    if bypass is not None:
        definition = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (bypass,)).fetchone()[0]
        conn.execute(f"DROP TRIGGER {bypass}")
    assert conn.execute(statement, params).rowcount >= 1, statement
    if definition is not None:
        conn.execute(definition)
    conn.commit()
    conn.close()


def verify_fails(cli, *args: str) -> tuple[str, dict]:
    result = cli("audit", "verify", "--json", *args)
    line = one_line_error(result, 1)
    report = json.loads(result.out)
    assert_valid("audit-verify", report)
    assert report["ok"] is False and report["problem"] in line
    return line, report


# Each tamper: the statement (with {ids} from the world), the trigger it must get past, and what the
# error names: the table, the row and the field.
TAMPERS = {
    "link-a-current-decision-as-superseded": (
        "INSERT INTO supersession (old_id, new_id, created_at) VALUES ('{mfa}', '{infra}', '" + LATER + "')",
        None,
        "supersession row ({mfa} -> {infra}) is not in the audit log",
    ),
    "remove-a-supersession-link": (
        "DELETE FROM supersession WHERE old_id = '{old}'",
        "supersession_no_delete",
        "supersession row ({old} -> {mfa}) is missing from the store",
    ),
    "redate-a-supersession-link": (
        "UPDATE supersession SET created_at = '" + LATER + "' WHERE old_id = '{old}'",
        "supersession_no_update",
        "supersession row ({old} -> {mfa}) does not match audit row",
    ),
    "remove-an-imported-link": (
        "DELETE FROM supersession WHERE old_id = '{linked_old}'",
        "supersession_no_delete",
        "supersession row ({linked_old} -> {linked_new}) is missing from the store",
    ),
    "remove-a-decision-citation": (
        "DELETE FROM decision_evidence WHERE decision_id = '{mfa}'",
        None,
        "decision_evidence row ({mfa}, {note}) is missing from the store",
    ),
    "add-a-decision-citation": (
        "INSERT INTO decision_evidence (decision_id, evidence_id) VALUES ('{mfa}', '{other}')",
        None,
        "decision_evidence row ({mfa}, {other}) is not in the audit log",
    ),
    "remove-a-proposal-citation": (
        "DELETE FROM proposal_evidence WHERE proposal_id = '{pending}'",
        None,
        "proposal_evidence row ({pending}, {other}) is missing from the store",
    ),
    "add-a-proposal-citation": (
        "INSERT INTO proposal_evidence (proposal_id, evidence_id) VALUES ('{pending}', '{note}')",
        None,
        "proposal_evidence row ({pending}, {note}) is not in the audit log",
    ),
    "edit-an-imported-rationale": (
        "UPDATE decision SET rationale = 'Because mallory said so' WHERE id = '{imported}'",
        "decision_close_once",
        "decision {imported} does not match audit row",
        "(rationale differs)",
    ),
    "edit-who-ratified-an-import": (
        "UPDATE decision SET ratified_by = 'mallory' WHERE id = '{imported}'",
        "decision_close_once",
        "decision {imported} does not match audit row",
        "(ratified_by differs)",
    ),
    "edit-a-ratified-rationale": (
        "UPDATE decision SET rationale = 'Optional' WHERE id = '{mfa}'",
        "decision_close_once",
        "decision {mfa} does not match audit row",
        "(rationale differs)",
    ),
    "edit-a-close-reason": (
        "UPDATE decision SET close_reason = 'never mind' WHERE id = '{old}'",
        "decision_close_once",
        "decision {old} does not match audit row",
        "(close_reason differs)",
    ),
    "give-a-decision-an-adr-source": (
        "UPDATE decision SET source = 'docs/adr/0042.md' WHERE id = '{mfa}'",
        "decision_close_once",
        "decision {mfa} does not match audit row",
        "(source differs)",
    ),
}
EVIDENCE_FIELDS = {
    "agent": "'mallory'",
    "kind": "'doc'",
    "tags": "'[]'",
    "source": "'elsewhere.md'",
    "session": "'s9'",
    "speaker": "'user'",
    "occurred_at": f"'{LATER}'",
    "created_at": f"'{LATER}'",
    "content_hash": "'" + "0" * 64 + "'",
}
PROPOSAL_FIELDS = {
    "subject": "'ci.runner'",
    "decision": "'Use Jenkins'",
    "rationale": "'cheaper'",
    "proposer": "'mallory'",
    "session": "'s9'",
    "created_at": f"'{LATER}'",
    "supersedes": "'[]'",
    "explicit_supersedes": "'[]'",
    "near_duplicate_score": "99.0",
    "source": "'docs/adr/0042.md'",
    "adr_number": "42",
}
for name, value in EVIDENCE_FIELDS.items():
    TAMPERS[f"edit-evidence-{name}"] = (
        f"UPDATE evidence SET {name} = {value} WHERE id = '{{note}}'",
        "evidence_no_update",
        "evidence {note} does not match audit row",
        f"({name} differs)",
    )
for name, value in PROPOSAL_FIELDS.items():
    TAMPERS[f"edit-proposal-{name}"] = (
        f"UPDATE proposal SET {name} = {value} WHERE id = '{{pending}}'",
        "proposal_resolve_once",
        "proposal {pending} does not match audit row",
        f"({name} differs)",
    )
TAMPERS["edit-when-a-proposal-was-resolved"] = (
    "UPDATE proposal SET resolved_at = '" + LATER + "' WHERE id = '{mfa_proposal}'",
    "proposal_resolve_once",
    "proposal {mfa_proposal} does not match audit row",
    "(resolved_at differs)",
)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_one_statement_changing_what_agents_are_told_is_named(cli, store_path, world, name):
    statement, bypass, *expected = TAMPERS[name]
    assert cli("audit", "verify").code == 0
    tamper(store_path, statement.format(**world), bypass=bypass)
    line, _report = verify_fails(cli)
    for part in expected:
        assert part.format(**world) in line, line


def test_a_forged_link_changes_recall_and_is_named(cli, kernel, store_path, world):
    tamper(store_path, TAMPERS["link-a-current-decision-as-superseded"][0].format(**world))
    assert kernel.decision(world["mfa"]).superseded_by == [world["infra"]]  # what agents would be told
    line, _report = verify_fails(cli)
    assert f"supersession row ({world['mfa']} -> {world['infra']})" in line


def test_a_forged_conflict_is_named(cli, store_path, world):
    tamper(
        store_path,
        "INSERT INTO decision_conflict (decision_id, other_id, term, clause, other_clause) "
        "VALUES (?, ?, 'mfa', 'Require MFA for admins', 'Use redis')",
        (world["mfa"], world["cache"]),
    )
    line, _ = verify_fails(cli)
    assert f"decision_conflict row ({world['mfa']}, {world['cache']}) is not a conflict" in line
    assert "(term differs)" in line


def test_an_edited_conflict_clause_is_named(cli, store_path, world):
    tamper(
        store_path,
        "UPDATE decision_conflict SET clause = 'Use redis everywhere' WHERE decision_id = ?",
        (world["cache"],),
    )
    line, _ = verify_fails(cli)
    assert (
        f"decision_conflict row ({world['cache']}, {world['infra']})" in line and "(clause differs)" in line
    )


def test_an_evidence_row_added_beside_the_log_is_named(cli, store_path, world):
    tamper(
        store_path,
        "INSERT INTO evidence (id, content_hash, text, kind, tags, created_at) "
        "VALUES ('ev_01M84VBJPPYRQ7CXRXARTR5TPM', ?, 'planted', 'note', '[]', ?)",
        ("1" * 64, LATER),
    )
    line, _ = verify_fails(cli)
    assert "evidence ev_01M84VBJPPYRQ7CXRXARTR5TPM is not in the audit log" in line


# -- the schema -----------------------------------------------------------------------------------


INVARIANTS = sorted(
    (kind, name)
    for (kind, name), o in expected_objects().items()
    if kind in ("trigger", "index") and o["sql"]
)


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name"), INVARIANTS)
def test_a_dropped_trigger_or_index_is_named(cli, store_path, world, kind, name):
    conn = driver.connect(store_path, load_vec=False)
    conn.execute(f"DROP {kind.upper()} {name}")
    conn.commit()
    conn.close()
    line, _report = verify_fails(cli)
    assert re.search(rf"schema: {kind} {name} is missing \(migration m\d{{3}}_\w+ creates it\)", line), line


def test_a_weakened_trigger_is_named(cli, store_path, world):
    conn = driver.connect(store_path, load_vec=False)
    conn.execute("DROP TRIGGER decision_close_once")
    conn.execute(
        "CREATE TRIGGER decision_close_once BEFORE UPDATE ON decision WHEN 0 "
        "BEGIN SELECT RAISE(ABORT, 'x'); END"
    )
    conn.commit()
    conn.close()
    line, _ = verify_fails(cli)
    wanted = "schema: trigger decision_close_once differs from its definition in migration m007_adr_fields"
    assert wanted in line


def test_an_extra_trigger_is_named(cli, store_path, world):
    conn = driver.connect(store_path, load_vec=False)
    conn.execute(
        "CREATE TRIGGER quietly AFTER INSERT ON decision BEGIN "
        "UPDATE meta SET value = value WHERE key = 'store_id'; END"
    )
    conn.commit()
    conn.close()
    line, _ = verify_fails(cli)
    assert "schema: trigger quietly is not one ctx's migrations create" in line


def test_the_schema_snapshot_is_current():
    from ctx_kernel.kernel.audit.schema import SNAPSHOT, build_snapshot, render

    assert SNAPSHOT.read_text(encoding="utf-8") == render(build_snapshot()), (
        "kernel/store/sqlite/migrations/schema.json is stale: run `python -m ctx_kernel.kernel.audit.schema`"
    )


# -- an intact store ----------------------------------------------------------------------------


def test_an_intact_store_verifies_and_says_what_it_cannot_prove(cli, world):
    result = cli("audit", "verify", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert_valid("audit-verify", report)
    assert report["ok"] and report["problems"] == [] and report["checkpoints"] == 0
    assert len(report["notes"]) == 1 and report["notes"][0].startswith("no signed checkpoint")
    text = cli("audit", "verify")
    assert text.code == 0 and "note: no signed checkpoint" in text.out


# -- stores written by an earlier ctx ---------------------------------------------------------------

# The keys this version added to audit rows, by action; a store written before lacks them.
ADDED_KEYS = {
    "evidence.logged": ("agent", "speaker", "occurred_at"),
    "proposal.created": ("explicit_supersedes", "near_duplicate_score"),
    "proposal.imported": ("decision", "rationale", "proposer", "created_at", "reason"),
    "decision.imported": ("rationale", "ratified_by", "closed_by", "close_reason"),
    "decision.superseded": ("reason",),
}


def rewrite_log(store_path: Path, edit) -> None:
    """Rewrite the whole audit log through ``edit`` (rows -> rows) and rehash it consistently."""
    conn = driver.connect(store_path, load_vec=False)
    columns = ("seq", "at", "actor", "action", "target", "before", "after", "prev_hash", "hash")
    rows = [
        dict(zip(columns, r, strict=True)) for r in conn.execute(f"SELECT {', '.join(columns)} FROM audit")
    ]
    triggers = [
        r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE name LIKE 'audit\\_%' ESCAPE '\\'")
    ]
    for name in ("audit_linked", "audit_no_update", "audit_no_delete"):
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("DELETE FROM audit")
    prev = GENESIS_HASH
    for seq, row in enumerate(edit(rows), start=1):
        row["seq"], row["prev_hash"] = seq, prev
        row["hash"] = prev = row_hash(prev, row)
        conn.execute(f"INSERT INTO audit VALUES ({', '.join('?' * len(columns))})", [row[c] for c in columns])
    for definition in triggers:
        conn.execute(definition)
    conn.execute("DELETE FROM meta WHERE key = ?", (audit_checkpoint.META_KEY,))
    conn.commit()
    conn.close()


def as_written_before(rows: list[dict]) -> list[dict]:
    """The rows an earlier ctx wrote: without the added keys, and no rows for imported links."""
    kept = []
    for row in rows:
        after = json.loads(row["after"]) if row["after"] else None
        if row["action"] == "decision.superseded" and "linked_at" in after:
            continue
        if row["action"] == "evidence.logged" and after.get("source") is None:
            after.pop("source", None)
        for key in ADDED_KEYS.get(row["action"], ()):
            after.pop(key, None)
        kept.append({**row, "after": json.dumps(after, sort_keys=True) if after is not None else None})
    return kept


def test_a_store_written_before_still_verifies_and_says_what_is_unchecked(cli, store_path, world):
    rewrite_log(store_path, as_written_before)
    result = cli("audit", "verify", "--json")
    assert result.code == 0, result.err
    notes = json.loads(result.out)["notes"]
    assert any("evidence.speaker" in n and "decision.rationale" in n for n in notes), notes
    assert any("supersession links between decisions an earlier ctx imported" in n for n in notes), notes
    # What the earlier rows did log is still checked.
    tamper(store_path, "INSERT INTO supersession VALUES (?, ?, ?)", (world["mfa"], world["infra"], LATER))
    line, _ = verify_fails(cli)
    assert "supersession row" in line


# -- checkpoints ------------------------------------------------------------------------------------


def checkpoint(cli, *args: str) -> dict:
    result = cli("audit", "checkpoint", "--json", *args)
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert_valid("audit-checkpoint", document)
    return document


def soften_mfa(rows: list[dict]) -> list[dict]:
    """A history in which admins never had to use MFA, consistent in every row."""
    for row in rows:
        if row["after"]:
            row["after"] = row["after"].replace("Require MFA for admins", "MFA is optional for admins too")
    return rows


def rewrite_history(store_path: Path, world: dict[str, str]) -> None:
    """Change a ratified decision and its proposal, and rewrite the log to match: the store agrees with it."""
    for table, trigger, item in (
        ("decision", "decision_close_once", world["mfa"]),
        ("proposal", "proposal_resolve_once", world["mfa_proposal"]),
    ):
        tamper(
            store_path,
            f"UPDATE {table} SET decision = 'MFA is optional for admins too' WHERE id = ?",
            (item,),
            bypass=trigger,
        )
    rewrite_log(store_path, soften_mfa)
    # A careful attacker also rebuilds the keyword index, which verify checks against the rows.
    conn = driver.connect(store_path, load_vec=False)
    conn.execute("INSERT INTO decision_fts (decision_fts) VALUES ('rebuild')")
    conn.commit()
    conn.close()


def test_a_rewritten_history_passes_alone_and_fails_against_a_checkpoint(
    cli, store_path, tmp_path, world, signing_key
):
    document = checkpoint(cli, "--out", str(tmp_path / "sent-away.json"))
    head = document["checkpoint"]
    kept = store_path.parent / "checkpoints" / f"checkpoint-{head['seq']:08d}.json"
    assert json.loads(kept.read_text(encoding="utf-8")) == document
    ok = cli("audit", "verify")
    assert ok.code == 0 and f"matches 1 signed checkpoints (latest at row {head['seq']})" in ok.out

    rewrite_history(store_path, world)
    # The attacker also removes the checkpoints they can reach: the store alone cannot tell.
    shutil.move(store_path.parent / "checkpoints", tmp_path / "moved")
    assert cli("audit", "verify").code == 0
    line, report = verify_fails(cli, "--checkpoint", str(tmp_path / "sent-away.json"))
    assert "differs from checkpoint" in line and "(the log was rewritten)" in line
    assert report["first_bad_seq"] is None
    # Left in place, the checkpoints folder is found without being named.
    shutil.move(tmp_path / "moved", store_path.parent / "checkpoints")
    line, _ = verify_fails(cli)
    assert f"checkpoint-{head['seq']:08d}.json" in line


def test_a_signed_export_is_a_checkpoint(cli, store_path, tmp_path, world, signing_key):
    out = tmp_path / "audit.jsonl"
    assert cli("audit", "export", "--out", str(out)).code == 0
    assert cli("audit", "verify", "--json").out.count('"checkpoints": 1') == 1
    rewrite_history(store_path, world)
    shutil.rmtree(store_path.parent / "checkpoints")
    assert cli("audit", "verify").code == 0
    line, _ = verify_fails(cli, "--checkpoint", f"{out}.manifest.json")
    assert "manifest.json signed on" in line


def test_a_truncated_log_is_caught_by_a_checkpoint(cli, store_path, tmp_path, world, signing_key):
    checkpoint(cli, "--out", str(tmp_path / "head.json"))
    rewrite_log(store_path, lambda rows: rows[:-1])
    line, _ = verify_fails(cli, "--checkpoint", str(tmp_path / "head.json"))
    assert "the audit log ends at row" in line


def test_a_forged_checkpoint_is_named(cli, store_path, tmp_path, world, signing_key):
    document = checkpoint(cli)
    document["checkpoint"]["seq"] -= 1
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(document), encoding="utf-8")
    line, _ = verify_fails(cli, "--checkpoint", str(forged))
    assert "its signature does not verify" in line


def test_a_checkpoint_signed_by_another_key_needs_that_key(
    cli, kernel, store_path, tmp_path, world, signing_key
):
    other = Ed25519PrivateKey.generate()
    info = signing.KeyInfo(
        signing.key_id(other.public_key()),
        signing.public_pem(other.public_key()),
        signing.public_raw_b64(other.public_key()),
        tmp_path / "k",
        tmp_path / "k.pub",
    )
    rows = kernel.audit.events()
    document = audit_checkpoint.sign_head(
        other,
        info,
        store_id=kernel.store.get_meta("store_id"),
        seq=rows[-1].seq,
        head_hash=rows[-1].hash,
        signed_at=rows[-1].at,
    )
    path = tmp_path / "theirs.json"
    path.write_text(audit_checkpoint.render(document), encoding="utf-8")
    line, _ = verify_fails(cli, "--checkpoint", str(path))
    assert "not one you trust" in line
    pub = tmp_path / "theirs.pub.pem"
    pub.write_text(info.public_pem, encoding="ascii")
    assert cli("audit", "verify", "--checkpoint", str(path), "--pubkey", str(pub)).code == 0


def test_a_checkpoint_of_another_store_is_named(cli, tmp_path, world, signing_key):
    document = checkpoint(cli)
    elsewhere = tmp_path / "elsewhere" / ".ctx" / "ctx.db"
    Ctx.init(elsewhere)[0].close()
    path = tmp_path / "head.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    result = cli("--db", str(elsewhere), "audit", "verify", "--checkpoint", str(path), db=False)
    assert "is for store" in one_line_error(result, 1)


def test_a_checkpoint_of_another_store_in_the_shared_folder_is_said_and_skipped(
    cli, tmp_path, world, signing_key
):
    """The checkpoints folder is committed: another store's file landing in it stops nobody."""
    document = checkpoint(cli)
    elsewhere = tmp_path / "elsewhere" / ".ctx" / "ctx.db"
    Ctx.init(elsewhere)[0].close()
    folder = elsewhere.parent / "checkpoints"
    folder.mkdir(exist_ok=True)
    (folder / "from-another-store.json").write_text(json.dumps(document), encoding="utf-8")
    assert cli("--db", str(elsewhere), "log", "a note of its own", db=False).code == 0
    verified = cli("--db", str(elsewhere), "audit", "verify", db=False)
    assert verified.code == 0, verified.err
    assert "from-another-store.json is for another store" in verified.out + verified.err
    exported = cli("--db", str(elsewhere), "audit", "export", "--out", str(tmp_path / "a.jsonl"), db=False)
    assert exported.code == 0, exported.err


def test_a_changed_store_id_is_not_taken_for_another_stores_checkpoints(cli, store_path, world, signing_key):
    """Skipping other stores' files must not let a store change its own id past its checkpoints."""
    checkpoint(cli)
    tamper(store_path, "UPDATE meta SET value = 'st_forged' WHERE key = 'store_id'")
    line, _ = verify_fails(cli)
    assert "now calls itself st_forged (its id was changed)" in line


def test_a_changed_store_id_is_named_when_the_stores_own_copy_of_its_head_is_changed_too(
    cli, store_path, world, signing_key
):
    """The folder's checkpoint signs a row of this very chain: it is this store's, not another's."""
    checkpoint(cli)
    tamper(store_path, "UPDATE meta SET value = 'st_forged' WHERE key = 'store_id'")
    tamper(store_path, "DELETE FROM meta WHERE key = 'audit_checkpoint'")
    line, _ = verify_fails(cli)
    assert "of this store's audit log" in line and "its id was changed" in line


def test_checkpointing_a_store_that_does_not_verify_is_refused(cli, store_path, world, signing_key):
    tamper(store_path, TAMPERS["link-a-current-decision-as-superseded"][0].format(**world))
    line = one_line_error(cli("audit", "checkpoint"), 1)
    assert "not signing" in line and "supersession row" in line
    assert not (store_path.parent / "checkpoints").exists()


def test_checkpoint_without_a_key_says_to_run_keys_init(cli, world, monkeypatch):
    monkeypatch.setenv("CTX_KEY_PASSPHRASE", PASSPHRASE)
    assert "ctx keys init" in one_line_error(cli("audit", "checkpoint"), 1)


def test_a_file_that_is_not_a_checkpoint_is_one_line(cli, tmp_path, world, signing_key):
    junk = tmp_path / "junk.json"
    junk.write_text('{"checkpoint": 1}', encoding="utf-8")
    line, _ = verify_fails(cli, "--checkpoint", str(junk))
    assert "is not a ctx audit checkpoint or export manifest" in line


def test_the_review_audit_screen_sees_a_forged_link(kernel, store_path, world):
    tamper(store_path, TAMPERS["link-a-current-decision-as-superseded"][0].format(**world))
    report = kernel.audit.verify(state=True)
    assert not report.ok and "supersession row" in report.problem


# -- derived data -----------------------------------------------------------------------------------


def test_reindex_rebuilds_a_planted_text_index_entry_and_lost_mentions(store_path):
    from embedders import HashEmbedder

    kernel, _ = Ctx.init(store_path, embedder=HashEmbedder())
    with kernel:
        note = kernel.log("Admins reported `yubikey` problems", agent="claude").id
        proposal = kernel.propose("auth.admin", "Require `yubikey` MFA for admins", evidence=[note])
        decision = kernel.ratify(proposal.id, reviewer="alice").decision.id
        conn = driver.connect(store_path, load_vec=False)
        rowid = conn.execute("SELECT rowid FROM decision WHERE id = ?", (decision,)).fetchone()[0]
        conn.execute(
            "INSERT INTO decision_fts (rowid, subject, decision, rationale) VALUES (?, 'x', 'sms codes', '')",
            (rowid,),
        )
        conn.execute("DELETE FROM entity_mention")
        conn.commit()
        conn.close()
        planted = kernel.audit.verify(state=True)  # the keyword index is checked against its rows
        assert not planted.ok and "keyword index of decision does not match" in (planted.problem or "")
        assert [m.decision.id for m in kernel.search("sms").decisions] == [decision]
        kernel.reindex()
        assert kernel.audit.verify(state=True).ok
        assert kernel.search("sms").decisions == []
        assert [m.decision.id for m in kernel.search("yubikey").decisions] == [decision]
        hit = kernel.recall("yubikey", mode="entity").decisions
        assert [h.decision.id for h in hit] == [decision]


def test_a_planted_keyword_index_row_is_named(cli, store_path, world):
    """A row put in the keyword index behind its triggers makes search find what no text says."""
    conn = driver.connect(store_path, load_vec=False)
    conn.execute("INSERT INTO evidence_fts (rowid, text) VALUES (999, 'planted words only here')")
    conn.commit()
    conn.close()
    line, _ = verify_fails(cli)
    assert "keyword index of evidence does not match" in line
