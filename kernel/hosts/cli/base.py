"""The root ``ctx`` group and what its commands share: --db, opening the store, output, prompts."""

from __future__ import annotations

import getpass
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from functools import update_wrapper
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ctx_kernel.kernel import paths, text
from ctx_kernel.kernel.errors import UsageError

if TYPE_CHECKING:
    # The facade loads the store and every service: the root group and a shell's Tab press must
    # not pay for it, so it is imported where a command opens a store.
    from ctx_kernel.kernel.facade import Ctx
    from ctx_kernel.kernel.records import Decision, Proposal


def _say(message: object = "", *, err: bool = False, nl: bool = True) -> None:
    """Print human output; stored text in it is shown with hidden characters spelled out."""
    click.echo(text.visible(message) if isinstance(message, str) else message, err=err, nl=nl)


def _colour(message: str, style: str) -> str:
    """``message`` styled for a terminal; plain when output is not one or NO_COLOR is set.

    Styled text is printed with ``click.echo``, never :func:`_say`, which would spell the
    escape sequences out; pass stored text through ``text.visible`` first.
    """
    if os.environ.get("NO_COLOR") or not sys.stdout.isatty():
        return message
    if style == "bold":
        return click.style(message, bold=True)
    return click.style(message, fg=style, bold=True)


def _emit_json(data: Any) -> None:
    click.echo(text.json_visible(json.dumps(data, indent=2, ensure_ascii=False)))


_DB_HELP = (
    "Store to use: a file, sqlite:PATH or postgresql://host/dbname (default: CTX_DB, else the nearest "
    ".ctx/config.toml naming one or .ctx/ctx.db above the working folder)."
)


def _db_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--db", "db_here", metavar="STORE", help=_DB_HELP)(func)


def _locate(explicit: str | None, start: Path | None = None) -> paths.Location:
    """The store's location (``--db``, ``CTX_DB``, the project's config, ``.ctx/ctx.db``)."""
    return paths.locate_store(explicit, start).location


def _open(explicit: str | None, start: Path | None = None, **kwargs: Any) -> Ctx:
    """Open the store a command uses (see :func:`_locate`)."""
    from ctx_kernel.kernel.facade import Ctx  # noqa: PLC0415

    return Ctx.open(_locate(explicit, start), **kwargs)


def _with_store(func: Callable[..., Any]) -> Callable[..., Any]:
    """Open the project's store for the command (``--db`` before or after it) and close it afterwards."""

    def wrapper(context: click.Context, *args: Any, db_here: str | None, **kwargs: Any) -> Any:
        ctx = _open(db_here or context.find_root().obj.get("db"))
        try:
            return func(ctx, *args, **kwargs)
        finally:
            ctx.close()

    # The command's name, help and options (click keeps them on the function) carry over to the wrapper.
    update_wrapper(wrapper, func)
    return _db_option(click.pass_context(wrapper))


def _check_utf8(value: str, what: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} is not valid UTF-8") from None
    return value


def _read_stdin(limit: int, what: str) -> str:
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise UsageError(f"{what} is larger than {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{what} is not valid UTF-8") from None


def _age(stamp: str) -> str:
    from ctx_kernel.kernel.facade import age, short_age  # noqa: PLC0415

    return short_age(age(stamp, datetime.now(UTC)))


def _window(decision: Decision) -> str:
    end = decision.valid_until[:19] if decision.valid_until else "now"
    return f"{decision.valid_from[:19]} .. {end}"


# Lists name each record by its handle (``3WCX``), as `git log --oneline` abbreviates commits; a
# list passes the handles of every id it shows (``Ctx.handles``), and an id it lacks shows whole.
Handles = dict[str, str]


def _decision_line(decision: Decision, names: Handles | None = None) -> str:
    state = "current" if decision.current else f"{decision.closed_by}"
    name = (names or {}).get(decision.id, decision.id)
    return f"{name}  {decision.subject}  [{state}, {_window(decision)}]\n    {decision.decision}"


def _proposal_line(proposal: Proposal, names: Handles | None = None) -> str:
    named = names or {}
    badges = []
    if proposal.reconfirms:
        badges.append(f"asks a person to re-confirm {named.get(proposal.reconfirms, proposal.reconfirms)}")
    if proposal.supersedes:
        badges.append("supersedes " + ", ".join(named.get(i, i) for i in proposal.supersedes))
    if proposal.near_duplicate_of:
        badges.append(
            f"near-duplicate of {named.get(proposal.near_duplicate_of, proposal.near_duplicate_of)}"
        )
    tail = f"  ({'; '.join(badges)})" if badges else ""
    return (
        f"{named.get(proposal.id, proposal.id)}  {proposal.subject}  by {proposal.proposer}, "
        f"{_age(proposal.created_at)} old{tail}\n    {proposal.decision}"
    )


def _reviewer(ctx: Ctx, given: str | None, yes: bool, action: str) -> str:
    """A person's name for a ratification or rejection; refuse without a terminal unless explicit.

    On a server store the name is the login, which the database binds every act to."""
    interactive = sys.stdin.isatty()
    if ctx.login is not None:
        if not (interactive or yes):
            raise UsageError(f"{action} is a person's act: without a terminal pass --yes")
        return ctx.actor(given, ctx.login, "reviewer")
    if not interactive:
        if not (yes and given):
            raise UsageError(f"{action} is a person's act: without a terminal pass --yes and --reviewer NAME")
        return given
    name = given or paths.configured_reviewer()
    if name is None:
        name = click.prompt("Reviewer name", default=getpass.getuser())
    return name


