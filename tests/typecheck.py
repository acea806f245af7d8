"""Run mypy, strict, on ctx as it is imported (``ctx_kernel.kernel``, ``ctx_kernel.tui``).

The repository keeps the folders ``kernel/`` and ``tui/`` at its top level and the build maps them into
the ``ctx_kernel`` package; mypy reads folders, not import hooks, so it checks a tree of links that has
the installed layout. ``python tests/typecheck.py`` prints mypy's report and exits with its status.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_mypy(workdir: Path) -> subprocess.CompletedProcess[str]:
    """mypy --strict over ``ctx_kernel`` laid out under ``workdir``; its output and exit status."""
    package = workdir / "ctx_kernel"
    package.mkdir()
    (package / "__init__.py").write_text('"""ctx."""\n')
    (package / "py.typed").write_text("")
    for folder in ("kernel", "tui"):
        (package / folder).symlink_to(ROOT / folder, target_is_directory=True)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(workdir / ".mypy_cache"),
            "-p",
            "ctx_kernel",
        ],
        cwd=workdir,
        capture_output=True,
        text=True,
        check=False,
    )


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        result = run_mypy(Path(tmp))
    sys.stdout.write(result.stdout + result.stderr)
    sys.exit(result.returncode)
