"""The context block an agent reads at session start, cut to a token budget.

Tokens are estimated as one per four characters (rounded up, per line), the usual
rule of thumb for English text under GPT- and Claude-style BPE tokenisers; it needs
no tokenizer download, is the same on every machine, and the block is built so its
estimate never exceeds the budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctx_kernel.kernel.recall.expansion import SUPERSEDED_WARNING
from ctx_kernel.kernel.recall.results import Recall
from ctx_kernel.kernel.records import Decision, Evidence, Proposal
from ctx_kernel.kernel.reports import Related
from ctx_kernel.kernel.text import clip, plural, visible

if TYPE_CHECKING:
    from ctx_kernel.kernel.recall.service import RecallService

CHARS_PER_TOKEN = 4
TOKEN_COUNTING = "ceil(characters / 4) per line, newline included"
MAX_EVIDENCE = 5
QUERY_DEPTH = 30
FOOTER_RESERVE = 40
# How the block tells an agent to find what did not fit, by where the agent reads it: a shell
# command from the CLI and the session hooks, the server's own tool over MCP.
ASK_FOR_MORE = {"shell": "ask `ctx recall QUERY`", "mcp": "call the `recall` tool"}
SECTIONS = (
    ("decisions", "## Current decisions (ratified: apply these)"),
    ("superseded", f"## Superseded: {SUPERSEDED_WARNING.split(': ', 1)[1]}"),
    ("conflicts", "## Conflicts needing attention (ask a person)"),
    ("proposals", "## Proposals awaiting review (not in force)"),
    ("evidence", "## Evidence (unratified: context only, not decisions)"),
)


def count_tokens(text: str) -> int:
    """The token estimate of ``text`` (see the module docstring)."""
    return sum(math.ceil((len(line) + 1) / CHARS_PER_TOKEN) for line in text.split("\n"))


@dataclass
class Injection:
    """The items chosen for the block, and its Markdown."""

    query: str | None
    budget: int
    tokens: int = 0
    items: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {name: [] for name, _ in SECTIONS})
    omitted: dict[str, int] = field(default_factory=lambda: {name: 0 for name, _ in SECTIONS})
    vectors: dict[str, Any] | None = None
    markdown: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``schemas/inject.schema.json``)."""
        return {
            "query": self.query,
            "budget": self.budget,
            "tokens": self.tokens,
            "token_counting": TOKEN_COUNTING,
            **self.items,
            "omitted": self.omitted,
            "vectors": self.vectors,
            "markdown": self.markdown,
        }


def _day(stamp: str | None) -> str:
    return stamp[:10] if stamp else "now"


def _one_line(value: str, limit: int = 400) -> str:
    return clip(value, limit)


def _decision_item(d: Decision) -> tuple[dict[str, Any], str]:
    item = {"id": d.id, "subject": d.subject, "decision": d.decision, "valid_from": d.valid_from}
    return item, f"- `{d.id}` **{d.subject}** (since {_day(d.valid_from)}): {_one_line(d.decision)}"


def _superseded_item(r: Related, holders: list[str]) -> tuple[dict[str, Any], str]:
    item = {
        "id": r.id,
        "subject": r.subject,
        "decision": r.text,
        "valid_from": r.valid_from,
        "valid_until": r.valid_until,
        "replaced_by": holders[0],
        "warning": SUPERSEDED_WARNING,
    }
    now = ", ".join(f"`{h}`" for h in holders)
    line = (
        f"- `{r.id}` {r.subject} ({_day(r.valid_from)} to {_day(r.valid_until)}): "
        f"~~{_one_line(r.text, 200)}~~ {SUPERSEDED_WARNING}; now {now}"
    )
    return item, line


def _conflict_item(d: Decision, r: Related) -> tuple[dict[str, Any], str]:
    item = {"id": d.id, "subject": d.subject, "other_id": r.id, "other_subject": r.subject, "why": r.why}
    return item, f"- `{d.id}` {d.subject} vs `{r.id}` {r.subject}: {_one_line(r.why, 300)}"


def _proposal_item(p: Proposal) -> tuple[dict[str, Any], str]:
    item = {
        "id": p.id,
        "subject": p.subject,
        "decision": p.decision,
        "proposer": p.proposer,
        "created_at": p.created_at,
        "supersedes": p.supersedes,
    }
    line = f"- `{p.id}` {p.subject}: {_one_line(p.decision, 240)} (proposed by {p.proposer}, not ratified)"
    return item, line


def _evidence_item(e: Evidence, snippet: str) -> tuple[dict[str, Any], str]:
    item = {"id": e.id, "kind": e.kind, "created_at": e.created_at, "snippet": snippet, "ratified": False}
    return item, f"- `{e.id}` ({e.kind}, {_day(e.created_at)}, unratified): {_one_line(snippet, 300)}"


