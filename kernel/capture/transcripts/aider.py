"""Aider chat histories: ``.aider.chat.history.md`` in the repository aider ran in.

Aider appends to one Markdown file for every session (``aider/io.py``):

* ``# aider chat started at 2024-05-01 10:00:00`` opens a session, in the local time of the
  machine aider ran on, without a zone (``datetime.now()``);
* each line of what the user typed is written as ``#### <line>`` (``#### <blank>`` for nothing);
* aider's own messages, command output and the answers to its questions are written one line
  each as ``> <line>``;
* the model's reply is written as it is, Markdown with fenced code blocks.

Aider writes no time per message, so every turn of a session carries the session's start time,
read in ``Options.local_tz`` (this machine's zone unless the caller says otherwise), and the
session id is that start time as written. A reply line starting with ``#### `` or ``> `` outside a
code fence cannot be told from a user or tool line; such lines are read as aider wrote them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ctx_kernel.kernel.capture.transcripts.base import Context, Format, Turn, decode_line
from ctx_kernel.kernel.capture.transcripts.clean import clean_prose, clean_tool
from ctx_kernel.kernel.clock import format_ts
from ctx_kernel.kernel.errors import UsageError

NAME = "aider"
FILE_NAME = ".aider.chat.history.md"
HEADER_RE = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s*$")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")


def sniff(path: Path, head: str) -> bool:
    """Whether the file is named like an aider history or opens an aider session near its top."""
    if path.name.endswith(FILE_NAME):
        return True
    return any(HEADER_RE.match(line) for line in head.splitlines()[:20])


@dataclass
class _Block:
    speaker: str
    line: int
    lines: list[str] = field(default_factory=list)


def parse(ctx: Context) -> Iterator[Turn]:
    """The turns of one aider chat history, across all of its sessions."""
    session: str | None = None
    at: str | None = None
    block: _Block | None = None
    in_fence = False
    for lineno, text in _lines(ctx):
        header = HEADER_RE.match(text)
        if header:
            yield from _flush(block, session, at, ctx)
            block, in_fence = None, False
            session = header.group(1)
            at = _start_time(session, lineno, ctx)
            continue
        if block is not None and block.speaker == "assistant" and in_fence:
            block.lines.append(text)
            in_fence = not _FENCE_RE.match(text)
            continue
        speaker = _speaker(text)
        if speaker is None:  # a blank line: part of a reply, the end of a user or tool block
            if block is not None and block.speaker == "assistant":
                block.lines.append(text)
            else:
                yield from _flush(block, session, at, ctx)
                block = None
            continue
        if block is None or block.speaker != speaker:
            yield from _flush(block, session, at, ctx)
            block = _Block(speaker, lineno)
        if speaker == "user":
            block.lines.append(text[5:].rstrip() if text.startswith("#### ") else "")
        elif speaker == "tool":
            block.lines.append(text[2:].rstrip() if text.startswith("> ") else "")
        else:
            block.lines.append(text)
            in_fence = bool(_FENCE_RE.match(text))
    yield from _flush(block, session, at, ctx)


def _speaker(text: str) -> str | None:
    if not text.strip():
        return None
    if text.startswith("#### ") or text.rstrip() == "####":
        return "user"
    if text.startswith("> ") or text.rstrip() == ">":
        return "tool"
    return "assistant"


def _flush(block: _Block | None, session: str | None, at: str | None, ctx: Context) -> Iterator[Turn]:
    if block is None:
        return
    raw = "\n".join(block.lines)
    if block.speaker == "user" and raw.strip() == "<blank>":
        return
    text = clean_tool(raw) if block.speaker == "tool" else clean_prose(raw)
    if text:
        yield Turn(block.speaker, text, session, at, ctx.source(block.line), NAME)


def _start_time(written: str, lineno: int, ctx: Context) -> str | None:
    """A session header's local time as a canonical UTC timestamp."""
    try:
        moment = datetime.strptime(written, "%Y-%m-%d %H:%M:%S")
        local = moment.replace(tzinfo=ctx.options.local_tz) if ctx.options.local_tz else moment.astimezone()
        return format_ts(local)
    except (ValueError, OverflowError):
        ctx.report.warn(lineno, f"session header time {written!r} is not a date ctx can keep")
        return None


def _lines(ctx: Context) -> Iterator[tuple[int, str]]:
    """Each line without its line ending; a line of broken UTF-8 is kept with the bad bytes replaced."""
    try:
        handle = ctx.path.open("rb")
    except OSError as error:
        raise UsageError(f"{ctx.path}: cannot read: {error.strerror or error}") from None
    with handle:
        for lineno, raw in enumerate(handle, start=1):
            ctx.report.lines = lineno
            yield lineno, decode_line(raw, lineno, ctx.report).rstrip("\r\n")


FORMAT = Format(NAME, "aider chat history (.aider.chat.history.md)", sniff, parse)
