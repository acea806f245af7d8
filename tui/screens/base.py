"""What every screen shares: the backend, and facade calls run in thread workers."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from textual.app import App
from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from ctx_kernel.kernel.facade import Ctx, CtxError
from ctx_kernel.tui.backend import Backend

if TYPE_CHECKING:
    from ctx_kernel.tui.app import ReviewApp

T = TypeVar("T")


class KernelScreen(Screen[Any]):
    """A screen that reads and writes the store through the app's backend, off the UI thread."""

    @property
    def review_app(self) -> ReviewApp:
        """The review app this screen runs in (Textual types ``self.app`` as any App)."""
        return cast("ReviewApp", self.app)

    @property
    def backend(self) -> Backend:
        """The app's backend."""
        return self.review_app.backend

    def fetch(
        self,
        call: Callable[[Ctx], T],
        then: Callable[[T], None],
        *,
        group: str = "fetch",
        exclusive: bool = True,
        on_error: Callable[[], None] | None = None,
    ) -> None:
        """Run ``call`` in a thread worker and hand its result to ``then`` on the UI thread.

        A failure becomes an error notification (see ``ReviewApp.on_worker_state_changed``);
        a newer fetch in the same group makes an older one's result be dropped.
        """
        backend = self.backend

        def job() -> None:
            try:
                result = backend.run(call)
            except BaseException:
                if on_error is not None:
                    self.app.call_from_thread(on_error)
                raise
            if not get_current_worker().is_cancelled:
                self.app.call_from_thread(then, result)

        self.run_worker(job, thread=True, group=group, exclusive=exclusive, exit_on_error=False, name=group)

    def reload(self) -> None:
        """Read the store again (called when the store changed)."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed facade call becomes a notification, never a crash."""
        report_failure(self.app, event)


def report_failure(app: App[Any], event: Worker.StateChanged) -> None:
    """Notify the person of a failed worker: a kernel error's own message, else the exception."""
    if event.state != WorkerState.ERROR:
        return
    error = event.worker.error
    message = error.message if isinstance(error, CtxError) else f"{type(error).__name__}: {error}"
    app.notify(message, title="ctx", severity="error", timeout=8, markup=False)
