"""On a real terminal, ratification asks for the reviewer's name and a confirmation."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import run_on_terminal

from ctx_kernel.kernel import Ctx


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize(("answer", "ratified"), [(b"y\n", True), (b"n\n", False)])
def test_ratify_on_a_terminal_asks_for_name_and_confirmation(kernel: Ctx, store_path: Path, answer, ratified):
    proposal = kernel.propose("auth.tokens", "Use JWT with refresh rotation")
    env = {**os.environ, "CTX_DB": str(store_path)}
    env.pop("CTX_REVIEWER", None)
    code, output = run_on_terminal(["ratify", proposal.id], b"carol\n" + answer, env)
    assert "Reviewer name" in output and f"Ratify {proposal.id} as carol?" in output
    after = kernel.proposal(proposal.id)
    if ratified:
        assert code == 0, output
        assert after.status == "ratified" and after.resolved_by == "carol"
    else:
        assert code == 1 and "aborted, nothing changed" in output
        assert after.status == "pending"
