"""What ``ctx setup`` writes for each agent, and the plan of changes for one project.

Everything goes into the project's own files, so it is reviewed and shared like the code:

- Claude Code: the SessionStart and SessionEnd hooks in ``.claude/settings.json``, the MCP server
  in ``.mcp.json`` (what ``claude mcp add --scope project`` writes; Claude Code asks each person
  to approve it before it starts), the instruction block in ``CLAUDE.md``.
- Codex CLI: the hooks in ``.codex/hooks.json``, the MCP server as ``[mcp_servers.ctx]`` in
  ``.codex/config.toml``, the block in ``AGENTS.md``. Codex reads a project's ``.codex/`` only
  once the person trusted the project, and runs a hook only once they reviewed it in ``/hooks``:
  setup never writes that trust, which lives in the user's ``~/.codex/config.toml``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import CtxError, RefusedError
from ctx_kernel.kernel.hosts.setup.documents import (
    Editable,
    Hook,
    InstructionBlock,
    JSONFile,
    JSONServer,
    TOMLServer,
)
from ctx_kernel.kernel.hosts.setup.files import FileChange, locate, read

# The session-start block's size: Claude Code keeps 10,000 characters of a hook's output inline,
# and the block never has more than four characters per token.
SESSION_START_BUDGET = 2000
# Claude Code gives all SessionEnd hooks 1.5 s together unless a hook asks for more (up to 60 s);
# ingesting a long session's transcript takes seconds. Codex caps a SessionEnd hook at 3 s.
CLAUDE_SESSION_END_SECONDS = 60
CODEX_SESSION_END_SECONDS = 3

INSTRUCTIONS = InstructionBlock(
    """\
## Decisions (ctx)

This project keeps its decisions in ctx; the `ctx` MCP server reads them and takes proposals.

- The decisions in force arrive at session start (or call `inject_context`). Follow them, and
  `recall` before changing something they may cover; superseded decisions and pending proposals
  are not in force.
- Log with `log_evidence` what a later session needs and the code does not say: a requirement the
  user states, an approach that failed and why, a number you measured.
- Propose with `propose_decision` when a choice is settled that should outlast this session (a
  library, an interface, a convention, a limit), citing the evidence ids. To change a decision in
  force, propose its replacement instead of working against it.
- Only a person ratifies, in `ctx review` or with `ctx ratify`. A proposal is not a decision:
  never act on it as one, and never run `ctx ratify`, `ctx reject` or `ctx retire` yourself.
"""
)


@dataclass(frozen=True)
class CtxCommand:
    """How the hooks and the MCP server start ctx, and why that way."""

    words: tuple[str, ...]
    why: str
    # The same ctx named the other ways setup may have written it: `ctx`, its path, its real path.
    others: tuple[tuple[str, ...], ...] = ()

    @property
    def forms(self) -> tuple[tuple[str, ...], ...]:
        """``words`` first, then the other names of this ctx: entries setup counts as its own."""
        return tuple(dict.fromkeys((self.words, ("ctx",), *self.others)))

    def line(self, *args: str) -> str:
        """A shell command line running ctx with ``args`` (hooks are run by a shell)."""
        return shlex.join((*self.words, *args))


def ctx_command() -> CtxCommand:
    """``ctx`` when the ``ctx`` on PATH is this one, else this ctx by its full path.

    A bare ``ctx`` keeps machine paths out of files a team shares; a full path is what works
    when the agent's PATH would find no ctx, or another one."""
    script = _running_script()
    if script is None:
        return CtxCommand(
            (sys.executable, "-m", "ctx_kernel.kernel.hosts.cli"),
            "ctx runs here as a Python module, so the files name this Python and the module "
            "(paths on this machine only)",
        )
    on_path = shutil.which("ctx")
    others = ((str(script),), (os.path.realpath(script),))
    if on_path is not None and os.path.realpath(on_path) == os.path.realpath(script):
        return CtxCommand(
            ("ctx",),
            "the ctx on PATH is this one, so the files name it `ctx`: they hold on every machine "
            "where ctx is on the PATH the agent starts",
            others,
        )
    reason = "ctx is not on PATH" if on_path is None else f"the ctx on PATH is another one ({on_path})"
    return CtxCommand(
        (str(script),),
        f"{reason}, so the files name this ctx by its full path (a path on this machine only)",
        others,
    )


def _running_script() -> Path | None:
    """The ``ctx`` console script this process runs as (or the one beside its Python)."""
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is not None and started.stem == "ctx" and started.is_file():
        return Path(os.path.abspath(started))
    beside = Path(sys.executable).parent / "ctx"
    return beside if beside.is_file() else None


