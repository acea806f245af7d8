"""Commands that set up or change a store as a whole: init, allow, encrypt, rekey, reindex, migrate."""

from __future__ import annotations

import getpass
import os
import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.hosts.cli.base import _confirm, _db_option, _emit_json, _fail, _say, _with_store, cli
from ctx_kernel.kernel.limits import (
    COPY_BATCH,
)
from ctx_kernel.kernel.text import plural

if TYPE_CHECKING:
    from ctx_kernel.kernel.facade import Ctx

_KEY_FILE_HELP = (
    "Key file (default: CTX_VAULT_KEY, else CTX_VAULT_KEY_FILE, else vault/<store id>.key "
    "in the config folder); created 0600 if missing."
)


@cli.command()
@click.option("--encrypt", is_flag=True, help="Encrypt evidence text at rest (AES-256-GCM).")
@click.option("--key-file", type=click.Path(dir_okay=False, path_type=Path), help=_KEY_FILE_HELP)
@_db_option
@click.pass_context
def init(context: click.Context, encrypt: bool, key_file: Path | None, db_here: str | None) -> None:
    """Create the store (.ctx/ctx.db in the working folder, or --db / CTX_DB / .ctx/config.toml).

    With --db postgresql://host/dbname it creates the schema on the server and names the store
    in .ctx/config.toml (never with a user or password), so teammates' commands find it.
    """
    explicit = db_here or context.obj.get("db")
    target = paths.init_target(explicit)
    here = Path.cwd().resolve()
    shadowed = None if explicit or os.environ.get("CTX_DB") else paths.enclosing_store(here)
    if shadowed == target:
        shadowed = None
    shown = paths.display_location(target)
    if isinstance(target, str) and paths.is_server_url(target) and explicit is not None:
        paths.write_project_config(here, target, check_only=True)  # before the server is touched
    from ctx_kernel.kernel.facade import Ctx  # noqa: PLC0415 - see base.py

    ctx, created = Ctx.init(target)
    with ctx:
        _say(f"{'created' if created else 'already present, schema up to date:'} {shown}")
        if created and shadowed is not None:
            _say(
                f"ctx: note: {paths.display_location(shadowed)} already serves this folder; commands "
                "run here and below now use the new store instead",
                err=True,
            )
        if isinstance(target, str) and paths.is_server_url(target):
            _name_shared_store(here, target, explicit is not None)
        elif isinstance(target, Path) and created and paths.keep_out_of_git(target):
            _say(
                f"{target.parent / '.gitignore'} keeps the store out of git (its evidence may hold "
                "private text); commit checkpoints/ beside it, and share decisions with `ctx export adr`",
                err=True,
            )
        if encrypt and not (ctx.encrypted and not created):
            _seal(ctx, ctx.encrypt, key_file, "encrypting")
        elif key_file is not None:
            raise UsageError("--key-file goes with --encrypt")


