"""ctx setup: wire Claude Code or Codex CLI to ctx in the project's own files."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ctx_kernel.kernel import text
from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.hosts.cli.base import _colour, _confirm, _say, cli
from ctx_kernel.kernel.hosts.setup import AGENT_NAMES

if TYPE_CHECKING:
    from ctx_kernel.kernel.hosts.setup.agents import Plan

_DIFF_COLOURS = {"+": "green", "-": "red", "@": "cyan"}


@cli.command("setup")
@click.argument("agent", type=click.Choice(sorted(AGENT_NAMES)))
@click.option("--remove", is_flag=True, help="Take out what ctx setup added; everything else stays as it is.")
@click.option(
    "--no-instructions",
    "instructions",
    is_flag=True,
    flag_value=False,
    default=True,
    help="Leave CLAUDE.md / AGENTS.md alone.",
)
@click.option("--dry-run", is_flag=True, help="Show the changes; write nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
def setup(agent: str, remove: bool, instructions: bool, dry_run: bool, yes: bool) -> None:
    """Register `ctx mcp` and the session hooks with an agent, in this repository's files.

    claude-code: the SessionStart and SessionEnd hooks in .claude/settings.json, the MCP server in
    .mcp.json, a short block in CLAUDE.md on when to log, when to propose and that only a person
    ratifies. codex: the same in .codex/hooks.json, .codex/config.toml ([mcp_servers.ctx]) and
    AGENTS.md. Files go in the git repository's top folder. It shows each change as a diff and
    asks before writing; run again, it finds nothing to change. A settings file that does not
    parse, or a link out of the repository, is refused and left untouched; nothing in the files
    is run.
    """
    from ctx_kernel.kernel.hosts.setup.agents import AGENTS, ctx_command, plan  # noqa: PLC0415
    from ctx_kernel.kernel.hosts.setup.files import apply, project_root  # noqa: PLC0415

    target = AGENTS[agent]
    root = project_root(Path.cwd())
    changes = plan(target, root, ctx_command(), remove=remove, instructions=instructions)
    if not changes.changes:
        state = "nothing of ctx setup's to remove" if remove else "ctx is already set up"
        _say(f"Nothing to change: {state} for {target.title} in {root}.")
        _notes(changes.notes)
        return
    if not (dry_run or yes or sys.stdin.isatty()):
        raise UsageError(
            "ctx setup changes files: confirm on a terminal, or pass --yes (--dry-run shows them)"
        )
    _show(changes, target.title, remove)
    if dry_run:
        _say("Dry run: nothing written.")
        return
    _confirm("Take ctx out of these files?" if remove else "Write these changes?", yes)
    for change in changes.changes:
        apply(change)
    files = ", ".join(change.file.shown for change in changes.changes)
    _say(f"Took ctx out of {files}." if remove else f"Wrote {files}.")
    if not remove:
        for step in target.after:
            _say(f"Next: {step}")


def _show(changes: Plan, title: str, remove: bool) -> None:
    action = "Removing ctx from" if remove else "Setting up ctx for"
    where = "the repository's top folder" if (changes.root / ".git").exists() else "no git repository here"
    _say(f"{action} {title} in {changes.root} ({where}).")
    if not remove:
        _say(f"The hooks and the MCP server start ctx as `{changes.command.line()}`: {changes.command.why}.")
    for change in changes.changes:
        _say()
        click.echo(_colour(text.visible(change.headline()), "bold"))
        for line in change.diff().splitlines():
            click.echo(
                _colour(text.visible(line), _DIFF_COLOURS[line[0]])
                if line[:1] in _DIFF_COLOURS
                else text.visible(line)
            )
    _notes(changes.notes)
    _say()


def _notes(notes: list[str]) -> None:
    for note in notes:
        _say(f"Note: {note}")
