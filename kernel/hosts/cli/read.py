"""Commands that read: decisions, queue, history, evidence, show, search, recall, inject.

Each is made from its operation's declaration (``kernel/hosts/operations.py``); this module says
only how each answer reads to a person.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import click

from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.hosts.cli.base import _decision_line, _emit_json, _proposal_line, _say
from ctx_kernel.kernel.hosts.cli.operations import operation_command

if TYPE_CHECKING:
    from ctx_kernel.kernel.facade import Ctx, Decision, Evidence, Proposal
    from ctx_kernel.kernel.inputs import (
        DecisionsArgs,
        EvidenceArgs,
        HistoryArgs,
        InjectArgs,
        QueueArgs,
        RecallArgs,
        SearchArgs,
        ShowArgs,
        TimelineArgs,
    )
    from ctx_kernel.kernel.recall.inject import Injection
    from ctx_kernel.kernel.recall.results import Recall
    from ctx_kernel.kernel.records import History, SearchResults, Timeline

# Characters of an evidence text shown on its line in `ctx evidence` (`ctx show ID` prints it whole).
EVIDENCE_LINE_CHARS = 100


def _decisions(ctx: Ctx, _args: DecisionsArgs, found: list[Decision]) -> None:
    if not found:
        _say("no decisions")
    names = ctx.handles(d.id for d in found)
    for decision in found:
        _say(_decision_line(decision, names))


operation_command("decisions", _decisions)


def _queue(ctx: Ctx, _args: QueueArgs, found: list[Proposal]) -> None:
    if not found:
        _say("no pending proposals")
    names = ctx.handles(
        i
        for p in found
        for i in (
            p.id,
            *p.supersedes,
            *([p.near_duplicate_of] if p.near_duplicate_of else []),
            *([p.reconfirms] if p.reconfirms else []),
        )
    )
    from ctx_kernel.kernel.hosts.cli.stale import request_lines  # noqa: PLC0415 - one command's module

    requests = request_lines(ctx, found)
    for proposal in found:
        _say(_proposal_line(proposal, names))
        for line in requests.get(proposal.id, []):
            _say(f"    {line}")


operation_command("queue", _queue)


def _history(ctx: Ctx, _args: HistoryArgs, found: History) -> None:
    names = ctx.handles(
        [*(i for d in found.decisions for i in (d.id, *d.supersedes)), *(p.id for p in found.proposals)]
    )
    # One timeline, oldest first: a decision at the start of its window, a proposal when it was made.
    timeline = sorted(
        [(d.valid_from, "decision", i) for i, d in enumerate(found.decisions)]
        + [(p.created_at, "proposal", i) for i, p in enumerate(found.proposals)]
    )
    for _, kind, index in timeline:
        if kind == "decision":
            _decision_entry(ctx, found.decisions[index], names)
        else:
            _closed_proposal_entry(found.proposals[index], names)


def _closed_proposal_entry(proposal: Proposal, names: dict[str, str]) -> None:
    """A rejected or withdrawn proposal in a history: marked, and never in force."""
    when = (proposal.resolved_at or "?")[:19]
    _say(
        f"{names.get(proposal.id, proposal.id)}  {proposal.subject}  [{proposal.status} by "
        f"{proposal.resolved_by}, {when}; proposed by {proposal.proposer}, never in force]"
    )
    _say(f"    {proposal.decision}")
    if proposal.resolution_note:
        _say(f"    reason: {proposal.resolution_note}")


def _decision_entry(ctx: Ctx, decision: Decision, names: dict[str, str]) -> None:
    """A decision of the chain with its title, deciders, links, amendment and retirement."""
    _say(_decision_line(decision, names))
    if decision.title:
        _say(f"    title: {decision.title}")
    if decision.deciders:
        _say(f"    deciders: {', '.join(decision.deciders)} (ratified by {decision.ratified_by})")
    for old in decision.supersedes:
        _say(f"    supersedes {names.get(old, old)}")
    if decision.amended and decision.proposal_id:
        from ctx_kernel.kernel.facade import plain_diff  # noqa: PLC0415

        proposed = ctx.proposal(decision.proposal_id).decision
        _say(f"    amended by {decision.ratified_by}: {plain_diff(proposed, decision.decision)}")
    if decision.closed_by == "retired":
        _say(f"    retired: {decision.close_reason}")


operation_command("history", _history)


def _evidence(ctx: Ctx, _args: EvidenceArgs, found: list[Evidence]) -> None:
    if not found:
        _say("no evidence")
    names = ctx.handles(e.id for e in found)
    for item in found:
        flat = " ".join(item.text.split())
        cut = flat if len(flat) <= EVIDENCE_LINE_CHARS else flat[: EVIDENCE_LINE_CHARS - 1].rstrip() + "…"
        when = item.created_at[:16].replace("T", " ")
        _say(f"{names.get(item.id, item.id)}  {when}  {item.kind}  {item.agent or '?'}  {cut}")


operation_command("evidence", _evidence)


def _show(ctx: Ctx, _args: ShowArgs, record: Evidence | Proposal | Decision) -> None:
    for key, value in record.to_dict().items():
        if value not in (None, [], ""):
            _say(f"{key}: {value}")
    if getattr(record, "reconfirms", None) is not None:
        from ctx_kernel.kernel.hosts.cli.stale import request_lines  # noqa: PLC0415

        for line in request_lines(ctx, [cast("Proposal", record)]).get(record.id, []):
            _say(f"  {line}")


operation_command("show", _show)


def _search(ctx: Ctx, _args: SearchArgs, results: SearchResults) -> None:
    names = ctx.handles(
        [*(m.decision.id for m in results.decisions), *(f.evidence.id for f in results.evidence)]
    )
    _say("Decisions (ratified):")
    for match in results.decisions:
        _say("  " + _decision_line(match.decision, names).replace("\n", "\n  "))
    if not results.decisions:
        _say("  none")
    _say("Evidence (unratified):")
    for found in results.evidence:
        _say(f"  {names[found.evidence.id]}  {found.evidence.kind}  {found.snippet}")
    if not results.evidence:
        _say("  none")


operation_command("search", _search)


def _explain(
    scores: dict[str, Any],
    rrf: float | None = None,
    combsum: bool = False,
    timed: bool = False,
    asking: bool = False,
    dated: bool = False,
) -> str:
    """Each ranker's raw score and rank, and the fused score with how it was made."""
    parts = []
    labels = {"keyword": "bm25", "entity": "entity", "vector": "cosine"}
    for name, score in scores.items():
        if score is None:
            continue
        detail = f": {score.detail}" if score.detail else ""
        parts.append(f"{name} #{score.rank} ({labels[name]} {score.score:.4g}{detail})")
    if combsum and rrf is not None:
        # kernel/recall/fusion.py: CombSUM of min-max normalised scores, the neighbour share, and
        # a text that ends in a question halved.
        parts.append(
            f"fused {rrf:.3f} (each ranker's score scaled to 0-1 within its list, summed; "
            "a text logged next to a strong hit in the same session also gets half of that hit's, "
            "two away a quarter)"
        )
        if timed:
            parts.append("+1: the question asks when and this text states a time")
        if dated:
            parts.append("+1: the question names a day or a month and this text happened then")
        if asking:
            parts.append("halved: this text ends in a question, so it asks rather than answers")
        if not any(score is not None for score in scores.values()):
            return f"no ranker matched it directly; it was logged next to a strong hit · {parts[-1]}"
    elif rrf is not None:
        parts.append(f"rrf {rrf:.4f} (sum of weight / (rrf-k + rank) over the rankers)")
    return " · ".join(parts) or "no ranker matched it directly"


