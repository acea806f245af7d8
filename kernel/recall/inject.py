"""The context block an agent reads at session start, cut to a token budget.

Tokens are estimated as one per four characters (rounded up, per line), the usual
rule of thumb for English text under GPT- and Claude-style BPE tokenisers; it needs
no tokenizer download, is the same on every machine, and the block is built so its
estimate never exceeds the budget, nor its length ``max_chars`` (10,000 by default).

Current decisions come first, each in full while the rest still fit as an index; the
block ends with that index, one line per current decision left out, so whatever did not
fit is one ``ctx show`` away.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ctx_kernel.kernel.limits import MAX_INJECT_CHARS
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
SUBJECT_CHARS = 80
SENTENCE_CHARS = 240
FULL_SHARE = 2  # when the index cannot name everything, decisions in full may take 1/FULL_SHARE
SECTIONS = (
    ("decisions", "## Current decisions (apply these)"),
    ("superseded", f"## Superseded: {SUPERSEDED_WARNING.split(': ', 1)[1]}"),
    ("conflicts", "## Conflicts (ask a person)"),
    ("proposals", "## Proposals (not in force)"),
    ("evidence", "## Evidence (unratified)"),
)
INDEX_HEADING = "## Also current (not shown above)"

Name = Callable[[str], str]


def count_tokens(text: str) -> int:
    """The token estimate of ``text`` (see the module docstring)."""
    return sum(math.ceil((len(line) + 1) / CHARS_PER_TOKEN) for line in text.split("\n"))


@dataclass(frozen=True)
class _Line:
    """A candidate item: its JSON form, the ids its line names, and the line given their names."""

    item: dict[str, Any]
    ids: tuple[str, ...]
    render: Callable[[Name], str]


@dataclass
class _Room:
    """What is left of the budget, in tokens and characters."""

    tokens: int
    chars: int | None

    def cost(self, text: str) -> tuple[int, int]:
        """Tokens and characters ``text`` adds as lines of the block."""
        return count_tokens(text), len(text) + 1

    def fits(self, *texts: str, tokens: int = 0, chars: int = 0) -> bool:
        """Whether ``texts`` (and as many more tokens and characters) fit."""
        for text in texts:
            more_tokens, more_chars = self.cost(text)
            tokens += more_tokens
            chars += more_chars
        return tokens <= self.tokens and (self.chars is None or chars <= self.chars)

    def take(self, text: str) -> None:
        """Spend what ``text`` costs."""
        tokens, chars = self.cost(text)
        self.tokens -= tokens
        if self.chars is not None:
            self.chars -= chars


@dataclass
class Injection:
    """The items chosen for the block, and its Markdown."""

    query: str | None
    budget: int
    max_chars: int | None = MAX_INJECT_CHARS
    tokens: int = 0
    items: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {name: [] for name, _ in SECTIONS})
    omitted: dict[str, int] = field(default_factory=lambda: {name: 0 for name, _ in SECTIONS})
    index: list[dict[str, Any]] = field(default_factory=list)
    vectors: dict[str, Any] | None = None
    markdown: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``schemas/inject.schema.json``)."""
        return {
            "query": self.query,
            "budget": self.budget,
            "max_chars": self.max_chars,
            "tokens": self.tokens,
            "token_counting": TOKEN_COUNTING,
            **self.items,
            "omitted": self.omitted,
            "index": self.index,
            "vectors": self.vectors,
            "markdown": self.markdown,
        }


def _day(stamp: str | None) -> str:
    return stamp[:10] if stamp else "now"


def _one_line(value: str, limit: int = 400) -> str:
    return clip(value, limit)


# A sentence ends at ., ! or ? before a space; the first one is the decision itself in a short
# decision and the gist of a long one (ADRs begin "We will ..."): `ctx show` has the rest. One
# shorter than SENTENCE_MIN characters ("No.", "We will go with option 3.") says too little alone.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
SENTENCE_MIN = 40


def _first_sentence(value: str, limit: int = SENTENCE_CHARS) -> str:
    """``value``'s first sentence on one line, clipped to ``limit``; "…" marks what is left out."""
    flat = " ".join(value.split())
    end = _SENTENCE_END.search(flat, SENTENCE_MIN)
    if end is None or end.start() >= limit:
        return clip(flat, limit)
    return flat[: end.start()] + " …"


