"""Commands that take evidence in: log, ingest transcript."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ctx_kernel.kernel import text
from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.hosts.cli.base import (
    _check_utf8,
    _emit_json,
    _fail,
    _read_stdin,
    _say,
    _with_store,
    cli,
)
from ctx_kernel.kernel.limits import PARALLEL_FROM, TRANSCRIPT_FORMATS
from ctx_kernel.kernel.spec import EVIDENCE_KINDS

if TYPE_CHECKING:
    from ctx_kernel.kernel.capture.ingest import BatchReport, EvidenceInput
    from ctx_kernel.kernel.facade import Ctx


@cli.command()
@click.argument("body", metavar="TEXT|-", required=False)
@click.option(
    "--jsonl",
    "jsonl",
    metavar="FILE|-",
    help="Log many records, one JSON object per line (schemas/log-record.schema.json).",
)
@click.option(
    "--kind", type=click.Choice(EVIDENCE_KINDS), default="note", show_default=True, help="What the text is."
)
@click.option("--agent", envvar="CTX_AGENT", help="Who logged it (default: CTX_AGENT).")
@click.option("--session", envvar="CTX_SESSION", help="Session id (default: CTX_SESSION).")
@click.option("--source", help="Where the text came from: a path, URL or path#Lline.")
@click.option("--tag", "tags", multiple=True, help="A tag; repeat for more.")
@click.option("--no-redact", is_flag=True, help="Store secrets (keys, tokens, passwords) as they are.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@_with_store
def log(
    ctx: Ctx,
    body: str | None,
    jsonl: str | None,
    kind: str,
    agent: str | None,
    session: str | None,
    source: str | None,
    tags: tuple[str, ...],
    no_redact: bool,
    as_json: bool,
) -> None:
    """Append raw text (or - for standard input) to the evidence vault; prints its id.

    Obvious secrets are replaced by typed placeholders such as [REDACTED:aws-access-key]
    before the text is stored, unless --no-redact. With --jsonl, records are committed 500
    at a time; a bad line is reported by number and skipped (the good lines are stored, and
    the exit status is 1), and running the same file again adds nothing.
    """
    if ctx.login is not None:
        agent = ctx.actor(agent, ctx.login, "agent")
    if jsonl is not None:
        if body is not None:
            raise UsageError("give either TEXT or --jsonl FILE, not both")
        # Imported here, as every import below: the root group loads this module for a shell's Tab
        # press, which needs only the options above.
        from ctx_kernel.kernel.capture.ingest import EvidenceInput  # noqa: PLC0415
        from ctx_kernel.kernel.hosts import bulk  # noqa: PLC0415

        defaults = EvidenceInput(text="", kind=kind, agent=agent, session=session, tags=tags)
        report = _log_jsonl(ctx, jsonl, defaults, redact=not no_redact)
        if as_json:
            _emit_json(report.to_dict())
        else:
            _say("\n".join(bulk.summary(report, redact=not no_redact)))
        if report.interrupted:
            sys.exit(130)
        if report.rejected_count:
            # Scripts must notice a bad line; everything else in the file is already committed.
            lines = text.plural(report.rejected_count, "line") + (
                " was" if report.rejected_count == 1 else " were"
            )
            _fail(f"{lines} rejected; the other lines were logged", 1)
        return
    if body is None:
        raise UsageError("missing TEXT (or - for standard input, or --jsonl FILE)")
    if body == "-":
        body = _read_stdin(text.MAX_EVIDENCE_BYTES, "evidence")
    result = ctx.log(
        _check_utf8(body, "evidence"),
        kind=kind,
        agent=agent,
        session=session,
        tags=tags,
        source=source,
        redact=not no_redact,
    )
    if as_json:
        _emit_json(result.to_dict())
    else:
        _say(result.id + ("  (already in the vault)" if result.duplicate else ""))
    if result.redacted:
        _say(f"redacted {text.plural(result.redacted, 'secret')} before storing", err=True)


def _log_jsonl(ctx: Ctx, name: str, defaults: EvidenceInput, *, redact: bool) -> BatchReport:
    from ctx_kernel.kernel.capture.ingest import BatchReport, count_lines, read_jsonl  # noqa: PLC0415
    from ctx_kernel.kernel.hosts import bulk  # noqa: PLC0415

    report = BatchReport()
    if name == "-":
        items = read_jsonl(sys.stdin.buffer, defaults=defaults)
        return bulk.log_items(ctx, items, report=report, total_lines=None, label="logging", redact=redact)
    try:
        handle = open(name, "rb")  # noqa: SIM115 - closed below, after the generator is drained
    except OSError as error:
        raise UsageError(f"{name}: cannot read: {error.strerror or error}") from None
    with handle:
        total = count_lines(handle)
        items = read_jsonl(handle, defaults=defaults)
        return bulk.log_items(
            ctx,
            items,
            report=report,
            total_lines=total,
            label="logging",
            redact=redact,
            parallel=total >= PARALLEL_FROM,
        )


@cli.group()
def ingest() -> None:
    """Take in agents' session transcripts as evidence."""