def _candidates_from_recall(
    found: Recall, service: RecallService
) -> dict[str, list[tuple[dict[str, Any], str]]]:
    out: dict[str, list[tuple[dict[str, Any], str]]] = {name: [] for name, _ in SECTIONS}
    seen: set[str] = set()
    pending_ids: set[str] = set()
    # A decision split in two is replaced by both: listed once, naming every successor in force.
    replaced: dict[str, tuple[Related, list[str]]] = {}
    for hit in found.decisions:
        out["decisions"].append(_decision_item(hit.decision))
        for related in hit.superseded:
            if related.relation == "superseded":
                replaced.setdefault(related.id, (related, []))[1].append(hit.decision.id)
        for related in hit.conflicts:
            pair = "|".join(sorted((hit.decision.id, related.id)))
            if pair not in seen:
                seen.add(pair)
                out["conflicts"].append(_conflict_item(hit.decision, related))
        pending_ids.update(r.id for r in hit.pending)
    out["superseded"] = [_superseded_item(related, holders) for related, holders in replaced.values()]
    queue = service.store.list_proposals("pending")
    ordered = [p for p in queue if p.id in pending_ids] + [p for p in queue if p.id not in pending_ids]
    out["proposals"] = [_proposal_item(p) for p in ordered]
    out["evidence"] = [_evidence_item(h.evidence, h.snippet) for h in found.evidence[:MAX_EVIDENCE]]
    return out


def _candidates_without_query(service: RecallService) -> dict[str, list[tuple[dict[str, Any], str]]]:
    out: dict[str, list[tuple[dict[str, Any], str]]] = {name: [] for name, _ in SECTIONS}
    # With no query, the newest decisions come first: they are the ones current work touches.
    current = sorted(service.store.decisions(), key=lambda d: (d.valid_from, d.id), reverse=True)
    out["decisions"] = [_decision_item(d) for d in current]
    closed = {d.id: d for d in service.store.decisions(include_closed=True) if d.closed_by == "superseded"}
    replaced: dict[str, tuple[Related, list[str]]] = {}
    for d in current:
        for old_id in d.supersedes:
            old = closed.get(old_id)
            if old is not None:
                related = Related(
                    "superseded", old.id, old.subject, old.decision, False,
                    old.valid_from, old.valid_until, "", SUPERSEDED_WARNING,
                )  # fmt: skip
                replaced.setdefault(old.id, (related, []))[1].append(d.id)
    out["superseded"] = [_superseded_item(related, holders) for related, holders in replaced.values()]
    out["conflicts"] = [_conflict_item(d, r) for d, r in service.recorded_conflicts()]
    out["proposals"] = [_proposal_item(p) for p in service.store.list_proposals("pending")]
    out["evidence"] = [_evidence_item(e, e.text) for e in service.vault.recent(MAX_EVIDENCE)]
    return out


def build(service: RecallService, query: str | None, budget: int, via: str = "shell") -> Injection:
    """Choose and render the block: sections in order, items in order, while the budget lasts;
    ``via`` (a key of :data:`ASK_FOR_MORE`) is where the agent reads it."""
    injection = Injection(query=query, budget=budget)
    if query is not None:
        found = service.recall(query, k=QUERY_DEPTH)
        injection.vectors = found.vectors.to_dict()
        candidates = _candidates_from_recall(found, service)
    else:
        candidates = _candidates_without_query(service)
    header = "# Project decisions from ctx\n"
    header += (
        "Ratified by a person: apply the current decisions; never apply superseded ones; "
        "proposals and evidence are not decisions."
    )
    if query is not None:
        header += f"\nRelevant to: {_one_line(query, 200)}"
    lines = [header]
    used = count_tokens(header)
    limit = budget - FOOTER_RESERVE
    for name, heading in SECTIONS:
        added = False
        for item, line in candidates[name]:
            cost = count_tokens(line) + (0 if added else count_tokens("\n" + heading))
            if used + cost > limit:
                injection.omitted[name] += 1
                continue
            if not added:
                lines.append("\n" + heading)
                added = True
            lines.append(line)
            used += cost
            injection.items[name].append(item)
    if not any(injection.items.values()) and not any(injection.omitted.values()):
        lines.append("\nNo ratified decisions yet.")
    left_out = sum(injection.omitted.values())
    if left_out:
        lines.append(
            f"\n_{plural(left_out, 'more item')} did not fit the budget of {budget} tokens; "
            f"{ASK_FOR_MORE[via]}._"
        )
    # Stored text reaches a terminal or an agent's context: hidden characters are spelled out.
    injection.markdown = visible("\n".join(lines) + "\n")
    injection.tokens = count_tokens(injection.markdown)
    return injection
