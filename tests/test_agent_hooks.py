"""The README's session-start hooks, run the way Claude Code and Codex run them.

Both hosts run a SessionStart command hook through the shell in the project folder, pass a JSON
description of the session on standard input, and add the command's standard output to the
model's context when it exits 0: as plain text, unless it looks like JSON (Codex reads output
starting with ``{`` or ``[`` as a hook response). Claude Code keeps at most 10,000 characters
inline; longer output becomes a file path and a preview.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx

README = Path(__file__).resolve().parent.parent / "README.md"
INLINE_LIMIT = 10_000


def readme_session_start_hooks() -> dict[str, str]:
    """Each SessionStart command in the README's JSON hook settings, by the settings file it belongs to."""
    text = README.read_text(encoding="utf-8")
    found = {}
    for block in re.finditer(r"```json\n(.*?)```", text, re.DOTALL):
        settings = json.loads(block.group(1))
        if "hooks" not in settings:
            continue
        # The settings file named last in the text before the block.
        named = re.findall(r"`([\w./~-]+\.json)`", text[: block.start()])
        for group in settings["hooks"].get("SessionStart", []):
            for hook in group["hooks"]:
                assert hook["type"] == "command"
                found[named[-1]] = hook["command"]
    return found


HOOKS = readme_session_start_hooks()


def test_the_readme_configures_claude_code_and_codex():
    assert set(HOOKS) == {".claude/settings.json", ".codex/hooks.json"}


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


@pytest.mark.parametrize("settings", sorted(HOOKS))
def test_the_hook_prints_the_block_to_stdout(crowded, store_path, tmp_path, settings):
    project = store_path.parent.parent
    hook_input = {
        "session_id": "0b7d7c9e-3a51-4c6e-9f5e-2d1b4f6a8c90",
        "transcript_path": str(tmp_path / "transcript.jsonl"),
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "startup",
        "model": "some-model",
    }
    # The host's PATH, with this environment's `ctx` on it as an installed ctx would be.
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    result = subprocess.run(
        HOOKS[settings],
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
    assert len(out) <= INLINE_LIMIT


@pytest.mark.parametrize("settings", sorted(HOOKS))
def test_the_hook_outside_a_store_exits_0_with_a_note(tmp_path, settings):
    folder = tmp_path / "no-store-here"
    folder.mkdir()
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    env.pop("CTX_DB", None)
    for stdin in (
        json.dumps({"cwd": str(folder), "hook_event_name": "SessionStart"}).encode(),
        b"",
        b"{oops",
    ):
        result = subprocess.run(
            HOOKS[settings],
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
