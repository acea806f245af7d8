"""ADR folders: import adr, export adr."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.hosts.cli.base import _confirm, _emit_json, _reviewer, _say, _with_store, cli
from ctx_kernel.kernel.text import plural

if TYPE_CHECKING:
    from ctx_kernel.kernel.adr.importer import ImportReport
    from ctx_kernel.kernel.facade import Ctx


@cli.group("import")
def import_group() -> None:
    """Bring decisions in from other formats."""


@import_group.command("adr")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--reviewer", help="Who ratifies the import (needed with --yes without a terminal).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@click.option(
    "--dry-run", is_flag=True, help="Print the subject and outcome chosen for every file; write nothing."
)
@click.option("--json", "as_json", is_flag=True, help="Print what was imported as JSON.")
@_with_store
def import_adr(ctx: Ctx, folder: str, reviewer: str | None, yes: bool, dry_run: bool, as_json: bool) -> None:
    """Import a folder of ADR Markdown files (adr-tools/Nygard or MADR); re-import is a no-op.

    Each file is kept whole as evidence; its Decision section (or, without one, its whole body) is
    the decision. Set a file's subject with `subject:` front matter after checking --dry-run. A
    supersession a file's text only mentions ("This replaces ADR 3") is suggested, never linked.
    The paths a current decision or pending proposal governs come from a file's `ctx-links` and
    the paths its MADR Confirmation section names; --dry-run lists them, as does the question
    asked on a terminal before anything is written.
    """
    if dry_run:
        name = reviewer or paths.configured_reviewer() or getpass.getuser()
    else:
        name = _reviewer(ctx, reviewer, yes, "importing decisions")
        if not yes:  # the person sees what each file becomes, and what it links, before saying yes
            _plan(ctx.import_adrs(Path(folder), reviewer=name, dry_run=True))
        _confirm(f"Import the ADRs in {folder} as decisions ratified by {name}?", yes)
    report = ctx.import_adrs(Path(folder), reviewer=name, dry_run=dry_run)
    if as_json:
        _emit_json(report.to_dict())
        return
    if dry_run:
        _plan(report)
    else:
        for entry in report.files:
            if entry.get("links"):
                _say(f"{entry['path']}  {entry['outcome']}{_links(entry)}")
    verb = "would import" if dry_run else "imported"
    _say(
        f"{verb} {plural(len(report.decisions), 'decision')} and "
        f"{plural(len(report.proposals), 'proposal')}; "
        f"{len(report.unchanged)} already imported" + ("; nothing written (dry run)" if dry_run else "")
    )
    for link in report.suggested_links:
        _say(
            f"suggested, not linked: {link['path']} supersedes {link['supersedes']}? "
            f'{link["said_in"]} says: "{link["said"]}"; to link them, write '
            f"'{link['status_line']}' in the Status section of {link['path']}"
        )
    for line in report.skipped:
        _say(f"skipped {line}", err=True)
    for line in report.warnings:
        _say(f"warning: {line}", err=True)


def _plan(report: ImportReport) -> None:
    """One line per file: its subject, what it becomes and the links it gives."""
    for entry in report.files:
        _say(f"{entry['path']}  {entry.get('subject') or '-'}  {entry['outcome']}{_links(entry)}")


def _links(entry: dict[str, Any]) -> str:
    """What a file's decision or proposal governs, as the tail of its line (empty without links)."""
    links = entry.get("links") or []
    return f"  links: {', '.join(links)}" if links else ""


@cli.group("export")
def export_group() -> None:
    """Write decisions out in other formats."""


@export_group.command("adr")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Replace files and links ctx does not own.")
@_with_store
def export_adr(ctx: Ctx, folder: str, force: bool) -> None:
    """Write decisions and pending proposals as ADR files in FOLDER, and a README.md index.

    A file ctx imported is updated in place (same name and number, the team's text kept); a new
    decision gets the next free number in the folder's own naming and layout (Nygard or MADR). A
    file is replaced only if ctx owns it (it carries a ctx-id, or is unchanged since its import);
    any other file, or a link, refuses the export with nothing written, unless --force.
    """
    done = ctx.export_adrs(Path(folder), force=force)
    _say(f"wrote {plural(len(done.written), 'file')} to {folder}; {len(done.unchanged)} already up to date")
    for line in done.warnings:
        _say(f"warning: {line}", err=True)