def _recall_ids(found: Recall) -> list[str]:
    """Every id a recall's answer shows."""
    shown = [c.decision.id for c in found.closed] + [e.evidence.id for e in found.evidence]
    for hit in found.decisions:
        shown += [hit.decision.id, *([hit.via] if hit.via else [])]
        shown += [r.id for r in (*hit.superseded, *hit.conflicts, *hit.pending)]
    return shown


def _recall(ctx: Ctx, args: RecallArgs, found: Recall, *, explain: bool) -> None:
    from ctx_kernel.kernel.recall import fusion  # noqa: PLC0415

    name = ctx.handles(_recall_ids(found)).get
    moment = f"at {found.as_of[:19]}" if found.as_of else "now"
    _say(f"Decisions (ratified, in force {moment}):")
    for hit in found.decisions:
        d = hit.decision
        _say(f"  {hit.rank}. {name(d.id, d.id)}  {d.subject}  [since {d.valid_from[:10]}]")
        _say(f"     {d.decision}")
        if hit.via:
            _say(f"     (its superseded predecessor {name(hit.via, hit.via)} matched the query)")
        if hit.stale:
            _say(f"     ! {hit.stale}")
        for related in [*hit.superseded, *hit.conflicts, *hit.pending]:
            flag = f"{related.warning}: " if related.warning else ""
            _say(f"     ! {flag}{name(related.id, related.id)} {related.subject}: {related.text}")
            _say(f"       why: {related.why}")
        if explain:
            _say(f"     explain: {_explain(hit.scores, hit.rrf)}")
    if not found.decisions:
        _say("  none")
    if found.closed:
        _say("No longer in force (do not apply):")
        for closed in found.closed:
            gone = closed.decision
            _say(f"  {name(gone.id, gone.id)}  {gone.subject}: {gone.decision}")
            _say(f"     why: {closed.why}")
    _say("Evidence (unratified, not decisions):")
    asks_when = found.mode == "hybrid" and fusion.asks_when(args.query)
    periods = fusion.periods_named(args.query) if found.mode == "hybrid" else []
    for ev in found.evidence:
        _say(
            f"  {ev.rank}. {name(ev.evidence.id, ev.evidence.id)}  {ev.evidence.kind}  "
            f"{ev.evidence.created_at[:10]}  {ev.snippet}"
        )
        if explain:
            hybrid = found.mode == "hybrid"
            timed = asks_when and fusion.states_time(ev.evidence.text)
            asking = hybrid and fusion.asks(ev.evidence.text)
            happened = ev.evidence.occurred_at or ev.evidence.created_at
            dated = bool(periods) and fusion.within(happened, periods)
            explained = _explain(ev.scores, ev.rrf, combsum=hybrid, timed=timed, asking=asking, dated=dated)
            _say(f"     explain: {explained}")
    if not found.evidence:
        _say("  none")


