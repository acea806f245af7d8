"""`ctx status`, `ctx doctor` and `ctx path`: what a newcomer checks first."""

from __future__ import annotations

import json
from pathlib import Path

from test_json_schemas import assert_valid

from ctx_kernel.kernel import Ctx


def test_status_counts_the_store_and_remembers_the_last_verify(cli, kernel: Ctx, store_path: Path) -> None:
    kernel.log("a note")
    kernel.ratify(kernel.propose("auth.tokens", "Use JWT").id, reviewer="alice")
    kernel.propose("db.driver", "Use psycopg 3")
    result = cli("status", "--json")
    assert result.code == 0, result.err
    found = json.loads(result.out)
    assert_valid("status", found)
    assert found["store"] == str(store_path)
    assert (found["evidence"], found["decisions"], found["current_decisions"], found["pending"]) == (
        1,
        1,
        1,
        1,
    )
    assert found["last_verify"] is None and found["encrypted"] is False
    assert cli("audit", "verify").code == 0
    after = json.loads(cli("status", "--json").out)["last_verify"]
    assert after["ok"] is True and after["rows"] >= 3
    plain = cli("status")
    assert "1 pending" in plain.out and "last verified" in plain.out and "\x1b" not in plain.out


def test_doctor_passes_on_a_good_store_and_says_what_to_do_without_one(
    cli, kernel: Ctx, tmp_path, monkeypatch
) -> None:
    good = cli("doctor", "--json")
    report = json.loads(good.out)
    assert_valid("doctor", report)
    names = [c["name"] for c in report["checks"]]
    assert names[:5] == ["driver", "model", "store", "integrity", "audit"]
    assert good.code == (0 if report["ok"] else 1)
    assert {c["name"]: c["ok"] for c in report["checks"]}["driver"] is True
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    missing = cli("doctor", db=False)
    assert missing.code == 1
    assert "FAIL store" in missing.out and "fix: run `ctx init`" in missing.out


def test_path_prints_the_store_or_one_line(cli, kernel: Ctx, store_path: Path, tmp_path, monkeypatch) -> None:
    assert cli("path").out.strip() == str(store_path)
    monkeypatch.chdir(store_path.parent.parent)
    assert cli("path", db=False).out.strip() == str(store_path)
    monkeypatch.chdir(tmp_path)
    result = cli("path", db=False)
    assert result.code == 1 and result.err.startswith("ctx: error: no ctx store in")


def test_propose_takes_agent_like_log(cli, kernel: Ctx) -> None:
    result = cli(
        "propose", "--subject", "ci.runner", "--decision", "Use self-hosted runners", "--agent", "codex"
    )
    assert result.code == 0, result.err
    assert kernel.queue()[0].proposer == "codex"
    withdrawn = cli("withdraw", result.out.strip(), "--agent", "codex")
    assert withdrawn.code == 0 and kernel.proposal(result.out.strip()).resolved_by == "codex"


def test_init_keeps_the_store_out_of_git_and_warns_when_it_shadows_another(
    cli, tmp_path, monkeypatch
) -> None:
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    monkeypatch.chdir(project)
    first = cli("init", db=False)
    assert first.code == 0 and ".gitignore keeps the store out of git" in first.err
    ignore = (project / ".ctx" / ".gitignore").read_text()
    assert "*\n" in ignore and "!checkpoints/" in ignore
    monkeypatch.chdir(project / "pkg")
    nested = cli("init", db=False)
    assert nested.code == 0
    assert f"note: {project / '.ctx' / 'ctx.db'} already serves this folder" in nested.err
    again = cli("init", db=False)
    assert again.code == 0 and "already serves" not in again.err and ".gitignore" not in again.err
