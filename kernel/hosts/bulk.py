"""Bulk logging for the CLI: a progress bar on a terminal, an honest summary when interrupted."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import click

from ctx_kernel.kernel.capture.ingest import BatchReport, Item

if TYPE_CHECKING:
    from ctx_kernel.kernel.facade import Ctx

SHOWN_REJECTIONS = 20  # rejected lines printed in the text summary; --json lists up to 1000


class Throughput:
    """A time-left estimate from the rate measured after the first batch.

    The first batch pays for loading the model (seconds), so a rate measured from the start
    overestimates what is left many times over; nothing is estimated until it is done.
    """

    def __init__(self, clock: Any = None) -> None:
        import time  # noqa: PLC0415

        self._now = clock or time.monotonic
        self._warm: tuple[float, int] | None = None

    def left(self, done: int, total: int) -> float | None:
        """Seconds left after ``done`` of ``total``, or None until a rate is known."""
        now = self._now()
        if self._warm is None:
            if done > 0:
                self._warm = (now, done)
            return None
        since, base = self._warm
        if done <= base or now <= since:
            return None
        return (total - done) * (now - since) / (done - base)


def duration(seconds: float) -> str:
    """``40 s``, ``3 min``, ``1 h 5 min``."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def log_items(
    ctx: Ctx,
    items: Iterable[Item],
    *,
    report: BatchReport,
    total_lines: int | None,
    label: str,
    redact: bool,
    origin: str | None = None,
    line_offset: int = 0,
    parallel: bool = False,
) -> BatchReport:
    """Log ``items`` in batches, with a bar on stderr when it is a terminal and the size is known.

    A Ctrl-C ends the run after the last committed batch and marks the report interrupted;
    everything the report counts is in the vault. ``line_offset`` places this input's lines on
    a bar that spans several files.
    """
    show = total_lines is not None and sys.stderr.isatty()
    bar: Any = (
        click.progressbar(length=total_lines, label=label, file=sys.stderr, show_pos=True)
        if show
        else nullcontext()
    )
    with bar, _stop_between_batches() as asked_to_stop:
        done = 0

        def progress(current: BatchReport) -> None:
            nonlocal done
            if show and current.lines + line_offset > done:
                bar.update(current.lines + line_offset - done)
                done = current.lines + line_offset
            if asked_to_stop():
                raise KeyboardInterrupt  # right after a batch committed and the report counted it

        try:
            ctx.log_many(
                items, redact=redact, report=report, progress=progress, origin=origin, parallel=parallel
            )
        except KeyboardInterrupt:
            report.interrupted = True
    return report


@contextmanager
def _stop_between_batches() -> Iterator[Callable[[], bool]]:
    """While bulk logging runs, a Ctrl-C (SIGINT) asks it to stop after the batch being written.

    Raised wherever it lands, the interrupt could fall between a batch's COMMIT and the report's
    count of it, and the summary would miss rows that are in the vault. A second Ctrl-C stops at
    once. Outside the main thread (a library caller's worker) signals are left as they are.
    """
    asked: list[bool] = []

    def on_interrupt(signum: int, frame: Any) -> None:
        if asked:
            raise KeyboardInterrupt
        asked.append(True)

    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield lambda: bool(asked)
    finally:
        signal.signal(signal.SIGINT, previous)


def summary(report: BatchReport, *, redact: bool) -> list[str]:
    """The text summary: totals, then the first rejected lines with their numbers."""
    head = f"added {report.added}, duplicates {report.duplicates}, rejected {report.rejected_count}"
    if redact:
        head += f", secrets redacted {report.redacted}"
    lines = [head]
    for rejected in report.rejected[:SHOWN_REJECTIONS]:
        where = f"{rejected.source}:" if rejected.source else "line "
        lines.append(f"  {where}{rejected.line}: {rejected.error}")
    if report.rejected_count > SHOWN_REJECTIONS:
        more = report.rejected_count - SHOWN_REJECTIONS
        lines.append(f"  … and {more} more rejected lines (--json lists them)")
    if report.interrupted:
        lines.append("interrupted: everything counted above is committed; rerun the same command to go on")
    return lines
