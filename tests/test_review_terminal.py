"""`ctx review` as a person runs it: a real terminal (tmux), keys sent, the screen read back."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx


def test_review_refuses_without_a_terminal(cli, kernel: Ctx) -> None:
    result = cli("review")
    assert result.code == 2
    assert result.err.strip() == (
        "ctx: error: ctx review needs a terminal; in scripts use ctx queue, ctx ratify and ctx reject"
    )
    assert result.out == ""


def test_demo_without_a_terminal_prints_the_tour(tmp_path: Path, cli) -> None:
    result = cli("demo", "--path", str(tmp_path / "demo"), db=False)
    assert result.code == 0
    assert "Pending proposals:" in result.out and "frontend.storybook" in result.out


class Tmux:
    """A private tmux server (its own socket) running one command in a fixed-size window."""

    def __init__(self, folder: Path) -> None:
        self.socket = str(folder / "tmux.sock")

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=30, check=True
        )
        return done.stdout

    def alive(self) -> bool:
        done = subprocess.run(
            ["tmux", "-S", self.socket, "has-session", "-t", "review"], capture_output=True, check=False
        )
        return done.returncode == 0

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "review")

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; the screen was:\n{screen}")
            time.sleep(0.2)

    def quit(self) -> None:
        """Press q and wait for the app (and so the session) to end."""
        self.run("send-keys", "-t", "review", "q")
        deadline = time.monotonic() + 15
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not self.alive(), "q did not quit the app"

    def wait_gone(self, text: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while text in self.screen():
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never went away")
            time.sleep(0.2)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_ctx_review_in_tmux_approves_a_proposal(tmp_path: Path, store_path: Path, kernel: Ctx) -> None:
    old = kernel.ratify(kernel.propose("auth.tokens", "Use JWT.").id, reviewer="ann").decision
    proposal = kernel.propose("auth.tokens", "Use opaque session ids in Redis.", proposer="claude")
    ctx = Path(sys.executable).parent / "ctx"
    tmux = Tmux(tmp_path)
    command = f"env CTX_REVIEWER=tess CTX_VECTORS=off {ctx} --db {store_path} review"
    tmux.run("new-session", "-d", "-s", "review", "-x", "100", "-y", "30", command)
    try:
        tmux.wait_for("reviewer: tess")
        tmux.wait_for("opaque session ids")
        tmux.run("send-keys", "-t", "review", "a")
        confirm = tmux.wait_for("Approve as tess?")
        assert old.id in confirm
        tmux.run("send-keys", "-t", "review", "y")
        tmux.wait_for("Nothing to review.")
        tmux.quit()
    finally:
        subprocess.run(["tmux", "-S", tmux.socket, "kill-server"], capture_output=True, check=False)
    ratified = kernel.proposal(proposal.id)
    assert ratified.status == "ratified" and ratified.resolved_by == "tess"
    current = kernel.decisions("auth.tokens")[0]
    assert current.proposal_id == proposal.id and current.ratified_by == "tess"
    assert kernel.decision(old.id).valid_until == current.valid_from
    assert kernel.audit.verify().ok


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_ctx_review_at_80x24_help_and_whole_dialogs(tmp_path: Path, store_path: Path, kernel: Ctx) -> None:
    kernel.ratify(kernel.propose("auth.tokens", "Use JWT.").id, reviewer="ann")
    kernel.propose("auth.tokens", "Use opaque session ids in Redis.", proposer="claude")
    ctx = Path(sys.executable).parent / "ctx"
    tmux = Tmux(tmp_path)
    command = f"env CTX_REVIEWER=tess CTX_VECTORS=off {ctx} --db {store_path} review"
    tmux.run("new-session", "-d", "-s", "review", "-x", "80", "-y", "24", command)
    try:
        queue = tmux.wait_for("opaque session ids")
        assert queue.splitlines()[-1].rstrip().endswith("? help")
        tmux.run("send-keys", "-t", "review", "?")
        keys = tmux.wait_for("Keys: Queue")
        assert "Filter" in keys and "Approve" in keys
        tmux.run("send-keys", "-t", "review", "Escape")
        # A key sent right after Esc would arrive as Alt+key: wait for the help to close first.
        tmux.wait_gone("Keys: Queue")
        tmux.run("send-keys", "-t", "review", "e")
        edit = tmux.wait_for("Save (Ctrl+S)")
        # The note is wrapped, not cut at the dialog's edge, and both buttons are on screen.
        assert "Esc to cancel." in edit and "Cancel (Esc)" in edit
        assert len(edit.splitlines()) <= 24
        tmux.run("send-keys", "-t", "review", "Escape")
        tmux.wait_gone("Save (Ctrl+S)")
        tmux.quit()
    finally:
        subprocess.run(["tmux", "-S", tmux.socket, "kill-server"], capture_output=True, check=False)
