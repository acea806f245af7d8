"""The compact text an MCP tool returns by default: ids, subject, one line each, and warnings.

Agents pay for every token they read, so a tool answers in a few short lines built from the
same JSON the ``json`` format returns in full; ``show`` expands any id (or unique prefix) to the
whole record. Stored text is shown with hidden characters spelled out, as everywhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ctx_kernel.kernel import text

LINE_CHARS = 160  # one line of a decision, proposal or snippet; show gives the rest
EXPAND_HINT = "Expand an id (or a unique prefix) with the show tool."


def one_line(value: object, limit: int = LINE_CHARS) -> str:
    """``value`` on one line, whitespace collapsed, cut at ``limit`` characters with an ellipsis."""
    flat = " ".join(text.visible(str(value or "")).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _day(timestamp: object) -> str:
    return str(timestamp)[:10] if timestamp else "?"


def _join(lines: Iterable[str]) -> str:
    return "\n".join(lines)


def _decision_state(decision: dict[str, Any]) -> str:
    if decision.get("current"):
        return f"since {_day(decision.get('valid_from'))}"
    window = f"{_day(decision.get('valid_from'))} to {_day(decision.get('valid_until'))}"
    if decision.get("superseded_by"):
        return f"{window}; superseded by {', '.join(decision['superseded_by'])}: do not apply"
    if decision.get("closed_by") == "retired":
        reason = f": {one_line(decision.get('close_reason'), 80)}" if decision.get("close_reason") else ""
        return f"{window}; retired{reason}: do not apply"
    return f"{window}; not in force"


def _decision_line(decision: dict[str, Any]) -> str:
    return (
        f"- {decision['id']} {decision['subject']}: {one_line(decision['decision'])} "
        f"({_decision_state(decision)})"
    )


def _proposal_line(proposal: dict[str, Any]) -> str:
    notes = [f"by {proposal['proposer']}, {_day(proposal.get('created_at'))}"]
    if proposal.get("supersedes"):
        notes.append(f"would supersede {', '.join(proposal['supersedes'])}")
    if proposal.get("near_duplicate_of"):
        notes.append(f"near-duplicate of {proposal['near_duplicate_of']}")
    return f"- {proposal['id']} {proposal['subject']}: {one_line(proposal['decision'])} ({'; '.join(notes)})"


RELATED_WITH_TEXT = 1  # per relation, the records shown with their text; the rest by id
RELATED_IDS = 8  # ids listed after those; beyond, a count (format json lists every one)


def _related_lines(related: list[dict[str, Any]]) -> Iterator[str]:
    """One line per relation (superseded, conflict, pending) under a decision hit: the record the
    query matched first with its text, the rest by id."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for item in related:
        groups.setdefault(item["relation"], []).append(item)
    for relation, group in groups.items():
        items = sorted(group, key=lambda item: not item.get("matched"))
        warning = one_line(items[0].get("warning") or items[0].get("why"), 60).removeprefix(f"{relation}: ")
        shown = [f'{item["id"]} "{one_line(item["text"], 80)}"' for item in items[:RELATED_WITH_TEXT]]
        rest = items[RELATED_WITH_TEXT:]
        shown += [item["id"] for item in rest[:RELATED_IDS]]
        more = f"; {len(rest) - RELATED_IDS} more" if len(rest) > RELATED_IDS else ""
        yield f"  {relation} ({warning}): {', '.join(shown)}{more}"


def _evidence_line(item: dict[str, Any]) -> str:
    source = item.get("source")
    kind = source.get("kind") if isinstance(source, dict) else item.get("kind")
    return f"- {item['id']} ({kind}, {_day(item.get('created_at'))}): {one_line(item.get('snippet'))}"


