"""Bad input never crashes ctx: one error line, nothing on stdout, the right exit code, an unchanged store.

Exit 2 is a usage error (malformed or unknown ids, empty fields, bad JSON, text that is not
UTF-8 or is over a size limit, invalid dates, a person's act attempted without a terminal);
exit 1 is a well-formed request the kernel refuses, or a missing or unreadable store.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Result, run_ctx_process

from ctx_kernel.kernel import Ctx, text
from ctx_kernel.kernel.hosts.cli import MAX_JSON_INPUT_BYTES
from ctx_kernel.kernel.store.sqlite import driver

# Every table a write touches; the FTS shadow tables follow these by trigger.
TABLES = (
    "evidence",
    "proposal",
    "proposal_evidence",
    "decision",
    "decision_evidence",
    "supersession",
    "audit",
)
UNKNOWN = {
    "unknown_ev": "ev_" + "0" * 26,
    "unknown_pr": "pr_" + "0" * 26,
    "unknown_dc": "dc_" + "0" * 26,
}
# Latin-1 bytes and lone surrogates: what a non-UTF-8 terminal or file hands over.
NOT_UTF8_ARG = "caf\udce9"  # how Python decodes the argv bytes b"caf\xe9" (surrogateescape)


def snapshot(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table a write could touch, in storage order."""
    conn = driver.connect(path, load_vec=False)
    try:
        return {table: conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall() for table in TABLES}
    finally:
        conn.close()


def assert_one_line_error(result, code: int) -> str:
    """The failure contract: exit code, nothing on stdout, one ``ctx: error:`` line on stderr."""
    assert "Traceback" not in result.err, result.err
    assert result.code == code, f"exit {result.code}, wanted {code}; stderr: {result.err!r}"
    assert result.out == "", f"stdout should be empty, got {result.out!r}"
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, f"wanted one line on stderr, got {result.err!r}"
    assert lines[0].startswith("ctx: error:"), lines[0]
    return lines[0]


@pytest.fixture
def world(kernel: Ctx) -> dict[str, str]:
    """A store with every kind of record and every proposal state; the ids by role."""
    evidence = kernel.log("We agreed on JWT with refresh rotation for auth tokens.", agent="claude").id
    first = kernel.propose(
        "auth.tokens", "Use JWT with refresh rotation", evidence=[evidence], proposer="claude"
    )
    superseded = kernel.ratify(first.id, reviewer="alice").decision.id
    second = kernel.propose("auth.tokens", "Use opaque session ids", proposer="claude")
    current = kernel.ratify(second.id, reviewer="alice").decision.id
    build = kernel.propose("build.tool", "Use make", proposer="claude")
    retired = kernel.ratify(build.id, reviewer="alice").decision.id
    kernel.retire("build.tool", reviewer="alice", reason="moved to just")
    rejected = kernel.propose("db.engine", "Use MongoDB", proposer="claude").id
    kernel.reject(rejected, reviewer="alice", reason="we need SQL")
    withdrawn = kernel.propose("ci.provider", "Use Jenkins", proposer="claude").id
    kernel.withdraw(withdrawn, actor="claude")
    pending = kernel.propose("auth.tokens", "Use PASETO v4 tokens", evidence=[evidence], proposer="claude").id
    return {
        "evidence": evidence,
        "ratified": second.id,
        "superseded": superseded,
        "current": current,
        "retired": retired,
        "rejected": rejected,
        "withdrawn": withdrawn,
        "pending": pending,
        **UNKNOWN,
    }


@pytest.fixture
def refused(cli, world, store_path):
    """Run ``ctx`` with bad input against the populated store and check the failure contract."""

    def run(args: tuple[str, ...], code: int, stdin: bytes = b"") -> str:
        before = snapshot(store_path)
        result = cli(*(arg.format(**world) for arg in args), stdin=stdin)
        line = assert_one_line_error(result, code)
        assert snapshot(store_path) == before, "a refused command changed the store"
        return line

    return run


def case(*args: str, stdin: bytes = b"", id: str) -> pytest.param:
    return pytest.param(args, stdin, id=id)


YES = ("--yes", "--reviewer", "alice")

# -- usage errors: exit 2 -----------------------------------------------------------------------