def _decision_line(d: Decision) -> _Line:
    item = {"id": d.id, "subject": d.subject, "decision": d.decision, "valid_from": d.valid_from}
    return _Line(
        item,
        (d.id,),
        lambda name: f"- `{name(d.id)}` {d.subject}: {_first_sentence(d.decision)}",
    )


def _index_line(d: Decision, name: Name) -> str:
    return f"- `{name(d.id)}` {clip(d.subject, SUBJECT_CHARS)}"


def _superseded_line(r: Related, holders: list[str]) -> _Line:
    item = {
        "id": r.id,
        "subject": r.subject,
        "decision": r.text,
        "valid_from": r.valid_from,
        "valid_until": r.valid_until,
        "replaced_by": holders[0],
        "warning": SUPERSEDED_WARNING,
    }

    def render(name: Name) -> str:
        now = ", ".join(f"`{name(h)}`" for h in holders)
        return f"- `{name(r.id)}` {r.subject}: ~~{_first_sentence(r.text)}~~ now {now}"

    return _Line(item, (r.id, *holders), render)


def _conflict_line(d: Decision, r: Related) -> _Line:
    item = {"id": d.id, "subject": d.subject, "other_id": r.id, "other_subject": r.subject, "why": r.why}
    return _Line(
        item,
        (d.id, r.id),
        lambda name: f"- `{name(d.id)}` {d.subject} vs `{name(r.id)}` {r.subject}: {_one_line(r.why, 300)}",
    )


def _proposal_line(p: Proposal) -> _Line:
    item = {
        "id": p.id,
        "subject": p.subject,
        "decision": p.decision,
        "proposer": p.proposer,
        "created_at": p.created_at,
        "supersedes": p.supersedes,
    }
    return _Line(
        item,
        (p.id,),
        lambda name: f"- `{name(p.id)}` {p.subject}: {_first_sentence(p.decision)} (by {p.proposer})",
    )


def _evidence_line(e: Evidence, snippet: str) -> _Line:
    item = {"id": e.id, "kind": e.kind, "created_at": e.created_at, "snippet": snippet, "ratified": False}
    return _Line(
        item,
        (e.id,),
        lambda name: f"- `{name(e.id)}` {e.kind}, {_day(e.created_at)}: {_one_line(snippet, 300)}",
    )


@dataclass
class _Candidates:
    """Every item that may go in the block, per section, in order, and the current decisions."""

    sections: dict[str, list[_Line]]
    current: list[Decision]  # in the order the block shows them, then indexes the rest


def _newest_first(decisions: Iterable[Decision]) -> list[Decision]:
    return sorted(decisions, key=lambda d: (d.valid_from, d.id), reverse=True)


def _candidates_from_recall(found: Recall, service: RecallService) -> _Candidates:
    out: dict[str, list[_Line]] = {name: [] for name, _ in SECTIONS}
    seen: set[str] = set()
    pending_ids: set[str] = set()
    # A decision split in two is replaced by both: listed once, naming every successor in force.
    replaced: dict[str, tuple[Related, list[str]]] = {}
    for hit in found.decisions:
        out["decisions"].append(_decision_line(hit.decision))
        for related in hit.superseded:
            if related.relation == "superseded":
                replaced.setdefault(related.id, (related, []))[1].append(hit.decision.id)
        for related in hit.conflicts:
            pair = "|".join(sorted((hit.decision.id, related.id)))
            if pair not in seen:
                seen.add(pair)
                out["conflicts"].append(_conflict_line(hit.decision, related))
        pending_ids.update(r.id for r in hit.pending)
    out["superseded"] = [_superseded_line(related, holders) for related, holders in replaced.values()]
    queue = service.store.list_proposals("pending")
    ordered = [p for p in queue if p.id in pending_ids] + [p for p in queue if p.id not in pending_ids]
    out["proposals"] = [_proposal_line(p) for p in ordered]
    out["evidence"] = [_evidence_line(h.evidence, h.snippet) for h in found.evidence[:MAX_EVIDENCE]]
    # The index names the hits that did not fit first, by relevance, then the rest newest first.
    hits = [hit.decision for hit in found.decisions]
    ranked = {d.id for d in hits}
    rest = [d for d in _newest_first(service.store.decisions()) if d.id not in ranked]
    return _Candidates(out, hits + rest)


