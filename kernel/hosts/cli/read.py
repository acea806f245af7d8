"""Commands that read decisions and evidence: decisions, history, show, search, recall, inject."""

from __future__ import annotations

import math
from typing import Any

import click

from ctx_kernel.kernel import envelopes
from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.facade import Ctx, plain_diff
from ctx_kernel.kernel.hosts.cli.base import (
    _check_utf8,
    _complete_pending,
    _complete_subject,
    _decision_line,
    _emit_json,
    _say,
    _with_store,
    cli,
)
from ctx_kernel.kernel.limits import (
    DEFAULT_BUDGET,
    DEFAULT_MODE,
    DEFAULT_RRF_K,
    MAX_BUDGET,
    MAX_RECALL_K,
    MAX_RRF_K,
    MIN_BUDGET,
    RECALL_MODES,
)
from ctx_kernel.kernel.recall import fusion


@cli.command()
@click.option("--subject", help="Only this subject and its sub-subjects.")
@click.option("--as-of", "as_of", metavar="DATE", help="Decisions valid at DATE (a bare date means its end).")
@click.option("--all", "include_closed", is_flag=True, help="Include superseded and retired decisions.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/decisions.schema.json).")
@_with_store
def decisions(ctx: Ctx, subject: str | None, as_of: str | None, include_closed: bool, as_json: bool) -> None:
    """List current decisions (or those valid at a date, or all)."""
    found = ctx.decisions(subject, as_of=as_of, include_closed=include_closed)
    if as_json:
        _emit_json(envelopes.decisions(found, as_of))
        return
    if not found:
        _say("no decisions")
    for decision in found:
        _say(_decision_line(decision))


@cli.command()
@click.argument("subject", shell_complete=_complete_subject)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/history.schema.json).")
@_with_store
def history(ctx: Ctx, subject: str, as_json: bool) -> None:
    """Show SUBJECT's supersede chain with validity windows, oldest first."""
    chain = ctx.history(subject)
    if as_json:
        _emit_json(envelopes.history(subject, chain))
        return
    for decision in chain:
        _say(_decision_line(decision))
        if decision.title:
            _say(f"    title: {decision.title}")
        if decision.deciders:
            _say(f"    deciders: {', '.join(decision.deciders)} (ratified by {decision.ratified_by})")
        for old in decision.supersedes:
            _say(f"    supersedes {old}")
        if decision.amended and decision.proposal_id:
            proposed = ctx.proposal(decision.proposal_id).decision
            _say(f"    amended by {decision.ratified_by}: {plain_diff(proposed, decision.decision)}")
        if decision.closed_by == "retired":
            _say(f"    retired: {decision.close_reason}")


@cli.command()
@click.argument("item_id", metavar="ID", shell_complete=_complete_pending)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/show.schema.json).")
@_with_store
def show(ctx: Ctx, item_id: str, as_json: bool) -> None:
    """Show one evidence text, proposal or decision by id."""
    record = ctx.show(item_id)
    if as_json:
        _emit_json(envelopes.show(record))
        return
    for key, value in record.to_dict().items():
        if value not in (None, [], ""):
            _say(f"{key}: {value}")


@cli.command()
@click.argument("query")
@click.option(
    "--limit", default=10, show_default=True, type=click.IntRange(1, 1000), help="Hits per section."
)
@click.option("--as-of", "as_of", metavar="DATE", help="Search decisions valid at DATE.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/search.schema.json).")
@_with_store
def search(ctx: Ctx, query: str, limit: int, as_of: str | None, as_json: bool) -> None:
    """Keyword search: ratified decisions and unratified evidence, in two sections."""
    results = ctx.search(_check_utf8(query, "query"), limit=limit, as_of=as_of)
    if as_json:
        _emit_json(results.to_dict())
        return
    _say("Decisions (ratified):")
    for match in results.decisions:
        _say("  " + _decision_line(match.decision).replace("\n", "\n  "))
    if not results.decisions:
        _say("  none")
    _say("Evidence (unratified):")
    for found in results.evidence:
        _say(f"  {found.evidence.id}  {found.evidence.kind}  {found.snippet}")
    if not results.evidence:
        _say("  none")


def _explain(
    scores: dict[str, Any],
    rrf: float | None = None,
    combsum: bool = False,
    timed: bool = False,
    asking: bool = False,
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
            "a text logged next to a strong hit in the same session also gets half of that hit's)"
        )
        if timed:
            parts.append("+1: the question asks when and this text states a time")
        if asking:
            parts.append("halved: this text ends in a question, so it asks rather than answers")
        if not any(score is not None for score in scores.values()):
            return f"no ranker matched it directly; it was logged next to a strong hit · {parts[-1]}"
    elif rrf is not None:
        parts.append(f"rrf {rrf:.4f} (sum of weight / (rrf-k + rank) over the rankers)")
    return " · ".join(parts) or "no ranker matched it directly"