BAD_IDS = [
    case("show", "xyz", id="show-garbage"),
    case("show", "", id="show-empty"),
    case("show", "   ", id="show-blank"),
    case("show", "ev_" + "0" * 25, id="show-short"),
    case("show", "ev_" + "0" * 27, id="show-long"),
    case("show", "ev_" + "U" * 26, id="show-not-crockford"),
    case("show", "xx_" + "0" * 26, id="show-unknown-prefix"),
    case("show", "ev-" + "0" * 26, id="show-wrong-separator"),
    case("show", "{unknown_ev}", id="show-unknown-evidence"),
    case("show", "{unknown_pr}", id="show-unknown-proposal"),
    case("show", "{unknown_dc}", id="show-unknown-decision"),
    case("ratify", "xyz", *YES, id="ratify-garbage"),
    case("ratify", "{evidence}", *YES, id="ratify-evidence-id"),
    case("ratify", "{current}", *YES, id="ratify-decision-id"),
    case("ratify", "{unknown_pr}", *YES, id="ratify-unknown"),
    case("reject", "xyz", "--reason", "no", *YES, id="reject-garbage"),
    case("reject", "{current}", "--reason", "no", *YES, id="reject-decision-id"),
    case("reject", "{unknown_pr}", "--reason", "no", *YES, id="reject-unknown"),
    case("withdraw", "xyz", id="withdraw-garbage"),
    case("withdraw", "{evidence}", id="withdraw-evidence-id"),
    case("withdraw", "{unknown_pr}", id="withdraw-unknown"),
    case(
        "propose", "--subject", "a.b", "--decision", "x", "--evidence", "xyz", id="propose-evidence-garbage"
    ),
    case(
        "propose",
        "--subject",
        "a.b",
        "--decision",
        "x",
        "--evidence",
        "{pending}",
        id="propose-evidence-kind",
    ),
    case(
        "propose",
        "--subject",
        "a.b",
        "--decision",
        "x",
        "--evidence",
        "{unknown_ev}",
        id="propose-evidence-unknown",
    ),
    case(
        "propose",
        "--subject",
        "a.b",
        "--decision",
        "x",
        "--evidence",
        "{evidence}",
        "--evidence",
        "{unknown_ev}",
        id="propose-evidence-one-unknown",
    ),
    case(
        "propose",
        "--subject",
        "a.b",
        "--decision",
        "x",
        "--supersedes",
        "xyz",
        id="propose-supersedes-garbage",
    ),
    case(
        "propose",
        "--subject",
        "a.b",
        "--decision",
        "x",
        "--supersedes",
        "{pending}",
        id="propose-supersedes-kind",
    ),
    case(
        "propose",
        "--subject",
        "a.b",
        "--decision",
        "x",
        "--supersedes",
        "{unknown_dc}",
        id="propose-supersedes-unknown",
    ),
    case("history", "no.such.subject", id="history-unknown-subject"),
]

EMPTY_FIELDS = [
    case("propose", "--decision", "x", id="subject-missing"),
    case("propose", "--subject", "", "--decision", "x", id="subject-empty"),
    case("propose", "--subject", "   ", "--decision", "x", id="subject-spaces"),
    case("propose", "--subject", "\t\n ", "--decision", "x", id="subject-whitespace"),
    case("propose", "--subject", ".", "--decision", "x", id="subject-dot"),
    case("propose", "--subject", "a..b", "--decision", "x", id="subject-empty-segment"),
    case("propose", "--subject", "auth.", "--decision", "x", id="subject-trailing-dot"),
    case("propose", "--subject", "auth!tokens", "--decision", "x", id="subject-punctuation"),
    case("propose", "--subject", "-.-", "--decision", "x", id="subject-only-hyphens"),
    case("propose", "--subject", "a\x00b", "--decision", "x", id="subject-nul"),
    case(
        "propose", "--subject", "a" * (text.MAX_SUBJECT_CHARS + 1), "--decision", "x", id="subject-too-long"
    ),
    case("propose", "--subject", "a.b", id="decision-missing"),
    case("propose", "--subject", "a.b", "--decision", "", id="decision-empty"),
    case("propose", "--subject", "a.b", "--decision", "   ", id="decision-spaces"),
    case("propose", "--subject", "a.b", "--decision", "\n\t\r\n", id="decision-whitespace"),
    case("propose", "--subject", "a.b", "--decision", "a\x00b", id="decision-nul"),
    case("propose", "--subject", "a.b", "--decision", "x", "--proposer", "  ", id="proposer-blank"),
    case("queue", "--subject", "  ", id="queue-subject-blank"),
    case("decisions", "--subject", "a..b", id="decisions-subject-invalid"),
    case("history", "   ", id="history-subject-blank"),
    case("retire", " ", "--reason", "x", *YES, id="retire-subject-blank"),
    case("ratify", "{pending}", "--decision", "   ", *YES, id="ratify-amended-blank"),
    case("ratify", "{pending}", "--yes", "--reviewer", "   ", id="ratify-reviewer-blank"),
    case("reject", "{pending}", "--reason", "   ", *YES, id="reject-reason-blank"),
    case("reject", "{pending}", *YES, id="reject-reason-missing"),
    case("retire", "auth.tokens", "--reason", " ", *YES, id="retire-reason-blank"),
    case("retire", "auth.tokens", *YES, id="retire-reason-missing"),
    case("log", "", id="log-empty"),
    case("log", " \n\t ", id="log-whitespace"),
    case("log", "-", id="log-stdin-empty"),
    case("log", "-", stdin=b"  \n\r\n\t", id="log-stdin-whitespace"),
    case("log", "-", stdin=b"a\x00b", id="log-stdin-nul"),
    case("search", "", id="search-empty"),
]

