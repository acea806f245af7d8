"""The command reference, ``docs/reference.md``, written from the CLI and the operations themselves.

Run ``python -m ctx_kernel.kernel.hosts.cli.reference`` (``just reference``) after changing a
command or an operation; a test fails while the file is stale. Every command, argument and option
comes from click's own description of the command, and each operation the MCP server offers names
its tool and schemas, so the reference cannot drift from what ``--help`` and ``tools/list`` say.
"""

from __future__ import annotations

import sys
from dataclasses import fields
from pathlib import Path

import click

from ctx_kernel.kernel.hosts.cli import load_all
from ctx_kernel.kernel.hosts.operations import OPERATIONS, TOOLS

REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "reference.md"

HEADER = """\
# Command reference

Written by `just reference` from the commands and the operations' declarations
(`kernel/hosts/operations.py`); do not edit by hand. `ctx COMMAND --help` prints the same.
Each command that is also an MCP tool names the tool and its schemas.
"""


def _commands(
    command: click.Command, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], click.Command]]:
    found = [(path, command)] if path else []
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            found += _commands(sub, (*path, name))
    return found


def _cell(value: str) -> str:
    return " ".join(value.split()).replace("|", "\\|")


def _parameters(command: click.Command, context: click.Context, described: dict[str, str]) -> list[str]:
    rows = []
    for param in command.params:
        if isinstance(param, click.Option) and (param.hidden or param.name == "help"):
            continue
        if isinstance(param, click.Argument):
            meaning = described.get(param.name or "", "")
            optional = "" if param.required else "(optional) "
            rows.append(f"| `{param.make_metavar(context)}` | {optional}{_cell(meaning)} |")
        elif (record := param.get_help_record(context)) is not None:
            rows.append(f"| `{_cell(record[0])}` | {_cell(record[1])} |")
    return ["| argument or option | meaning |", "|---|---|", *rows] if rows else []


def _descriptions(name: str) -> dict[str, str]:
    """An operation's fields and their descriptions (the help of its positional arguments)."""
    operation = OPERATIONS.get(name)
    if operation is None or not operation.command:
        return {}
    return {item.name: item.metadata.get("description") or "" for item in fields(operation.arguments)}


def _tool(name: str) -> list[str]:
    operation = OPERATIONS.get(name)
    if operation is None or operation.tool is None or not operation.command:
        return []
    return [
        f"MCP tool `{operation.tool.name}`: the same arguments as JSON "
        f"(`schemas/{_input_schema(operation.arguments)}.schema.json`), "
        'the same answer with `format: "json"`.',
        "",
    ]


def _input_schema(args: type) -> str:
    from ctx_kernel.kernel import contracts  # noqa: PLC0415  (pydantic: only when writing the reference)

    return contracts.tool_input_schema(args)


def _tools_section(cli: click.Group) -> list[str]:
    lines = ["## MCP tools", "", "| tool | what it does | CLI |", "|---|---|---|"]
    for name, operation in TOOLS.items():
        assert operation.tool is not None
        at_cli = f"`ctx {operation.name}`" if operation.name in cli.commands else "—"
        lines.append(f"| `{name}` | {_cell(operation.tool.description)} | {at_cli} |")
    return [*lines, ""]


def render() -> str:
    """The reference's Markdown."""
    cli = load_all()
    lines = [HEADER]
    for path, command in _commands(cli):
        label = " ".join(("ctx", *path))
        context = click.Context(command, info_name=label)
        lines += [f"## `{label}`", ""]
        lines += [" ".join(command.get_usage(context).split()), ""]
        lines += [_cell((command.help or "").strip().split("\n\n")[0]), ""]
        if len(path) == 1:
            lines += _tool(path[0])
        table = _parameters(command, context, _descriptions(path[0]) if len(path) == 1 else {})
        if table:
            lines += [*table, ""]
    lines += _tools_section(cli)
    return "\n".join(lines).rstrip("\n") + "\n"


def write(target: Path = REFERENCE) -> Path:
    """Rewrite the reference file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(), encoding="utf-8")
    return target


if __name__ == "__main__":
    print(write(Path(sys.argv[1]) if len(sys.argv) > 1 else REFERENCE))