def _vectors_note(found: Recall) -> str | None:
    return found.vectors.note if found.vectors.note and found.vectors.state in ("off", "partial") else None


def _minimums(_context: click.Context, _param: click.Parameter, pairs: tuple[str, ...]) -> dict[str, float]:
    """``--min RANKER=SCORE`` options as a ranker -> lowest raw score map."""
    min_scores: dict[str, float] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        try:
            min_scores[name.strip()] = float(value)
        except ValueError:
            raise UsageError(f"--min takes RANKER=SCORE, e.g. vector=0.4, not {pair!r}") from None
        if not math.isfinite(min_scores[name.strip()]):
            raise UsageError(f"--min takes a finite score, not {pair!r}")
    return min_scores


operation_command(
    "recall",
    _recall,
    extra=[
        click.option(
            "--min",
            "min_scores",
            multiple=True,
            metavar="RANKER=SCORE",
            callback=_minimums,
            help="Drop a ranker's hits below this raw score, e.g. vector=0.4 (cosine); repeat per ranker.",
        ),
        click.option("--explain", is_flag=True, help="Show each ranker's raw score and rank per hit."),
    ],
    note=_vectors_note,
)


def _inject_served(
    ctx: Ctx,
    args: InjectArgs,
    block: Injection,
    *,
    record: bool,
    agent: str | None,
    session: str | None,
    **_: Any,
) -> str | None:
    """Record the block when an agent runs the command or it is asked for; a person's is not logged."""
    if not (record or agent or session):
        return None
    who = agent or "cli"
    return ctx.served.record(
        host="shell", agent=who, session=session, operation="inject", arguments=args, result=block
    )


def _inject(_ctx: Ctx, _args: InjectArgs, block: Injection, *, fmt: str, **_served: Any) -> None:
    if fmt == "json":
        _emit_json(block.to_dict())
    else:
        _say(block.markdown, nl=False)


operation_command(
    "inject",
    _inject,
    extra=[
        click.option(
            "--format",
            "fmt",
            type=click.Choice(["markdown", "json"]),
            default="markdown",
            show_default=True,
            help="Markdown for an agent's context, or JSON (schemas/inject.schema.json).",
        ),
        click.option(
            "--record",
            is_flag=True,
            help="Record the block in the served log (ctx audit served); done anyway when an agent "
            "runs it (CTX_AGENT or CTX_SESSION set).",
        ),
        click.option("--agent", envvar="CTX_AGENT", help="The agent it is served to (default: CTX_AGENT)."),
        click.option(
            "--session", envvar="CTX_SESSION", help="The session it is served to (default: CTX_SESSION)."
        ),
    ],
    served=_inject_served,
)


def _timeline(ctx: Ctx, _args: TimelineArgs, told: Timeline) -> None:
    names = ctx.handles(entry.id for entry in told.entries)
    _say(f"{told.subject}, oldest first:")
    if told.omitted_before:
        _say(f"  ... {told.omitted_before} earlier (--around shows more)")
    for entry in told.entries:
        mark = ">" if entry.focus else " "
        when = entry.at[:16].replace("T", " ")
        _say(f"{mark} {when}  {entry.event:<10} {names[entry.id]:<8} {entry.text}")
    if told.omitted_after:
        _say(f"  ... {told.omitted_after} later")


operation_command("timeline", _timeline)