MALFORMED_JSON = [
    b"",
    b"   ",
    b"{",
    b"not json",
    b"{'subject': 'a.b', 'decision': 'x'}",
    b'{"subject": "a.b", "decision": "x",}',
    b'{"subject": "a.b", "decision": "x"} trailing',
    b'{"subject": "a.b", "decision": "x"}{}',
    b'{"subject": "a.b" "decision": "x"}',
]

SCHEMA_FAILURES = {
    "array": [],
    "null": None,
    "string": "a.b",
    "number": 3,
    "empty-object": {},
    "no-decision": {"subject": "a.b"},
    "no-subject": {"decision": "x"},
    "subject-number": {"subject": 1, "decision": "x"},
    "decision-list": {"subject": "a.b", "decision": ["x"]},
    "decision-null": {"subject": "a.b", "decision": None},
    "subject-empty": {"subject": "", "decision": "x"},
    "decision-empty": {"subject": "a.b", "decision": ""},
    "extra-field": {"subject": "a.b", "decision": "x", "status": "ratified"},
    "evidence-string": {"subject": "a.b", "decision": "x", "evidence": "ev_" + "0" * 26},
    "evidence-malformed": {"subject": "a.b", "decision": "x", "evidence": ["ev_bad"]},
    "evidence-wrong-kind": {"subject": "a.b", "decision": "x", "evidence": ["dc_" + "0" * 26]},
    "supersedes-wrong-kind": {"subject": "a.b", "decision": "x", "supersedes": ["pr_" + "0" * 26]},
    "evidence-too-many": {
        "subject": "a.b",
        "decision": "x",
        "evidence": [f"ev_{i:026d}" for i in range(101)],
    },
    "proposer-empty": {"subject": "a.b", "decision": "x", "proposer": ""},
    "rationale-number": {"subject": "a.b", "decision": "x", "rationale": 42},
    "subject-too-long": {"subject": "a" * (text.MAX_SUBJECT_CHARS + 1), "decision": "x"},
    "decision-too-long": {"subject": "a.b", "decision": "x" * (text.MAX_DECISION_CHARS + 1)},
    "rationale-too-long": {
        "subject": "a.b",
        "decision": "x",
        "rationale": "x" * (text.MAX_RATIONALE_CHARS + 1),
    },
    "proposer-too-long": {"subject": "a.b", "decision": "x", "proposer": "x" * (text.MAX_NAME_CHARS + 1)},
    # Valid by the schema, refused by the kernel's own checks.
    "subject-blank": {"subject": "   ", "decision": "x"},
    "decision-blank": {"subject": "a.b", "decision": "  \n "},
    "subject-invalid": {"subject": "a..b", "decision": "x"},
    "evidence-unknown": {"subject": "a.b", "decision": "x", "evidence": ["ev_" + "0" * 26]},
    "supersedes-unknown": {"subject": "a.b", "decision": "x", "supersedes": ["dc_" + "0" * 26]},
}

NOT_UTF8_BYTES = {
    "latin1": b"caf\xe9",
    "lone-continuation": b"abc\x80def",
    "truncated-sequence": b"abc\xc3",
    "overlong": b"\xc0\xaf",
    "encoded-surrogate": b"\xed\xa0\x80",
    "utf16-bom": "hello".encode("utf-16"),
    "invalid-first-byte": b"\xff\xfe\xfd",
}

