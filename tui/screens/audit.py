"""The audit log, newest first, with the verdict `ctx audit verify` gives on it."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import Header, Static

from ctx_kernel.kernel.facade import AuditEvent, Ctx, plural, visible
from ctx_kernel.tui.dialogs.text import TextDialog
from ctx_kernel.tui.format import audit_row
from ctx_kernel.tui.screens.base import KernelScreen
from ctx_kernel.tui.widgets.keys import KeyBar
from ctx_kernel.tui.widgets.rows import Column, Row, RowList


class AuditScreen(KernelScreen):
    """Every act on the store; each time the screen loads, the chain is recomputed and replayed."""

    HELP_TITLE = "Audit"

    def __init__(self) -> None:
        super().__init__()
        self.events: dict[str, AuditEvent] = {}

    def compose(self) -> ComposeResult:
        """Chain status, then the log."""
        yield Header()
        yield Static("Verifying the audit log…", id="chain")
        yield RowList(
            [
                Column("#", 5),
                Column("at", 19),
                Column("actor", 8),
                Column("action", 19),
                Column("target", None, cut="middle"),
            ],
            id="audit",
        )
        yield KeyBar("enter", "1", "2", "3", "4", "q")

    def on_mount(self) -> None:
        """Put the keyboard focus in the list (the data loads when the screen is shown)."""
        self.query_one(RowList).focus()

    def on_screen_resume(self) -> None:
        """Read the store whenever the screen is shown, the first time included."""
        self.reload()

    def reload(self) -> None:
        """Read the log and verify it as `ctx audit verify` does: the chain, then the tables against it."""

        def load(ctx: Ctx) -> tuple[list[AuditEvent], bool, str]:
            report = ctx.audit.verify(state=True)
            if report.ok:
                last = report.last_hash[:12]
                status = f"audit log verified: {plural(report.rows, 'row')}, tables agree, last hash {last}…"
            else:
                status = f"AUDIT LOG BROKEN at row {report.first_bad_seq}: {report.problem}"
            return ctx.audit.events(), report.ok, status

        self.fetch(load, self._loaded, group="audit")

    def _loaded(self, found: tuple[list[AuditEvent], bool, str]) -> None:
        events, ok, status = found
        self.query_one("#chain", Static).update(
            Text(visible(status), style="bold green" if ok else "bold red")
        )
        self.events = {str(e.seq): e for e in events}
        self.query_one(RowList).set_rows(
            [
                Row(
                    str(e.seq),
                    (
                        Text(str(e.seq)),
                        Text(visible(e.at[:19])),
                        Text(visible(e.actor)),
                        Text(visible(e.action)),
                        Text(visible(e.target)),
                    ),
                )
                for e in reversed(events)
            ]
        )

    @on(RowList.Opened, "#audit")
    def _open(self, event: RowList.Opened) -> None:
        item = self.events[event.key]
        self.app.push_screen(TextDialog(f"Audit row {item.seq}: {item.action}", audit_row(item)))
