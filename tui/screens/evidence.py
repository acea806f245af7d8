"""The evidence vault: search it, open a text in full. Evidence is never a decision."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Header, Input, Static

from ctx_kernel.kernel.facade import Ctx, Evidence, visible
from ctx_kernel.tui.dialogs.text import TextDialog
from ctx_kernel.tui.format import one_line
from ctx_kernel.tui.screens.base import KernelScreen
from ctx_kernel.tui.widgets.keys import KeyBar
from ctx_kernel.tui.widgets.rows import Column, Row, RowList

RECENT = 200


def _named(ctx: Ctx, found: list[Evidence]) -> tuple[list[Evidence], dict[str, str]]:
    """The texts with their handles (the short names commands take)."""
    return found, ctx.handles(e.id for e in found)


class EvidenceScreen(KernelScreen):
    """Keyword search over the vault (the newest texts when the box is empty)."""

    HELP_TITLE = "Evidence"

    BINDINGS = [Binding("slash", "search", "Search", tooltip="keywords; empty lists the newest")]

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, Evidence] = {}
        self.names: dict[str, str] = {}
        self.query_text = ""

    def compose(self) -> ComposeResult:
        """Search box, results, status."""
        yield Header()
        yield Input(placeholder="/ search the evidence vault (keywords)", id="evidence-query")
        yield RowList(
            [Column("when", 10), Column("kind", 12), Column("by", 8), Column("text (unratified)", None)],
            id="evidence",
        )
        yield Static(id="evidence-status")
        yield KeyBar("slash", "enter", "1", "2", "3", "4", "q")

    def on_mount(self) -> None:
        """Show the newest texts."""
        self.query_one(RowList).focus()
        self.reload()

    def reload(self) -> None:
        """Run the search again (or list the newest texts)."""
        query = self.query_text
        if query:
            self.fetch(
                lambda k: _named(k, [m.evidence for m in k.search(query, limit=100).evidence]),
                self._loaded,
                group="ev",
            )
        else:
            self.fetch(lambda k: _named(k, k.recent_evidence(RECENT)), self._loaded, group="ev")

    def _loaded(self, loaded: tuple[list[Evidence], dict[str, str]]) -> None:
        found, self.names = loaded
        self.found = {e.id: e for e in found}
        self.query_one(RowList).set_rows(
            [
                Row(
                    e.id,
                    (
                        Text(e.created_at[:10]),
                        Text(visible(e.kind)),
                        Text(visible(e.agent or "?")),
                        Text(one_line(e.text[:2000])),
                    ),
                )
                for e in found
            ]
        )
        what = f"{len(found)} matching {self.query_text!r}" if self.query_text else f"newest {len(found)}"
        self.query_one("#evidence-status", Static).update(f"{what} · Enter opens one in full")

    @on(Input.Submitted, "#evidence-query")
    def _search(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        self.query_one(RowList).focus()
        self.reload()

    @on(RowList.Opened, "#evidence")
    def _open(self, event: RowList.Opened) -> None:
        evidence = self.found[event.key]
        subtitle = (
            f"{self.names.get(evidence.id, evidence.id)} · {evidence.kind} · {evidence.agent or 'unknown'} · "
            f"{evidence.created_at[:19]}"
        )
        self.app.push_screen(TextDialog("Evidence (unratified)", evidence.text, subtitle=subtitle))

    def action_search(self) -> None:
        """Type a query."""
        self.query_one("#evidence-query", Input).focus()
