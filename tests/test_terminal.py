"""On a real terminal, ratification asks for the reviewer's name and a confirmation."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx

CTX = str(Path(sys.executable).parent / "ctx")


def _run_on_terminal(args: list[str], answers: bytes, env: dict[str, str]) -> tuple[int, str]:
    master, slave = os.openpty()
    proc = subprocess.Popen([CTX, *args], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    time.sleep(0.3)
    os.write(master, answers)
    output = b""
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            output += os.read(master, 4096)
        except OSError:
            break
    proc.wait(timeout=60)
    try:
        while chunk := os.read(master, 4096):
            output += chunk
    except OSError:
        pass
    os.close(master)
    return proc.returncode, output.decode(errors="replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize(("answer", "ratified"), [(b"y\n", True), (b"n\n", False)])
def test_ratify_on_a_terminal_asks_for_name_and_confirmation(kernel: Ctx, store_path: Path, answer, ratified):
    proposal = kernel.propose("auth.tokens", "Use JWT with refresh rotation")
    env = {**os.environ, "CTX_DB": str(store_path)}
    env.pop("CTX_REVIEWER", None)
    code, output = _run_on_terminal(["ratify", proposal.id], b"carol\n" + answer, env)
    assert "Reviewer name" in output and f"Ratify {proposal.id} as carol?" in output
    after = kernel.proposal(proposal.id)
    if ratified:
        assert code == 0, output
        assert after.status == "ratified" and after.resolved_by == "carol"
    else:
        assert code == 1 and "aborted, nothing changed" in output
        assert after.status == "pending"
