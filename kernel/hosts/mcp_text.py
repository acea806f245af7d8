"""The compact text an MCP tool returns by default: ids, subject, one line each, and warnings.

Agents pay for every token they read, so a tool answers in a few short lines built from the
same JSON the ``json`` format returns in full; ``show`` expands any id (or unique prefix) to the
whole record. Stored text is shown with hidden characters spelled out, as everywhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
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
    if proposal.get("reconfirms"):
        notes.append(f"asks a person to re-confirm {proposal['reconfirms']}")
    if proposal.get("supersedes"):
        notes.append(f"would supersede {', '.join(proposal['supersedes'])}")
    if proposal.get("near_duplicate_of"):
        notes.append(f"near-duplicate of {proposal['near_duplicate_of']}")
    return f"- {proposal['id']} {proposal['subject']}: {one_line(proposal['decision'])} ({'; '.join(notes)})"


# The recall and search answers are an index: about 30 tokens a hit, the first of three steps an
# agent takes (the index, then ``timeline`` around a handle, then ``show`` for the whole record).
INDEX_LINE_CHARS = 80  # a hit's text, cut; show gives the rest
INDEX_SUBJECT_CHARS = 40
CLOSED_WHY_CHARS = 48
RELATED_HANDLES = 2  # per relation, the handles listed after its count (format json lists all)
INDEX_HINT = "Next: timeline <handle> for before and after, show <handle> for the whole record."
TAGS_HINT = (
    "Tags: supersedes = replaced, do not apply; conflict = ask a person; pending = not ratified; "
    "replaced later = after the moment asked about."
)
_RELATION_TAGS = {"superseded": "supersedes", "later": "replaced later"}


def index_ids(data: dict[str, Any]) -> list[str]:
    """Every id a recall or search index names, so its handles are looked up in one query."""
    shown = [hit["id"] for section in ("decisions", "closed", "evidence") for hit in data.get(section, ())]
    for hit in data.get("decisions", ()):
        shown += [item["id"] for key in ("superseded", "conflicts", "pending") for item in hit.get(key, ())]
        shown += hit.get("superseded_by", ())[:RELATED_HANDLES]
    return shown


def _related_tag(related: list[dict[str, Any]], name: Callable[[str], str]) -> str:
    """`` [supersedes 1: 3BPAR; pending 2: M7DW, 9JDZ]``: each relation's count and first handles,
    the records the query matched first."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for item in related:
        groups.setdefault(item["relation"], []).append(item)
    parts = []
    for relation, group in groups.items():
        items = sorted(group, key=lambda item: not item.get("matched"))
        handles = ", ".join(name(item["id"]) for item in items[:RELATED_HANDLES])
        more = ", …" if len(items) > RELATED_HANDLES else ""
        parts.append(f"{_RELATION_TAGS.get(relation, relation)} {len(items)}: {handles}{more}")
    return f" [{'; '.join(parts)}]" if parts else ""


def _index_decision(hit: dict[str, Any], name: Callable[[str], str], tag: str = "") -> str:
    subject = one_line(hit["subject"], INDEX_SUBJECT_CHARS)
    return f"- {name(hit['id'])} {subject}: {one_line(hit['decision'], INDEX_LINE_CHARS)}{tag}"


def _index_evidence(item: dict[str, Any], name: Callable[[str], str]) -> str:
    source = item.get("source")
    kind = source.get("kind") if isinstance(source, dict) else item.get("kind")
    snippet = one_line(item.get("snippet") or item.get("text"), INDEX_LINE_CHARS)
    return f"- {name(item['id'])} {kind} {_day(item.get('created_at'))}: {snippet}"


def _closed_tag(hit: dict[str, Any], name: Callable[[str], str]) -> str:
    """Why a decision no longer holds: its successors' handles, else how it closed."""
    if hit.get("superseded_by"):
        return f" [superseded by {', '.join(name(i) for i in hit['superseded_by'][:RELATED_HANDLES])}]"
    if hit.get("why"):  # a recall's closed match: retired, or closed with no successor in force
        return f" [{one_line(str(hit['why']).removesuffix(': do not apply'), CLOSED_WHY_CHARS)}]"
    return f" [{hit.get('closed_by') or 'closed'}]"


def _namer(names: Mapping[str, str]) -> Callable[[str], str]:
    return lambda record_id: names.get(record_id, record_id)


def recall(data: dict[str, Any], names: Mapping[str, str]) -> str:
    """An index of the hits, by handle: decisions in force with tags naming what contradicts them,
    closed matches, then unratified evidence."""
    name = _namer(names)
    lines: list[str] = []
    if data["decisions"]:
        lines.append("Decisions in force (ratified: apply these):")
        for hit in data["decisions"]:
            related = [*hit["superseded"], *hit["conflicts"], *hit["pending"]]
            lines.append(_index_decision(hit, name, _related_tag(related, name)))
            if hit.get("stale"):
                lines.append(f"  {one_line(hit['stale'])}")
    else:
        lines.append("No decision in force matches.")
    if data["closed"]:
        lines.append("No longer in force (do not apply):")
        lines.extend(_index_decision(hit, name, _closed_tag(hit, name)) for hit in data["closed"])
    if data["evidence"]:
        lines.append("Evidence (unratified: context, not decisions):")
        lines.extend(_index_evidence(item, name) for item in data["evidence"])
    vectors = data["vectors"]
    if vectors["state"] not in ("on", "unused"):
        lines.append(f"Vectors {vectors['state']}: {one_line(vectors.get('note'), 120)}")
    lines.append(INDEX_HINT)
    if any(hit["superseded"] or hit["conflicts"] or hit["pending"] for hit in data["decisions"]):
        lines.append(TAGS_HINT)
    return _join(lines)


def search(data: dict[str, Any], names: Mapping[str, str]) -> str:
    """Keyword hits as an index in two sections: ratified decisions, unratified evidence."""
    name = _namer(names)
    lines = ["Decisions:" if data["decisions"] else "No decision matches."]
    for hit in data["decisions"]:
        tag = "" if hit.get("current") else _closed_tag(hit, name)
        lines.append(_index_decision(hit, name, tag))
    if data["evidence"]:
        lines.append("Evidence (unratified: context, not decisions):")
        lines.extend(_index_evidence(item, name) for item in data["evidence"])
    lines.append(INDEX_HINT)
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
# The answers that name records by handle: they take the handles of ``index_ids(data)`` as well.
INDEXES: dict[str, Callable[[dict[str, Any], Mapping[str, str]], str]] = {"recall": recall, "search": search}
