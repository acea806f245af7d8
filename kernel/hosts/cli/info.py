"""Commands that describe ctx and its store: status, doctor, schema, completion, path."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from ctx_kernel.kernel import paths, text
from ctx_kernel.kernel.errors import StoreError, UsageError
from ctx_kernel.kernel.hosts.cli.base import (
    _colour,
    _db_option,
    _emit_json,
    _locate,
    _open,
    _say,
    _with_store,
    cli,
)

if TYPE_CHECKING:
    from ctx_kernel.kernel.facade import Ctx


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/status.schema.json).")
@_with_store
def status(ctx: Ctx, as_json: bool) -> None:
    """Show the store at a glance: counts, the queue, vectors, encryption and the last verify."""
    found = ctx.status()
    if as_json:
        _emit_json(found.to_dict())
        return
    model = found.model
    if model.source == "disabled" or model.problem is not None:
        vectors = f"off: {model.problem}"
    else:
        where = f" ({model.folder})" if model.folder else ""
        proof = {True: ", files verified", False: ", not the pinned files", None: ""}[model.verified]
        vectors = f"{model.model} from {model.source}{where}{proof}"
        if found.vector_model and found.vector_model != model.model:
            vectors += f"; the store was embedded with {found.vector_model}: run `ctx reindex`"
    verify = found.last_verify
    if verify is None:
        verified = "never verified: run `ctx audit verify`"
    else:
        verdict = "ok" if verify.ok else f"FAILED: {verify.problem}"
        verified = f"last verified {verify.at[:19]}: {verdict} ({text.plural(verify.rows, 'row')})"
    stale = f", {found.stale} stale (over a week)" if found.stale else ""
    for label, value in (
        ("store", f"{found.store} (schema {found.schema_version})"),
        (
            "evidence",
            text.plural(found.evidence, "text") + (", encrypted at rest" if found.encrypted else ""),
        ),
        (
            "kernel",
            f"{text.plural(found.current_decisions, 'current decision')}, {found.decisions} in all"
            + (f", {found.stale_decisions} may be stale (ctx stale)" if found.stale_decisions else ""),
        ),
        ("queue", f"{found.pending} pending{stale}" + ("  (ctx review)" if found.pending else "")),
        ("vectors", vectors),
        ("audit", verified),
    ):
        click.echo(f"{_colour(f'{label:<9}', 'bold')} {text.visible(value)}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/doctor.schema.json).")
@_db_option
@click.pass_context
def doctor(context: click.Context, as_json: bool, db_here: str | None) -> None:
    """Check the install and the store: its backend, the model, integrity, the audit log.

    The backend is the SQLite driver (it loads sqlite-vec), or for a server its version, its
    extensions and the role this login belongs to.

    Each failed check says what to do; exits 1 when any failed.
    """
    from ctx_kernel.kernel.status import doctor as run_checks  # noqa: PLC0415

    ctx, problem = None, None
    try:
        ctx = _open(db_here or context.find_root().obj.get("db"))
    except StoreError as exc:
        problem = exc.message
    try:
        report = run_checks(ctx, problem)
    finally:
        if ctx is not None:
            ctx.close()
    if as_json:
        _emit_json(report.to_dict())
    else:
        for check in report.checks:
            mark = _colour("ok  ", "green") if check.ok else _colour("FAIL", "red")
            click.echo(f"{mark} {check.name:<9} {text.visible(check.detail)}")
            if check.fix:
                _say(f"     {'':<9} fix: {check.fix}")
    if not report.ok:
        sys.exit(1)


@cli.command("schema")
@click.argument("name", required=False)
def schema_command(name: str | None) -> None:
    """Print the JSON Schema NAME (e.g. recall, propose-input); without NAME, list the names.

    Every --json output and JSON input of ctx is valid against one of these.
    """
    from ctx_kernel.kernel.contracts import schema_documents  # noqa: PLC0415 - pydantic only for this command

    documents = {filename.removesuffix(".schema.json"): doc for filename, doc in schema_documents().items()}
    if name is None:
        for known in sorted(documents):
            _say(known)
        return
    key = name.removesuffix(".json").removesuffix(".schema")
    if key not in documents:
        raise UsageError(f"no schema {name!r}: `ctx schema` lists them")
    _emit_json(documents[key])


@cli.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL (commands, options, subjects, pending ids).

    bash: ctx completion bash >> ~/.bashrc; zsh: ctx completion zsh >> ~/.zshrc;
    fish: ctx completion fish > ~/.config/fish/completions/ctx.fish
    """
    from click.shell_completion import get_completion_class  # noqa: PLC0415

    found = get_completion_class(shell)
    assert found is not None
    click.echo(found(cli, {}, "ctx", "_CTX_COMPLETE").source())


@cli.command("path")
@_db_option
@click.pass_context
def path_command(context: click.Context, db_here: str | None) -> None:
    """Print the store this folder uses: its file, or its server URL without user or password.

    Exits 1 when there is none.
    """
    _say(paths.display_location(_locate(db_here or context.find_root().obj.get("db"))))
