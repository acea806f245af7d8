"""Commands that hand the terminal or standard input to a host: mcp, review, demo."""

from __future__ import annotations

import getpass
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import StoreError, UsageError
from ctx_kernel.kernel.hosts.cli.base import (
    _confirm,
    _db_option,
    _decision_line,
    _open,
    _proposal_line,
    _say,
    _with_store,
    cli,
)
from ctx_kernel.kernel.text import plural

if TYPE_CHECKING:
    from ctx_kernel.kernel.facade import Ctx


@cli.command("mcp")
@click.option(
    "--agent",
    envvar="CTX_AGENT",
    help="Proposer and evidence author when a call names none (default: CTX_AGENT, else mcp:CLIENT).",
)
@click.option(
    "--session", envvar="CTX_SESSION", help="Session id when a call names none (default: CTX_SESSION)."
)
@_db_option
@click.pass_context
def mcp_server(context: click.Context, agent: str | None, session: str | None, db_here: str | None) -> None:
    """Serve the store to an agent over MCP (stdio): log, propose, recall; no tool can ratify.

    Started where there is no store, it still serves: on the first call it looks in the client's
    MCP roots, and while it finds none every tool answers that there is no store and where it
    looked, so a client configured for every project connects everywhere. A store named by --db
    or CTX_DB is the only one served.
    """
    from ctx_kernel.kernel.hosts.mcp import serve  # noqa: PLC0415 - the MCP SDK takes over a second to import

    explicit = db_here or context.find_root().obj.get("db")
    named, origin = (explicit, "--db") if explicit else (os.environ.get("CTX_DB") or None, "CTX_DB")
    try:
        ctx = _open(explicit)
    except StoreError as exc:
        message = exc.message
        store = None if named is None or paths.url_scheme(named) else paths.location_file(named)
        if store is not None and not store.exists():
            create = f"ctx init --db {shlex.quote(str(store))}"
            message = f"no ctx store at {store} (named by {origin}): create it with `{create}`"
        _say(f"ctx mcp: {message}; every tool will say so", err=True)
        serve(None, agent=agent, session=session, missing=message, look_in_roots=named is None)
        return
    with ctx:
        _serve_store(ctx, agent, session)


def _serve_store(ctx: Ctx, agent: str | None, session: str | None) -> None:
    if sys.stdin.isatty():
        _say(
            f"ctx mcp: serving {ctx.location} over MCP on standard input; an MCP client starts "
            "this command (see `ctx setup --help`). Ctrl+C stops it.",
            err=True,
        )
    from ctx_kernel.kernel.hosts.mcp import serve  # noqa: PLC0415 - the MCP SDK takes over a second to import

    serve(ctx, agent=agent, session=session)


def _run_review(ctx: Ctx, reviewer: str | None) -> None:
    from ctx_kernel.tui.app import make_app  # noqa: PLC0415 - Textual loads only for the app

    if ctx.login is not None:  # the database binds every act to the login
        make_app(ctx, ctx.actor(reviewer, ctx.login, "reviewer"), reviewer_confirmed=True).run()
        return
    name = reviewer or paths.configured_reviewer()
    make_app(ctx, name or getpass.getuser(), reviewer_confirmed=name is not None).run()


@cli.command()
@click.option("--reviewer", help="Your name (default: CTX_REVIEWER or config, else your login name).")
@_with_store
def review(ctx: Ctx, reviewer: str | None) -> None:
    """Open the review app: ratify or reject what agents proposed, browse decisions, evidence, audit."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("ctx review needs a terminal; in scripts use ctx queue, ctx ratify and ctx reject")
    _run_review(ctx, reviewer)


@cli.command()
@click.option(
    "--path",
    "folder",
    type=click.Path(file_okay=False),
    default="ctx-demo",
    show_default=True,
    help="Project folder for the demo store.",
)
@click.option("--no-review", is_flag=True, help="Print the tour only; do not open the review app.")
@click.option(
    "--force",
    is_flag=True,
    help="Build the demo store again from scratch when the folder holds one (what was done in it is lost).",
)
def demo(folder: str, no_review: bool, force: bool) -> None:
    """Create a demo project with realistic decisions, evidence and proposals, then open the review app.

    Run again on a folder that holds the demo store, it asks before building it again from scratch
    (without a terminal it refuses unless --force).
    """
    from ctx_kernel.kernel.demo import build_demo, holds_demo  # noqa: PLC0415

    if not force and sys.stdin.isatty() and holds_demo(Path(folder)):
        _confirm(
            f"{folder} already holds the demo store; build it again from scratch (what was done in it "
            "is lost)?",
            False,
        )
        force = True
    ctx = build_demo(Path(folder), replace=force)
    try:
        if not no_review and sys.stdin.isatty() and sys.stdout.isatty():
            _run_review(ctx, None)
            _say(f"demo store: {ctx.location}; reopen it with: cd {folder} && ctx review")
            return
        _say(f"demo store: {ctx.location}\n")
        _say("Current decisions:")
        for decision in ctx.decisions():
            _say("  " + _decision_line(decision).replace("\n", "\n  "))
        _say("\nHistory of auth.tokens:")
        for decision in ctx.history("auth.tokens"):
            _say("  " + _decision_line(decision).replace("\n", "\n  "))
        _say("\nPending proposals:")
        for proposal in ctx.queue():
            _say("  " + _proposal_line(proposal).replace("\n", "\n  "))
        question = "how do we keep users signed in?"
        found = ctx.recall(question, k=3)
        _say(f"\nRecall: {question!r} (vectors {found.vectors.state})")
        for hit in found.decisions:
            _say(f"  {hit.rank}. {hit.decision.subject}: {hit.decision.decision}")
            for related in [*hit.superseded, *hit.conflicts, *hit.pending]:
                _say(f"     ! {related.warning or related.relation}: {related.text}")
        for ev in found.evidence:
            _say(f"  evidence (unratified): {ev.snippet}")
        if found.vectors.note:
            _say(f"  note: {found.vectors.note}")
        report = ctx.audit.verify()
        _say(f"\naudit chain {'ok' if report.ok else 'BROKEN'}: {plural(report.rows, 'row')}")
        _say(f"\nTry: cd {folder} && ctx queue && ctx recall 'auth tokens' && ctx inject")
    finally:
        ctx.close()
