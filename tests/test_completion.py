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
    return [line.split(",", 1)[1] for line in done.stdout.decode().splitlines() if line]


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


def _loaded_by_tab(words: str, store: Path) -> set[str]:
    """The modules a Tab press after ``words`` loads, as a shell runs ctx for it."""
    script = (
        "import atexit, sys\n"
        "atexit.register(lambda: print(' '.join(sys.modules), file=sys.stderr))\n"
        "from ctx_kernel.kernel.hosts.cli import main\n"
        "main()\n"
    )
    env = {**os.environ, "CTX_DB": str(store), "_CTX_COMPLETE": "bash_complete"}
    env.update({"COMP_WORDS": words, "COMP_CWORD": str(len(words.split(" ")) - 1)})
    command = [sys.executable, "-c", script]
    done = subprocess.run(command, env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return set(done.stderr.decode().split())


# What a Tab press never needs: the facade and its services, the model's settings, the review app.
NEVER_ON_TAB = (
    "ctx_kernel.kernel.facade",
    "ctx_kernel.kernel.recall.service",
    "ctx_kernel.kernel.decisions.queue",
    "ctx_kernel.kernel.capture.ingest",
    "ctx_kernel.kernel.audit.service",
    "ctx_kernel.kernel.hosts.setup.documents",
    "textual",
    "pydantic",
    # A SQLite store's lists are read on a plain connection: no store object, no migrations.
    "ctx_kernel.kernel.store.sqlite.store",
    "ctx_kernel.kernel.store.sqlite.migrate",
    "ctx_kernel.kernel.records",
)


def test_a_tab_press_loads_neither_the_facade_nor_the_services(kernel: Ctx, store_path: Path) -> None:
    kernel.propose("auth.tokens", "Use JWT")
    for words in ("ctx ", "ctx qu", "ctx queue --", "ctx history auth.", "ctx ratify pr_"):
        loaded = _loaded_by_tab(words, store_path)
        assert not [name for name in NEVER_ON_TAB if name in loaded], words
    # Command names and options are answered without opening the store or building a record.
    for words in ("ctx qu", "ctx queue --"):
        loaded = _loaded_by_tab(words, store_path)
        assert "ctx_kernel.kernel.store" not in loaded and "ctx_kernel.kernel.records" not in loaded, words


def test_a_tab_press_writes_nothing_and_creates_no_store(
    kernel: Ctx, store_path: Path, tmp_path: Path
) -> None:
    kernel.propose("auth.tokens", "Use JWT")
    kernel.close()
    before = {p.name: p.read_bytes() for p in store_path.parent.iterdir() if p.is_file()}
    assert _complete("ctx history auth.", store_path) == ["auth.tokens"]
    after = {p.name: p.read_bytes() for p in store_path.parent.iterdir() if p.is_file()}
    assert after.get(store_path.name) == before[store_path.name]
    missing = tmp_path / "nowhere" / "ctx.db"
    missing.parent.mkdir()
    assert _complete("ctx history auth.", missing) == []
    assert _complete("ctx ratify pr_", missing) == []
    assert not missing.exists()


def test_a_tab_press_on_a_file_that_is_no_store_completes_nothing(tmp_path: Path) -> None:
    stranger = tmp_path / "other.db"
    stranger.write_bytes(b"not a database at all" * 100)
    assert _complete("ctx history a", stranger) == []
    assert stranger.read_bytes() == b"not a database at all" * 100


def test_the_setup_command_offers_every_agent_setup_knows() -> None:
    from ctx_kernel.kernel.hosts.setup import AGENT_NAMES
    from ctx_kernel.kernel.hosts.setup.agents import AGENTS

    assert set(AGENT_NAMES) == set(AGENTS)
