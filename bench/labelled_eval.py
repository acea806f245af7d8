"""Retrieval quality on a labelled set: recall@k and MRR per recall mode.

The labelled set is JSON (see ``tests/data/recall/recall_set.json``): decisions in the
order they were ratified, pending proposals, evidence, conflict pairs and queries with
the keys of the decisions and evidence that answer them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctx_kernel.kernel.facade import Ctx
from ctx_kernel.kernel.recall.engine import MODES


@dataclass(frozen=True)
class ModeScore:
    """Quality of one mode over the labelled queries."""

    mode: str
    decision_recall: float
    decision_mrr: float
    evidence_recall: float
    evidence_mrr: float
    superseded_as_current: int


def load_set(kernel: Ctx, path: Path) -> dict[str, str]:
    """Ratify, propose and log everything in the set through the facade; returns key -> record id."""
    data = json.loads(path.read_text(encoding="utf-8"))
    ids: dict[str, str] = {}
    for item in data["decisions"]:
        proposal = kernel.propose(
            item["subject"],
            item["decision"],
            rationale=item.get("rationale"),
            supersedes=[ids[key] for key in item.get("supersedes", [])],
            proposer="dataset",
        )
        ids[item["key"]] = kernel.ratify(proposal.id, reviewer="dataset").decision.id
    for item in data.get("proposals", []):
        ids[item["key"]] = kernel.propose(
            item["subject"],
            item["decision"],
            rationale=item.get("rationale"),
            supersedes=[ids[key] for key in item.get("supersedes", [])],
            proposer="dataset",
        ).id
    for item in data["evidence"]:
        ids[item["key"]] = kernel.log(item["text"], kind=item.get("kind", "note")).id
    return ids


def _rank_metrics(found: list[str], relevant: set[str], k: int) -> tuple[float, float]:
    hits = len(relevant & set(found[:k])) / len(relevant)
    first = next((i for i, item in enumerate(found, 1) if item in relevant), None)
    return hits, (1.0 / first if first else 0.0)


def evaluate(kernel: Ctx, path: Path, ids: dict[str, str], k: int = 5) -> list[ModeScore]:
    """recall@k and MRR of decisions and evidence for every mode."""
    data = json.loads(path.read_text(encoding="utf-8"))
    scores = []
    for mode in MODES:
        dec: list[tuple[float, float]] = []
        evi: list[tuple[float, float]] = []
        wrong = 0
        for query in data["queries"]:
            found = kernel.recall(query["query"], k=max(k, 10), mode=mode)
            wrong += sum(1 for hit in found.decisions if not hit.decision.current)
            if query["decisions"]:
                relevant = {ids[key] for key in query["decisions"]}
                dec.append(_rank_metrics([h.decision.id for h in found.decisions], relevant, k))
            if query["evidence"]:
                relevant = {ids[key] for key in query["evidence"]}
                evi.append(_rank_metrics([h.evidence.id for h in found.evidence], relevant, k))
        scores.append(
            ModeScore(
                mode,
                sum(r for r, _ in dec) / len(dec),
                sum(m for _, m in dec) / len(dec),
                sum(r for r, _ in evi) / len(evi),
                sum(m for _, m in evi) / len(evi),
                wrong,
            )
        )
    return scores


def table(scores: list[ModeScore], k: int = 5) -> str:
    """A plain-text table of the scores."""
    head = f"{'mode':8} {'dec R@' + str(k):>9} {'dec MRR':>8} {'ev R@' + str(k):>8} {'ev MRR':>7}"
    lines = [head + " superseded-as-current"]
    for s in scores:
        lines.append(
            f"{s.mode:8} {s.decision_recall:9.3f} {s.decision_mrr:8.3f} {s.evidence_recall:8.3f} "
            f"{s.evidence_mrr:7.3f} {s.superseded_as_current}"
        )
    return "\n".join(lines)


def summary(scores: list[ModeScore]) -> dict[str, Any]:
    """Scores keyed by mode (for JSON)."""
    return {s.mode: s.__dict__ for s in scores}
