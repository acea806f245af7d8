"""MADR's Confirmation section read as links: the paths its code spans and relative Markdown links
name become what an imported decision or proposal governs, after the file's ``ctx-links``; prose
that names no path, and anything that would leave the repository, gives nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import CTX_BIN, run_on_terminal
from test_stale import Repo

MADR4 = """\
---
status: {status}
date: 2024-03-12
decision-makers: Ann, Bo
consulted: Cy
informed: the platform team
{extra}---

# {title}

## Context and Problem Statement

The app's modules import each other freely, and every change touches five of them.

## Decision Drivers

* Changes should stay inside one layer
* New people should find code by its role

## Considered Options

* Layered architecture
* Hexagonal architecture

## Decision Outcome

Chosen option: "Layered architecture", because the team knows it and it fits the app's size.

<!-- This is an optional element. Feel free to remove. -->
### Consequences

* Good, because a change to storage stays in `src/app/store/`
* Bad, because cross-layer features need an interface first

<!-- This is an optional element. Feel free to remove. -->
### Confirmation

{confirmation}

## Pros and Cons of the Options

### Layered architecture

* Good, because it is simple
* Bad, because layers can leak

### Hexagonal architecture

* Good, because adapters are swappable
* Bad, because it needs more boilerplate than the app justifies

## More Information

