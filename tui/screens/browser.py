"""The kernel browser: decisions as a subject tree, as they stand now or at any past moment."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Header, Input, Static, Tree
from textual.widgets.tree import TreeNode

from ctx_kernel.kernel.facade import Ctx, Decision, visible
from ctx_kernel.tui.format import state, window
from ctx_kernel.tui.screens.actions import ReviewActions
from ctx_kernel.tui.widgets.keys import KeyBar


class BrowserScreen(ReviewActions):
    """Subjects as a tree; the selected decision in full; time travel with an as-of date."""

    HELP_TITLE = "Kernel"

    BINDINGS = [
        Binding("slash", "as_of", "As of…", tooltip="the kernel as it stood at a date"),
        Binding("h", "history", "History", tooltip="every decision the subject has held"),
        Binding("n", "replace", "New superseding proposal", tooltip="decisions are never edited in place"),
        Binding("escape", "now", "Back to now", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.as_of: str | None = None
        self.decisions: dict[str, Decision] = {}
        self.names: dict[str, str] = {}
        self.chosen: Decision | None = None

    def compose(self) -> ComposeResult:
        """As-of box, the tree and the decision pane."""
        yield Header()
        yield Input(placeholder="/ as of: YYYY-MM-DD or ISO time (empty: now)", id="as-of")
        with Horizontal():
            yield Tree("decisions", data="", id="subjects")
            with VerticalScroll(id="decision-pane"):
                yield Static("Select a subject.", id="decision")
        yield KeyBar("slash", "h", "n", "escape", "1", "2", "3", "4", "q")

    def on_mount(self) -> None:
        """Put the keyboard focus in the list (the data loads when the screen is shown)."""
        self.query_one(Tree).focus()

    def on_screen_resume(self) -> None:
        """Read the store whenever the screen is shown, the first time included."""
        self.reload()

    def reload(self) -> None:
        """Read the decisions valid now (or at the as-of moment)."""
        as_of = self.as_of

        def load(ctx: Ctx) -> tuple[list[Decision], dict[str, str]]:
            found = ctx.decisions(as_of=as_of)
            return found, ctx.handles(d.id for d in found)

        self.fetch(load, self._loaded, group="kernel")

    def _loaded(self, loaded: tuple[list[Decision], dict[str, str]]) -> None:
        found, self.names = loaded
        self.decisions = {d.id: d for d in found}
        tree = self.query_one(Tree)
        tree.clear()
        label = f"decisions as of {self.as_of}" if self.as_of else "current decisions"
        tree.root.set_label(f"{label} ({len(found)})")
        nodes = {"": tree.root}
        for decision in sorted(found, key=lambda d: d.subject):
            parts = decision.subject.split(".")
            for depth in range(1, len(parts)):
                path = ".".join(parts[:depth])
                if path not in nodes:
                    nodes[path] = nodes[".".join(parts[: depth - 1])].add(
                        Text(visible(parts[depth - 1])), data=path, expand=True
                    )
            # Names only: the tree is as wide as its subjects, and the text gets the rest of the width.
            nodes[".".join(parts[:-1])].add_leaf(Text(visible(parts[-1]), style="bold"), data=decision.id)
        tree.root.expand()
        if self.chosen is not None and self.chosen.id not in self.decisions:
            self.chosen = None
            self.query_one("#decision", Static).update("Select a subject.")
        # The node under the cursor may be one whose decisions were just read (the root at first).
        self.call_after_refresh(lambda: self._show_node(tree.cursor_node))

    @on(Tree.NodeHighlighted, "#subjects")
    def _highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        self._show_node(event.node)

    def _show_node(self, node: TreeNode[str] | None) -> None:
        """Show the decision under the cursor, or every decision under the subject there."""
        if node is None or node.data is None:
            return
        if node.allow_expand:
            # A subject with subjects below it: every decision under it, each text in full.
            self.chosen = None
            self._show(self._branch(node.data))
            return
        decision = self.decisions.get(node.data)
        if decision is None:
            return
        self.chosen = decision
        self._show(self._decision(decision))

    def _show(self, body: Text) -> None:
        self.query_one("#decision", Static).update(body)
        self.query_one("#decision-pane", VerticalScroll).scroll_home(animate=False, immediate=True)

    def _branch(self, prefix: str) -> Text:
        under = sorted(
            (d for d in self.decisions.values() if not prefix or d.subject.startswith(f"{prefix}.")),
            key=lambda d: d.subject,
        )
        body = Text()
        body.append(visible(prefix) if prefix else str(self.query_one(Tree).root.label), style="bold")
        if prefix:
            body.append(f"  {len(under)} decision{'s' if len(under) != 1 else ''}", style="dim")
        for decision in under:
            body.append(f"\n\n{visible(decision.subject)}", style="bold")
            body.append(f"  {self.names.get(decision.id, decision.id)}\n", style="dim")
            body.append(visible(decision.decision))
        return body

    def _decision(self, decision: Decision) -> Text:
        body = Text()
        body.append(f"{visible(decision.subject)}\n", style="bold")
        body.append_text(state(decision))
        body.append(f"  {window(decision)}  {self.names.get(decision.id, decision.id)}\n\n", style="dim")
        body.append(f"{visible(decision.decision)}\n")
        if decision.rationale:
            body.append("\nwhy: ", style="cyan")
            body.append(f"{visible(decision.rationale)}\n")
        body.append(
            f"\nratified by {visible(decision.ratified_by)} at {decision.ratified_at[:19]}", style="dim"
        )
        if decision.amended:
            body.append(" (amended)", style="dim")
        if decision.evidence:
            body.append(f"\nevidence: {', '.join(decision.evidence)}", style="dim")
        body.append(
            "\n\nh: history · n: propose a replacement (decisions are never edited in place)", style="dim"
        )
        return body

    @on(Input.Submitted, "#as-of")
    def _as_of(self, event: Input.Submitted) -> None:
        self.as_of = event.value.strip() or None
        self.query_one(Tree).focus()
        self.reload()

    def action_as_of(self) -> None:
        """Type a date to see the kernel as it stood then."""
        self.query_one("#as-of", Input).focus()

    def action_now(self) -> None:
        """Back to the decisions in force now."""
        self.query_one("#as-of", Input).value = ""
        self.as_of = None
        self.query_one(Tree).focus()
        self.reload()

    def action_history(self) -> None:
        """The selected subject's chain."""
        from ctx_kernel.tui.screens.history import HistoryScreen  # noqa: PLC0415

        if self.chosen is not None:
            self.app.push_screen(HistoryScreen(self.chosen.subject))

    def action_replace(self) -> None:
        """Ratified decisions cannot be edited: draft a proposal that supersedes the selected one."""
        if self.chosen is None:
            self.notify("Select a decision first.", severity="warning", markup=False)
            return
        if not self.chosen.current:
            self.notify(
                f"{self.chosen.id} no longer holds; only a current decision can be replaced.", markup=False
            )
            return
        self.propose_replacement(self.chosen)