OVERSIZE = [
    case("log", "-", stdin=b"a" * (text.MAX_EVIDENCE_BYTES + 1), id="log-stdin-ascii"),
    case("log", "-", stdin=("é" * (text.MAX_EVIDENCE_BYTES // 2) + "a").encode(), id="log-stdin-multibyte"),
    case("log", "a" * (text.MAX_EVIDENCE_BYTES + 1), id="log-arg-ascii"),
    # Fewer characters than the limit but more bytes: the limit is in bytes.
    case("log", "é" * (text.MAX_EVIDENCE_BYTES // 2 + 1), id="log-arg-multibyte"),
    case("propose", "--subject", "a.b", "--decision", "x" * (text.MAX_DECISION_CHARS + 1), id="decision"),
    case(
        "propose",
        "--subject",
        "a.b",
        "--decision",
        "é" * (text.MAX_DECISION_CHARS + 1),
        id="decision-multibyte",
    ),
    case(
        "propose",
        "--subject",
        "a.b",
        "--decision",
        "x",
        "--rationale",
        "x" * (text.MAX_RATIONALE_CHARS + 1),
        id="rationale",
    ),
    case("ratify", "{pending}", "--decision", "x" * (text.MAX_DECISION_CHARS + 1), *YES, id="ratify-amended"),
    case("reject", "{pending}", "--reason", "x" * (text.MAX_REASON_CHARS + 1), *YES, id="reject-reason"),
    case("withdraw", "{pending}", "--reason", "x" * (text.MAX_REASON_CHARS + 1), id="withdraw-reason"),
    case("retire", "auth.tokens", "--reason", "x" * (text.MAX_REASON_CHARS + 1), *YES, id="retire-reason"),
    case("log", "note", "--agent", "x" * (text.MAX_NAME_CHARS + 1), id="log-agent"),
    case(
        "propose",
        "--subject",
        "a.b",
        "--decision",
        "x",
        "--proposer",
        "x" * (text.MAX_NAME_CHARS + 1),
        id="proposer",
    ),
    case("ratify", "{pending}", "--yes", "--reviewer", "x" * (text.MAX_NAME_CHARS + 1), id="reviewer"),
    case(
        "propose",
        "--input",
        "-",
        stdin=json.dumps(
            {"subject": "a.b", "decision": "x", "rationale": "x" * MAX_JSON_INPUT_BYTES}
        ).encode(),
        id="json-document",
    ),
]

BAD_DATES = [
    "2024-13-01",
    "2024-02-30",
    "yesterday",
    "",
    "  ",
    "2024-01-01T25:00",
    "24:00",
    "1/2/2024",
    "99999-01-01",
]
# In range as written, out of range once converted to UTC.
OVERFLOWING_DATES = ["0001-01-01T00:00:00+01:00", "9999-12-31T23:30:00-01:00"]

NOT_ON_A_TERMINAL = [
    case("ratify", "{pending}", id="ratify-bare"),
    case("ratify", "{pending}", "--reviewer", "alice", id="ratify-no-yes"),
    case("ratify", "{pending}", "--yes", id="ratify-no-reviewer"),
    case(
        "ratify", "{pending}", "--decision", "Use PASETO", "--reviewer", "alice", id="ratify-amended-no-yes"
    ),
    case("reject", "{pending}", "--reason", "no", id="reject-bare"),
    case("reject", "{pending}", "--reason", "no", "--reviewer", "alice", id="reject-no-yes"),
    case("reject", "{pending}", "--reason", "no", "--yes", id="reject-no-reviewer"),
    case("retire", "auth.tokens", "--reason", "done", id="retire-bare"),
    case("retire", "auth.tokens", "--reason", "done", "--reviewer", "alice", id="retire-no-yes"),
    case("retire", "auth.tokens", "--reason", "done", "--yes", id="retire-no-reviewer"),
]

CLICK_USAGE = [
    case("bogus", id="unknown-command"),
    case("queue", "--bogus", id="unknown-option"),
    case("show", id="missing-argument"),
    case("show", "{evidence}", "extra", id="extra-argument"),
    case("log", "note", "--kind", "diary", id="bad-choice"),
    case("search", "auth", "--limit", "0", id="limit-zero"),
    case("search", "auth", "--limit", "1001", id="limit-too-big"),
    case("search", "auth", "--limit", "ten", id="limit-not-a-number"),
    case("propose", "--input", "/nonexistent/proposal.json", id="json-file-missing"),
    case("propose", "--json", "/nonexistent/proposal.json", id="deprecated-json-file-missing"),
    case("reject", "{pending}", "--reason", id="option-without-value"),
    case("audit", "bogus", id="unknown-subcommand"),
]


@pytest.mark.parametrize(("args", "stdin"), BAD_IDS)
def test_malformed_or_unknown_id_is_a_usage_error(refused, args, stdin):
    refused(args, 2, stdin)


@pytest.mark.parametrize(("args", "stdin"), EMPTY_FIELDS)
def test_empty_or_invalid_field_is_a_usage_error(refused, args, stdin):
    refused(args, 2, stdin)


@pytest.mark.parametrize("raw", MALFORMED_JSON, ids=lambda raw: repr(raw)[2:-1] or "nothing")
def test_malformed_json_is_a_usage_error(refused, raw):
    refused(("propose", "--input", "-"), 2, raw)


def test_malformed_json_names_the_position(refused):
    line = refused(("propose", "--input", "-"), 2, b'{\n  "subject": "a.b",\n  "decision": x\n}')
    assert "line 3" in line


@pytest.mark.parametrize("document", SCHEMA_FAILURES.values(), ids=SCHEMA_FAILURES.keys())
def test_json_failing_the_schema_is_a_usage_error(refused, document):
    refused(("propose", "--input", "-"), 2, json.dumps(document).encode())


@pytest.mark.parametrize("raw", NOT_UTF8_BYTES.values(), ids=NOT_UTF8_BYTES.keys())
def test_evidence_on_stdin_that_is_not_utf8(refused, raw):
    line = refused(("log", "-"), 2, raw)
    assert "UTF-8" in line


@pytest.mark.parametrize("raw", NOT_UTF8_BYTES.values(), ids=NOT_UTF8_BYTES.keys())
def test_json_that_is_not_utf8(refused, raw):
    document = b'{"subject": "a.b", "decision": "' + raw + b'"}'
    line = refused(("propose", "--input", "-"), 2, document)
    assert "UTF-8" in line


@pytest.mark.parametrize("field", ["subject", "decision", "rationale", "proposer", "session"])
def test_json_with_a_lone_surrogate_escape(refused, field):
    """``"\\udce9"`` is valid JSON but not text that can be stored as UTF-8."""
    document = {"subject": "a.b", "decision": "x", field: "caf\udce9"}
    refused(("propose", "--input", "-"), 2, json.dumps(document).encode())


NOT_UTF8_ARGS = [
    case("log", NOT_UTF8_ARG, id="log-text"),
    case("log", "note", "--agent", NOT_UTF8_ARG, id="log-agent"),
    case("log", "note", "--session", NOT_UTF8_ARG, id="log-session"),
    case("log", "note", "--tag", NOT_UTF8_ARG, id="log-tag"),
    case("propose", "--subject", NOT_UTF8_ARG, "--decision", "x", id="propose-subject"),
    case("propose", "--subject", "a.b", "--decision", NOT_UTF8_ARG, id="propose-decision"),
    case(
        "propose", "--subject", "a.b", "--decision", "x", "--rationale", NOT_UTF8_ARG, id="propose-rationale"
    ),
    case("propose", "--subject", "a.b", "--decision", "x", "--proposer", NOT_UTF8_ARG, id="propose-proposer"),
    case("propose", "--subject", "a.b", "--decision", "x", "--session", NOT_UTF8_ARG, id="propose-session"),
    case("ratify", "{pending}", "--decision", NOT_UTF8_ARG, *YES, id="ratify-amended"),
    case("ratify", "{pending}", "--yes", "--reviewer", NOT_UTF8_ARG, id="ratify-reviewer"),
    case("reject", "{pending}", "--reason", NOT_UTF8_ARG, *YES, id="reject-reason"),
    case("reject", "{pending}", "--reason", "no", "--yes", "--reviewer", NOT_UTF8_ARG, id="reject-reviewer"),
    case("withdraw", "{pending}", "--reason", NOT_UTF8_ARG, id="withdraw-reason"),
    case("withdraw", "{pending}", "--actor", NOT_UTF8_ARG, id="withdraw-actor"),
    case("retire", "auth.tokens", "--reason", NOT_UTF8_ARG, *YES, id="retire-reason"),
    case("search", NOT_UTF8_ARG, id="search-query"),
    case("show", NOT_UTF8_ARG, id="show-id"),
]


@pytest.mark.parametrize(("args", "stdin"), NOT_UTF8_ARGS)
def test_argument_that_is_not_utf8(refused, args, stdin):
    """Python hands non-UTF-8 argv bytes over as lone surrogates; every text field refuses them."""
    refused(args, 2, stdin)


@pytest.mark.parametrize(("args", "stdin"), OVERSIZE)
def test_input_over_the_size_limit(refused, args, stdin):
    refused(args, 2, stdin)


def test_evidence_at_the_size_limit_is_accepted(cli, world):
    body = b"a" * (text.MAX_EVIDENCE_BYTES - 2) + "é".encode()
    assert len(body) == text.MAX_EVIDENCE_BYTES
    result = cli("log", "-", stdin=body)
    assert result.code == 0, result.err
    assert result.out.strip().startswith("ev_")


@pytest.mark.parametrize("char", ["x", "é", "😀"])
def test_decision_at_the_size_limit_is_accepted(cli, world, char):
    """The decision limit counts characters, not bytes."""
    result = cli("propose", "--subject", "limits.decision", "--decision", char * text.MAX_DECISION_CHARS)
    assert result.code == 0, result.err
    assert result.out.strip().startswith("pr_")


@pytest.mark.parametrize("when", BAD_DATES + OVERFLOWING_DATES)
@pytest.mark.parametrize("command", [("decisions",), ("decisions", "--json"), ("search", "auth")])
def test_invalid_date_is_a_usage_error(refused, command, when):
    line = refused((*command, "--as-of", when), 2)
    assert "date" in line


@pytest.mark.parametrize(("args", "stdin"), NOT_ON_A_TERMINAL)
def test_a_persons_act_without_a_terminal_needs_yes_and_reviewer(refused, args, stdin):
    line = refused(args, 2, stdin)
    assert "--yes" in line and "--reviewer" in line


def test_configured_reviewer_does_not_replace_reviewer_without_a_terminal(refused, monkeypatch):
    monkeypatch.setenv("CTX_REVIEWER", "alice")
    refused(("ratify", "{pending}", "--yes"), 2)


@pytest.mark.parametrize(("args", "stdin"), CLICK_USAGE)
def test_command_line_usage_error(refused, args, stdin):
    refused(args, 2, stdin)


# -- refused operations: exit 1 -----------------------------------------------------------------

RESOLVED = ["ratified", "rejected", "withdrawn"]
RESOLVERS = {
    "ratify": ("ratify", "{%s}", *YES),
    "ratify-amended": ("ratify", "{%s}", "--decision", "Use PASETO", *YES),
    "reject": ("reject", "{%s}", "--reason", "no", *YES),
    "withdraw": ("withdraw", "{%s}"),
    "withdraw-with-reason": ("withdraw", "{%s}", "--reason", "changed my mind", "--actor", "claude"),
}


@pytest.mark.parametrize("state", RESOLVED)
@pytest.mark.parametrize("action", RESOLVERS.keys())
def test_resolving_a_proposal_that_is_not_pending_is_refused(refused, world, action, state):
    args = tuple(arg % state if "%s" in arg else arg for arg in RESOLVERS[action])
    line = refused(args, 1)
    assert world[state] in line and "not pending" in line


@pytest.mark.parametrize("subject", ["no.such.subject", "build.tool", "auth", "AUTH.tokens.sub"])
def test_retiring_a_subject_with_no_current_decision_is_refused(refused, subject):
    refused(("retire", subject, "--reason", "done", *YES), 1)


def test_broken_audit_chain_is_one_line_exit_1(cli, world, store_path):
    conn = driver.connect(store_path, load_vec=False)
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("UPDATE audit SET actor = 'mallory' WHERE seq = 2")
    conn.close()
    line = assert_one_line_error(cli("audit", "verify"), 1)
    assert "row 2" in line


# -- no store: exit 1 ---------------------------------------------------------------------------

STORE_COMMANDS = [
    ("queue",),
    ("decisions",),
    ("decisions", "--all", "--json"),
    ("history", "auth.tokens"),
    ("show", "ev_" + "0" * 26),
    ("search", "auth"),
    ("audit", "verify"),
    ("audit", "export", "--out", "audit.jsonl"),
    ("log", "a note"),
    ("log", "-"),
    ("propose", "--subject", "a.b", "--decision", "x"),
    ("ratify", "pr_" + "0" * 26, *YES),
    ("reject", "pr_" + "0" * 26, "--reason", "no", *YES),
    ("withdraw", "pr_" + "0" * 26),
    ("retire", "a.b", "--reason", "done", *YES),
]


@pytest.mark.parametrize("args", STORE_COMMANDS, ids=lambda args: "-".join(args[:2]))
def test_command_without_a_store(cli, tmp_path, args):
    missing = tmp_path / "nonexistent" / "x.db"
    result = cli("--db", str(missing), *args, stdin=b"text", db=False)
    line = assert_one_line_error(result, 1)
    assert "ctx init" in line
    assert not missing.parent.exists(), "a command that needs a store created one"


@pytest.mark.parametrize("args", STORE_COMMANDS, ids=lambda args: "-".join(args[:2]))
def test_command_without_a_store_found_from_the_working_folder(cli, tmp_path, args):
    result = cli(*args, stdin=b"text", db=False)
    line = assert_one_line_error(result, 1)
    assert "ctx init" in line
    assert not (tmp_path / ".ctx").exists()


def test_db_after_the_command_name(cli, tmp_path):
    """``--db`` belongs before the command; after it, still one line and no store created."""
    missing = tmp_path / "nonexistent" / "x.db"
    result = cli("queue", "--db", str(missing), db=False)
    assert result.code in (1, 2)
    assert_one_line_error(result, result.code)
    assert not missing.parent.exists()


def test_store_from_ctx_db_that_does_not_exist(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("CTX_DB", str(tmp_path / "elsewhere" / "ctx.db"))
    assert_one_line_error(cli("queue", db=False), 1)
    assert not (tmp_path / "elsewhere").exists()


def test_store_path_that_is_a_folder(cli, tmp_path):
    folder = tmp_path / "folder.db"
    folder.mkdir()
    assert_one_line_error(cli("--db", str(folder), "queue", db=False), 2)
    assert_one_line_error(cli("--db", str(folder), "init", db=False), 2)
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("args", STORE_COMMANDS[:8], ids=lambda args: "-".join(args[:2]))
def test_store_that_is_not_a_database(cli, tmp_path, args):
    junk = tmp_path / "junk.db"
    content = b"this is not a SQLite database, just some text in a file\n" * 100
    junk.write_bytes(content)
    result = cli("--db", str(junk), *args, stdin=b"text", db=False)
    assert_one_line_error(result, 1)
    assert junk.read_bytes() == content


def test_store_from_a_newer_ctx(cli, kernel, store_path):
    kernel.close()
    conn = driver.connect(store_path, load_vec=False)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    line = assert_one_line_error(cli("queue"), 1)
    assert "999" in line


# -- search: FTS syntax is searched as words ----------------------------------------------------

FTS_SYNTAX_WITH_WORDS = [
    'auth "',
    '"auth',
    '"unterminated',
    "NEAR(",
    "NEAR(auth tokens",
    "NEAR(auth tokens, 2)",
    "auth*",
    "*auth",
    "AND",
    "OR",
    "NOT",
    "auth NOT",
    "NOT auth",
    "auth AND OR NOT jwt",
    "auth + jwt",
    "(auth",
    "auth)",
    "auth -jwt",
    "^auth",
    "{auth tokens}",
    "decision:jwt",
    "text : auth",
    "auth'; DROP TABLE decision; --",
    "auth\x00jwt",
]


@pytest.mark.parametrize("query", FTS_SYNTAX_WITH_WORDS)
def test_search_treats_fts_syntax_as_words(cli, world, store_path, query):
    before = snapshot(store_path)
    result = cli("search", query)
    assert "Traceback" not in result.err
    assert result.code == 0, result.err
    assert result.err == ""
    headers = [line for line in result.out.splitlines() if not line.startswith(" ")]
    assert headers == ["Decisions (ratified):", "Evidence (unratified):"]
    assert snapshot(store_path) == before


FOUND_DESPITE_SYNTAX = ["auth NOT", "NOT auth", '"auth', "auth*", "NEAR(auth", "auth -jwt", "auth)"]


@pytest.mark.parametrize("query", FOUND_DESPITE_SYNTAX)
def test_search_with_syntax_still_finds_the_words(cli, world, query):
    result = cli("search", query, "--json")
    assert result.code == 0, result.err
    found = json.loads(result.out)
    assert [hit["id"] for hit in found["evidence"]] == [world["evidence"]]
    assert [hit["id"] for hit in found["decisions"]] == [world["current"]]


@pytest.mark.parametrize("query", ["*", '"', '""', "   ", "()", "-", "^", ":", '"*"', "( , )", "+ - * /"])
def test_search_without_words_is_a_usage_error(refused, query):
    refused(("search", query), 2)
    refused(("search", query, "--json"), 2)


# -- the same contract from a real process ------------------------------------------------------


@pytest.fixture
def process_store(kernel: Ctx, store_path: Path) -> dict[str, str]:
    evidence = kernel.log("auth tokens use JWT").id
    pending = kernel.propose("auth.tokens", "Use JWT", evidence=[evidence], proposer="claude").id
    ratified = kernel.propose("auth.session", "Use cookies", proposer="claude").id
    kernel.ratify(ratified, reviewer="alice")
    kernel.close()
    return {"evidence": evidence, "pending": pending, "ratified": ratified}


PROCESS_CASES = [
    pytest.param([b"log", b"caf\xe9"], b"", 2, id="argv-not-utf8"),
    pytest.param([b"propose", b"--subject", b"a.b", b"--decision", b"caf\xe9"], b"", 2, id="argv-decision"),
    pytest.param(
        [b"propose", b"--subject", b"a.b", b"--decision", b"x", b"--proposer", b"\xff"],
        b"",
        2,
        id="argv-proposer",
    ),
    pytest.param([b"log", b"note", b"--agent", b"\xff"], b"", 2, id="argv-agent"),
    pytest.param([b"log", b"-"], b"\xff\xfe", 2, id="stdin-not-utf8"),
    pytest.param([b"propose", b"--input", b"-"], b"{", 2, id="json-malformed"),
    pytest.param(
        [b"propose", b"--input", b"-"], b'{"subject": "a.b", "decision": "\xe9"}', 2, id="json-not-utf8"
    ),
    pytest.param([b"propose", b"--input", b"-"], b'{"subject": "a.b"}', 2, id="json-schema"),
    pytest.param([b"show", b"xyz"], b"", 2, id="malformed-id"),
    pytest.param([b"decisions", b"--as-of", b"someday"], b"", 2, id="bad-date"),
    pytest.param([b"search", b"*"], b"", 2, id="search-no-words"),
    pytest.param([b"ratify", b"{pending}"], b"", 2, id="ratify-no-terminal"),
    pytest.param([b"ratify", b"{ratified}", b"--yes", b"--reviewer", b"al"], b"", 1, id="ratify-not-pending"),
    pytest.param(
        [b"retire", b"no.such", b"--reason", b"x", b"--yes", b"--reviewer", b"al"], b"", 1, id="retire"
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("args", "stdin", "code"), PROCESS_CASES)
def test_bad_input_in_a_real_process(process_store, store_path, args, stdin, code):
    argv = [arg.replace(b"{pending}", process_store["pending"].encode()) for arg in args]
    argv = [arg.replace(b"{ratified}", process_store["ratified"].encode()) for arg in argv]
    before = snapshot(store_path)
    done = run_ctx_process("--db", str(store_path), *argv, stdin=stdin)
    result = Result(
        done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    )
    assert_one_line_error(result, code)
    assert snapshot(store_path) == before


def test_no_store_in_a_real_process(tmp_path):
    done = run_ctx_process("--db", str(tmp_path / "nonexistent" / "x.db"), "queue")
    assert done.returncode == 1
    assert done.stdout == b""
    assert b"Traceback" not in done.stderr
    assert done.stderr.decode().strip().count("\n") == 0
    assert done.stderr.startswith(b"ctx: error:")


# -- files that are not what they should be: one line, nothing touched ---------------------------


def test_init_on_a_file_that_is_not_a_database(cli, tmp_path):
    junk = tmp_path / "notes.db"
    content = b"this is not a SQLite database, just some text in a file\n" * 100
    junk.write_bytes(content)
    line = assert_one_line_error(cli("--db", str(junk), "init", db=False), 1)
    assert "not a SQLite database" in line
    assert junk.read_bytes() == content


def test_init_where_no_folder_can_be_made_is_one_line(cli, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("kept\n")
    line = assert_one_line_error(cli("--db", str(blocker / "sub" / "ctx.db"), "init", db=False), 1)
    assert "cannot create a store at" in line
    assert blocker.read_text() == "kept\n"


def _damage_pages(path: Path, tables: tuple[str, ...]) -> None:
    """Overwrite the root page of each table (and of its indexes) with garbage, as a failing disk would."""
    conn = driver.connect(path, load_vec=False)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    marks = ",".join("?" * len(tables))
    pages = [
        r[0]
        for r in conn.execute(
            f"SELECT rootpage FROM sqlite_master WHERE rootpage > 0 AND tbl_name IN ({marks})", tables
        )
    ]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with path.open("r+b") as handle:
        for page in pages:
            handle.seek((page - 1) * size)
            handle.write(b"\xa5" * size)


@pytest.mark.parametrize(
    "args",
    [("log", "a new note"), ("search", "auth"), ("queue",), ("audit", "verify"), ("show", "{evidence}")],
    ids=lambda args: "-".join(args[:2]),
)
def test_a_damaged_page_is_one_line(cli, world, store_path, args):
    _damage_pages(store_path, ("evidence", "proposal", "audit"))
    line = assert_one_line_error(cli(*(a.format(**world) for a in args)), 1)
    assert "damaged" in line


@pytest.mark.parametrize("under", ["a-file.txt/adr", "a-file.txt/deeper/adr", "a-file.txt"])
def test_export_under_a_path_that_is_not_a_folder(cli, world, tmp_path, under):
    (tmp_path / "a-file.txt").write_text("not a folder", encoding="utf-8")
    result = cli("export", "adr", str(tmp_path / under))
    line = assert_one_line_error(result, 2)
    assert "a-file.txt" in line
    assert (tmp_path / "a-file.txt").read_text(encoding="utf-8") == "not a folder"
