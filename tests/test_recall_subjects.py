"""Hybrid decision recall lends a strong hit's score to the decisions on subjects one word apart.

A question about internal calls finds `api.rate-limits.mesh`; the rule it narrows,
`api.rate-limits`, answers it from the other side and is recalled with it, though it shares no
word with the question. Subjects that share only one word stay apart, a decision that no longer
holds is never recalled this way, and a recall at a past moment (or by one ranker) leaves the
step out.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx

QUERY = "internal service calls"


def decide(kernel: Ctx, subject: str, text: str) -> str:
    proposal = kernel.propose(subject, text, proposer="claude")
    return kernel.ratify(proposal.id, reviewer="ann").decision.id


@pytest.fixture
def kernel(tmp_path: Path) -> Ctx:
    """A store without vectors, so every figure here comes from the keyword and entity rankers."""
    ctx, _ = Ctx.init(tmp_path / "ctx.db", embedder=None)
    yield ctx
    ctx.close()


@pytest.fixture
def rules(kernel: Ctx) -> dict[str, str]:
    ids = {
        "internal": decide(kernel, "api.rate-limits.mesh", "Disable throttling for internal service calls"),
        "parent": decide(kernel, "api.rate-limits", "Enforce quotas for every route at the Envoy gateway"),
        "one word": decide(kernel, "api.pagination", "Paginate lists with opaque cursors"),
        "other area": decide(kernel, "gateway.rate-limits.mesh", "Alert on a burst from one tenant"),
        "two words": decide(kernel, "security.rate-limits", "Block a client after 100 failed logins"),
    }
    for n in range(6):
        decide(kernel, f"misc.topic{n}", f"Unrelated rule number {n} about gardening")
    return ids


def hits(kernel: Ctx, query: str = QUERY, **options: object) -> list[str]:
    return [hit.decision.id for hit in kernel.recall(query, **options).decisions]


def test_the_rule_a_hit_narrows_is_recalled_with_it(kernel, rules):
    found = hits(kernel)
    assert found[0] == rules["internal"]
    assert rules["parent"] in found  # it shares no word with the question
    assert rules["parent"] not in hits(kernel, mode="keyword")


def test_subjects_one_word_apart_in_another_area_are_related_and_two_words_apart_are_not(kernel, rules):
    found = hits(kernel)
    assert rules["other area"] in found  # gateway.rate-limits.mesh: one word each the other lacks
    assert rules["two words"] not in found  # security.rate-limits: two words apart from the hit
    assert rules["one word"] not in found  # api.pagination shares only "api"


def test_a_relative_never_passes_the_hit_it_came_from(kernel, rules):
    found = kernel.recall(QUERY).decisions
    order = [hit.decision.id for hit in found]
    assert order.index(rules["internal"]) < order.index(rules["parent"])
    scores = {hit.decision.id: hit.rrf for hit in found}
    assert scores[rules["parent"]] == pytest.approx(scores[rules["internal"]] / 2)


def test_a_superseded_relative_is_not_recalled_and_its_successor_is(kernel, rules):
    successor = decide(kernel, "api.rate-limits", "Enforce quotas per tenant in the gateway")
    found = hits(kernel)
    assert successor in found and rules["parent"] not in found


def test_a_past_moment_and_a_single_ranker_leave_relatives_out(kernel, rules):
    moment = kernel.decision(rules["two words"]).valid_from
    assert rules["parent"] not in hits(kernel, as_of=moment)
    assert rules["parent"] not in hits(kernel, mode="keyword")
    assert rules["parent"] not in hits(kernel, mode="entity")


def test_a_relative_gains_from_its_strongest_hit_only(kernel, rules):
    """Two hits related to one decision do not add up: it gets half the stronger one's score."""
    partners = decide(kernel, "api.rate-limits.partners", "Partners keep internal service call quotas")
    assert set(hits(kernel, mode="keyword")[:2]) == {rules["internal"], partners}  # both lend to the parent
    scores = {hit.decision.id: hit.rrf for hit in kernel.recall(QUERY).decisions}
    # The two hits are siblings and lent to each other too; summed, the parent would pass half of either.
    assert scores[rules["parent"]] < min(scores[rules["internal"]], scores[partners]) / 2
