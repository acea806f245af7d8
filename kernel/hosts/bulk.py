"""Bulk logging for the CLI: a progress bar on a terminal, an honest summary when interrupted."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from contextlib import nullcontext
from typing import Any

import click

from kernel.facade import Ctx
from kernel.ingest import BatchReport, Item

SHOWN_REJECTIONS = 20  # rejected lines printed in the text summary; --json lists up to 1000


def log_items(
    kernel: Ctx,
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
    with bar:
        done = 0

        def progress(current: BatchReport) -> None:
            nonlocal done
            if show and current.lines + line_offset > done:
                bar.update(current.lines + line_offset - done)
                done = current.lines + line_offset

        try:
            kernel.log_many(
                items, redact=redact, report=report, progress=progress, origin=origin, parallel=parallel
            )
        except KeyboardInterrupt:
            report.interrupted = True
    return report


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
