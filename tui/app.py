"""The review app: where a person ratifies or rejects what agents proposed (``ctx review``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker

from ctx_kernel.kernel.facade import Ctx, Decision
from ctx_kernel.tui.backend import Backend, utc_now
from ctx_kernel.tui.dialogs.help import HelpDialog
from ctx_kernel.tui.screens.audit import AuditScreen
from ctx_kernel.tui.screens.base import KernelScreen, report_failure
from ctx_kernel.tui.screens.browser import BrowserScreen
from ctx_kernel.tui.screens.evidence import EvidenceScreen
from ctx_kernel.tui.screens.queue import QueueScreen, load_queue
from ctx_kernel.tui.screens.stale import StaleScreen

# How long one wait for another process's commit lasts: SQLite is asked once per wait (PRAGMA
# data_version: microseconds); PostgreSQL's notification ends a wait at once.
POLL_SECONDS = 1.0


class ReviewApp(App[None]):
    """Queue, proposal detail, kernel browser, history, audit and evidence, over one facade."""

    CSS_PATH = "app.tcss"
    TITLE = "ctx review"
    MODES = {
        "queue": QueueScreen,
        "kernel": BrowserScreen,
        "evidence": EvidenceScreen,
        "audit": AuditScreen,
        "stale": StaleScreen,
    }
    DEFAULT_MODE = "queue"
    BINDINGS = [
        Binding("1", "switch_mode('queue')", "Queue", tooltip="pending proposals"),
        Binding("2", "switch_mode('kernel')", "Kernel", tooltip="current decisions, as of any date"),
        Binding("3", "switch_mode('evidence')", "Evidence", tooltip="search the evidence vault"),
        Binding("4", "switch_mode('audit')", "Audit", tooltip="the audit log and its chain check"),
        Binding("5", "switch_mode('stale')", "Stale", tooltip="decisions whose linked code changed"),
        Binding("question_mark", "help", "Help", tooltip="every key of this screen"),
        Binding("ctrl+q,q", "quit", "Quit"),
    ]
    # A size class on every screen (dialogs included): below 36 rows the layout is compact, so
    # the whole app, buttons included, fits a terminal of 80x24 (widths follow max-width: 95%).
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]

    def __init__(self, backend: Backend, *, poll: float | None = POLL_SECONDS) -> None:
        super().__init__()
        self.backend = backend
        self.poll_seconds = poll
        self.sub_title = f"reviewer: {backend.reviewer}"
        if not backend.reviewer_confirmed:
            self.sub_title += " (login name, unconfirmed)"
        self.last_ratified: Decision | None = None
        # Edited texts not yet ratified, by proposal id: a cancelled approval keeps its edit, so the
        # next approval (or edit) of that proposal starts from it.
        self.drafts: dict[str, str] = {}

    class StoreChanged(Message):
        """Another process committed to the store (posted by the watch thread)."""

    def on_mount(self) -> None:
        """Start watching the store for other processes' commits."""
        if self.poll_seconds:
            # A thread of its own, not a worker: it lives as long as the app, and workers are
            # what the app (and its tests) wait on to finish.
            threading.Thread(
                target=self._watch, args=(self.poll_seconds,), name="ctx-watch", daemon=True
            ).start()

    def on_unmount(self) -> None:
        """No thread may touch the store once the app is gone (its owner closes it next)."""
        self.backend.close()

    def _watch(self, timeout: float) -> None:
        failing = False
        while self.backend.watching:
            try:
                changed = self.backend.wait_for_change(timeout)
            except Exception as exc:  # the server is away: say so once, keep trying, never crash
                if not failing and self.backend.watching:
                    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                    self.call_from_thread(
                        self.notify,
                        f"live updates paused: {line}",
                        title="ctx",
                        severity="warning",
                        markup=False,
                    )
                failing = True
                time.sleep(timeout)
                continue
            failing = False
            if changed and self.backend.watching:
                self.post_message(self.StoreChanged())

    def on_review_app_store_changed(self, _message: StoreChanged) -> None:
        """Another process committed: refresh the screens."""
        self.store_changed()

    def store_changed(self) -> None:
        """Another process wrote to the store: refresh the screens on show."""
        for screen in self.screen_stack:
            if isinstance(screen, KernelScreen):
                screen.reload()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed change check becomes a notification, never a crash."""
        report_failure(self, event)

    def get_key_display(self, binding: Binding) -> str:
        """Keys as the person reads them on the key bar and the help screen ("enter", not a symbol)."""
        if binding.key == "enter" and not binding.key_display:
            return "enter"
        return super().get_key_display(binding)

    def action_help(self) -> None:
        """List every key of the current screen."""
        screen = self.screen
        if isinstance(screen, HelpDialog):
            return
        title = getattr(screen, "HELP_TITLE", "") or type(screen).__name__
        self.push_screen(HelpDialog(screen, title))

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """Command palette entries for every screen and the app's actions."""
        yield from super().get_system_commands(screen)
        yield SystemCommand("Queue", "Pending proposals (1)", lambda: self.switch_mode("queue"))
        yield SystemCommand(
            "Kernel", "Current decisions by subject, as of a date (2)", lambda: self.switch_mode("kernel")
        )
        yield SystemCommand("Evidence", "Search the evidence vault (3)", lambda: self.switch_mode("evidence"))
        yield SystemCommand(
            "Audit", "The audit log and its chain check (4)", lambda: self.switch_mode("audit")
        )
        yield SystemCommand(
            "Stale",
            "Decisions whose linked code changed since they were confirmed (5)",
            lambda: self.switch_mode("stale"),
        )
        for binding in screen.active_bindings.values():
            if binding.binding.description and binding.binding.show and binding.node is screen:
                action = binding.binding.action
                yield SystemCommand(
                    binding.binding.description,
                    f"{binding.binding.key_display or binding.binding.key}",
                    _runner(screen, action),
                )


def _runner(screen: Screen[object], action: str) -> Callable[[], object]:
    async def run() -> None:
        await screen.run_action(action)

    return run


def make_app(
    ctx: Ctx,
    reviewer: str,
    *,
    now: Callable[[], datetime] = utc_now,
    poll: float | None = POLL_SECONDS,
    reviewer_confirmed: bool = True,
) -> ReviewApp:
    """The one app factory, used by ``ctx review``, the demo and the tests.

    ``reviewer_confirmed`` is False when ``reviewer`` is only a guess (the login name): the
    title bar says so and the first act asks the person to confirm or correct it.
    """
    backend = Backend(ctx, reviewer, now, reviewer_confirmed=reviewer_confirmed, watch=bool(poll))
    # The queue is the first screen: read it while Textual starts (a long queue takes a while).
    backend.prefetch("queue", load_queue)
    return ReviewApp(backend, poll=poll)
