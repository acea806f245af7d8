"""ctx hook: run from an agent's session-start and session-end hooks."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from ctx_kernel.kernel.capture.json_input import JSONInputError, read_json
from ctx_kernel.kernel.errors import CtxError, UsageError
from ctx_kernel.kernel.hosts.cli.base import _db_option, _locate, _open, _say, cli
from ctx_kernel.kernel.hosts.cli.evidence import _ingest
from ctx_kernel.kernel.inputs import InjectArgs
from ctx_kernel.kernel.limits import (
    DEFAULT_BUDGET,
    MAX_BUDGET,
    MIN_BUDGET,
    TRANSCRIPT_FORMATS,
)
from ctx_kernel.kernel.text import plural


@cli.command()
@click.argument("event", type=click.Choice(["session-start", "session-end"]))
@click.option("--format", "fmt", type=click.Choice(list(TRANSCRIPT_FORMATS)), help="Default: detected.")
@click.option(
    "--budget",
    type=click.IntRange(MIN_BUDGET, MAX_BUDGET),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="session-start: the block's size in tokens.",
)
@_db_option
@click.pass_context
def hook(context: click.Context, event: str, fmt: str | None, budget: int, db_here: str | None) -> None:
    """Run from an agent's hooks; a project without a store is skipped with a note (exit 0).

    session-start prints the `ctx inject` block for the session. session-end ingests the
    transcript named in the JSON on stdin (empty input or a null transcript_path: a note, exit 0).
    Claude Code and Codex hooks send {"session_id", "transcript_path", "cwd", ...}. The store is
    --db, CTX_DB, else the nearest .ctx/ctx.db above the payload's cwd, so the hooks can be
    installed for every project.
    """
    if event == "session-start":
        _session_start(context, budget, db_here)
    else:
        _session_end(context, fmt, db_here)


def _session_end(context: click.Context, fmt: str | None, db_here: str | None) -> None:
    try:
        payload = _hook_payload()
    except UsageError as exc:
        if exc.message != EMPTY_HOOK_PAYLOAD:
            raise
        # Exit 0 with a note: a host reads a hook's other exit codes (2 is a blocking error in Claude Code).
        _say(f"ctx: {exc.message}; no transcript ingested", err=True)
        return
    transcript = payload.get("transcript_path")
    if transcript is None and "transcript_path" in payload:  # Codex: a session it kept no file of
        _say("ctx: the session has no transcript file (transcript_path is null); nothing ingested", err=True)
        return
    if not isinstance(transcript, str) or not transcript:
        raise UsageError("the hook payload has no transcript_path")
    cwd = payload.get("cwd")
    start = Path(cwd) if isinstance(cwd, str) and Path(cwd).is_dir() else None
    try:
        location = _locate(db_here or context.find_root().obj.get("db"), start)
    except CtxError as exc:
        _say(f"ctx: {exc.message}; transcript not ingested", err=True)
        return
    from ctx_kernel.kernel.facade import Ctx  # noqa: PLC0415 - see base.py

    with Ctx.open(location) as ctx:
        report, files, failures = _ingest(
            ctx, (Path(transcript).expanduser(),), fmt, thinking=False, tags=(), redact=True
        )
    if failures:
        raise UsageError(failures[0])
    turns = sum(entry["turns"] for entry in files)
    _say(
        f"ctx: {plural(turns, 'turn')} read, {plural(report.added, 'new evidence text')}, "
        f"{report.duplicates} already in the vault",
        err=True,
    )


HOOK_PAYLOAD_BYTES = 1_000_000
HOOK_READ_SECONDS = 5.0


EMPTY_HOOK_PAYLOAD = "the hook payload on stdin is empty"


def _session_start(context: click.Context, budget: int, db_here: str | None) -> None:
    payload: dict[str, Any] = {}
    if not sys.stdin.isatty():
        try:
            payload = _hook_payload()
        except UsageError as exc:  # a hook must not stop the session: use the working folder
            if exc.message != EMPTY_HOOK_PAYLOAD:
                _say(f"ctx: {exc.message}; using the working folder", err=True)
    cwd = payload.get("cwd")
    start = Path(cwd) if isinstance(cwd, str) and Path(cwd).is_dir() else None
    try:
        ctx = _open(db_here or context.find_root().obj.get("db"), start)
    except CtxError as exc:
        _say(f"ctx: {exc.message}; no decisions injected", err=True)
        return
    with ctx:
        block = ctx.inject(budget=budget)
        _say(block.markdown, nl=False)
        session = payload.get("session_id")
        note = ctx.served.record(
            host="hook",
            agent=os.environ.get("CTX_AGENT") or "agent",
            session=session if isinstance(session, str) and session else os.environ.get("CTX_SESSION"),
            operation="inject",
            arguments=InjectArgs(budget=budget),
            result=block,
        )
        if note is not None:
            _say(f"ctx: note: {note}", err=True)


def _hook_payload() -> dict[str, Any]:
    """The hook's JSON object from stdin, read until it parses: some hosts never close the pipe."""
    import select  # noqa: PLC0415

    buffer = b""
    try:
        fd = sys.stdin.fileno()
    except (OSError, ValueError):  # not a real stream (embedded use): read it whole
        return _hook_document(sys.stdin.buffer.read(HOOK_PAYLOAD_BYTES + 1))
    deadline = time.monotonic() + HOOK_READ_SECONDS
    while len(buffer) <= HOOK_PAYLOAD_BYTES:
        remaining = deadline - time.monotonic()
        ready = select.select([fd], [], [], max(remaining, 0))[0] if remaining > 0 else []
        chunk = os.read(fd, 65_536) if ready else b""
        buffer += chunk
        try:
            return _hook_document(buffer)
        except UsageError:
            if not chunk:
                raise
    raise UsageError(f"the hook payload is larger than {HOOK_PAYLOAD_BYTES} bytes")


def _hook_document(raw: bytes) -> dict[str, Any]:
    if len(raw) > HOOK_PAYLOAD_BYTES:
        raise UsageError(f"the hook payload is larger than {HOOK_PAYLOAD_BYTES} bytes")
    if not raw.strip():
        raise UsageError(EMPTY_HOOK_PAYLOAD)
    try:
        document = read_json(raw)
    except JSONInputError as exc:
        raise UsageError(f"the hook payload on stdin is not a JSON object: {exc.message}") from None
    if not isinstance(document, dict):
        raise UsageError("the hook payload on stdin is not a JSON object")
    return document