The team revisits this when the app gains a second front end.
"""

WITH_PATHS = """\
`tests/arch/test_layers.py` fails the build when a module imports a layer above its own, and the
import rules in [pyproject.toml](../../pyproject.toml) keep [the store](../../src/app/store/base.py#Store)
apart. The [ArchUnit user guide](https://www.archunit.org/userguide/html/000_Index.html) describes
the approach; `src/app/store/base.py#Store` is the one storage entry point. The
[`lint` job](../../.github/workflows/lint.yml) runs both."""

PROSE_ONLY = """\
A code review of each pull request by the `doc-detective-core` maintainers confirms the layering;
it was first applied in commit `1595353`. Run `make check` before merging, and see
[the earlier record](0000-start) for how reviews run."""

HOSTILE = """\
Checked by `../../etc/passwd`, `/abs/path.py`, `.git/config`, `https://evil.example/x.py`,
`C:\\\\Windows\\\\win.ini`, `src/app/,x.py`, `~/secrets.txt`, [a](../../../../etc/passwd),
[b](/etc/shadow), [c](../../.git/config), [d](https://evil.example/y.py), [e](file:///etc/hosts),
[f](../../src/%0a.py), [g](<../../src/ok dir/x.py>), [h](mailto:a@example.org) and
`deadbeefcafe1234`. """
# A line of unmatched backtick runs, which a careless code-span reader takes quadratic time over.
MANY_TICKS = "`" * 5000 + " ``x``` " * 300


def _write(folder: Path, name: str, *, status: str, confirmation: str, extra: str = "") -> None:
    title = name.split("-", 1)[1].removesuffix(".md").replace("-", " ").capitalize()
    body = MADR4.format(status=status, extra=extra, title=title, confirmation=confirmation)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(body, encoding="utf-8")


def _import(cli, folder: Path) -> dict:
    done = cli("import", "adr", str(folder), "--yes", "--reviewer", "carol", "--json")
    assert done.code == 0, done.err
    assert "Traceback" not in done.err
    return json.loads(done.out)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    made = Repo(tmp_path / "work")
    made.commit(
        "Start",
        **{
            "src__app__store__base.py": "class Store: ...\n",
            "tests__arch__test_layers.py": "def test_layers(): ...\n",
            "pyproject.toml": "[x]\n",
            ".github__workflows__lint.yml": "on: push\n",
        },
    )
    monkeypatch.chdir(made.root)
    return made


def test_code_spans_and_relative_links_become_links_after_ctx_links(cli, repo, kernel):
    folder = repo.root / "docs" / "decisions"
    _write(
        folder,
        "0001-use-a-layered-architecture.md",
        status="accepted",
        confirmation=WITH_PATHS,
        extra="ctx-links: src/app/**, tests/arch/test_layers.py\n",
    )
    _write(folder, "0002-check-layers-in-review.md", status="proposed", confirmation=WITH_PATHS)
    # Code spans first, then link targets (a link's #fragment is a place in a page, not a symbol).
    expected = [
        "tests/arch/test_layers.py",
        "src/app/store/base.py#Store",
        "pyproject.toml",
        "src/app/store/base.py",
        ".github/workflows/lint.yml",
    ]
    planned = cli("import", "adr", str(folder), "--dry-run")
    assert planned.code == 0, planned.err
    lines = planned.out.splitlines()
    assert any(
        line.startswith("0001-use-a-layered-architecture.md")
        and line.endswith("links: src/app/**, " + ", ".join(expected))
        for line in lines
    ), planned.out
    assert any(line.endswith("links: " + ", ".join(expected)) for line in lines), planned.out
    report = _import(cli, folder)
    (decision,) = report["decisions"]
    (proposal,) = report["proposals"]
    (snapshot,) = kernel.store.snapshots_of(decision)
    assert [x.link for x in snapshot.links] == ["src/app/**", *expected]
    assert kernel.plan_ratification(proposal).links == sorted(expected)
    assert cli("audit", "verify").code == 0


def test_a_confirmation_that_names_no_path_gives_no_link(cli, repo, kernel):
    folder = repo.root / "docs" / "decisions"
    _write(folder, "0001-review-the-layering.md", status="proposed", confirmation=PROSE_ONLY)
    report = _import(cli, folder)
    (proposal,) = report["proposals"]
    assert "links" not in report["files"][0]
    assert kernel.plan_ratification(proposal).links == []


def test_a_hostile_confirmation_gives_no_link_and_no_traceback(cli, repo, kernel):
    folder = repo.root / "docs" / "decisions"
    _write(folder, "0001-trust-the-checks.md", status="proposed", confirmation=HOSTILE + MANY_TICKS)
    planned = cli("import", "adr", str(folder), "--dry-run")
    assert planned.code == 0 and "links:" not in planned.out and "Traceback" not in planned.err
    report = _import(cli, folder)
    (proposal,) = report["proposals"]
    assert kernel.plan_ratification(proposal).links == []
    assert cli("audit", "verify").code == 0


def test_outside_a_checkout_relative_links_are_skipped_and_code_spans_kept(
    cli, kernel, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "adrs"
    _write(folder, "0001-use-a-layered-architecture.md", status="proposed", confirmation=WITH_PATHS)
    report = _import(cli, folder)
    (proposal,) = report["proposals"]
    assert kernel.plan_ratification(proposal).links == [
        "src/app/store/base.py#Store",
        "tests/arch/test_layers.py",
    ]


def test_a_confirmation_heading_of_its_own_is_read_too(cli, repo, kernel):
    folder = repo.root / "docs" / "decisions"
    _write(
        folder,
        "0001-use-a-layered-architecture.md",
        status="proposed",
        confirmation="See [the test](../../tests/arch/test_layers.py).",
    )
    path = folder / "0001-use-a-layered-architecture.md"
    path.write_text(path.read_text(encoding="utf-8").replace("### Confirmation", "## Confirmation"))
    report = _import(cli, folder)
    (proposal,) = report["proposals"]
    assert kernel.plan_ratification(proposal).links == ["tests/arch/test_layers.py"]


def test_a_relative_link_leads_from_the_adr_folders_place_in_the_checkout(cli, repo, kernel):
    folder = repo.root / ".adr"
    _write(
        folder,
        "0001-use-a-layered-architecture.md",
        status="proposed",
        confirmation="The [layer checks](checks/layers.md) and [the test](../tests/arch/test_layers.py).",
    )
    report = _import(cli, folder)
    (proposal,) = report["proposals"]
    assert kernel.plan_ratification(proposal).links == [".adr/checks/layers.md", "tests/arch/test_layers.py"]


@pytest.mark.slow
def test_on_a_terminal_the_links_are_shown_before_the_import_is_confirmed(repo, kernel, store_path):
    folder = repo.root / "docs" / "decisions"
    _write(folder, "0001-use-a-layered-architecture.md", status="proposed", confirmation=WITH_PATHS)
    env = {**os.environ, "PATH": CTX_BIN + os.pathsep + os.environ["PATH"], "CTX_VECTORS": "off"}
    args = ["--db", str(store_path), "import", "adr", str(folder), "--reviewer", "carol"]
    code, output = run_on_terminal(args, b"n\n", env, cwd=repo.root)
    assert code == 1 and "links: tests/arch/test_layers.py, src/app/store/base.py#Store" in output
    assert output.index("links:") < output.index("Import the ADRs")
    assert kernel.queue() == []