def _candidates_without_query(service: RecallService) -> _Candidates:
    out: dict[str, list[_Line]] = {name: [] for name, _ in SECTIONS}
    # With no query, the newest decisions come first: they are the ones current work touches.
    current = _newest_first(service.store.decisions())
    out["decisions"] = [_decision_line(d) for d in current]
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
    out["superseded"] = [_superseded_line(related, holders) for related, holders in replaced.values()]
    out["conflicts"] = [_conflict_line(d, r) for d, r in service.recorded_conflicts()]
    out["proposals"] = [_proposal_line(p) for p in service.store.list_proposals("pending")]
    out["evidence"] = [_evidence_line(e, e.text) for e in service.vault.recent(MAX_EVIDENCE)]
    return _Candidates(out, current)


# How the block tells an agent to get more, by where the agent reads it: shell commands from the
# CLI and the session hooks, the server's own tools over MCP.
ASK = {
    "shell": {
        "show": "`ctx show HANDLE`",
        "decisions": "`ctx decisions`",
        "recall": "ask `ctx recall QUERY`",
    },
    "mcp": {
        "show": "the `show` tool",
        "decisions": "the `list_decisions` tool",
        "recall": "call the `recall` tool",
    },
}


def _header(query: str | None, via: str) -> str:
    header = "# Project decisions (ctx)\n"
    header += (
        "Apply the current decisions (ratified by a person), never superseded ones; proposals and "
        f"evidence are not decisions. {ASK[via]['show'][:1].upper()}{ASK[via]['show'][1:]} prints a "
        "record in full."
    )
    if query is not None:
        header += f"\nRelevant to: {_one_line(query, 200)}"
    return visible(header)


class _Block:
    """The block's lines as they are chosen, within the room left."""

    def __init__(self, injection: Injection, room: _Room, name: Name) -> None:
        self.injection = injection
        self.room = room
        self.name = name
        self.lines: list[str] = []

    def line(self, candidate: _Line) -> str:
        """The candidate's line as the block shows it: hidden characters spelled out."""
        # Stored text reaches a terminal or an agent's context: hidden characters are spelled out,
        # before the line is costed, so the spelling counts against the budget too.
        return visible(candidate.render(self.name))

    def add(self, text: str) -> None:
        """Append ``text`` and spend what it costs."""
        self.lines.append(text)
        self.room.take(text)


