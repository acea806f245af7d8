"""The session hooks `ctx setup` writes, run the way Claude Code and Codex run them.

Both hosts run a SessionStart command hook through the shell in the project folder, pass a JSON
description of the session on standard input, and add the command's standard output to the
model's context when it exits 0: as plain text, unless it looks like JSON (Codex reads output
starting with ``{`` or ``[`` as a hook response). Claude Code keeps at most 10,000 characters
inline; longer output becomes a file path and a preview. The guide shows, for doing it by hand,
exactly what `ctx setup` writes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import ctx_on_path, git_init, run_ctx_process

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.limits import MAX_INJECT_CHARS

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide.md"
INLINE_LIMIT = 10_000
HOOK_FILES = {"claude-code": ".claude/settings.json", "codex": ".codex/hooks.json"}


def written_hooks(project: Path, agent: str) -> dict[str, str]:
    """The command of each hook `ctx setup AGENT` writes in ``project`` (made a git repository), by event."""
    git_init(project)
    done = run_ctx_process("setup", agent, "--yes", env=ctx_on_path(), cwd=project)
    assert done.returncode == 0, done.stderr.decode()
    settings = json.loads((project / HOOK_FILES[agent]).read_text(encoding="utf-8"))
    return {event: groups[0]["hooks"][0]["command"] for event, groups in settings["hooks"].items()}


def _guide_blocks(heading: str) -> list[tuple[str, str]]:
    """The fenced blocks (language, text) of one section of the guide."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    section = section[: section.index("\n## ", 1)]
    return re.findall(r"```(\w+)\n(.*?)```", section, re.DOTALL)


def test_the_guide_shows_exactly_what_setup_writes(tmp_path):
    project = tmp_path / "project"
    for agent in HOOK_FILES:
        written_hooks(project, agent)
    blocks = _guide_blocks("## Wire up an agent: `ctx setup`")
    settings, mcp = (body for language, body in blocks if language == "json")
    (config,) = (body for language, body in blocks if language == "toml")
    assert settings == (project / ".claude" / "settings.json").read_text(encoding="utf-8")
    assert mcp == (project / ".mcp.json").read_text(encoding="utf-8")
    assert config == (project / ".codex" / "config.toml").read_text(encoding="utf-8")
    codex = json.loads(settings)
    codex["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] = 3  # "the same with \"timeout\": 3"
    assert json.loads((project / ".codex" / "hooks.json").read_text(encoding="utf-8")) == codex


@pytest.fixture
def crowded(kernel: Ctx) -> Ctx:
    """More current decisions, superseded ones and proposals than a 2,000-token block holds."""
    for i in range(60):
        subject = f"area{i % 12}.topic{i}"
        for version in range(2):
            text = f"Use option {version} for topic {i}: " + "keep the reasoning in the rationale. " * 3
            kernel.ratify(kernel.propose(subject, text).id, reviewer="alice")
        kernel.propose(subject, f"Use option 2 for topic {i}", proposer="claude")
        kernel.log(f"note {i}: the team discussed topic {i} and option {i % 3} at length")
    return kernel


@pytest.mark.parametrize("agent", sorted(HOOK_FILES))
def test_the_hook_prints_the_block_to_stdout(crowded, store_path, tmp_path, agent):
    project = store_path.parent.parent
    command = written_hooks(project, agent)["SessionStart"]
    hook_input = {
        "session_id": "0b7d7c9e-3a51-4c6e-9f5e-2d1b4f6a8c90",
        "transcript_path": str(tmp_path / "transcript.jsonl"),
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "startup",
        "model": "some-model",
    }
    # The host's PATH, with this environment's `ctx` on it as an installed ctx would be.
    env = {**os.environ, **ctx_on_path()}
    result = subprocess.run(
        command,
        shell=True,
        cwd=project,
        env=env,
        input=json.dumps(hook_input).encode(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr == b""
    out = result.stdout.decode("utf-8")
    assert out == crowded.inject(budget=2000).markdown
    assert out.startswith("# Project decisions") and not out.lstrip().startswith(("{", "["))
    assert "## Current decisions" in out and "did not fit the budget" in out.splitlines()[-1]
    assert len(out) <= INLINE_LIMIT == MAX_INJECT_CHARS


def test_the_hook_block_keeps_to_the_inline_limit_whatever_the_budget(kernel, store_path):
    for i in range(80):
        text = f"Use option {i}, " + "for reasons the rationale gives at length, " * 8
        kernel.ratify(kernel.propose(f"area{i % 12}.topic{i}", text).id, reviewer="alice")
    assert len(kernel.inject(budget=100_000, max_chars=None).markdown) > INLINE_LIMIT
    for budget in ("2500", "100000"):
        done = run_ctx_process("hook", "session-start", "--budget", budget, env={"CTX_DB": str(store_path)})
        assert done.returncode == 0, done.stderr.decode()
        out = done.stdout.decode("utf-8")
        assert len(out) <= INLINE_LIMIT and "## Also current (not shown above)" in out


@pytest.mark.parametrize("agent", sorted(HOOK_FILES))
def test_the_hook_outside_a_store_exits_0_with_a_note(tmp_path, agent):
    folder = tmp_path / "no-store-here"
    command = written_hooks(folder, agent)["SessionStart"]
    env = {**os.environ, **ctx_on_path()}
    env.pop("CTX_DB", None)
    for stdin in (
        json.dumps({"cwd": str(folder), "hook_event_name": "SessionStart"}).encode(),
        b"",
        b"{oops",
    ):
        result = subprocess.run(
            command,
            shell=True,
            cwd=folder,
            env=env,
            input=stdin,
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr.decode()
        assert result.stdout == b""
        assert f"no ctx store in {folder.resolve()}" in result.stderr.decode()
        assert "Traceback" not in result.stderr.decode()
