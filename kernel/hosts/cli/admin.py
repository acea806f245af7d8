"""Roles on a team's PostgreSQL store: admin grant-agent, grant-reviewer, grant-auditor."""

from __future__ import annotations

import sys

import click

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.hosts.cli.base import _db_option, _locate, _say, cli


@cli.group()
def admin() -> None:
    """A team's PostgreSQL store: give each login its role (agent, reviewer or auditor).

    The database keeps the human gate: an agent's login can log and propose but no statement of
    it can ratify, reject, write a decision or close a window.
    """


_ROLE_HELP = {
    "agent": "logs evidence, proposes and withdraws; cannot ratify, reject or retire, even with raw SQL",
    "reviewer": "also ratifies, rejects and retires: a person's login",
    "auditor": "reads everything and writes nothing",
}


def _grant_command(role: str) -> None:
    article = "an" if role[0] in "aeiou" else "a"
    summary = (
        f"Make the login NAME {article} {role}: it {_ROLE_HELP[role]}.\n\n"
        "Prints the SQL as a script to review (run it with psql as the store's owner), or runs it "
        "with --run. NAME is quoted as an identifier, so any name is taken literally."
    )

    @admin.command(f"grant-{role}", help=summary)
    @click.argument("name")
    @click.option(
        "--run", is_flag=True, help="Run the SQL on the store's server (as its owner) instead of printing it."
    )
    @click.option(
        "--create-login",
        is_flag=True,
        help="Create NAME as a login role first (no password: peer or certificate authentication).",
    )
    @click.option(
        "--password",
        "ask_password",
        is_flag=True,
        help="With --run --create-login: ask for the login's password on the terminal (sent hashed).",
    )
    @_db_option
    @click.pass_context
    def grant(
        context: click.Context,
        name: str,
        run: bool,
        create_login: bool,
        ask_password: bool,
        db_here: str | None,
    ) -> None:
        # Imported here: `ctx admin` is for a server's owner, and the team module loads the store.
        from ctx_kernel.kernel import team  # noqa: PLC0415

        location = _locate(db_here or context.find_root().obj.get("db"))
        script = team.grant_script(location, role, name, create_login=create_login)
        if not run:
            if ask_password:
                raise UsageError("--password goes with --run: a printed script never holds a password")
            click.echo(script, nl=False)
            return
        password = None
        if ask_password:
            if not create_login:
                raise UsageError("--password goes with --create-login")
            if not sys.stdin.isatty():
                raise UsageError("--password asks on a terminal: run it on one, or set the password in psql")
            password = click.prompt(
                f"Password for {name}", hide_input=True, confirmation_prompt=True, err=True
            )
        from ctx_kernel.kernel.facade import Ctx  # noqa: PLC0415 - see base.py

        with Ctx.open(location, embedder=None) as ctx:
            team.grant(ctx.store, role, name, create_login=create_login, password=password)
        _say(f"{name} is now {article} {role} of {paths.display_location(location)}")


for _role in ("agent", "reviewer", "auditor"):
    _grant_command(_role)
