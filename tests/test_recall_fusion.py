"""Evidence fusion through the facade and the CLI, with the real embedding model.

Hybrid evidence recall sums each ranker's min-max normalised scores (kernel/recall/fusion.py),
lends half a strong hit's score to the turns logged next to it in the same session, halves a
turn that ends in a question once it has lent, and runs the entity ranker only when the query
names an identifier; for a question that asks when, a turn that states a time gains one more
ranker's vote.
"""

from __future__ import annotations

import json

import pytest

from ctx_kernel.kernel import Ctx

pytestmark = pytest.mark.usefixtures("real_model")

FILLER = [
    "Maya: I finally repotted the monstera, it had outgrown the old pot.",
    "Leo: The bakery on the corner switched to sourdough only.",
    "Maya: My sister is visiting in June, we are planning a hiking trip.",
    "Leo: I started learning the cello, my fingers hurt a lot.",
    "Maya: The neighbours' dog keeps barking at the mail carrier.",
    "Leo: We watched a documentary about deep sea creatures yesterday.",
]


def conversation(kernel: Ctx) -> dict[str, str]:
    """Two sessions of small talk; in one, a question and the reply that answers it share no word."""
    ids: dict[str, str] = {}
    for n, text in enumerate(FILLER[:3]):
        ids[f"filler{n}"] = kernel.log(text, kind="conversation", session="s1", speaker=text.split(":")[0]).id
    ids["question"] = kernel.log(
        "Maya: Where did you end up going for your anniversary trip?", kind="conversation", session="s2"
    ).id
    ids["answer"] = kernel.log(
        "Leo: Lisbon! We ate pastel de nata every morning.", kind="conversation", session="s2"
    ).id
    for n, text in enumerate(FILLER[3:], start=3):
        ids[f"filler{n}"] = kernel.log(text, kind="conversation", session="s2").id
    return ids


def test_the_reply_next_to_a_strong_hit_is_recalled_with_it(kernel):
    ids = conversation(kernel)
    query = "anniversary trip destination"
    keyword = [h.evidence.id for h in kernel.recall(query, mode="keyword").evidence]
    assert ids["answer"] not in keyword  # it shares no word with the question
    hybrid = [h.evidence.id for h in kernel.recall(query, k=3).evidence]
    assert hybrid[0] == ids["question"]
    assert ids["answer"] in hybrid[:2]


def test_neighbours_come_only_from_the_same_session(kernel):
    kernel.log("Leo: the anniversary trip planning spreadsheet is done", kind="conversation", session="a")
    other = kernel.log("Maya: my cello teacher moved to another town", kind="conversation", session="b").id
    found = kernel.recall("anniversary trip spreadsheet", k=5)
    assert other not in [h.evidence.id for h in found.evidence]


def test_the_entity_ranker_stays_out_of_prose_and_joins_for_identifiers(kernel):
    kernel.log("We moved the retry logic into payments.retry_policy and set `max_attempts` to 5.")
    kernel.log("The payments team met on Tuesday to talk about the retry policy and holidays.")
    prose = kernel.recall("what did the payments team say about the retry policy", k=5)
    assert prose.evidence and all(h.scores["entity"] is None for h in prose.evidence)
    named = kernel.recall("payments.retry_policy max_attempts", k=5)
    assert named.evidence[0].scores["entity"] is not None


def test_a_strong_hit_of_one_ranker_is_not_buried_by_half_agreement(kernel):
    target = kernel.log("Note to self: the zorblax flag was flipped on at 14:02.").id
    for n in range(8):
        kernel.log(f"The checkout service crashed during deploy {n}; the on-call engineer restarted it.")
    found = kernel.recall("zorblax checkout crash", k=5)
    assert found.evidence[0].evidence.id == target
    assert found.evidence[0].scores["keyword"].rank == 1


def test_explain_says_how_the_fused_score_was_made(kernel, cli):
    conversation(kernel)
    result = cli("recall", "anniversary trip destination", "--explain")
    assert result.code == 0, result.err
    assert "fused " in result.out and "scaled to 0-1 within its list, summed" in result.out
    assert "logged next to a strong hit" in result.out
    keyword = cli("recall", "anniversary trip", "--explain", "--mode", "keyword")
    assert "rrf " in keyword.out and "fused " not in keyword.out


