"""What every transcript parser shares: the turn it yields, the report it fills and the JSON Lines reader."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import IO, Any

from ctx_kernel.kernel.capture.json_input import JSONInputError, read_json, read_lines
from ctx_kernel.kernel.clock import format_ts
from ctx_kernel.kernel.errors import UsageError

SPEAKERS: tuple[str, ...] = ("user", "assistant", "tool", "system")
# A line holds one record; pasted images make some lines megabytes long, none honestly this long.
MAX_LINE_BYTES = 64 * 1024 * 1024
MAX_WARNINGS = 100  # a report keeps this many warnings and counts the rest, so a garbage file stays cheap
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # the first bytes of a zstd frame (Codex's rollout-*.jsonl.zst)


class CompressedStreamError(Exception):
    """A compressed transcript whose stream cannot be decoded."""


def open_transcript(path: Path) -> IO[bytes]:
    """A transcript file's bytes, decompressed when it is a zstd stream (whatever its name).

    Raises OSError when the file cannot be opened; reading a damaged compressed stream raises
    :class:`CompressedStreamError`.
    """
    handle = path.open("rb")
    try:
        magic = handle.read(len(ZSTD_MAGIC))
        handle.seek(0)
    except OSError:
        handle.close()
        raise
    if magic != ZSTD_MAGIC:
        return handle
    import zstandard  # noqa: PLC0415 - only compressed transcripts need it

    return io.BufferedReader(_ZstdErrors(zstandard.ZstdDecompressor().stream_reader(handle, closefd=True)))


class _ZstdErrors(io.RawIOBase):
    """A zstd stream reader whose decoding errors are :class:`CompressedStreamError`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        import zstandard  # noqa: PLC0415

        try:
            return int(self._inner.readinto(buffer))
        except zstandard.ZstdError as error:
            raise CompressedStreamError(f"the zstd stream is damaged: {error}") from None

    def close(self) -> None:
        self._inner.close()
        super().close()


@dataclass(frozen=True)
class Turn:
    """One utterance in an agent session: who spoke, what they said, and where it came from."""

    speaker: str  # one of SPEAKERS
    text: str
    session: str | None
    at: str | None  # canonical UTC timestamp (kernel.clock) when the transcript records one
    source: str  # "<path>#L<line>": the line the turn starts on; unique with the speaker
    agent: str  # the format's name: "claude-code", "codex", "aider"


@dataclass(frozen=True)
class ParseWarning:
    """A line the parser skipped or could only partly read, and why."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class ParseReport:
    """What a parse saw in one file: its format, how many lines and turns, and the lines it skipped."""

    path: str = ""
    format: str | None = None
    lines: int = 0
    turns: int = 0
    problems: int = 0  # every line warned about, including those past MAX_WARNINGS
    warnings: list[ParseWarning] = field(default_factory=list)

    def warn(self, line: int, message: str) -> None:
        """Record a skipped or damaged line, keeping at most MAX_WARNINGS messages."""
        self.problems += 1
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(ParseWarning(line, message))


@dataclass(frozen=True)
class Options:
    """Choices a caller makes about what a parse keeps."""

    thinking: bool = False  # keep the model's reasoning (Claude thinking blocks, Codex reasoning summaries)
    local_tz: tzinfo | None = None  # zone of timestamps written without one (Aider); None: this machine's


@dataclass
class Context:
    """One parse in progress: the file, the caller's options and the report being filled."""

    path: Path
    options: Options
    report: ParseReport

    def source(self, line: int) -> str:
        """The reference a turn starting on this line carries back to the file."""
        return f"{self.path}#L{line}"


