"""Random histories, a copy stopped at a random stage, more history, the copy run again: the same store."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.errors import CtxError
from tests.store_copy_support import rows_at

SUBJECTS = ("auth.tokens", "db", "db.driver")
CHOICES = ("Use JWT", "Use opaque ids", "Use Postgres 16", "Use SQLite locally")
STAGES = ("evidence", "proposal", "proposal_evidence", "decision", "resolved", "audit", "index", None)

operation = st.one_of(
    st.tuples(st.just("log"), st.integers(0, 50)),
    st.tuples(st.just("propose"), st.sampled_from(SUBJECTS), st.sampled_from(CHOICES)),
    st.tuples(st.just("ratify"), st.integers(0, 3)),
    st.tuples(st.just("reject"), st.integers(0, 3)),
    st.tuples(st.just("retire"), st.sampled_from(SUBJECTS)),
)


def _apply(kernel: Ctx, step: tuple) -> None:
    kind, *args = step
    # A refused step (nothing pending, no current decision, a duplicate) is part of a history too.
    with contextlib.suppress(CtxError):
        if kind == "log":
            kernel.log(f"note {args[0]} about the ledger")
        elif kind == "propose":
            kernel.propose(args[0], args[1], proposer="agent")
        elif kind in ("ratify", "reject"):
            pending = kernel.queue()
            if pending:
                chosen = pending[args[0] % len(pending)].id
                if kind == "ratify":
                    kernel.ratify(chosen, reviewer="alice")
                else:
                    kernel.reject(chosen, reviewer="alice", reason="no")
        else:
            kernel.retire(args[0], reviewer="alice", reason="done")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.lists(operation, min_size=1, max_size=12),
    between=st.lists(operation, max_size=6),
    stage=st.sampled_from(STAGES),
    batch=st.integers(1, 4),
)
def test_a_stopped_copy_resumed_after_more_history_equals_the_source(before, between, stage, batch):
    with tempfile.TemporaryDirectory() as folder:
        source_path, target = Path(folder) / "source.db", Path(folder) / "copy.db"
        with Ctx.init(source_path, embedder=None)[0] as kernel:
            for step in before:
                _apply(kernel, step)

            def stop(now: str, done: int, total: int | None) -> None:
                if now == stage and (done > 0 or now == "index"):
                    raise KeyboardInterrupt

            with contextlib.suppress(KeyboardInterrupt):
                kernel.migrate(str(target), batch_size=batch, progress=stop)
            for step in between:
                _apply(kernel, step)
            kernel.migrate(str(target), batch_size=batch)
        assert rows_at(target) == rows_at(source_path)
        with Ctx.open(target, embedder=None) as copy:
            report = copy.audit.verify(state=True)
            assert report.ok, report.problem
