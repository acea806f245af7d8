"""What a decision hit is expanded with: its chain, the decisions that contradict it, why it closed."""

from __future__ import annotations

import functools

from ctx_kernel.kernel.records import Decision
from ctx_kernel.kernel.reports import Related
from ctx_kernel.kernel.text import clip

SUPERSEDED_WARNING = "superseded: do not apply"


def conflict_item(other: Decision, term: str, clause: str, other_clause: str) -> Related:
    """The entry for ``other``, which takes the opposite stance on ``term``."""
    return conflict_related(
        other.id,
        other.subject,
        other.decision,
        other.valid_from,
        other.valid_until,
        term,
        clause,
        other_clause,
    )


# A pure function of its arguments, whose result is frozen: a warm process builds each entry once
# (a hit of a contested subject carries tens of them, each clipping two clauses).
@functools.lru_cache(maxsize=4096)
def conflict_related(
    other_id: str,
    subject: str,
    text: str,
    valid_from: str,
    valid_until: str | None,
    term: str,
    clause: str,
    other_clause: str,
) -> Related:
    return Related(
        "conflict", other_id, subject, text, valid_until is None, valid_from, valid_until,
        f"opposite stance on {term!r}: {clip_text(clause)!r} here, {clip_text(other_clause)!r} in {subject}",
        "conflict: needs a person to reconcile",
    )  # fmt: skip


def lineage_of(start: str, chain: dict[str, Decision], direction: str) -> set[str]:
    """Decisions reached from ``start`` by following only ``supersedes`` or only ``superseded_by``."""
    found: set[str] = set()
    todo = [start]
    while todo:
        current = chain.get(todo.pop())
        if current is None:
            continue
        for nxt in getattr(current, direction):
            if nxt not in found and nxt != start and nxt in chain:
                found.add(nxt)
                todo.append(nxt)
    return found


def chain_item(item: Decision, hit: Decision, matched: bool) -> Related:
    later = item.valid_from > hit.valid_from
    if later:
        why = f"replaced it on {item.valid_from[:10]}, after the moment asked about"
        return Related(
            "later", item.id, item.subject, item.decision, item.valid_until is None,
            item.valid_from, item.valid_until, why, None, matched,
        )  # fmt: skip
    until = item.valid_until[:10] if item.valid_until else "?"
    successors = ", ".join(item.superseded_by) or "a later decision"
    why = f"held {item.valid_from[:10]} to {until}; superseded by {successors}"
    if item.closed_by == "retired":
        why = f"held {item.valid_from[:10]} to {until}; retired: {item.close_reason or ''}".rstrip(": ")
    return Related(
        "superseded", item.id, item.subject, item.decision, False,
        item.valid_from, item.valid_until, why, SUPERSEDED_WARNING, matched,
    )  # fmt: skip


def closed_why(decision: Decision) -> str:
    until = decision.valid_until[:10] if decision.valid_until else "?"
    if decision.closed_by == "retired":
        return f"retired on {until} ({decision.close_reason or 'no reason given'}): do not apply"
    return f"closed on {until} with no successor in force: do not apply"


def clip_text(value: str, limit: int = 80) -> str:
    return clip(value, limit)
