"""Every ``--json`` output validates against its file in ``schemas/``, and those files are up to date."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from ctx_kernel.kernel import Ctx, contracts
from ctx_kernel.kernel.store.sqlite import driver

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"


def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)  # no format_checker: formats are not asserted


def assert_valid(name: str, document: object) -> None:
    errors = sorted(validator(name).iter_errors(document), key=lambda e: list(e.absolute_path))
    problems = [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors]
    assert not problems, f"output does not match schemas/{name}.schema.json:\n" + "\n".join(problems)


def assert_invalid(name: str, document: object) -> None:
    assert not validator(name).is_valid(document), f"schemas/{name}.schema.json accepts {document!r}"


@pytest.fixture
def world(kernel: Ctx) -> dict[str, object]:
    """Evidence, a ratified and superseded chain, a retired decision, and proposals in every state."""
    note = kernel.log(
        "We agreed on JWT with refresh rotation for auth tokens.", agent="claude", session="s1", tags=["auth"]
    ).id
    chat = kernel.log("Opaque session ids are easier to revoke than JWT.", kind="conversation").id
    first = kernel.propose(
        "auth.tokens",
        "Use JWT with refresh rotation",
        rationale="Stateless verification at the edge.",
        evidence=[note],
        proposer="claude",
        session="s1",
    )
    oldest = kernel.ratify(first.id, reviewer="alice").decision
    second = kernel.propose("auth.tokens", "Use opaque session ids", evidence=[chat], proposer="claude")
    middle = kernel.ratify(second.id, reviewer="alice", decision="Use opaque session ids in Redis").decision
    third = kernel.propose("auth.tokens", "Use opaque session ids in Postgres", proposer="claude")
    current = kernel.ratify(third.id, reviewer="bob").decision
    build = kernel.propose("build.tool", "Use make for builds", proposer="claude")
    retired = kernel.ratify(build.id, reviewer="alice").decision
    kernel.retire("build.tool", reviewer="alice", reason="moved to just")
    rejected = kernel.propose("db.engine", "Use MongoDB", proposer="claude").id
    kernel.reject(rejected, reviewer="alice", reason="we need SQL")
    withdrawn = kernel.propose("ci.provider", "Use Jenkins", proposer="claude").id
    kernel.withdraw(withdrawn, actor="claude", reason="changed my mind")
    pending = kernel.propose("auth.tokens", "Use PASETO v4 tokens", evidence=[note], proposer="claude").id
    duplicate = kernel.propose("auth.tokens", "Use PASETO v4 tokens!", proposer="gemini")
    assert duplicate.near_duplicate_of == pending
    return {
        "note": note,
        "chat": chat,
        "oldest": oldest,
        "middle": middle,
        "current": current,
        "retired": retired,
        "ratified": third.id,
        "rejected": rejected,
        "withdrawn": withdrawn,
        "pending": pending,
        "duplicate": duplicate.id,
    }


def run_json(cli, *args: str, stdin: bytes = b"") -> object:
    result = cli(*args, stdin=stdin)
    assert result.code == 0, result.err
    return json.loads(result.out)


# -- read commands ------------------------------------------------------------------------------


def test_queue(cli, world):
    document = run_json(cli, "queue", "--json")
    assert_valid("queue", document)
    ids = [p["id"] for p in document["proposals"]]
    assert ids == [world["pending"], world["duplicate"]]
    assert document["proposals"][1]["near_duplicate_score"] is not None
    assert_valid("queue", run_json(cli, "queue", "--json", "--subject", "db"))


def test_decisions_current(cli, world):
    document = run_json(cli, "decisions", "--json")
    assert_valid("decisions", document)
    assert document["as_of"] is None
    assert [d["id"] for d in document["decisions"]] == [world["current"].id]


def test_decisions_all(cli, world):
    document = run_json(cli, "decisions", "--all", "--json")
    assert_valid("decisions", document)
    closed_by = {d["id"]: d["closed_by"] for d in document["decisions"]}
    assert closed_by == {
        world["oldest"].id: "superseded",
        world["middle"].id: "superseded",
        world["current"].id: None,
        world["retired"].id: "retired",
    }


@pytest.mark.parametrize("when", ["valid_from", "date", "offset", "far-past"])
def test_decisions_as_of(cli, world, when):
    oldest = world["oldest"]
    as_of = {
        "valid_from": oldest.valid_from,
        "date": oldest.valid_from[:10],
        "offset": oldest.valid_from[:19] + "+00:00",
        "far-past": "2000-01-01",
    }[when]
    document = run_json(cli, "decisions", "--as-of", as_of, "--json")
    assert_valid("decisions", document)
    assert document["as_of"] is not None
    if when == "far-past":
        assert document["decisions"] == []
    elif when == "valid_from":
        assert [d["id"] for d in document["decisions"]] == [oldest.id]


def test_history(cli, world):
    document = run_json(cli, "history", "auth.tokens", "--json")
    assert_valid("history", document)
    chain = [world["oldest"].id, world["middle"].id, world["current"].id]
    assert [d["id"] for d in document["decisions"]] == chain
    assert document["decisions"][1]["amended"] is True
    retired = run_json(cli, "history", "build.tool", "--json")
    assert_valid("history", retired)
    assert retired["decisions"][0]["close_reason"] == "moved to just"


@pytest.mark.parametrize(
    ("role", "kind"),
    [
        ("note", "evidence"),
        ("chat", "evidence"),
        ("pending", "proposal"),
        ("duplicate", "proposal"),
        ("ratified", "proposal"),
        ("rejected", "proposal"),
        ("withdrawn", "proposal"),
        ("oldest", "decision"),
        ("middle", "decision"),
        ("current", "decision"),
        ("retired", "decision"),
    ],
)
def test_show(cli, world, role, kind):
    item = world[role]
    item_id = item if isinstance(item, str) else item.id
    document = run_json(cli, "show", item_id, "--json")
    assert_valid("show", document)
    assert document["kind"] == kind
    assert document["record"]["id"] == item_id
    assert_valid(kind, document["record"])


@pytest.mark.parametrize(
    "args",
    [
        ("auth",),
        ("JWT session",),
        ("jwt", "--limit", "1"),
        ('NEAR("auth*',),
        ("nothing-matches-this",),
        ("jwt", "--as-of", "2000-01-01"),
    ],
    ids=["both", "two-words", "limit", "fts-syntax", "no-hits", "as-of"],
)
def test_search(cli, world, args):
    document = run_json(cli, "search", *args, "--json")
    assert_valid("search", document)
    assert document["query"] == args[0]


def test_search_has_hits_in_both_sections(cli, world):
    document = run_json(cli, "search", "opaque", "--json")
    assert_valid("search", document)
    assert [d["id"] for d in document["decisions"]] == [world["current"].id]
    assert [e["id"] for e in document["evidence"]] == [world["chat"]]
    assert all(hit["ratified"] is False for hit in document["evidence"])
    as_of = run_json(cli, "search", "jwt", "--as-of", world["oldest"].valid_from, "--json")
    assert_valid("search", as_of)
    assert [d["id"] for d in as_of["decisions"]] == [world["oldest"].id]


def test_audit_verify(cli, world):
    document = run_json(cli, "audit", "verify", "--json")
    assert_valid("audit-verify", document)
    assert document["ok"] is True
    assert document["first_bad_seq"] is None


def test_audit_verify_broken_chain(cli, world, store_path):
    conn = driver.connect(store_path, load_vec=False)
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("UPDATE audit SET actor = 'mallory' WHERE seq = 3")
    conn.close()
    result = cli("audit", "verify", "--json")
    assert result.code == 1
    document = json.loads(result.out)
    assert_valid("audit-verify", document)
    assert document["ok"] is False
    assert document["first_bad_seq"] == 3
    assert result.err.startswith("ctx: error:")


# -- write commands -----------------------------------------------------------------------------


def test_log(cli, world):
    fresh = run_json(cli, "log", "A brand new note", "--json", "--tag", "x", "--kind", "doc")
    assert_valid("log", fresh)
    assert fresh["duplicate"] is False
    again = run_json(cli, "log", "-", "--json", stdin=b"A brand new note")
    assert_valid("log", again)
    assert again == {"id": fresh["id"], "duplicate": True, "redacted": 0}


def test_propose_json_out(cli, world):
    document = run_json(
        cli,
        "propose",
        "--subject",
        "Auth.Tokens",
        "--decision",
        "Use PASETO v4 tokens",
        "--rationale",
        "Fewer footguns than JWT.",
        "--evidence",
        world["note"],
        "--supersedes",
        world["retired"].id,
        "--json",
    )
    assert_valid("proposal", document)
    assert document["status"] == "pending"
    assert document["subject"] == "auth.tokens"
    assert document["near_duplicate_of"] == world["pending"]
    assert set(document["supersedes"]) == {world["current"].id, world["retired"].id}


def test_ratify_json(cli, world):
    document = run_json(cli, "ratify", world["pending"], "--yes", "--reviewer", "alice", "--json")
    assert_valid("ratification", document)
    assert document["proposal_id"] == world["pending"]
    assert document["superseded"] == [world["current"].id]
    assert document["decision"]["current"] is True


def test_ratify_json_amended(cli, world):
    document = run_json(
        cli,
        "ratify",
        world["duplicate"],
        "--decision",
        "Use PASETO v4",
        "--yes",
        "--reviewer",
        "bob",
        "--json",
    )
    assert_valid("ratification", document)
    assert document["decision"]["amended"] is True
    assert document["decision"]["decision"] == "Use PASETO v4"


def test_ratify_json_new_subject(cli, world):
    proposal = run_json(cli, "propose", "--subject", "api.style", "--decision", "Use REST", "--json")
    assert proposal["supersedes"] == []
    document = run_json(cli, "ratify", proposal["id"], "--yes", "--reviewer", "alice", "--json")
    assert_valid("ratification", document)
    assert document["superseded"] == []


# -- the schemas themselves ---------------------------------------------------------------------


def test_schema_files_are_up_to_date():
    expected = {name: contracts.render(doc) for name, doc in contracts.schema_documents().items()}
    on_disk = {path.name: path.read_text(encoding="utf-8") for path in SCHEMA_DIR.glob("*.schema.json")}
    stale = sorted(
        name for name in expected.keys() | on_disk.keys() if expected.get(name) != on_disk.get(name)
    )
    assert not stale, f"schemas/ is stale ({', '.join(stale)}): run `python -m ctx_kernel.kernel.contracts`"


@pytest.mark.parametrize("filename", sorted(contracts.schema_documents()))
def test_schema_file_is_a_valid_draft_2020_12_schema(filename):
    schema = json.loads((SCHEMA_DIR / filename).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize(
    ("name", "document"),
    [
        ("log", {"id": "ev_" + "0" * 26, "duplicate": False, "extra": 1}),
        ("log", {"id": "ev_" + "0" * 26}),
        ("log", {"id": "pr_" + "0" * 26, "duplicate": False}),
        ("queue", {"proposals": [{"id": "pr_" + "0" * 26}]}),
        ("decisions", {"decisions": []}),
        ("show", {"kind": "thing", "record": {}}),
        ("search", {"query": "x", "decisions": [], "evidence": [], "blended": []}),
        ("audit-verify", {"ok": True, "rows": 0, "last_hash": "xyz", "first_bad_seq": None, "problem": None}),
    ],
)
def test_schemas_are_strict(name, document):
    """The schemas would catch a missing, misnamed or extra field, not accept anything."""
    assert_invalid(name, document)


def test_search_schema_refuses_evidence_marked_ratified(cli, world):
    document = run_json(cli, "search", "jwt", "--json")
    document["evidence"][0]["ratified"] = True
    assert_invalid("search", document)


# -- propose input ------------------------------------------------------------------------------


def good_input(world) -> dict[str, object]:
    return {
        "subject": "auth.tokens",
        "decision": "Use PASETO v4 local tokens",
        "rationale": "Fewer algorithm-confusion footguns than JWT.",
        "evidence": [world["note"], world["chat"]],
        "supersedes": [world["retired"].id],
        "proposer": "claude",
        "session": "s2",
    }


BAD_INPUTS = {
    "no-subject": lambda d: d.pop("subject"),
    "no-decision": lambda d: d.pop("decision"),
    "empty-decision": lambda d: d.update(decision=""),
    "extra-field": lambda d: d.update(status="ratified"),
    "evidence-malformed": lambda d: d.update(evidence=["ev_nope"]),
    "evidence-not-a-list": lambda d: d.update(evidence=d["evidence"][0]),
    "supersedes-proposal-id": lambda d: d.update(supersedes=["pr_" + "0" * 26]),
    "subject-number": lambda d: d.update(subject=7),
    "decision-too-long": lambda d: d.update(decision="x" * 8001),
}


def test_good_propose_input_validates(world):
    assert_valid("propose-input", good_input(world))
    assert_valid("propose-input", {"subject": "a.b", "decision": "x"})


@pytest.mark.parametrize("change", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_propose_input_does_not_validate(world, change):
    document = good_input(world)
    change(document)
    assert_invalid("propose-input", document)


def test_propose_accepts_the_good_input(cli, world):
    document = good_input(world)
    result = cli("propose", "--input", "-", stdin=json.dumps(document).encode())
    assert result.code == 0, result.err
    proposal_id = result.out.strip()
    assert proposal_id.startswith("pr_")
    shown = run_json(cli, "show", proposal_id, "--json")
    assert_valid("show", shown)
    record = shown["record"]
    for key in ("subject", "decision", "rationale", "evidence", "proposer", "session"):
        assert record[key] == document[key], key
    assert record["explicit_supersedes"] == document["supersedes"]


def test_propose_json_in_and_out(cli, world):
    document = {"subject": "api.style", "decision": "Use REST"}
    out = run_json(cli, "propose", "--input", "-", "--json", stdin=json.dumps(document).encode())
    assert_valid("proposal", out)
    assert out["proposer"]  # defaulted when the document names none


@pytest.mark.parametrize("change", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_propose_refuses_what_the_schema_refuses(cli, world, change):
    document = good_input(world)
    change(document)
    result = cli("propose", "--input", "-", stdin=json.dumps(document).encode())
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith("ctx: error:")


def test_evidence_kinds_in_the_input_schemas_are_the_kernels():
    from ctx_kernel.kernel.spec import EVIDENCE_KINDS

    log_input = json.loads((SCHEMA_DIR / "log-input.schema.json").read_text())
    record = json.loads((SCHEMA_DIR / "log-record.schema.json").read_text())
    kinds = [o for o in record["properties"]["kind"]["anyOf"] if "enum" in o]
    assert tuple(log_input["properties"]["kind"]["enum"]) == EVIDENCE_KINDS
    assert tuple(kinds[0]["enum"]) == EVIDENCE_KINDS


def test_ctx_schema_prints_each_schema_file(cli):
    names = cli("schema").out.split()
    files = sorted(p.name.removesuffix(".schema.json") for p in SCHEMA_DIR.glob("*.schema.json"))
    assert names == files
    for name in ("recall", "propose-input.schema.json"):
        shown = cli("schema", name)
        stem = name.removesuffix(".schema.json")
        assert json.loads(shown.out) == json.loads((SCHEMA_DIR / f"{stem}.schema.json").read_text())
    missing = cli("schema", "nope")
    assert missing.code == 2 and "ctx schema" in missing.err


def test_every_act_prints_its_result_with_json(cli, kernel):
    first = kernel.propose("cache.backend", "Use Redis")
    second = kernel.propose("queue.backend", "Use RabbitMQ")
    rejected = run_json(cli, "reject", first.id, "--reason", "no", "--yes", "--reviewer", "ann", "--json")
    assert_valid("proposal", rejected)
    assert rejected["status"] == "rejected"
    withdrawn = run_json(cli, "withdraw", second.id, "--json")
    assert_valid("proposal", withdrawn)
    assert withdrawn["status"] == "withdrawn"
    kernel.ratify(kernel.propose("ci.runner", "Use hosted runners").id, reviewer="ann")
    retired = run_json(
        cli, "retire", "ci.runner", "--reason", "moved", "--yes", "--reviewer", "ann", "--json"
    )
    assert_valid("decision", retired)
    assert retired["closed_by"] == "retired"
    assert_valid("inject", run_json(cli, "inject", "--json"))


def test_the_earlier_json_spellings_still_work_with_a_note(cli, kernel):
    document = json.dumps({"subject": "api.style", "decision": "Use REST"}).encode()
    old = cli("propose", "--json", "-", stdin=document)
    assert old.code == 0 and old.out.startswith("pr_")
    assert "--json - is deprecated for input: use --input -" in old.err
    out = cli("propose", "--subject", "api.paging", "--decision", "Cursor paging", "--json-out")
    assert_valid("proposal", json.loads(out.out))
    assert "--json-out is deprecated: use --json" in out.err
