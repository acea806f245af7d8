"""How kernel records look on screen: rows, badges, ages, windows and word diffs (no Textual here)."""

from __future__ import annotations

import contextlib
import json
from datetime import datetime

from rich.text import Text

from ctx_kernel.kernel.facade import (
    STALE_AFTER,
    AuditEvent,
    Decision,
    QueueEntry,
    age,
    json_visible,
    short_age,
    visible,
    word_diff,
)
from ctx_kernel.tui.widgets.rows import Row

# Ages past half the stale limit turn amber, past it red: a queue left to rot should look like it.
AGING_AFTER = STALE_AFTER / 2


def age_text(stamp: str, now: datetime) -> Text:
    """A proposal's age, coloured by how stale it is."""
    delta = age(stamp, now)
    style = "bold red" if delta >= STALE_AFTER else "yellow" if delta >= AGING_AFTER else ""
    return Text(short_age(delta), style=style)


def is_stale(stamp: str, now: datetime) -> bool:
    """True past the stale limit."""
    return age(stamp, now) >= STALE_AFTER


def badges(entry: QueueEntry, contradicts: int | None) -> Text:
    """Short markers: a request to re-confirm, supersedes, contradicts (… while unchecked),
    near-duplicate, group size."""
    out = Text(no_wrap=True)
    if entry.proposal.reconfirms is not None:
        out.append("reconf ", style="bold green")
    if entry.supersedes:
        out.append("sup ", style="cyan")
    if contradicts is None:
        out.append("… ", style="dim")
    elif contradicts:
        out.append("contra ", style="bold magenta")
    if entry.proposal.near_duplicate_of:
        out.append("dup ", style="yellow")
    if entry.group_size > 1:
        out.append(f"×{entry.group_size}", style="bold")
    return out


def queue_row(entry: QueueEntry, now: datetime, *, selected: bool, contradicts: int | None) -> Row:
    """One line of the queue."""
    proposal = entry.proposal
    return Row(
        proposal.id,
        (
            Text("✓" if selected else " ", style="bold green"),
            age_text(proposal.created_at, now),
            Text(visible(proposal.subject), style="bold"),
            Text(visible(proposal.proposer)),
            badges(entry, contradicts),
            Text(one_line(proposal.decision)),
        ),
    )


def window(decision: Decision) -> str:
    """``2026-01-02 → now`` or ``2026-01-02 → 2026-03-04``."""
    end = decision.valid_until[:10] if decision.valid_until else "now"
    return f"{decision.valid_from[:10]} → {end}"


def state(decision: Decision) -> Text:
    """current / superseded / retired, coloured."""
    if decision.current:
        return Text("current", style="bold green")
    return Text(visible(decision.closed_by or "closed"), style="red")


def one_line(text: str) -> str:
    """Stored text on one line, hidden characters spelled out."""
    return visible(" ".join(text.split()))


def diff_text(old: str, new: str) -> Text:
    """A word diff like ``git diff --word-diff``: ``[-removed-]`` in red, ``{+added+}`` in green."""
    out = Text()
    for op, piece in word_diff(old, new):
        if op == "=":
            out.append(visible(piece))
        elif op == "-":
            out.append(f"[-{visible(piece)}-]", style="red strike")
        else:
            out.append(f"{{+{visible(piece)}+}}", style="bold green")
    return out


def audit_row(event: AuditEvent) -> str:
    """An audit row as indented JSON, its before and after payloads as the objects they hold.

    The store keeps each payload as a JSON text; dumped as it is, it would read as one long string
    of escaped quotes. A payload that does not parse (a store changed by hand) stays a string.
    """
    row = event.to_dict()
    for name in ("before", "after"):
        payload = row[name]
        if isinstance(payload, str):
            with contextlib.suppress(ValueError):
                row[name] = json.loads(payload)
    return json_visible(json.dumps(row, indent=2, ensure_ascii=False))