@dataclass(frozen=True)
class FileEdit:
    """One file an agent reads, what setup puts in it and why."""

    name: str
    purpose: str
    content: Editable


def _hooks(command: CtxCommand, session_end_seconds: int) -> JSONFile:
    budget = str(SESSION_START_BUDGET)
    start = tuple(
        {"type": "command", "command": shlex.join((*words, "hook", "session-start", "--budget", budget))}
        for words in command.forms
    )
    end = tuple(
        {
            "type": "command",
            "command": shlex.join((*words, "hook", "session-end")),
            "timeout": session_end_seconds,
        }
        for words in command.forms
    )
    return JSONFile((Hook("SessionStart", start), Hook("SessionEnd", end)))


HOOKS_PURPOSE = "the SessionStart and SessionEnd hooks"
SERVER_PURPOSE = "the ctx MCP server"
INSTRUCTIONS_PURPOSE = "when to log, when to propose, and that only a person ratifies"


def claude_code(command: CtxCommand) -> list[FileEdit]:
    """Claude Code's project files."""
    servers = tuple(
        {"type": "stdio", "command": words[0], "args": [*words[1:], "mcp"]} for words in command.forms
    )
    return [
        FileEdit(".claude/settings.json", HOOKS_PURPOSE, _hooks(command, CLAUDE_SESSION_END_SECONDS)),
        FileEdit(".mcp.json", SERVER_PURPOSE, JSONFile((JSONServer("ctx", servers),))),
        FileEdit("CLAUDE.md", INSTRUCTIONS_PURPOSE, INSTRUCTIONS),
    ]


def codex(command: CtxCommand) -> list[FileEdit]:
    """Codex CLI's project files."""
    servers = tuple(
        {"command": words[0], "args": [*words[1:], "mcp", "--agent", "codex"]} for words in command.forms
    )
    return [
        FileEdit(".codex/hooks.json", HOOKS_PURPOSE, _hooks(command, CODEX_SESSION_END_SECONDS)),
        FileEdit(".codex/config.toml", SERVER_PURPOSE, TOMLServer("ctx", servers)),
        FileEdit("AGENTS.md", INSTRUCTIONS_PURPOSE, INSTRUCTIONS),
    ]


@dataclass(frozen=True)
class Agent:
    """An agent ctx can be set up for: its files and what to do after."""

    title: str
    files: Callable[[CtxCommand], list[FileEdit]]
    after: tuple[str, ...]


AGENTS = {
    "claude-code": Agent(
        "Claude Code",
        claude_code,
        (
            "Start a new Claude Code session here: it asks once to approve the project's MCP server "
            "ctx (from .mcp.json); /mcp shows it connected and /hooks the two hooks.",
        ),
    ),
    "codex": Agent(
        "Codex CLI",
        codex,
        (
            "Codex reads .codex/ only in a trusted project (it asks when you first open the folder), "
            "and runs a new or changed hook only after you review and trust it in /hooks. Hooks are "
            "on by default; releases before that need codex_hooks = true under [features] in "
            "~/.codex/config.toml.",
            f"Codex gives a SessionEnd hook at most {CODEX_SESSION_END_SECONDS} s, which a long "
            "session's transcript may outlast: `ctx ingest transcript ~/.codex/sessions` adds what "
            "it missed.",
        ),
    ),
}


@dataclass(frozen=True)
class Plan:
    """The changes setup would make in one project, and what it leaves alone and why."""

    root: Path
    command: CtxCommand
    changes: list[FileChange]
    notes: list[str] = field(default_factory=list)


def plan(agent: Agent, root: Path, command: CtxCommand, *, remove: bool, instructions: bool = True) -> Plan:
    """What setting up (or removing) ``agent`` in the project at ``root`` would change; writes nothing."""
    edits = [
        edit for edit in agent.files(command) if instructions or edit.name not in ("CLAUDE.md", "AGENTS.md")
    ]
    files = [locate(root, edit.name) for edit in edits]
    for index, file in enumerate(files):
        for other in files[:index]:
            if file.path == other.path:
                raise RefusedError(
                    f"{other.shown} and {file.shown} are the same file: ctx setup changes nothing"
                )
    changes: list[FileChange] = []
    notes: list[str] = []
    for edit, file in zip(edits, files, strict=True):
        before = read(file)
        after, found = edit.content.edit(before, file.shown, remove=remove)
        notes += found
        if after != before:
            changes.append(FileChange(file, before, after, edit.purpose))
    if not remove:
        notes += _store_note(root)
    return Plan(root, command, changes, notes)


def _store_note(root: Path) -> list[str]:
    try:
        paths.locate_store(None, root)
    except CtxError as exc:
        return [f"{exc.message} (until then the hooks and the MCP server say so and change nothing)"]
    return []
