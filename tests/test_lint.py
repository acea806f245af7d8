"""ruff's lint and format checks are part of the suite, so CI fails on either."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUFF = str(Path(sys.executable).parent / "ruff")


def test_ruff_check_is_clean():
    result = subprocess.run([RUFF, "check", "."], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


def test_ruff_format_is_clean():
    result = subprocess.run(
        [RUFF, "format", "--check", "."], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout
