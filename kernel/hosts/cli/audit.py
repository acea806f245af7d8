"""The audit log and the key that signs it: audit export, verify, checkpoint; keys init, export-public."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import CtxError, UsageError
from ctx_kernel.kernel.hosts.cli.base import _db_option, _emit_json, _open, _say, _with_store, cli
from ctx_kernel.kernel.text import plural

if TYPE_CHECKING:
    from ctx_kernel.kernel.facade import Ctx


@cli.group()
def audit() -> None:
    """The hash-chained audit log."""


def _passphrase(confirm: bool) -> str:
    """``CTX_KEY_PASSPHRASE``, else a hidden prompt on a terminal (asked twice when creating a key)."""
    given = os.environ.get("CTX_KEY_PASSPHRASE")
    if given is not None:
        return given
    if not sys.stdin.isatty():
        raise UsageError("no passphrase for the signing key: set CTX_KEY_PASSPHRASE or run on a terminal")
    return click.prompt(
        "Passphrase for the signing key", hide_input=True, confirmation_prompt=confirm, err=True
    )


@audit.command("export")
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False),
    help="The records file to write; the signed manifest goes beside it as OUT.manifest.json.",
)
@click.option("--since", metavar="DATE", help="Start at this moment (a bare date means its start, UTC).")
@click.option("--until", metavar="DATE", help="End at this moment (a bare date means its end, UTC).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "csv"]),
    default="jsonl",
    show_default=True,
    help="JSON Lines, or CSV for a spreadsheet (cells that would run as formulas are escaped).",
)
@click.option(
    "--served",
    is_flag=True,
    help="Also export the served log's entries in the range (OUT.served.jsonl), signed by the same manifest.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the signed manifest (schemas/audit-manifest.schema.json)."
)
@_with_store
def audit_export(
    ctx: Ctx, out: str, since: str | None, until: str | None, fmt: str, served: bool, as_json: bool
) -> None:
    """Write a signed, tamper-evident export of the audit log that a reviewer can verify without ctx.

    Asks for the signing key's passphrase (or reads CTX_KEY_PASSPHRASE); see `ctx keys init`.
    """
    result = ctx.audit.export(
        Path(out),
        passphrase=lambda: _passphrase(confirm=False),
        since=since,
        until=until,
        fmt=fmt,
        served=served,
    )
    if as_json:
        _emit_json(result.to_dict())
        return
    manifest = result.manifest
    _say(
        f"exported {plural(manifest['records'], 'event')} "
        f"(seq {manifest['first_seq']}..{manifest['last_seq']}) to {result.records_path}"
    )
    _say(f"manifest {result.manifest_path}, signed with key {manifest['key']['key_id']}")
    if manifest.get("served") is not None:
        section = manifest["served"]
        _say(f"served log: {plural(section['entries'], 'entry', 'entries')} to {section['file']}")


@audit.command("verify")
@click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--pubkey",
    type=click.Path(exists=True, dir_okay=False),
    help="The signer's public key (PEM) to trust for FILE or checkpoints; default: your own signing keys.",
)
@click.option(
    "--manifest",
    type=click.Path(exists=True, dir_okay=False),
    help="The export's signed manifest (default: FILE.manifest.json).",
)
@click.option(
    "--checkpoint",
    "checkpoints",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A signed checkpoint or export manifest to check the store's chain against (repeatable).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON (schemas/audit-verify.schema.json; with FILE, schemas/audit-export-verify.schema.json).",
)
@_db_option
@click.pass_context
def audit_verify(
    context: click.Context,
    file: str | None,
    pubkey: str | None,
    manifest: str | None,
    checkpoints: tuple[str, ...],
    as_json: bool,
    db_here: str | None,
) -> None:
    """Verify the store's audit log, or with FILE an export: exits 1 naming the first bad row or record.

    Without FILE: recomputes the store's hash chain, checks it against every signed checkpoint
    (the store's checkpoints/ folder, exports, --checkpoint), the schema's triggers and indexes
    against the migrations, and replays the log against every table it describes. With FILE: checks
    the manifest's signature against the trusted key, the records' chain from the manifest's anchor,
    and that the records are the ones the manifest counts.
    """
    if file is None:
        if manifest:
            raise UsageError("--manifest verifies an export: name its FILE")
        _verify_store(context, checkpoints, pubkey, as_json, db_here)
        return
    if checkpoints:
        raise UsageError("--checkpoint checks the store's log: leave out FILE")
    from ctx_kernel.kernel.audit.service import AuditService  # noqa: PLC0415 - it loads the store

    found = AuditService.verify_export(
        Path(file),
        pubkey=Path(pubkey) if pubkey else None,
        manifest=Path(manifest) if manifest else None,
    )
    if as_json:
        _emit_json(found.to_dict())
    elif found.ok:
        _say(
            f"export ok: {plural(found.records, 'record')} (seq {found.first_seq}..{found.last_seq}), "
            f"anchored at {found.anchor_hash}, last hash {found.last_hash}"
        )
        _say(f"signed by key {found.trusted_key}, trusted from {found.trusted_key_source}")
        if found.served_entries is not None:
            _say(f"served log ok: {plural(found.served_entries, 'entry', 'entries')}")
    if not found.ok:
        raise CtxError(f"export {file} does not verify: {found.problem}")


def _verify_store(
    context: click.Context,
    checkpoints: tuple[str, ...],
    pubkey: str | None,
    as_json: bool,
    db_here: str | None,
) -> None:
    ctx = _open(db_here or context.find_root().obj.get("db"))
    try:
        report = ctx.audit.verify(
            state=True, checkpoints=[Path(c) for c in checkpoints], pubkey=Path(pubkey) if pubkey else None
        )
    finally:
        ctx.close()
    if as_json:
        _emit_json(report.to_dict())
    elif report.ok:
        _say(f"audit chain ok: {plural(report.rows, 'row')}, last hash {report.last_hash}")
        _say(f"served log ok: {plural(report.served_entries, 'entry', 'entries')}")
        if report.checkpoint_seq is not None:
            _say(f"matches {report.checkpoints} signed checkpoints (latest at row {report.checkpoint_seq})")
        for note in report.notes:
            _say(f"note: {note}")
    if not report.ok:
        raise CtxError(f"audit log does not verify: {report.problem}")


@audit.command("checkpoint")
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    help="Also write the checkpoint here (a file to commit or send); it is always kept in checkpoints/.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the checkpoint (schemas/audit-checkpoint.schema.json)."
)
@_with_store
def audit_checkpoint(ctx: Ctx, out: str | None, as_json: bool) -> None:
    """Sign the audit chain's head with your key, so a later rewrite of the whole log is caught.

    Keeps the signed head in checkpoints/ beside the store and in the store; `ctx audit verify`
    checks the chain against it. Asks for the signing key's passphrase (or reads CTX_KEY_PASSPHRASE).
    """
    result = ctx.audit.checkpoint(
        passphrase=lambda: _passphrase(confirm=False), out=Path(out) if out else None
    )
    if as_json:
        _emit_json(result.to_dict())
        return
    head = result.document["checkpoint"]
    _say(f"signed audit row {head['seq']} (hash {head['hash']}) with key {head['key']['key_id']}")
    for path in result.paths:
        _say(f"wrote {path}")


@audit.command("served")
@click.option("--session", metavar="SESSION", help="Everything this session was told, in order.")
@click.option(
    "--decision", metavar="ID", help="Every answer that served this decision (or evidence id), and when."
)
@click.option(
    "--at",
    metavar="TIME",
    help="Only what was served up to this moment (with --agent: what it had been told).",
)
@click.option("--agent", metavar="NAME", help="Only what this agent was served.")
@click.option(
    "--after-superseded",
    is_flag=True,
    help="Decisions served as in force after their successor was ratified (should be none; exit 1 if any).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/audit-served.schema.json).")
@_with_store
def audit_served(
    ctx: Ctx,
    session: str | None,
    decision: str | None,
    at: str | None,
    agent: str | None,
    after_superseded: bool,
    as_json: bool,
) -> None:
    """What agents were served: every decision and evidence text an answer gave them, and when.

    Entries are written by the session-start hook, `ctx inject` run by an agent (or with --record)
    and the MCP tools that read; each names the host, agent, session, a digest of the request and
    the ids, content digests and validity of what it returned.
    """
    if decision is not None:
        decision = ctx.resolve_id(decision)
    report = ctx.served.report(
        session=session, decision=decision, at=at, agent=agent, after_superseded=after_superseded
    )
    if as_json:
        _emit_json(report.to_dict())
    else:
        _say(f"{report.asked}: {plural(len(report.entries), 'answer')}")
        for entry in report.entries:
            where = f"{entry.host} {entry.agent}" + (f" session {entry.session}" if entry.session else "")
            _say(f"  {entry.seq:>5} {entry.at[:19].replace('T', ' ')}  {where}  {entry.operation}")
            for item in entry.items:
                _say(f"        {item.id} {item.validity} {item.digest[:12]}")
        if report.folded:
            _say(
                f"({plural(report.folded, 'older entry', 'older entries')} folded into signed daily digests)"
            )
        if report.after_superseded is not None:
            for late in report.after_superseded:
                _say(
                    f"LATE: entry {late.seq} at {late.at} gave {late.decision_id} as in force to "
                    f"{late.session or late.agent}, superseded at {late.superseded_at}"
                )
            if not report.after_superseded:
                _say("no decision was served as in force after it was superseded")
    if report.after_superseded:
        raise CtxError(
            f"{plural(len(report.after_superseded), 'decision')} served as in force after being superseded"
        )


@audit.command("fold")
@click.option(
    "--older-than",
    "older_than",
    type=click.IntRange(1, 100_000),
    metavar="DAYS",
    help="Fold whole days of served entries older than this many days "
    "(default: retention_days under [served] in your config.toml).",
)
@_with_store
def audit_fold(ctx: Ctx, older_than: int | None) -> None:
    """Fold old served entries into signed daily digests (a count and a Merkle root per day).

    Keeps the served log small while `ctx audit verify` still checks it. Signed with your audit key:
    asks for its passphrase (or reads CTX_KEY_PASSPHRASE). The retention period is --older-than, or
    the `retention_days` setting under `[served]` in your config.toml.
    """
    older_than = older_than or paths.served_retention_days()
    folds = ctx.served.fold(older_than_days=older_than, passphrase=lambda: _passphrase(confirm=False))
    for fold in folds:
        _say(
            f"folded {fold['day']}: {plural(fold['entries'], 'entry', 'entries')} "
            f"(seq {fold['first_seq']}..{fold['last_seq']}), Merkle root {fold['merkle_root']}"
        )
    if not folds:
        _say(f"no served entries older than {plural(older_than, 'day')}")


@cli.group()
def keys() -> None:
    """The Ed25519 key that signs audit exports (in your user config folder, not the project)."""


@keys.command("init")
@click.option(
    "--force", is_flag=True, help="Replace an existing key (its public half is kept beside the new one)."
)
def keys_init(force: bool) -> None:
    """Create the audit signing key, its private half encrypted with a passphrase.

    The passphrase is asked twice on a terminal, or read from CTX_KEY_PASSPHRASE.
    """
    from ctx_kernel.kernel.audit.service import AuditService  # noqa: PLC0415 - it loads the store

    info = AuditService.create_signing_key(lambda: _passphrase(confirm=True), force=force)
    _say(f"created signing key {info.key_id}")
    _say(f"private key (encrypted): {info.private_path}")
    _say(f"public key: {info.public_path}")


@keys.command("export-public")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["pem", "raw"]),
    default="pem",
    show_default=True,
    help="PEM (SubjectPublicKeyInfo), or raw: the 32-byte key in base64.",
)
def keys_export_public(fmt: str) -> None:
    """Print the public key that verifies your audit exports; give it to the reviewer."""
    from ctx_kernel.kernel.audit.service import AuditService  # noqa: PLC0415 - it loads the store

    info = AuditService.signing_key()
    _say(info.public_pem.rstrip("\n") if fmt == "pem" else info.public_raw)