def recall(data: dict[str, Any]) -> str:
    """Decisions in force with what contradicts them, closed matches, then unratified evidence."""
    lines: list[str] = []
    if data["decisions"]:
        lines.append("Decisions in force (ratified: apply these):")
        for hit in data["decisions"]:
            since = _day(hit["valid_from"])
            lines.append(f"- {hit['id']} {hit['subject']}: {one_line(hit['decision'])} (since {since})")
            if hit.get("stale"):
                lines.append(f"  {one_line(hit['stale'])}")
            lines.extend(_related_lines([*hit["superseded"], *hit["conflicts"], *hit["pending"]]))
    else:
        lines.append("No decision in force matches.")
    if data["closed"]:
        lines.append("No longer in force (do not apply):")
        for hit in data["closed"]:
            warning = one_line(hit["warning"], 80)
            lines.append(f"- {hit['id']} {hit['subject']}: {one_line(hit['decision'], 100)} ({warning})")
    if data["evidence"]:
        lines.append("Evidence (unratified: context, not decisions):")
        lines.extend(_evidence_line(item) for item in data["evidence"])
    vectors = data["vectors"]
    if vectors["state"] not in ("on", "unused"):
        lines.append(f"Vectors {vectors['state']}: {one_line(vectors.get('note'), 120)}")
    lines.append(EXPAND_HINT)
    return _join(lines)


def search(data: dict[str, Any]) -> str:
    """Keyword hits in two sections: ratified decisions, unratified evidence."""
    lines = ["Decisions:" if data["decisions"] else "No decision matches."]
    lines.extend(_decision_line(decision) for decision in data["decisions"])
    if data["evidence"]:
        lines.append("Evidence (unratified: context, not decisions):")
        lines.extend(_evidence_line(item) for item in data["evidence"])
    lines.append(EXPAND_HINT)
    return _join(lines)


def decisions(data: dict[str, Any]) -> str:
    """A list of decisions, one line each with its validity."""
    if not data["decisions"]:
        return "No decisions." if data.get("as_of") is None else f"No decisions held at {data['as_of']}."
    heading = "Decisions" + (f" held at {data['as_of']}:" if data.get("as_of") else ":")
    return _join([heading, *(_decision_line(decision) for decision in data["decisions"])])


def _closed_proposal_line(proposal: dict[str, Any]) -> str:
    note = f": {one_line(proposal['resolution_note'], 80)}" if proposal.get("resolution_note") else ""
    return (
        f"- {proposal['id']} {proposal['subject']}: {one_line(proposal['decision'])} ({proposal['status']} "
        f"by {text.visible(str(proposal.get('resolved_by')))}, {_day(proposal.get('resolved_at'))}{note}; "
        "never in force)"
    )


def history(data: dict[str, Any]) -> str:
    """A subject's supersede chain, oldest first, then the proposals on it never in force."""
    lines = [f"History of {data['subject']} (oldest first):", *(_decision_line(d) for d in data["decisions"])]
    if not data["decisions"]:
        lines.append("No decision has held on it.")
    if data.get("proposals"):
        lines.append("Rejected or withdrawn proposals (never in force):")
        lines.extend(_closed_proposal_line(p) for p in data["proposals"])
    return _join(lines)


def evidence_list(data: dict[str, Any]) -> str:
    """The newest evidence texts, one line each."""
    if not data["evidence"]:
        return "No evidence" + (f" logged since {data['since']}." if data.get("since") else ".")
    since = f" logged since {data['since']}" if data.get("since") else ""
    lines = [f"Evidence{since}, newest first (unratified: context, not decisions):"]
    for item in data["evidence"]:
        by = text.visible(item.get("agent") or "?")
        lines.append(
            f"- {item['id']} ({item['kind']}, {by}, {_day(item['created_at'])}): {one_line(item['text'])}"
        )
    lines.append(EXPAND_HINT)
    return _join(lines)


def subject_decision(data: dict[str, Any]) -> str:
    """The decision on one subject, or that none holds."""
    decision = data["decision"]
    at = f" at {data['as_of']}" if data.get("as_of") else ""
    if decision is None:
        return f"No decision in force on {data['subject']}{at}."
    return _decision_line(decision).removeprefix("- ")


def queue(data: dict[str, Any]) -> str:
    """Pending proposals, oldest first."""
    if not data["proposals"]:
        return "No pending proposals."
    lines = ["Pending proposals (not in force until a person ratifies them):"]
    lines.extend(_proposal_line(proposal) for proposal in data["proposals"])
    return _join(lines)


