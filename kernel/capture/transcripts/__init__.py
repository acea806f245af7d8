"""Coding agents' session transcripts read as turns: Claude Code, OpenAI Codex CLI and aider.

``parse(path)`` recognises the format from the file's name and first lines (or takes the one it
is given) and streams :class:`Turn` objects; the file is read a line at a time. A file that
cannot be read, is empty or is no known transcript raises :class:`~kernel.errors.UsageError`
before the first turn; a damaged line inside a good file is skipped and reported in the
:class:`ParseReport` the caller passes, with its line number.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import tzinfo
from pathlib import Path

from ctx_kernel.kernel.capture.transcripts import aider, claude_code, codex
from ctx_kernel.kernel.capture.transcripts.base import (
    SPEAKERS,
    CompressedStreamError,
    Context,
    Format,
    Options,
    ParseReport,
    ParseWarning,
    Turn,
    open_transcript,
)
from ctx_kernel.kernel.capture.transcripts.clean import BLOB_MIN_CHARS, MAX_TOOL_CHARS, MAX_TURN_CHARS
from ctx_kernel.kernel.errors import UsageError

FORMATS: dict[str, Format] = {fmt.name: fmt for fmt in (claude_code.FORMAT, codex.FORMAT, aider.FORMAT)}
HEAD_BYTES = 65_536  # what detection reads: several first lines, or enough of one huge first line

__all__ = [
    "BLOB_MIN_CHARS",
    "FORMATS",
    "MAX_TOOL_CHARS",
    "MAX_TURN_CHARS",
    "SPEAKERS",
    "Format",
    "ParseReport",
    "ParseWarning",
    "Turn",
    "detect",
    "parse",
    "read_head",
]


def detect(path: Path, head: str) -> str | None:
    """The name of the format a file is in, judged from its name and its first characters, or None."""
    for fmt in FORMATS.values():
        if fmt.sniff(path, head):
            return fmt.name
    return None


def read_head(path: Path) -> str:
    """The first HEAD_BYTES of a file as text, or a usage error naming why it cannot be read."""
    try:
        with open_transcript(path) as handle:
            raw = handle.read(HEAD_BYTES)
    except OSError as error:
        raise UsageError(f"{path}: cannot read: {error.strerror or error}") from None
    except CompressedStreamError as error:
        raise UsageError(f"{path}: {error}") from None
    if not raw.strip():
        raise UsageError(f"{path}: the file is empty")
    return raw.decode("utf-8", "replace")


def parse(
    path: Path,
    fmt: str | None = None,
    *,
    report: ParseReport | None = None,
    thinking: bool = False,
    local_tz: tzinfo | None = None,
) -> Iterator[Turn]:
    """Stream the turns of a transcript file, detecting its format unless ``fmt`` names one.

    Errors about the file as a whole are raised here, before iteration starts; ``report`` (filled
    as the turns are read) collects the lines that were skipped. ``thinking`` keeps the model's
    reasoning as assistant turns; ``local_tz`` is the zone of aider's zone-less session times.
    """
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"unknown transcript format {fmt!r}: use one of {', '.join(FORMATS)}")
    head = read_head(path)
    name = fmt or detect(path, head)
    if name is None:
        raise UsageError(f"{path}: not a transcript this version can read ({', '.join(FORMATS)})")
    report = report if report is not None else ParseReport()
    report.path, report.format = str(path), name
    context = Context(path, Options(thinking=thinking, local_tz=local_tz), report)
    return _counted(FORMATS[name].parse(context), report)


def _counted(turns: Iterator[Turn], report: ParseReport) -> Iterator[Turn]:
    for turn in turns:
        report.turns += 1
        yield turn
