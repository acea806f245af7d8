"""Snapshots of every screen and dialog of the review app at 80x24, and the main ones at 160x48.

After an intended change of the look: ``pytest tests/test_review_snapshots.py --snapshot-update``,
then review the SVGs (``snapshot_report.html``) before committing them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx
from tests.review_support import VIEWS, freeze_clock, reach, review_app, seeded_store

SMALL = (80, 24)
LARGE = (160, 48)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    freeze_clock(monkeypatch)
    return seeded_store(tmp_path / "project")


@pytest.fixture
def opened(store: Path):
    kernels: list[Ctx] = []

    def make(name: str):
        app, kernel = review_app(store, reviewer_confirmed=VIEWS[name].reviewer_confirmed)
        kernels.append(kernel)
        return app

    yield make
    for kernel in kernels:
        kernel.close()


@pytest.mark.parametrize("name", list(VIEWS))
def test_at_80x24(snap_compare, opened, name: str) -> None:
    assert snap_compare(opened(name), terminal_size=SMALL, run_before=reach(VIEWS[name]))


@pytest.mark.parametrize("name", ["queue", "detail", "edit", "kernel", "audit"])
def test_at_160x48(snap_compare, opened, name: str) -> None:
    assert snap_compare(opened(name), terminal_size=LARGE, run_before=reach(VIEWS[name]))
