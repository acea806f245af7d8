"""The facade's review API: queue groups, the ratification preview, settling a group, change checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctx_kernel.kernel import Ctx, RefusedError, UsageError
from ctx_kernel.kernel.facade import word_diff


def test_review_queue_groups_same_subject_and_near_duplicates(kernel: Ctx) -> None:
    current = kernel.ratify(kernel.propose("auth.tokens", "Use JWT.").id, reviewer="ann").decision
    first = kernel.propose("auth.tokens", "Use opaque session ids in Redis.")
    second = kernel.propose("auth.sessions", "Use opaque session ids in Redis!")
    lone = kernel.propose("db.driver", "Use psycopg 3.")
    entries = {e.proposal.id: e for e in kernel.review_queue()}
    assert second.near_duplicate_of == first.id
    assert entries[first.id].group_size == entries[second.id].group_size == 2
    assert entries[lone.id].group_size == 1
    assert entries[first.id].current == current and entries[first.id].supersedes
    assert entries[lone.id].current is None and not entries[lone.id].supersedes
    assert [e.proposal.id for e in kernel.review_queue(proposer="agent", subject="db")] == [lone.id]
    assert {p.id for p in kernel.review_group(first.id)} == {second.id}
    assert {p.id for p in kernel.review_group(second.id)} == {first.id}
    assert kernel.review_group(lone.id) == []


def test_near_duplicate_chains_do_not_join_unrelated_subjects(kernel: Ctx) -> None:
    a = kernel.propose("svc.alpha", "Use Redis for caching in service one.")
    b = kernel.propose("svc.beta", "Use Redis for caching in service one!")
    c = kernel.propose("svc.gamma", "Use Redis for caching in service one?")
    assert b.near_duplicate_of == a.id and c.near_duplicate_of in (a.id, b.id)
    d = kernel.propose("svc.delta", "Use Kafka for events.")
    group = {p.id for p in kernel.review_group(d.id)}
    assert group == set()
    assert a.id in {p.id for p in kernel.review_group(c.id)} | {p.id for p in kernel.review_group(b.id)}


def test_the_plan_lists_exactly_what_ratifying_changes(kernel: Ctx) -> None:
    old = kernel.ratify(kernel.propose("auth.tokens", "Use JWT.").id, reviewer="ann").decision
    other = kernel.ratify(kernel.propose("auth.legacy", "Use cookies.").id, reviewer="ann").decision
    proposal = kernel.propose("auth.tokens", "Use opaque ids.", supersedes=[other.id])
    sibling = kernel.propose("auth.tokens", "Use PASETO.")
    preview = kernel.plan_ratification(proposal.id, decision="Use opaque ids in Redis.")
    assert preview.amended and preview.text == "Use opaque ids in Redis."
    assert {c.decision.id for c in preview.closes} == {old.id, other.id}
    assert [p.id for p in preview.settles] == [sibling.id]
    text = "\n".join(preview.lines())
    assert old.id in text and other.id in text and sibling.id in text and "(amended)" in text
    assert kernel.plan_ratification(proposal.id, settle=[]).settles == []
    # A plan changes nothing.
    assert kernel.decisions("auth.tokens") == [old]


def test_ratify_settles_the_group_in_one_transaction(kernel: Ctx) -> None:
    chosen = kernel.propose("auth.tokens", "Use opaque ids.")
    sibling = kernel.propose("auth.tokens", "Use PASETO.")
    result = kernel.ratify(chosen.id, reviewer="ann", settle=[sibling.id])
    assert result.settled == [sibling.id]
    closed = kernel.proposal(sibling.id)
    assert closed.status == "rejected" and closed.resolved_by == "ann"
    assert closed.resolution_note == f"settled by {chosen.id}, ratified as {result.decision.id}"
    events = kernel.audit.events()
    event = next(e for e in events if e.target == sibling.id and e.action == "proposal.rejected")
    assert f'"settled_by": "{chosen.id}"' in (event.after or "")
    assert kernel.audit.verify().ok


def test_settle_refuses_proposals_outside_the_group_and_changes_nothing(kernel: Ctx) -> None:
    chosen = kernel.propose("auth.tokens", "Use opaque ids.")
    unrelated = kernel.propose("db.driver", "Use psycopg 3.")
    with pytest.raises(RefusedError, match="not in the review group"):
        kernel.ratify(chosen.id, reviewer="ann", settle=[unrelated.id])
    with pytest.raises(UsageError, match="cannot settle itself"):
        kernel.ratify(chosen.id, reviewer="ann", settle=[chosen.id])
    assert kernel.proposal(chosen.id).status == "pending"
    assert kernel.proposal(unrelated.id).status == "pending"
    assert kernel.decisions() == []


def test_settle_refuses_a_proposal_that_is_no_longer_pending(kernel: Ctx) -> None:
    chosen = kernel.propose("auth.tokens", "Use opaque ids.")
    sibling = kernel.propose("auth.tokens", "Use PASETO.")
    kernel.withdraw(sibling.id, actor="agent")
    with pytest.raises(RefusedError, match="withdrawn, not pending"):
        kernel.ratify(chosen.id, reviewer="ann", settle=[sibling.id])
    assert kernel.proposal(chosen.id).status == "pending"


def test_proposal_conflicts_and_context(kernel: Ctx) -> None:
    build = kernel.propose("frontend.build", "Use `vite` for builds.")
    vite = kernel.ratify(build.id, reviewer="ann").decision
    evidence = kernel.log("Storybook addons still need webpack.").id
    proposal = kernel.propose(
        "frontend.storybook", "Avoid `vite` for Storybook; keep webpack.", evidence=[evidence]
    )
    found = kernel.proposal_conflicts([proposal.id])[proposal.id]
    assert [item.id for item in found] == [vite.id]
    context = kernel.proposal_context(proposal.id)
    assert context.current is None and context.chain == []
    assert [e.id for e in context.evidence] == [evidence]
    assert [item.id for item in context.preview.contradicts] == [vite.id]
    assert vite.id in {d.id for d in context.related}


def test_data_version_changes_only_when_another_connection_commits(kernel: Ctx, store_path: Path) -> None:
    before = kernel.data_version()
    kernel.log("my own write")
    assert kernel.data_version() == before
    with Ctx.open(store_path, embedder=None) as other:
        other.propose("ci.cache", "Cache pip downloads.")
    assert kernel.data_version() != before


def test_word_diff_marks_changed_runs() -> None:
    assert word_diff("Use JWT with rotation.", "Use opaque ids with rotation.") == [
        ("=", "Use "),
        ("-", "JWT "),
        ("+", "opaque ids "),
        ("=", "with rotation."),
    ]


@given(st.text(max_size=60), st.text(max_size=60))
def test_word_diff_rebuilds_both_texts(old: str, new: str) -> None:
    pieces = word_diff(old, new)
    assert "".join(t for op, t in pieces if op != "+") == old
    assert "".join(t for op, t in pieces if op != "-") == new
