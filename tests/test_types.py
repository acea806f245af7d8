"""The kernel and the review app type-check under mypy --strict (see tests/typecheck.py)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from typecheck import run_mypy

pytestmark = pytest.mark.slow


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
@pytest.mark.skipif(os.name == "nt", reason="the checked tree is made of symbolic links")
def test_the_package_type_checks_strict(tmp_path: Path) -> None:
    result = run_mypy(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