@cli.command()
@click.argument("folder", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--revoke", is_flag=True, help="Withdraw the approval instead.")
@click.option("--yes", is_flag=True, help="Approve without asking (for scripts).")
def allow(folder: Path | None, revoke: bool, yes: bool) -> None:
    """Approve the store a project's .ctx/config.toml names, for your commands, hooks and ctx mcp.

    A cloned repository's config could name any server or file. Until you approve it here, ctx
    neither connects to it nor opens it, and every command says so. The approval covers the config
    as it reads now: a changed config needs a new one. A project's own .ctx/ctx.db needs none.
    """
    project, naming = paths.find_naming(folder or Path.cwd())
    if naming is None:
        _say(f"{paths.own_store(project)} is the project's own store: nothing to approve")
        return
    if revoke:
        done = paths.revoke(naming.source)
        _say(f"{'approval withdrawn' if done else 'was not approved'}: {naming.source}")
        return
    shown = naming.shown
    if paths.is_approved(naming):
        _say(f"already approved: commands run in {project} use {shown}")
        return
    if not yes and not sys.stdin.isatty():
        raise UsageError("approving a store is a person's act: without a terminal pass --yes")
    who = os.environ.get("PGUSER") or getpass.getuser()
    how = (
        f"a server: ctx connects as {who}, with your credentials" if paths.is_server_url(shown) else "a file"
    )
    _say(f"{naming.source} names the store\n  {shown}\n  ({how})", err=True)
    _confirm(f"Use it for commands run in {project}?", yes)
    paths.approve(naming)
    _say(f"approved: commands run in {project} use {shown}")


def _name_shared_store(project: Path, url: str, from_option: bool) -> None:
    """Write the project's config naming a server store (``ctx init --db URL``), password-free."""
    if paths.has_password(url):
        _say(
            f"ctx: note: the password in the URL was used once and is not kept; give it with "
            f"{paths.CREDENTIALS_HINT}",
            err=True,
        )
    if not from_option:
        return
    written = paths.write_project_config(project, url)
    # The person named this store on the command line: their config needs no second approval.
    if (naming := paths.naming_in(project)) is not None:
        paths.approve(naming)
    if written is not None:
        paths.keep_out_of_git(written)
        _say(
            f"{written} names the store for everyone who works here: commit it (it holds no "
            f"password; each person connects as their own role with {paths.CREDENTIALS_HINT})",
            err=True,
        )


@cli.command("encrypt")
@click.option("--key-file", type=click.Path(dir_okay=False, path_type=Path), help=_KEY_FILE_HELP)
@_with_store
def encrypt_command(ctx: Ctx, key_file: Path | None) -> None:
    """Encrypt every evidence text at rest; resumable, and new evidence is encrypted from then on.

    Evidence vectors and entity mentions are dropped (they would give the text away); keyword
    search keeps working on keyed tokens. Keep the key safe: without it the evidence is lost.
    """
    _seal(ctx, ctx.encrypt, key_file, "encrypting")


@cli.command()
@click.option("--key-file", type=click.Path(dir_okay=False, path_type=Path), help="The current key file.")
@_with_store
def rekey(ctx: Ctx, key_file: Path | None) -> None:
    """Encrypt every evidence text again under a new key; safe to interrupt and run again.

    The new key waits in <key file>.new until every row uses it, then replaces the key file.
    """
    _seal(ctx, ctx.rekey, key_file, "re-encrypting")


def _seal(ctx: Ctx, step: Callable[..., Any], key_file: Path | None, label: str) -> None:
    show = sys.stderr.isatty()
    bar: Any = (
        click.progressbar(length=1, label=label, file=sys.stderr, show_pos=True) if show else nullcontext()
    )
    with bar:
        shown = 0

        def progress(done: int, total: int) -> None:
            nonlocal shown
            if show:
                bar.length = max(total, 1)
                bar.update(done - shown)
                shown = done

        report = step(key_file=key_file, progress=progress)
    _say(f"{report.sealed} evidence texts sealed with key {report.key_id} ({report.key_source})")
    if report.key_created:
        _say(f"key written to {report.key_source}: back it up; without it the evidence cannot be read")


@cli.command()
@click.option("--download", is_flag=True, help="Let fastembed download the model if no local copy exists.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/reindex.schema.json).")
@_with_store
def reindex(ctx: Ctx, download: bool, as_json: bool) -> None:
    """Embed every decision and evidence text again with the configured model; stopped midway
    (Ctrl-C, a kill), the next run carries on after the texts already embedded."""
    reached = [0, 0]

    def count(done: int, total: int) -> None:
        reached[:] = [done, total]

    from ctx_kernel.kernel.hosts import bulk  # noqa: PLC0415 - it loads the ingest code

    try:
        if as_json or not sys.stderr.isatty():
            report = ctx.reindex(download=download, progress=count)
        else:
            with click.progressbar(length=1, label="embedding", file=sys.stderr, show_eta=False) as bar:
                rate = bulk.Throughput()

                def progress(done: int, total: int) -> None:
                    count(done, total)
                    left = rate.left(done, total)
                    if left is not None:
                        bar.label = f"embedding, about {bulk.duration(left)} left"
                    bar.length = max(total, 1)
                    bar.update(done - bar.pos)

                report = ctx.reindex(download=download, progress=progress)
    except KeyboardInterrupt:
        done, total = reached
        _fail(
            f"interrupted after {done} of {plural(total, 'text')}: run `ctx reindex` again to embed the rest",
            130,
        )
    if as_json:
        _emit_json(report.to_dict())
        return
    changed = f" (was {report.previous_model})" if report.previous_model not in (None, report.model) else ""
    resumed = ", carrying on after an interrupted reindex" if report.resumed else ""
    _say(
        f"embedded {plural(report.decisions, 'decision')} and {plural(report.evidence, 'evidence text')} "
        f"with {report.model}{changed}, {report.dim} dimensions, in {report.seconds:.1f} s{resumed}"
    )


_MIGRATE_STAGES = {
    "evidence": "evidence",
    "proposal": "proposals",
    "proposal_evidence": "proposal citations",
    "proposal_link": "proposal links",
    "decision": "decisions",
    "decision_evidence": "decision citations",
    "supersession": "supersession links",
    "decision_snapshot": "decision snapshots",
    "resolved": "proposal resolutions",
    "audit": "audit chain",
    "vectors": "vectors",
    "index": "index, mentions, conflicts",
}


@cli.command("migrate")
@click.option(
    "--to",
    "to",
    required=True,
    metavar="LOCATION",
    help="Where to copy the store: a file, sqlite:PATH or a postgresql:// URL (not printed with a password).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 100_000),
    default=COPY_BATCH,
    show_default=True,
    help="Rows per transaction on the target.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Copy even a store that does not verify, or through a symbolic link to nothing.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/migrate.schema.json).")
@_with_store
def migrate_command(ctx: Ctx, to: str, batch_size: int, force: bool, as_json: bool) -> None:
    """Copy this store to another file or server: evidence, proposals, decisions, the audit chain.

    Stopped at any point, the same command carries on where it stopped: rows the target holds are
    checked against this store's, never written twice, and a target that holds another store or a
    changed row is refused. The keyword index, entity mentions and conflicts are rebuilt there;
    vectors are copied when the target uses the same model.
    """
    if as_json or not sys.stderr.isatty():
        report = ctx.migrate(to, batch_size=batch_size, force=force)
    else:
        report = _migrate_with_bars(ctx, to, batch_size, force)
    if as_json:
        _emit_json(report.to_dict())
        return
    copied = sum(t.copied for t in report.tables)
    rows = sum(t.rows for t in report.tables)
    again = "resumed: " if report.resumed else ""
    _say(
        f"{again}copied {copied} of {plural(rows, 'row')} to {report.target} in {report.seconds:.1f} s: "
        f"{plural(report.audit_rows, 'audit row')}, last hash {report.last_hash}, "
        f"{plural(report.vectors, 'vector')}"
    )


def _migrate_with_bars(ctx: Ctx, to: str, batch_size: int, force: bool) -> Any:
    """``Ctx.migrate`` with a progress bar per table on the terminal (standard error)."""
    from rich.console import Console  # noqa: PLC0415 - only ctx migrate draws bars
    from rich.progress import (  # noqa: PLC0415
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    bars = Progress(
        TextColumn("{task.description:>28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    )
    tasks: dict[str, Any] = {}

    def progress(stage: str, done: int, total: int | None) -> None:
        if stage not in tasks:
            tasks[stage] = bars.add_task(_MIGRATE_STAGES.get(stage, stage), total=total)
        bars.update(tasks[stage], completed=done, total=total)

    with bars:
        return ctx.migrate(to, batch_size=batch_size, progress=progress, force=force)
