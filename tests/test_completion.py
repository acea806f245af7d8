"""Shell completion: commands, options, subjects and pending proposal ids, as the shells ask for them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx

CTX = str(Path(sys.executable).parent / "ctx")


def _complete(words: str, store: Path, shell: str = "bash") -> list[str]:
    env = {**os.environ, "CTX_DB": str(store), "_CTX_COMPLETE": f"{shell}_complete"}
    env.update({"COMP_WORDS": words, "COMP_CWORD": str(len(words.split(" ")) - 1)})
    done = subprocess.run([CTX], env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return [line.split(",", 1)[1] for line in done.stdout.decode().splitlines()]


def test_bash_completes_commands_pending_ids_and_subjects(kernel: Ctx, store_path: Path) -> None:
    kernel.ratify(kernel.propose("auth.tokens", "Use JWT").id, reviewer="ann")
    pending = kernel.propose("auth.sessions", "Use Redis").id
    assert "status" in _complete("ctx st", store_path)
    assert _complete("ctx ratify pr_", store_path) == [pending]
    assert _complete("ctx history auth.", store_path) == ["auth.sessions", "auth.tokens"]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_a_script_for_each_shell(cli, shell: str) -> None:
    result = cli("completion", shell)
    assert result.code == 0 and "_CTX_COMPLETE" in result.out