def pottery_talk(kernel: Ctx) -> dict[str, str]:
    """A turn that talks at length about a workshop, and one that says when Maya went."""
    ids = {
        "talk": kernel.log(
            "Leo: Did you like the pottery workshop? The pottery workshop teacher seems great.",
            kind="conversation",
            session="s1",
        ).id,
        "moment": kernel.log(
            "Maya: Last Friday I finally made it to a pottery class downtown.",
            kind="conversation",
            session="s2",
        ).id,
    }
    for n, text in enumerate(FILLER):
        kernel.log(text, kind="conversation", session=f"f{n}")
    return ids


def test_a_when_question_prefers_the_turn_that_states_a_time(kernel, cli):
    ids = pottery_talk(kernel)
    question = "When did Maya go to the pottery workshop?"
    keyword = [h.evidence.id for h in kernel.recall(question, mode="keyword").evidence]
    assert keyword[0] == ids["talk"]
    hybrid = [h.evidence.id for h in kernel.recall(question, k=3).evidence]
    assert hybrid[0] == ids["moment"]
    explained = cli("recall", question, "--explain", "--k", "3").out
    name = kernel.handles(ids.values())  # the recall lists name texts by their handles
    first = explained.split(f" {name[ids['moment']]} ", 1)[1].split("\n")[1]
    assert "+1: the question asks when and this text states a time" in first


def test_stating_a_time_counts_only_for_a_question_about_a_moment(kernel):
    ids = pottery_talk(kernel)
    hybrid = [h.evidence.id for h in kernel.recall("Did Maya go to the pottery workshop?", k=3).evidence]
    assert hybrid[0] == ids["talk"]


def test_a_month_states_a_time_and_the_verb_may_does_not(kernel):
    may = kernel.log(
        "Leo: Maya, you may go to the pottery workshop again, the pottery workshop teacher is great.",
        kind="conversation",
        session="s1",
    ).id
    month = kernel.log(
        "Maya: In May I finally made it to a pottery class downtown.", kind="conversation", session="s2"
    ).id
    for n, text in enumerate(FILLER):
        kernel.log(text, kind="conversation", session=f"f{n}")
    question = "How long ago did Maya go to the pottery workshop?"
    assert kernel.recall(question, mode="keyword").evidence[0].evidence.id == may
    assert kernel.recall(question, k=3).evidence[0].evidence.id == month


def asked_and_answered(kernel: Ctx) -> dict[str, str]:
    """A turn that asks about the recital in the question's words, and the reply that answers it."""
    ids = {
        "asking": kernel.log(
            "Leo: Which song did Maya play at the school recital?", kind="conversation", session="s1"
        ).id,
        "reply": kernel.log(
            "Maya: I played Clair de Lune at the recital, my hands were shaking.",
            kind="conversation",
            session="s1",
        ).id,
    }
    for n, text in enumerate(FILLER):
        kernel.log(text, kind="conversation", session=f"f{n}")
    return ids


def test_a_turn_that_asks_ranks_below_the_reply_that_answers(kernel, cli):
    ids = asked_and_answered(kernel)
    question = "Which song did Maya play at the school recital?"
    keyword = [h.evidence.id for h in kernel.recall(question, mode="keyword").evidence]
    assert keyword[0] == ids["asking"]  # it repeats the question's words
    result = cli("recall", question, "--json", "--k", "3")
    assert result.code == 0, result.err
    hybrid = [hit["id"] for hit in json.loads(result.out)["evidence"]]
    assert hybrid[:2] == [ids["reply"], ids["asking"]]
    explained = cli("recall", question, "--explain", "--k", "3").out
    name = kernel.handles(ids.values())  # the recall lists name texts by their handles
    asking = explained.split(f" {name[ids['asking']]} ", 1)[1].split("\n")[1]
    assert "halved: this text ends in a question" in asking
    reply = explained.split(f" {name[ids['reply']]} ", 1)[1].split("\n")[1]
    assert "halved" not in reply


def test_a_question_mark_inside_a_turn_does_not_halve_it(kernel):
    kept = kernel.log(
        "Maya: Did I tell you? I played Clair de Lune at the school recital.", kind="conversation"
    ).id
    for n, text in enumerate(FILLER):
        kernel.log(text, kind="conversation", session=f"f{n}")
    found = kernel.recall("Which song did Maya play at the school recital?", k=3)
    assert found.evidence[0].evidence.id == kept