def proposal(data: dict[str, Any]) -> str:
    """A proposal just queued or withdrawn."""
    line = _proposal_line(data).removeprefix("- ")
    if data["status"] == "pending":
        return f"Queued for a person's review (not in force): {line}"
    return f"{data['status'].capitalize()}: {line}"


def log(data: dict[str, Any]) -> str:
    """The evidence id just logged."""
    said = f"Already logged as {data['id']} (the same text)" if data["duplicate"] else f"Logged {data['id']}"
    redacted = data.get("redacted") or 0
    return said + (f"; {text.plural(redacted, 'secret')} redacted" if redacted else "") + "."


def inject(data: dict[str, Any]) -> str:
    """The session-start block: it is already Markdown written to be read."""
    return str(data["markdown"])


def show(data: dict[str, Any]) -> str:
    """One record in full: the expansion of an id."""
    record = data["record"]
    kind = data["kind"]
    if kind == "evidence":
        head = [f"{record['id']} evidence ({record['kind']}, unratified), logged {record['created_at']}"]
        head += [
            f"{label}: {text.visible(str(record[key]))}" for key, label in _EVIDENCE_FIELDS if record.get(key)
        ]
        if record.get("tags"):
            head.append("tags: " + ", ".join(text.visible(tag) for tag in record["tags"]))
        return _join([*head, "", text.visible(record["text"])])
    lines = [f"{record['id']} {kind} on {record['subject']}"]
    if kind == "decision":
        lines.append(
            f"state: {'current' if record['current'] else 'not in force'}, {_decision_state(record)}"
        )
        lines.append(f"ratified by {text.visible(record['ratified_by'])} at {record['ratified_at']}")
    else:
        state = record["status"] + (" (not in force)" if record["status"] == "pending" else "")
        lines.append(
            f"status: {state}; proposed by {text.visible(record['proposer'])} at {record['created_at']}"
        )
        if record.get("resolved_by"):
            note = f": {text.visible(record['resolution_note'])}" if record.get("resolution_note") else ""
            lines.append(
                f"resolved by {text.visible(record['resolved_by'])} at {record['resolved_at']}{note}"
            )
    if record.get("title"):
        lines.append(f"title: {text.visible(record['title'])}")
    lines.append(f"decision: {text.visible(record['decision'])}")
    if record.get("rationale"):
        lines.append(f"rationale: {text.visible(record['rationale'])}")
    for key in ("supersedes", "superseded_by", "evidence"):
        if record.get(key):
            lines.append(f"{key.replace('_', ' ')}: {', '.join(record[key])}")
    for key in ("near_duplicate_of", "decision_id", "proposal_id", "source"):
        if record.get(key):
            lines.append(f"{key.replace('_', ' ')}: {text.visible(str(record[key]))}")
    return _join(lines)


def timeline(data: dict[str, Any]) -> str:
    """A subject's records in time order, one line each, the record asked about marked."""
    lines = [f"Timeline of {text.visible(data['subject'])} (oldest first):"]
    if data["omitted_before"]:
        lines.append(f"... {data['omitted_before']} earlier")
    for entry in data["entries"]:
        mark = "> " if entry["focus"] else "- "
        lines.append(
            f"{mark}{entry['at'][:16].replace('T', ' ')} {entry['event']} {entry['id']}: "
            f"{text.visible(entry['text'])}"
        )
    if data["omitted_after"]:
        lines.append(f"... {data['omitted_after']} later")
    return _join(lines)


_EVIDENCE_FIELDS = (("agent", "agent"), ("session", "session"), ("source", "source"), ("speaker", "speaker"))

RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "recall": recall,
    "search": search,
    "decisions": decisions,
    "history": history,
    "evidence-list": evidence_list,
    "subject-decision": subject_decision,
    "queue": queue,
    "proposal": proposal,
    "log": log,
    "inject": inject,
    "show": show,
    "timeline": timeline,
}