@cli.command()
@click.argument("query")
@click.option(
    "--k", "k", default=10, show_default=True, type=click.IntRange(1, MAX_RECALL_K), help="Hits per section."
)
@click.option("--as-of", "as_of", metavar="DATE", help="Answer with the decisions valid at DATE.")
@click.option(
    "--mode",
    type=click.Choice(RECALL_MODES),
    default=DEFAULT_MODE,
    show_default=True,
    help="Which rankers to use; hybrid fuses all three.",
)
@click.option(
    "--rrf-k",
    "rrf_k",
    default=DEFAULT_RRF_K,
    show_default=True,
    type=click.IntRange(1, MAX_RRF_K),
    help=(
        "Reciprocal rank fusion constant (decisions, and evidence in single-ranker modes;"
        " hybrid evidence fuses normalised scores)."
    ),
)
@click.option(
    "--min",
    "minimums",
    multiple=True,
    metavar="RANKER=SCORE",
    help="Drop a ranker's hits below this raw score, e.g. vector=0.4 (cosine); repeat per ranker.",
)
@click.option("--explain", is_flag=True, help="Show each ranker's raw score and rank per hit.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/recall.schema.json).")
@_with_store
def recall(
    ctx: Ctx,
    query: str,
    k: int,
    as_of: str | None,
    mode: str,
    rrf_k: int,
    minimums: tuple[str, ...],
    explain: bool,
    as_json: bool,
) -> None:
    """Decisions in force (with what contradicts them) and unratified evidence, in two sections."""
    found = ctx.recall(
        _check_utf8(query, "query"), k=k, as_of=as_of, mode=mode, rrf_k=rrf_k, min_scores=_minimums(minimums)
    )
    if found.vectors.note and found.vectors.state in ("off", "partial"):
        _say(f"ctx: note: {found.vectors.note}", err=True)
    if as_json:
        _emit_json(found.to_dict())
        return
    moment = f"at {found.as_of[:19]}" if found.as_of else "now"
    _say(f"Decisions (ratified, in force {moment}):")
    for hit in found.decisions:
        d = hit.decision
        _say(f"  {hit.rank}. {d.id}  {d.subject}  [since {d.valid_from[:10]}]")
        _say(f"     {d.decision}")
        if hit.via:
            _say(f"     (its superseded predecessor {hit.via} matched the query)")
        for related in [*hit.superseded, *hit.conflicts, *hit.pending]:
            flag = f"{related.warning}: " if related.warning else ""
            _say(f"     ! {flag}{related.id} {related.subject}: {related.text}")
            _say(f"       why: {related.why}")
        if explain:
            _say(f"     explain: {_explain(hit.scores, hit.rrf)}")
    if not found.decisions:
        _say("  none")
    if found.closed:
        _say("No longer in force (do not apply):")
        for closed in found.closed:
            _say(f"  {closed.decision.id}  {closed.decision.subject}: {closed.decision.decision}")
            _say(f"     why: {closed.why}")
    _say("Evidence (unratified, not decisions):")
    asks_when = found.mode == "hybrid" and fusion.asks_when(query)
    for ev in found.evidence:
        _say(
            f"  {ev.rank}. {ev.evidence.id}  {ev.evidence.kind}  {ev.evidence.created_at[:10]}  {ev.snippet}"
        )
        if explain:
            hybrid = found.mode == "hybrid"
            timed = asks_when and fusion.states_time(ev.evidence.text)
            asking = hybrid and fusion.asks(ev.evidence.text)
            _say(f"     explain: {_explain(ev.scores, ev.rrf, combsum=hybrid, timed=timed, asking=asking)}")
    if not found.evidence:
        _say("  none")


def _minimums(pairs: tuple[str, ...]) -> dict[str, float]:
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


@cli.command()
@click.option("--query", "-q", help="What the session is about (default: every current decision).")
@click.option(
    "--budget",
    default=DEFAULT_BUDGET,
    show_default=True,
    type=click.IntRange(MIN_BUDGET, MAX_BUDGET),
    help="Token budget (1 token ~ 4 characters).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
    help="Markdown for an agent's context, or JSON (schemas/inject.schema.json).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON (schemas/inject.schema.json): --format json."
)
@_with_store
def inject(ctx: Ctx, query: str | None, budget: int, fmt: str, as_json: bool) -> None:
    """Print the context block an agent reads at session start, within a token budget."""
    block = ctx.inject(_check_utf8(query, "query") if query is not None else None, budget=budget)
    if as_json or fmt == "json":
        _emit_json(block.to_dict())
    else:
        _say(block.markdown, nl=False)
