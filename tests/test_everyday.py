"""A newcomer's first day through the CLI: short lists, recent evidence, a subject's whole history,
a second `ctx demo`, the commands ctx has not, and counts that read right for one and for many."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import CTX_BIN, run_on_terminal
from test_json_schemas import assert_valid

from ctx_kernel.kernel import Ctx


def _one_error_line(result) -> str:
    """The one line a refused command prints on standard error, with nothing on standard output."""
    assert result.code != 0 and result.out == "", result
    assert result.err.startswith("ctx: error: ") and result.err.count("\n") == 1, result.err
    assert "Traceback" not in result.err
    return result.err.removeprefix("ctx: error: ").rstrip("\n")


@pytest.fixture
def busy(kernel: Ctx, monkeypatch: pytest.MonkeyPatch) -> Ctx:
    """A store with three current decisions, a superseded one, pending proposals and evidence."""
    monkeypatch.setenv("CTX_VECTORS", "off")
    for subject in ("api.style", "ci.cache", "db.engine"):
        kernel.ratify(kernel.propose(subject, f"First word on {subject}").id, reviewer="ann")
    kernel.ratify(kernel.propose("db.engine", "Use PostgreSQL 16").id, reviewer="ann")
    for i in range(4):
        kernel.propose(f"queue.item{i}", f"Pending number {i}", proposer="claude" if i % 2 else "codex")
    return kernel


# -- -n/--limit ---------------------------------------------------------------------------------


def test_queue_takes_n_as_the_oldest_n(cli, busy: Ctx) -> None:
    everything = json.loads(cli("queue", "--json").out)["proposals"]
    first_two = json.loads(cli("queue", "-n", "2", "--json").out)
    assert_valid("queue", first_two)
    assert [p["id"] for p in first_two["proposals"]] == [p["id"] for p in everything[:2]]
    by_claude = json.loads(cli("queue", "--proposer", "claude", "--limit", "1", "--json").out)["proposals"]
    assert [p["subject"] for p in by_claude] == ["queue.item1"]
    assert len(cli("queue", "-n", "1").out.strip().splitlines()) == 2  # one proposal: its line and its text


def test_decisions_search_and_history_take_n(cli, busy: Ctx) -> None:
    listed = json.loads(cli("decisions", "-n", "2", "--json").out)
    assert_valid("decisions", listed)
    assert [d["subject"] for d in listed["decisions"]] == ["api.style", "ci.cache"]
    found = json.loads(cli("search", "first", "-n", "1", "--json").out)
    assert len(found["decisions"]) == 1
    history = json.loads(cli("history", "db.engine", "-n", "1", "--json").out)
    assert_valid("history", history)
    assert [d["decision"] for d in history["decisions"]] == ["Use PostgreSQL 16"]


@pytest.mark.parametrize("command", [["queue"], ["decisions"], ["history", "db.engine"], ["evidence"]])
@pytest.mark.parametrize("value", ["0", "-1", "lots", "99999999999999999999"])
def test_a_bad_limit_is_one_line(cli, busy: Ctx, command: list[str], value: str) -> None:
    message = _one_error_line(cli(*command, "-n", value))
    assert "'--limit' / '-n'" in message


# -- ctx evidence -------------------------------------------------------------------------------


def test_evidence_lists_the_newest_first_with_filters(cli, kernel: Ctx) -> None:
    kernel.log("Old note on retries", agent="claude")
    kernel.log("A CI log line", kind="log", agent="codex")
    kernel.log("Claude's second thought\nspread over two lines", agent="claude")
    shown = cli("evidence")
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert len(lines) == 3 and "Claude's second thought spread over two lines" in lines[0]
    newest = kernel.recent_evidence(1)[0]
    assert lines[0].startswith(kernel.handles([newest.id])[newest.id] + "  ")
    assert "  log  codex  A CI log line" in lines[1]
    by_claude = json.loads(cli("evidence", "--agent", "claude", "-n", "1", "--json").out)
    assert_valid("evidence-list", by_claude)
    assert [e["text"] for e in by_claude["evidence"]] == ["Claude's second thought\nspread over two lines"]
    logs = json.loads(cli("evidence", "--kind", "log", "--json").out)
    assert [e["kind"] for e in logs["evidence"]] == ["log"]
    today = kernel.recent_evidence(1)[0].created_at[:10]
    since_today = json.loads(cli("evidence", "--since", today, "--json").out)
    assert since_today["since"] == f"{today}T00:00:00.000000Z" and len(since_today["evidence"]) == 3
    assert cli("evidence", "--since", "2999-01-01").out == "no evidence\n"


def test_evidence_refuses_a_bad_since_or_kind_in_one_line(cli, kernel: Ctx) -> None:
    assert "invalid date 'soon'" in _one_error_line(cli("evidence", "--since", "soon"))
    assert "'--kind'" in _one_error_line(cli("evidence", "--kind", "secret"))


# -- ctx history: what was rejected or withdrawn ------------------------------------------------


def test_history_of_a_subject_with_only_rejected_and_withdrawn_proposals(cli, kernel: Ctx) -> None:
    rejected = kernel.propose("ci.runner", "Use GitHub Actions runners", proposer="claude")
    kernel.reject(rejected.id, reviewer="ann", reason="Too costly for our minutes")
    withdrawn = kernel.propose("ci.runner", "Use Buildkite", proposer="codex")
    kernel.withdraw(withdrawn.id, actor="codex")
    shown = cli("history", "ci.runner")
    assert shown.code == 0, shown.err
    names = kernel.handles([rejected.id, withdrawn.id])
    when = {p: (kernel.proposal(p).resolved_at or "")[:19] for p in names}
    assert shown.out.splitlines() == [
        f"{names[rejected.id]}  ci.runner  [rejected by ann, {when[rejected.id]}; "
        "proposed by claude, never in force]",
        "    Use GitHub Actions runners",
        "    reason: Too costly for our minutes",
        f"{names[withdrawn.id]}  ci.runner  [withdrawn by codex, {when[withdrawn.id]}; "
        "proposed by codex, never in force]",
        "    Use Buildkite",
    ]
    document = json.loads(cli("history", "ci.runner", "--json").out)
    assert_valid("history", document)
    assert document["decisions"] == []
    assert [(p["id"], p["status"]) for p in document["proposals"]] == [
        (rejected.id, "rejected"),
        (withdrawn.id, "withdrawn"),
    ]


def test_history_interleaves_decisions_and_proposals_and_keeps_its_keys(
    cli, kernel: Ctx, monkeypatch
) -> None:
    monkeypatch.setenv("CTX_VECTORS", "off")
    first = kernel.ratify(kernel.propose("db.engine", "Use MySQL").id, reviewer="ann").decision
    kernel.reject(kernel.propose("db.engine", "Use MongoDB").id, reviewer="ann", reason="no joins")
    kernel.ratify(kernel.propose("db.engine", "Use PostgreSQL").id, reviewer="ann")
    kernel.propose("db.engine", "Use SQLite")  # pending: the queue's, not the history's
    out = cli("history", "db.engine").out
    assert out.index("Use MySQL") < out.index("Use MongoDB") < out.index("Use PostgreSQL")
    assert "Use SQLite" not in out and "[rejected by ann" in out
    document = json.loads(cli("history", "db.engine", "--json").out)
    assert list(document) == ["subject", "decisions", "proposals"]
    assert document["decisions"][0]["id"] == first.id
    assert [p["decision"] for p in document["proposals"]] == ["Use MongoDB"]


def test_history_of_nothing_is_still_one_line(cli, kernel: Ctx) -> None:
    assert _one_error_line(cli("history", "no.such")) == (
        "no decisions on no.such, and no rejected or withdrawn proposals"
    )
    kernel.propose("only.pending", "Wait for review")
    assert "ctx queue --subject only.pending" in _one_error_line(cli("history", "only.pending"))


# -- ctx demo, run again ------------------------------------------------------------------------


def test_demo_again_without_a_terminal_refuses_unless_forced(cli, tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    assert cli("demo", "--path", str(folder), "--no-review", db=False).code == 0
    store = folder / ".ctx" / "ctx.db"
    with Ctx.open(store, embedder=None) as demo:
        demo.log("Something the newcomer tried in the demo")
    message = _one_error_line(cli("demo", "--path", str(folder), "--no-review", db=False))
    assert "already holds the demo store" in message and "--force" in message
    with Ctx.open(store, embedder=None) as demo:
        assert demo.recent_evidence(1)[0].text == "Something the newcomer tried in the demo"
    assert cli("demo", "--path", str(folder), "--no-review", "--force", db=False).code == 0
    with Ctx.open(store, embedder=None) as demo:
        assert "Something the newcomer tried" not in [e.text for e in demo.recent_evidence(100)]


@pytest.mark.slow
def test_demo_again_on_a_terminal_asks_first(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    env = {**os.environ, "PATH": CTX_BIN + os.pathsep + os.environ["PATH"], "CTX_VECTORS": "off"}
    code, _ = run_on_terminal(["demo", "--path", str(folder), "--no-review"], b"", env)
    assert code == 0
    with Ctx.open(folder / ".ctx" / "ctx.db", embedder=None) as demo:
        demo.log("kept unless the person says yes")
    code, output = run_on_terminal(["demo", "--path", str(folder), "--no-review"], b"n\n", env)
    assert code == 1 and "build it again from scratch" in output and "aborted, nothing changed" in output
    with Ctx.open(folder / ".ctx" / "ctx.db", embedder=None) as demo:
        assert demo.recent_evidence(1)[0].text == "kept unless the person says yes"
    code, output = run_on_terminal(["demo", "--path", str(folder), "--no-review"], b"y\n", env)
    assert code == 0 and "Current decisions:" in output
    with Ctx.open(folder / ".ctx" / "ctx.db", embedder=None) as demo:
        assert demo.recent_evidence(1)[0].text != "kept unless the person says yes"


def test_demo_never_replaces_a_store_that_is_not_a_demo(cli, tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    Ctx.init(folder / ".ctx" / "ctx.db", embedder=None)[0].close()
    message = _one_error_line(cli("demo", "--path", str(folder), "--no-review", "--force", db=False))
    assert "is not a demo store" in message


# -- commands ctx has not -----------------------------------------------------------------------


@pytest.mark.parametrize("word", ["edit", "amend", "update", "Edit"])
def test_edit_says_how_to_amend(cli, kernel: Ctx, word: str) -> None:
    message = _one_error_line(cli(word, "pr_x"))
    assert message.startswith(f"there is no `ctx {word}`: ratified decisions never change")
    assert "ctx ratify ID --decision TEXT" in message and "ctx propose --subject SUBJECT" in message
    assert "audit" not in message


@pytest.mark.parametrize("word", ["delete", "remove", "rm", "delet"])
def test_delete_says_nothing_is_deleted(cli, kernel: Ctx, word: str) -> None:
    message = _one_error_line(cli(word))
    assert "nothing is deleted" in message and "ctx reject ID" in message and "ctx retire SUBJECT" in message


def test_a_mistyped_command_gets_a_suggestion_on_the_same_line(cli, kernel: Ctx) -> None:
    assert _one_error_line(cli("quue")) == "no such command 'quue': did you mean 'queue'? (see `ctx --help`)"
    assert _one_error_line(cli("xyzzy")) == "no such command 'xyzzy' (see `ctx --help`)"


# -- counts that read right -----------------------------------------------------------------------


def test_status_log_and_verify_count_one_as_one(cli, kernel: Ctx, monkeypatch) -> None:
    monkeypatch.setenv("CTX_VECTORS", "off")
    assert "0 texts" in cli("status").out
    logged = cli("log", "the key is AKIAIOSFODNN7EXAMPLE")
    assert logged.err == "redacted 1 secret before storing\n"
    assert "audit chain ok: 1 row, last hash" in cli("audit", "verify").out
    assert " 1 text\n" in cli("status").out
    kernel.ratify(kernel.propose("db.engine", "Use PostgreSQL").id, reviewer="ann")
    assert "1 current decision, 1 in all" in cli("status").out


def test_the_session_block_counts_what_did_not_fit_and_names_ctx_recall(
    cli, kernel: Ctx, monkeypatch
) -> None:
    monkeypatch.setenv("CTX_VECTORS", "off")
    # Current decisions that do not fit go to the block's index; other items are counted last.
    kernel.ratify(kernel.propose("area.topic", "Decision about a component").id, reviewer="ann")
    for i in range(12):
        proposal = f"Proposal number {i} about a component with a long name. " * 3
        kernel.propose(f"area{i}.other", proposal)
    footer = cli("inject", "--budget", "200").out.strip().splitlines()[-1]
    assert footer.startswith("_") and "more items did not fit the budget of 200 tokens" in footer
    assert footer.endswith("; ask `ctx recall QUERY`._")

    # The budget at which exactly one item is left out: the line counts it as one.
    def others(block) -> int:
        return sum(n for name, n in block.omitted.items() if name != "decisions")

    budget = next(b for b in range(200, 8000, 5) if others(kernel.inject(budget=b)) == 1)
    footer = cli("inject", "--budget", str(budget)).out.strip().splitlines()[-1]
    assert footer.startswith(f"_1 more item did not fit the budget of {budget} tokens"), footer
