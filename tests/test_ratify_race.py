"""Two people ratify two proposals of one subject at the same instant: exactly one succeeds.

Each `ctx ratify --yes` approves what its proposal was made against; its transaction carries out
the plan it computed when it started, or refuses. The later one never silently supersedes the
earlier one's decision, whichever process starts first.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_ctx_process


def _ctx(store: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    done = run_ctx_process("--db", str(store), *args)
    assert done.returncode == 0, done.stderr.decode()
    return done


@pytest.mark.slow
def test_two_ratifications_of_one_subject_at_once_leave_exactly_one_decision(tmp_path: Path) -> None:
    ctx = str(Path(sys.executable).parent / "ctx")
    for round_ in range(10):
        store = tmp_path / f"round{round_}" / "ctx.db"
        store.parent.mkdir()
        _ctx(store, "init")
        first = (
            _ctx(store, "propose", "--subject", "auth.tokens", "--decision", "Use JWT")
            .stdout.decode()
            .strip()
        )
        second = (
            _ctx(store, "propose", "--subject", "auth.tokens", "--decision", "Opaque ids")
            .stdout.decode()
            .strip()
        )
        runs = [
            subprocess.Popen(
                [ctx, "--db", str(store), "ratify", pid, "--yes", "--no-settle", "--reviewer", who],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for pid, who in ((first, "alice"), (second, "bob"))
        ]
        outcomes = [(run.wait(60), run.stderr.read().decode()) for run in runs]
        assert sorted(code for code, _ in outcomes) == [0, 1], outcomes
        refusal = next(err for code, err in outcomes if code == 1)
        assert refusal.startswith("ctx: error: not ratified: auth.tokens now has current decision"), refusal
        history = json.loads(_ctx(store, "history", "auth.tokens", "--json").stdout)["decisions"]
        assert len(history) == 1 and history[0]["valid_until"] is None
        queue = json.loads(_ctx(store, "queue", "--json").stdout)["proposals"]
        assert len(queue) == 1  # the refused one is still pending, for a person to look at


def test_with_yes_a_decision_ratified_after_the_proposal_is_closed_only_when_named(cli) -> None:
    assert cli("init").code == 0
    first = cli("propose", "--subject", "auth.tokens", "--decision", "Use JWT").out.strip()
    second = cli("propose", "--subject", "auth.tokens", "--decision", "Opaque ids").out.strip()
    done = cli("ratify", first, "--yes", "--no-settle", "--reviewer", "alice", "--json")
    current = json.loads(done.out)["decision"]["id"]
    refused = cli("ratify", second, "--yes", "--reviewer", "bob")
    assert refused.code == 1 and refused.err.count("\n") == 1
    assert f"add --closes {current}" in refused.err and "after" in refused.err
    named = cli("ratify", second, "--yes", "--reviewer", "bob", "--closes", current, "--json")
    assert named.code == 0, named.err
    assert json.loads(named.out)["superseded"] == [current]
