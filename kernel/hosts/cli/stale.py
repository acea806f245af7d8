"""Decisions that may no longer hold: stale (what changed under their links) and reconfirm."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ctx_kernel.kernel import text
from ctx_kernel.kernel.hosts.cli.base import _confirm, _emit_json, _reviewer, _say, _with_store, cli

if TYPE_CHECKING:
    from ctx_kernel.kernel.facade import Ctx, Proposal
    from ctx_kernel.kernel.reports import StaleDecision


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/stale.schema.json).")
@_with_store
def stale(ctx: Ctx, as_json: bool) -> None:
    """List current decisions whose linked code changed since a person ratified or re-confirmed
    them, whose links match nothing any more, or whose review date has passed.

    Worked out from the git checkout of the working folder (committed changes, HEAD), in one pass
    over its history since the decisions' snapshots, cached by HEAD.
    """
    report = ctx.staleness.report()
    if as_json:
        _emit_json(report.to_dict())
        return
    if report.note:
        _say(f"ctx: {report.note}", err=True)
    for item in report.stale:
        _say(_heading(ctx, item))
        for detail in _details(item):
            _say(f"  {detail}")
    compared = f" against {report.head[:12]}" if report.head else ""
    _say(
        f"{text.plural(len(report.stale), 'decision')} may be stale, of {report.checked} with links "
        f"or a review date{compared}",
        err=True,
    )


def _heading(ctx: Ctx, item: StaleDecision) -> str:
    handle = ctx.handles([item.decision_id]).get(item.decision_id, item.decision_id)
    return (
        f"{handle}  {item.subject}: {text.visible(text.clip(item.decision, 80))}\n  {text.visible(item.line)}"
    )


def request_lines(ctx: Ctx, proposals: list[Proposal]) -> dict[str, list[str]]:
    """For each pending request to re-confirm among ``proposals``, what changed under its decision's
    links and by whom (``ctx stale``'s lines), or that nothing did; git is asked only when there is one."""
    asked = {p.id: p.reconfirms for p in proposals if p.reconfirms and p.status == "pending"}
    if not asked:
        return {}
    stale = {item.decision_id: item for item in ctx.staleness.report().stale}
    out: dict[str, list[str]] = {}
    for proposal_id, decision_id in asked.items():
        item = stale.get(decision_id or "")
        out[proposal_id] = (
            ["not stale now: nothing changed under its links since it was last confirmed"]
            if item is None
            else [text.visible(item.line), *_details(item)[:1]]
        )
    return out


def _details(item: StaleDecision) -> list[str]:
    out = []
    if item.commits:
        authors = ", ".join(text.visible(a) for a in item.authors[:5])
        more = f" and {len(item.authors) - 5} more" if len(item.authors) > 5 else ""
        changed = text.plural(item.files_changed, "path")
        out.append(f"{text.plural(item.commits, 'commit')} by {authors}{more}; {changed} changed")
    for path in item.paths[:10]:
        out.append(f"M {text.visible(path)}")
    out.extend(f"R {text.visible(r)}" for r in item.renamed[:10])
    out.extend(f"D {text.visible(d)}" for d in item.deleted[:10])
    confirmed = f"confirmed by {text.visible(item.confirmed_by)} at {item.confirmed_at[:19]}"
    out.append(confirmed + (f" ({item.snapshot_commit[:12]})" if item.snapshot_commit else ""))
    return out


@cli.command()
@click.argument("decision_id", metavar="ID")
@click.option("--reviewer", help="Your name (default: CTX_REVIEWER or config; asked on a terminal).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@click.option(
    "--review-by", "review_by", metavar="DATE", help="Due for review again on this date (YYYY-MM-DD)."
)
@click.option(
    "--review-every", "review_every", metavar="DAYS", help="Due for review this often: 90d, 12w, 6m, 1y."
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the new snapshot as JSON (schemas/snapshot.schema.json)."
)
@_with_store
def reconfirm(
    ctx: Ctx,
    decision_id: str,
    reviewer: str | None,
    yes: bool,
    review_by: str | None,
    review_every: str | None,
    as_json: bool,
) -> None:
    """Confirm that a current decision still holds after what changed under its links: a person's
    act, audited, with a new snapshot of the git checkout (its staleness marker goes away).

    It shows what changed since the last confirmation and records exactly that, or refuses if the
    decision, its snapshot or HEAD changed in the meantime.
    """
    plan = ctx.plan_reconfirmation(decision_id, review_by=review_by, review_every=review_every)
    name = _reviewer(ctx, reviewer, yes, "re-confirming")
    if not yes:
        for line in plan.lines():
            _say(f"  {line}", err=True)
    _confirm(f"Re-confirm {plan.decision.id} ({plan.decision.subject}) as {name}?", yes)
    snapshot = ctx.reconfirm(plan, reviewer=name)
    if as_json:
        _emit_json(snapshot.to_dict())
        return
    _say(f"re-confirmed {plan.decision.id}")