def _choose_decisions(
    block: _Block, candidates: _Candidates, markers: Mapping[str, str] | None = None
) -> list[Decision]:
    """Show current decisions in full, in order, while those left out still fit as an index; when
    the index of them all cannot fit anyway, while they take at most 1/FULL_SHARE of the room
    (and the first always, when it fits). Returns the decisions left out, in the index's order."""
    shown: set[str] = set()
    # What each left-out decision's index line costs (the index of all of them, at first).
    cost = {d.id: block.room.cost(_index_line(d, block.name)) for d in candidates.current}
    heading_tokens, heading_chars = block.room.cost("\n" + INDEX_HEADING)
    tokens = sum(t for t, _ in cost.values()) + heading_tokens
    chars = sum(c for _, c in cost.values()) + heading_chars
    # When not everything can be named, a block that were all index would say nothing: the
    # decisions in full get a share of the room, and the index names what fits after them.
    room = block.room
    if room.fits(tokens=tokens, chars=chars):
        floor = _Room(0, 0)
    else:
        floor = _Room(room.tokens // FULL_SHARE, None if room.chars is None else room.chars // FULL_SHARE)
    section_heading = "\n" + SECTIONS[0][1]
    for candidate in candidates.sections["decisions"]:
        decision_id = candidate.item["id"]
        own_tokens, own_chars = cost.get(decision_id, (0, 0))
        rest_tokens, rest_chars = tokens - own_tokens, chars - own_chars
        if rest_tokens <= heading_tokens:  # nothing else left out: no index
            rest_tokens = rest_chars = 0
        first = not shown
        own = block.line(candidate)
        marker = (markers or {}).get(decision_id)
        if marker is not None:
            # One line under the decision, so an agent checks before relying on it.
            own += "\n  - " + visible(marker)
        parts = (section_heading, own) if first else (own,)
        beside_index = block.room.fits(*parts, tokens=rest_tokens, chars=rest_chars)
        if beside_index or ((first or floor.fits(*parts)) and block.room.fits(*parts)):
            for part in parts:
                block.add(part)
                floor.take(part)
            shown.add(decision_id)
            item = candidate.item if marker is None else {**candidate.item, "stale": marker}
            block.injection.items["decisions"].append(item)
            tokens, chars = rest_tokens, rest_chars
    left_out = [d for d in candidates.current if d.id not in shown]
    block.injection.omitted["decisions"] = len(left_out)
    return left_out


def _add_sections(block: _Block, candidates: _Candidates, reserve: tuple[int, int]) -> None:
    """The sections after the current decisions, each item while it fits beside ``reserve``."""
    for name, heading in SECTIONS[1:]:
        added = False
        for candidate in candidates.sections[name]:
            text = block.line(candidate)
            parts = (text,) if added else ("\n" + heading, text)
            if not block.room.fits(*parts, tokens=reserve[0], chars=reserve[1]):
                block.injection.omitted[name] += 1
                continue
            for part in parts:
                block.add(part)
            added = True
            block.injection.items[name].append(candidate.item)


def _add_index(block: _Block, left_out: list[Decision]) -> int:
    """The index of the current decisions left out, while it fits; how many it could not name."""
    heading = "\n" + INDEX_HEADING
    for count, decision in enumerate(left_out):
        text = visible(_index_line(decision, block.name))
        parts = (heading, text) if count == 0 else (text,)
        if not block.room.fits(*parts):
            return len(left_out) - count
        for part in parts:
            block.add(part)
        block.injection.index.append(
            {"id": decision.id, "handle": block.name(decision.id), "subject": decision.subject}
        )
    return 0


# The shortest line an item can have (``- `ABCD` x``: 11 characters and the newline, 3 tokens):
# no more items than the room holds of these can be shown, so no more need a handle.
SHORTEST_LINE = (3, 12)


def _handles(service: RecallService, candidates: _Candidates, room: _Room) -> dict[str, str]:
    """The handles of every record the block may name (at most as many per section as could fit)."""
    most = room.tokens // SHORTEST_LINE[0]
    if room.chars is not None:
        most = min(most, room.chars // SHORTEST_LINE[1])
    wanted = [d.id for d in candidates.current[:most]]
    for lines in candidates.sections.values():
        wanted += [record_id for line in lines[:most] for record_id in line.ids]
    return service.vault.handles(wanted)


def build(
    service: RecallService,
    query: str | None,
    budget: int,
    *,
    max_chars: int | None = MAX_INJECT_CHARS,
    via: str = "shell",
    markers: Mapping[str, str] | None = None,
) -> Injection:
    """Choose and render the block: current decisions, the other sections, the index of the rest.
    ``via`` (a key of :data:`ASK`) is where the agent reads it, which says how it gets more;
    ``markers`` are the stale decisions' lines (``ctx stale``), shown under each one shown."""
    injection = Injection(query=query, budget=budget, max_chars=max_chars)
    if query is not None:
        found = service.recall(query, k=QUERY_DEPTH)
        injection.vectors = found.vectors.to_dict()
        candidates = _candidates_from_recall(found, service)
    else:
        candidates = _candidates_without_query(service)
    footer_chars = None if max_chars is None else max_chars - FOOTER_RESERVE * CHARS_PER_TOKEN
    # The last line ("" after the final newline) costs a token and a character.
    room = _Room(budget - FOOTER_RESERVE - 1, None if footer_chars is None else footer_chars - 1)
    names = _handles(service, candidates, room)
    block = _Block(injection, room, lambda record_id: names.get(record_id, record_id))
    block.add(_header(query, via))
    left_out = _choose_decisions(block, candidates, markers)
    # The sections after the decisions leave room for the index (as much of it as fits at all).
    reserve = [room.cost(_index_line(d, block.name)) for d in left_out[: room.tokens]]
    reserve.append(room.cost("\n" + INDEX_HEADING) if left_out else (0, 0))
    _add_sections(block, candidates, (sum(t for t, _ in reserve), sum(c for _, c in reserve)))
    unnamed = _add_index(block, left_out)
    lines = block.lines
    if not any(injection.items.values()) and not any(injection.omitted.values()):
        lines.append("\nNo ratified decisions yet.")
    if unnamed:
        lines.append(f"\n_{plural(unnamed, 'more current decision')}: {ASK[via]['decisions']} lists them._")
    others = sum(count for name, count in injection.omitted.items() if name != "decisions")
    if others:
        more = f"{plural(others, 'more item')} did not fit the budget of {budget} tokens"
        lines.append(f"\n_{more}; {ASK[via]['recall']}._")
    injection.markdown = "\n".join(lines) + "\n"
    injection.tokens = count_tokens(injection.markdown)
    return injection
