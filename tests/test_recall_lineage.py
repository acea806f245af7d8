"""A decision split in two: each successor is current, and the predecessor is shown once under each."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx


@pytest.fixture
def split(store_path: Path) -> tuple[Ctx, dict[str, str]]:
    kernel, _ = Ctx.init(store_path, embedder=None)
    old = kernel.ratify(
        kernel.propose("storage.engine", "Store sessions and job queues in Redis").id, reviewer="ann"
    ).decision
    sessions = kernel.propose("storage.sessions", "Store sessions in PostgreSQL", supersedes=[old.id])
    first = kernel.ratify(sessions.id, reviewer="ann").decision
    queues = kernel.propose(
        "storage.queues", "Run job queues on PostgreSQL with SKIP LOCKED", supersedes=[old.id]
    )
    second = kernel.ratify(queues.id, reviewer="ann").decision
    yield kernel, {"old": old.id, "first": first.id, "second": second.id}
    kernel.close()


def test_recall_lists_each_successor_as_current_with_only_its_own_predecessor(split) -> None:
    kernel, ids = split
    found = kernel.recall("sessions job queues Redis PostgreSQL", k=5)
    hits = {h.decision.id: h for h in found.decisions}
    assert ids["first"] in hits and ids["second"] in hits and ids["old"] not in hits
    for mine, sibling in (("first", "second"), ("second", "first")):
        related = hits[ids[mine]].superseded
        assert [(r.id, r.relation) for r in related] == [(ids["old"], "superseded")]
        assert ids[sibling] not in [r.id for r in related]


def test_inject_strikes_out_only_the_predecessor_once_naming_both_successors(split) -> None:
    kernel, ids = split
    names = kernel.handles(ids.values())  # the block names records by their handles
    old, first, second = (names[ids[key]] for key in ("old", "first", "second"))
    for query in ("sessions job queues Redis", None):
        block = kernel.inject(query=query, budget=4000)
        lines = block.markdown.splitlines()
        struck = [line for line in lines if "~~" in line]
        assert len(struck) == 1 and f"`{old}`" in struck[0], block.markdown
        assert f"now `{first}`, `{second}`" in struck[0] or f"now `{second}`, `{first}`" in struck[0]
        current = [line for line in lines if line.startswith((f"- `{first}`", f"- `{second}`"))]
        assert len(current) == 2 and all("~~" not in line for line in current)
        assert [item["id"] for item in block.items["superseded"]] == [ids["old"]]