def _confirm(question: str, yes: bool) -> None:
    if not yes and not click.confirm(question, default=False):
        raise click.Abort()


def _complete_pending(context: click.Context, _param: click.Parameter, incomplete: str) -> list[Any]:
    """Pending proposal ids (with their subject as help) for shell completion."""
    from click.shell_completion import CompletionItem  # noqa: PLC0415

    from ctx_kernel.kernel import completion  # noqa: PLC0415

    return [
        CompletionItem(pid, help=f"{subject}: {text.visible(decision)[:60]}")
        for pid, subject, decision in completion.pending(context.find_root().params.get("db"), incomplete)
    ]


def _complete_subject(context: click.Context, _param: click.Parameter, incomplete: str) -> list[Any]:
    """Subjects of decisions and pending proposals for shell completion."""
    from ctx_kernel.kernel import completion  # noqa: PLC0415

    return list(completion.subjects(context.find_root().params.get("db"), incomplete))


# Each command's module: a command's module is imported when the command is asked for, so
# `ctx log` loads the evidence commands and not the recall ones (tests/test_docs.py checks the map).
AREAS = {
    "admin": "admin",
    "import": "adr",
    "export": "adr",
    "audit": "audit",
    "keys": "audit",
    "log": "evidence",
    "ingest": "evidence",
    "hook": "hooks",
    "status": "info",
    "doctor": "info",
    "schema": "info",
    "completion": "info",
    "path": "info",
    "mcp": "launch",
    "review": "launch",
    "demo": "launch",
    "propose": "queue",
    "ratify": "queue",
    "reject": "queue",
    "withdraw": "queue",
    "retire": "queue",
    "stale": "stale",
    "reconfirm": "stale",
    "decisions": "read",
    "queue": "read",
    "history": "read",
    "evidence": "read",
    "show": "read",
    "search": "read",
    "recall": "read",
    "inject": "read",
    "timeline": "read",
    "init": "store",
    "allow": "store",
    "encrypt": "store",
    "rekey": "store",
    "reindex": "store",
    "migrate": "store",
    "setup": "setup",
}


_AMEND = (
    "ratified decisions never change: to amend a pending proposal, ratify it with your text "
    "(ctx ratify ID --decision TEXT); to change a decision in force, propose its successor "
    "(ctx propose --subject SUBJECT --decision TEXT), which supersedes it once ratified"
)
_DELETE = (
    "nothing is deleted, every record stays for audit: reject a pending proposal (ctx reject ID "
    "--reason TEXT), withdraw your own (ctx withdraw ID), retire a decision in force (ctx retire "
    "SUBJECT --reason TEXT) or propose its successor (ctx propose --subject SUBJECT --decision TEXT)"
)
# Commands people reach for that ctx has not on purpose, and what to do instead.
MISSING_COMMANDS = {
    "edit": _AMEND,
    "amend": _AMEND,
    "update": _AMEND,
    "change": _AMEND,
    "modify": _AMEND,
    "delete": _DELETE,
    "remove": _DELETE,
    "rm": _DELETE,
    "drop": _DELETE,
}


class Commands(click.Group):
    """The root group: it knows every command's name and imports the command's module on first use."""

    def list_commands(self, context: click.Context) -> list[str]:
        return sorted({*self.commands, *AREAS})

    def get_command(self, context: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in AREAS:
            import_module(f"{__package__}.{AREAS[cmd_name]}")
        return self.commands.get(cmd_name)

    def resolve_command(
        self, context: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command ``args`` names; for a name that is none, one line saying what to run instead."""
        name = args[0]
        if context.resilient_parsing or name.startswith("-") or self.get_command(context, name) is not None:
            return super().resolve_command(context, args)
        from difflib import get_close_matches  # noqa: PLC0415 - only for a mistyped command

        # `edit`, or a slip of it such as `updte`: say how to amend instead of naming a look-alike.
        meant = get_close_matches(name.lower(), MISSING_COMMANDS, n=1, cutoff=0.8)
        if meant:
            raise click.UsageError(f"there is no `ctx {name}`: {MISSING_COMMANDS[meant[0]]}", context)
        close = get_close_matches(name.lower(), self.list_commands(context), n=3, cutoff=0.6)
        hint = f": did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise click.UsageError(f"no such command {name!r}{hint}", context)


def load_all() -> click.Group:
    """The root group with every command loaded (for the reference and the documentation checks)."""
    for area in sorted(set(AREAS.values())):
        import_module(f"{__package__}.{area}")
    return cli


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--db", metavar="STORE", help=_DB_HELP)
@click.version_option(package_name="ctx-kernel", prog_name="ctx")
@click.pass_context
def cli(context: click.Context, db: str | None) -> None:
    """ctx: a local-first, human-ratified decision kernel for AI coding agents.

    Agents log evidence and propose decisions; only a person ratifies them.
    """
    context.ensure_object(dict)["db"] = db


def _fail(message: str, code: int) -> NoReturn:
    # The last guard: no error line ever shows a database password.
    _say(f"ctx: error: {paths.redact(message)}", err=True)
    sys.exit(code)