class ToolNames:
    """The tool name of each recent call id, so the result that answers a call can name its tool.

    Only the latest ``keep`` calls are remembered: a result follows its call within a few lines,
    and a session of 20 000 tool calls should not grow a table of all of them.
    """

    def __init__(self, keep: int = 1024) -> None:
        self._names: dict[str, str] = {}
        self._keep = keep

    def add(self, call_id: object, name: str) -> None:
        """Remember the tool a call id belongs to."""
        if isinstance(call_id, str) and call_id:
            self._names[call_id] = name
            if len(self._names) > self._keep:
                del self._names[next(iter(self._names))]

    def get(self, call_id: object) -> str:
        """The tool a call id belongs to, or "tool" when the call is unknown or long forgotten."""
        return self._names.get(call_id, "tool") if isinstance(call_id, str) else "tool"


Parser = Callable[[Context], Iterator[Turn]]
Sniffer = Callable[[Path, str], bool]


@dataclass(frozen=True)
class Format:
    """A transcript format: its name, how to recognise a file of it, and how to read one."""

    name: str
    description: str
    sniff: Sniffer
    parse: Parser


def as_str(value: object) -> str:
    """A JSON value if it is a string, else the empty string: transcripts are not always well-typed."""
    return value if isinstance(value, str) else ""


def as_dict(value: object) -> dict[str, Any]:
    """A JSON value if it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_dicts(value: object) -> list[dict[str, Any]]:
    """The objects in a JSON value if it is an array, else none."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def normalise_ts(raw: object, assume: tzinfo = UTC) -> str | None:
    """A transcript's timestamp as a canonical UTC timestamp, or None when it is absent or unreadable."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        moment = datetime.fromisoformat(raw.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=assume)
    try:
        return format_ts(moment)
    except (OverflowError, ValueError):
        return None


def json_records(ctx: Context, kind: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each JSON object in a JSON Lines file with its line number; bad lines are skipped and reported.

    Lines are read one at a time as bytes, so a 50 000-line session never sits in memory whole.
    A line of broken UTF-8 is read with the bad bytes replaced (and reported), as its JSON may
    still hold. A file in which not one line is a JSON object is refused: it is not this format.
    """
    report = ctx.report
    first_bad: tuple[int, str] | None = None
    good = 0
    try:
        handle = open_transcript(ctx.path)
    except OSError as error:
        raise UsageError(f"{ctx.path}: cannot read: {error.strerror or error}") from None
    with handle:
        try:
            for lineno, raw in read_lines(handle, MAX_LINE_BYTES):
                report.lines = lineno
                if raw is not None and not raw.strip():
                    continue
                value, problem = _record(raw, lineno, report)
                if problem is not None:
                    report.warn(lineno, f"skipped: the line {problem}")
                    first_bad = first_bad or (lineno, problem)
                    continue
                good += 1
                yield lineno, value
        except CompressedStreamError as error:
            if good == 0:
                raise UsageError(f"{ctx.path}: {error}") from None
            report.warn(report.lines + 1, f"skipped the rest of the file: {error}")
    if good == 0 and first_bad is not None:
        line, problem = first_bad
        raise UsageError(f"{ctx.path}: line {line} {problem}; no line reads as a {kind} record")


def _record(raw: bytes | None, lineno: int, report: ParseReport) -> tuple[dict[str, Any], str | None]:
    """A line's JSON object, or an empty one and what is wrong with the line."""
    if raw is None:
        return {}, f"is longer than {MAX_LINE_BYTES} bytes"
    try:
        value = read_json(decode_line(raw, lineno, report))
    except JSONInputError as exc:
        if exc.kind == "malformed":
            return {}, "is cut off" if not raw.endswith(b"\n") else "is not JSON"
        return {}, f"is refused: {exc.message}"
    if not isinstance(value, dict):
        return {}, "is not a JSON object"
    return value, None


def decode_line(raw: bytes, lineno: int, report: ParseReport) -> str:
    """A line's bytes as UTF-8 text; undecodable bytes are replaced and the line reported."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        report.warn(lineno, "the line is not UTF-8; undecodable bytes replaced")
        return raw.decode("utf-8", "replace")
