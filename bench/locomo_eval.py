"""Evidence recall on long conversations in the LoCoMo format (Maharana et al., ACL 2024).

Every dialogue turn is logged as evidence (speaker, session and session date kept), each
conversation in its own store; each question is asked through ``Ctx.recall`` and scores a
hit when a turn its ``evidence`` list names is among the top k evidence hits.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ctx_kernel.kernel import clock
from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.facade import Ctx
from ctx_kernel.kernel.recall.fusion import rrf

# Categories 1-4 have an answer in the conversation; 5 is adversarial and left out.
CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
SYSTEMS = ("hybrid", "keyword", "vector", "entity", "plain-rrf")
DEPTH = 10
# How deep the single rankers are read for plain RRF.
RRF_DEPTH = 50
_SESSION = re.compile(r"session_(\d+)$")


@dataclass(frozen=True)
class Question:
    """One question with the turns that answer it."""

    conversation: str
    text: str
    category: int
    gold: frozenset[str]


@dataclass
class Conversation:
    """One conversation's turns (dia_id, speaker, text, ISO time, session) and its questions."""

    sample_id: str
    turns: list[tuple[str, str, str, str | None, str]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


@dataclass
class Tally:
    """Recall@5, recall@10, MRR@10 and first place (a gold turn ranked first) summed over questions."""

    n: int = 0
    r5: float = 0.0
    r10: float = 0.0
    mrr: float = 0.0
    first: float = 0.0

    def add(self, found: Sequence[str], gold: frozenset[str]) -> None:
        """Score one ranked answer: a hit when any gold turn is within the depth."""
        first = next((i for i, item in enumerate(found[:DEPTH], 1) if item in gold), None)
        self.n += 1
        self.r5 += first is not None and first <= 5
        self.r10 += first is not None
        self.mrr += 1.0 / first if first else 0.0
        self.first += first == 1

    def row(self) -> tuple[float, float, float, float]:
        """(R@5, R@10, MRR@10, first place)."""
        n = max(self.n, 1)
        return self.r5 / n, self.r10 / n, self.mrr / n, self.first / n


def session_time(raw: str | None) -> str | None:
    """LoCoMo's "1:56 pm on 8 May, 2023" as a canonical UTC time, or None when unreadable."""
    if not raw:
        return None
    try:
        moment = datetime.strptime(" ".join(raw.split()), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None
    return clock.format_ts(moment.replace(tzinfo=UTC))


def turn_text(turn: dict[str, Any]) -> str:
    """What a turn says, with the caption of a photo it shares, prefixed by its speaker."""
    words = str(turn.get("text") or "").strip()
    caption = turn.get("blip_caption")
    if caption:
        words = f"{words} [shares a photo: {caption}]".strip()
    return f"{turn['speaker']}: {words}"


def load(folder: Path, limit: int | None = None) -> list[Conversation]:
    """The conversations of every ``*.json`` file in ``folder`` (at most ``limit`` questions each)."""
    files = sorted(folder.glob("*.json"))
    if not files:
        raise UsageError(f"no LoCoMo .json file in {folder}")
    out = []
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot read {path.name}: {exc}") from None
        for sample in data if isinstance(data, list) else [data]:
            out.append(_conversation(sample, limit))
    return out


def _conversation(sample: dict[str, Any], limit: int | None) -> Conversation:
    talk = sample["conversation"]
    conv = Conversation(str(sample.get("sample_id", "conversation")))
    sessions = sorted(
        (int(m.group(1)), key) for key in talk if (m := _SESSION.match(key)) and isinstance(talk[key], list)
    )
    for _, key in sessions:
        when = session_time(talk.get(f"{key}_date_time"))
        for turn in talk[key]:
            conv.turns.append(
                (turn["dia_id"], turn["speaker"], turn_text(turn), when, f"{conv.sample_id}/{key}")
            )
    known = {t[0] for t in conv.turns}
    for item in sample.get("qa", []):
        gold = frozenset(str(e) for e in item.get("evidence", []) if str(e) in known)
        if item.get("category") in CATEGORIES and gold:
            conv.questions.append(
                Question(conv.sample_id, str(item["question"]), int(item["category"]), gold)
            )
    conv.questions = conv.questions[:limit] if limit else conv.questions
    return conv


def log_turns(kernel: Ctx, conv: Conversation) -> dict[str, str]:
    """Log every turn as evidence; returns evidence id -> dia_id."""
    ids: dict[str, str] = {}
    for dia_id, speaker, words, when, session in conv.turns:
        result = kernel.log(
            words,
            kind="conversation",
            session=session,
            source=conv.sample_id,
            speaker=speaker,
            occurred_at=when,
            redact=False,
        )
        ids.setdefault(result.id, dia_id)
    return ids


def answer(kernel: Ctx, question: str, system: str, ids: dict[str, str]) -> list[str]:
    """The dia_ids of the top evidence for ``question`` under ``system``, best first."""
    if system == "plain-rrf":
        lists = {
            mode: [
                (h.evidence.id, 0.0, None) for h in kernel.recall(question, k=RRF_DEPTH, mode=mode).evidence
            ]
            for mode in ("keyword", "vector")
        }
        found = [item for item, _, _ in rrf(lists, 60)]
    else:
        found = [h.evidence.id for h in kernel.recall(question, k=DEPTH, mode=system).evidence]
    return [ids[e] for e in found if e in ids]


def evaluate(
    conversations: Iterable[Conversation],
    open_store: Callable[[str], Ctx],
    systems: Sequence[str] = SYSTEMS,
    progress: Callable[[str], None] | None = None,
) -> dict[str, dict[str, Tally]]:
    """Per system, a tally per category name and ``overall``."""
    tallies: dict[str, dict[str, Tally]] = {s: {} for s in systems}
    for conv in conversations:
        kernel = open_store(conv.sample_id)
        try:
            ids = log_turns(kernel, conv)
            kernel.reindex()
            for question in conv.questions:
                for system in systems:
                    found = answer(kernel, question.text, system, ids)
                    for key in (CATEGORIES[question.category], "overall"):
                        tallies[system].setdefault(key, Tally()).add(found, question.gold)
        finally:
            kernel.close()
        if progress is not None:
            progress(f"{conv.sample_id}: {len(conv.turns)} turns, {len(conv.questions)} questions")
    return tallies


def table(tallies: dict[str, dict[str, Tally]]) -> str:
    """Per-category R@5 / R@10 / MRR@10 / first place of every system, as plain text."""
    keys = [*CATEGORIES.values(), "overall"]
    lines = [f"{'system':10} {'category':12} {'n':>4} {'R@5':>6} {'R@10':>6} {'MRR@10':>7} {'first':>6}"]
    for system, by_key in tallies.items():
        for key in keys:
            tally = by_key.get(key)
            if tally is None:
                continue
            r5, r10, mrr, first = tally.row()
            lines.append(f"{system:10} {key:12} {tally.n:4d} {r5:6.3f} {r10:6.3f} {mrr:7.3f} {first:6.3f}")
    return "\n".join(lines)


# What hybrid recall should reach against keyword alone (R@5 and MRR@10 gains overall, R@10 overall).
GOALS = {"mrr_gain": 0.06, "r5_gain": 0.08, "r10": 0.83}


def goals(tallies: dict[str, dict[str, Tally]]) -> str:
    """Hybrid against keyword: the overall gains and R@10 beside their goals, and whether every
    category's R@5 and MRR@10 is at least keyword's."""
    hybrid, keyword = tallies["hybrid"], tallies["keyword"]
    h5, h10, hmrr, _ = hybrid["overall"].row()
    k5, _, kmrr, _ = keyword["overall"].row()
    behind = [
        name
        for name in CATEGORIES.values()
        if name in hybrid
        and (hybrid[name].row()[0] < keyword[name].row()[0] or hybrid[name].row()[2] < keyword[name].row()[2])
    ]
    return "\n".join(
        [
            f"hybrid MRR@10 - keyword's: {hmrr - kmrr:+.3f} (goal +{GOALS['mrr_gain']:.2f})",
            f"hybrid R@5 - keyword's:    {h5 - k5:+.3f} (goal +{GOALS['r5_gain']:.2f})",
            f"hybrid R@10:               {h10:.3f} (goal {GOALS['r10']:.2f})",
            "categories where hybrid's R@5 or MRR@10 is below keyword's: " + (", ".join(behind) or "none"),
        ]
    )
