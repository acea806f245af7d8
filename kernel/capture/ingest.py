"""Evidence arriving in bulk: JSON Lines records and transcript turns, as inputs for ``Ctx.log_many``.

Everything here is a generator over a stream, so a 50k-line file never sits in memory
whole; a line that does not parse or validate becomes an :class:`Item` carrying its
error and line number instead of stopping the run.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from ctx_kernel.kernel import clock, text
from ctx_kernel.kernel.capture.json_input import JSONInputError, read_json, read_lines
from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.language import entities
from ctx_kernel.kernel.limits import PARALLEL_FROM, TRANSCRIPT_FORMATS
from ctx_kernel.kernel.records import BatchReport, Rejected
from ctx_kernel.kernel.spec import EVIDENCE_KINDS

if TYPE_CHECKING:  # the parsers load only when a transcript is read, not on `ctx log`
    from ctx_kernel.kernel.capture.transcripts import Turn

MAX_SOURCE_CHARS = 2_000
PREPARE_CHUNK = 256
PREPARE_AHEAD = 4
MAX_TAGS = 50
# One JSON object per line; a line may hold a whole evidence text plus its JSON escaping.
MAX_LINE_BYTES = 2 * text.MAX_EVIDENCE_BYTES + 64_000


@dataclass(frozen=True)
class EvidenceInput:
    """One evidence text to log and what is known about it."""

    text: str
    kind: str = "note"
    agent: str | None = None
    session: str | None = None
    tags: tuple[str, ...] = ()
    source: str | None = None
    speaker: str | None = None
    occurred_at: str | None = None  # when the text was written, canonical UTC


@dataclass(frozen=True)
class Item:
    """A record read from line ``line`` of its input, or the reason it was not."""

    line: int
    record: EvidenceInput | None
    error: str | None = None


@dataclass(frozen=True)
class Prepared:
    """An evidence record checked, normalised, redacted and scanned for entities: ready to write."""

    body: str
    digest: str
    kind: str
    agent: str | None
    session: str | None
    tags: list[str]
    source: str | None
    speaker: str | None
    occurred_at: str | None
    redacted: int
    mentions: list[str] | None  # None: not scanned yet (the writer scans new texts only)


def prepare(record: EvidenceInput, *, redact: bool, scan: bool = False) -> Prepared:
    """Everything logging a record does before the write; raises UsageError for a bad record.

    ``scan`` also extracts its entities, which otherwise waits until the text proves new.
    """
    body = record.text
    # A character is at most 4 UTF-8 bytes: only a long text needs encoding to be measured.
    if len(body) * 4 > text.MAX_EVIDENCE_BYTES and len(body.encode("utf-8", "surrogatepass")) > (
        text.MAX_EVIDENCE_BYTES
    ):
        raise UsageError(f"evidence is larger than {text.MAX_EVIDENCE_BYTES} bytes")
    body = text.require_text(body.replace("\r\n", "\n"), "evidence text", text.MAX_EVIDENCE_BYTES)
    if record.kind not in EVIDENCE_KINDS:
        raise UsageError(f"unknown evidence kind {record.kind!r}: use one of {', '.join(EVIDENCE_KINDS)}")
    redacted = 0
    if redact:
        from ctx_kernel.kernel.capture.redact import redact as scrub  # noqa: PLC0415 - 7 ms, paid only when logging

        cleaned = scrub(body)
        body, redacted = cleaned.text, cleaned.total
    return Prepared(
        body=body,
        digest=hashlib.sha256(body.encode("utf-8")).hexdigest(),
        kind=record.kind,
        agent=text.optional_text(record.agent, "agent", text.MAX_NAME_CHARS),
        session=text.optional_text(record.session, "session", text.MAX_NAME_CHARS),
        tags=sorted({text.require_text(t, "tag", text.MAX_NAME_CHARS) for t in record.tags if t.strip()}),
        source=text.optional_text(record.source, "source", MAX_SOURCE_CHARS),
        speaker=text.optional_text(record.speaker, "speaker", text.MAX_NAME_CHARS),
        occurred_at=record.occurred_at,
        redacted=redacted,
        mentions=entities.extract(body) if scan else None,
    )


Outcome = tuple[int, Prepared | None, str | None]  # line, the prepared record or None, the error


def _prepare_items(items: list[Item], redact: bool, scan: bool = False) -> list[Outcome]:
    out: list[Outcome] = []
    for item in items:
        if item.record is None:
            out.append((item.line, None, item.error))
            continue
        try:
            out.append((item.line, prepare(item.record, redact=redact, scan=scan), None))
        except UsageError as exc:
            out.append((item.line, None, exc.message))
    return out


def _worker_setup() -> None:
    # Ctrl-C reaches the whole process group; the parent alone decides what an interrupt means.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A parent killed outright cannot stop its worker: the worker notices and leaves by itself.
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def _spawn_can_start() -> bool:
    # A spawned worker runs the parent's main module again; code read from stdin has none to run.
    import sys  # noqa: PLC0415

    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return main_file is None or os.path.exists(main_file)


def prepare_all(items: Iterable[Item], *, redact: bool, parallel: bool = False) -> Iterator[Outcome]:
    """Prepare records in order, in this process or (``parallel``) in one worker process.

    The worker takes chunks of PREPARE_CHUNK records with at most PREPARE_AHEAD chunks in
    flight, so memory stays bounded and the caller writes while the next chunk is prepared.
    """
    if not parallel or not _spawn_can_start():
        for item in items:
            yield from _prepare_items([item], redact)
        return
    import multiprocessing  # noqa: PLC0415
    from concurrent.futures import Future, ProcessPoolExecutor  # noqa: PLC0415

    pool = ProcessPoolExecutor(
        max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_setup
    )
    pending: deque[Future[list[Outcome]]] = deque()
    try:
        source = iter(items)
        while chunk := list(itertools.islice(source, PREPARE_CHUNK)):
            pending.append(pool.submit(_prepare_items, chunk, redact, True))
            if len(pending) >= PREPARE_AHEAD:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def read_jsonl(stream: IO[bytes], *, defaults: EvidenceInput | None = None) -> Iterator[Item]:
    """Parse and validate one record per line (``schemas/log-record.schema.json``); blank lines are skipped.

    ``defaults`` supplies the agent, session, kind and tags a record leaves out.
    """
    from pydantic import ValidationError  # noqa: PLC0415 - only bulk input pays for pydantic

    from ctx_kernel.kernel.contracts import LogRecordInput  # noqa: PLC0415

    base = defaults or EvidenceInput(text="")
    for number, raw in read_lines(stream, MAX_LINE_BYTES):
        if raw is None:
            yield Item(number, None, f"line is longer than {MAX_LINE_BYTES} bytes")
            continue
        if not raw.strip():
            continue
        try:
            document = read_json(raw)
        except JSONInputError as exc:
            yield Item(number, None, exc.message)
            continue
        try:
            record = LogRecordInput.model_validate(document)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "record"
            yield Item(number, None, f"{where}: {first['msg']}")
            continue
        try:
            occurred = clock.parse_when(record.created_at, end_of_day=False) if record.created_at else None
        except UsageError as exc:
            yield Item(number, None, f"created_at: {exc}")
            continue
        yield Item(
            number,
            EvidenceInput(
                text=record.text,
                kind=record.kind or base.kind,
                agent=record.agent or base.agent,
                session=record.session or base.session,
                tags=tuple(record.tags) if record.tags is not None else base.tags,
                source=record.source,
                speaker=record.speaker,
                occurred_at=occurred,
            ),
        )


def from_turns(turns: Iterable[Turn], *, tags: tuple[str, ...] = ()) -> Iterator[Item]:
    """Transcript turns as evidence: kind ``conversation``, with speaker, session, time and source."""
    for turn in turns:
        line = int(turn.source.rpartition("#L")[2] or 0)
        yield Item(
            line,
            EvidenceInput(
                text=turn.text,
                kind="conversation",
                agent=turn.agent,
                session=turn.session,
                tags=tags,
                source=turn.source,
                speaker=turn.speaker,
                occurred_at=turn.at,
            ),
        )


def count_lines(stream: IO[bytes], chunk: int = 1 << 20) -> int:
    """The number of lines in a seekable binary stream, which is left where it was."""
    start = stream.tell()
    total, last = 0, b"\n"
    while block := stream.read(chunk):
        total += block.count(b"\n")
        last = block[-1:]
    stream.seek(start)
    return total + (last != b"\n")


__all__ = [
    "PARALLEL_FROM",
    "TRANSCRIPT_FORMATS",
    "BatchReport",
    "EvidenceInput",
    "Item",
    "Outcome",
    "Prepared",
    "Rejected",
    "count_lines",
    "from_turns",
    "prepare",
    "prepare_all",
    "read_jsonl",
]