@ingest.command("transcript")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="PATH...")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(TRANSCRIPT_FORMATS)),
    help="The transcript format (default: detected from each file).",
)
@click.option("--thinking", is_flag=True, help="Keep the model's reasoning as assistant turns.")
@click.option("--tag", "tags", multiple=True, help="A tag for every turn; repeat for more.")
@click.option("--no-redact", is_flag=True, help="Store secrets (keys, tokens, passwords) as they are.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/ingest.schema.json).")
@_with_store
def ingest_transcript(
    ctx: Ctx,
    paths: tuple[Path, ...],
    fmt: str | None,
    thinking: bool,
    tags: tuple[str, ...],
    no_redact: bool,
    as_json: bool,
) -> None:
    """Log each turn of Claude Code, Codex CLI or aider transcripts as evidence.

    A turn keeps its speaker, session, time and a PATH#Lline source. Tool output is cut to
    2,000 characters and binary blobs are left out. A folder is searched for *.jsonl and
    aider history files. Running it again on the same files adds nothing new.
    """
    from ctx_kernel.kernel.hosts import bulk  # noqa: PLC0415

    report, files, failures = _ingest(ctx, paths, fmt, thinking=thinking, tags=tags, redact=not no_redact)
    if as_json:
        _emit_json({**report.to_dict(), "files": files})
    else:
        for entry in files:
            _say(
                f"{entry['path']}: {entry['format']}, {text.plural(entry['turns'], 'turn')}"
                + (f", {text.plural(entry['problems'], 'damaged line')} skipped" if entry["problems"] else "")
            )
            for warning in entry["warnings"][: bulk.SHOWN_REJECTIONS]:
                _say(f"  line {warning['line']}: {warning['error']}")
        _say("\n".join(bulk.summary(report, redact=not no_redact)))
        if report.added:
            _say(
                "vectors for the new evidence: recall fills them a few at a time, `ctx reindex` all at "
                "once (on a server, the store's owner runs it)"
            )
    for failure in failures:
        _say(f"ctx: error: {failure}", err=True)
    if report.interrupted:
        sys.exit(130)
    if failures:
        sys.exit(1)


def _compressed_rollout(path: Path) -> bool:
    """A Codex ``*.jsonl.zst`` rollout, unless its plain ``.jsonl`` (which Codex reads first) is there."""
    return path.name.endswith(".jsonl.zst") and not path.with_name(path.name.removesuffix(".zst")).exists()


def _transcript_files(paths: tuple[Path, ...]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and (p.name.endswith((".jsonl", ".chat.history.md")) or _compressed_rollout(p))
            )
        else:
            found.append(path)
    # Absolute, so every turn's PATH#Lline source still points at its file from anywhere.
    return list(dict.fromkeys(p.absolute() for p in found))


def _ingest(
    ctx: Ctx,
    paths: tuple[Path, ...],
    fmt: str | None,
    *,
    thinking: bool,
    tags: tuple[str, ...],
    redact: bool,
) -> tuple[BatchReport, list[dict[str, Any]], list[str]]:
    from ctx_kernel.kernel.capture import transcripts  # noqa: PLC0415 - the parsers load only here
    from ctx_kernel.kernel.capture.ingest import BatchReport, count_lines, from_turns  # noqa: PLC0415
    from ctx_kernel.kernel.hosts import bulk  # noqa: PLC0415

    files = _transcript_files(paths)
    explicit = {p.absolute() for p in paths if not p.is_dir()}
    sizes: dict[Path, int] = {}
    for path in files:
        try:
            with path.open("rb") as handle:
                sizes[path] = count_lines(handle)
        except OSError:
            sizes[path] = 0
    total, offset = BatchReport(), 0
    entries: list[dict[str, Any]] = []
    failures: list[str] = []
    for path in files:
        parsed = transcripts.ParseReport()
        try:
            turns = transcripts.parse(path, fmt, report=parsed, thinking=thinking)
        except UsageError as exc:
            if path in explicit:
                failures.append(exc.message)
            offset += sizes[path]
            continue
        one = BatchReport()
        try:
            bulk.log_items(
                ctx,
                from_turns(turns, tags=tags),
                report=one,
                total_lines=sum(sizes.values()),
                label="ingesting",
                redact=redact,
                origin=str(path),
                line_offset=offset,
                parallel=sizes[path] >= PARALLEL_FROM,
            )
        except UsageError as exc:  # a forced format that the file's lines do not fit
            failures.append(exc.message)
        offset += sizes[path]
        one.lines = parsed.lines
        total.absorb(one)
        entries.append(
            {
                "path": str(path),
                "format": parsed.format,
                "lines": parsed.lines,
                "turns": parsed.turns,
                "problems": parsed.problems,
                "warnings": [{"line": w.line, "error": w.message} for w in parsed.warnings],
            }
        )
        if one.interrupted:
            break
    if not files:
        failures.append("no transcript files found in " + ", ".join(str(p) for p in paths))
    return total, entries, failures
