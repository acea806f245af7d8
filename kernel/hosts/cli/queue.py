"""The proposal queue: propose, ratify, reject, withdraw, retire."""

from __future__ import annotations

import getpass
from typing import TYPE_CHECKING, Any

import click

from ctx_kernel.kernel import text
from ctx_kernel.kernel.capture.json_input import read_json
from ctx_kernel.kernel.errors import StalePlanError, UsageError
from ctx_kernel.kernel.facts.links import check_review
from ctx_kernel.kernel.hosts.cli.base import (
    _check_utf8,
    _complete_pending,
    _complete_subject,
    _confirm,
    _emit_json,
    _reviewer,
    _say,
    _with_store,
    cli,
)
from ctx_kernel.kernel.limits import MAX_JSON_INPUT_BYTES

if TYPE_CHECKING:
    from ctx_kernel.kernel.facade import Ctx


@cli.command()
@click.option("--subject", help="Dotted subject, e.g. auth.tokens.")
@click.option("--decision", help="The decision, one or two sentences.")
@click.option("--rationale", help="Why.")
@click.option("--title", help="A short title, as an ADR's heading (kept on ADR export).")
@click.option("--evidence", "evidence", multiple=True, metavar="ID", help="Cited evidence id; repeat.")
@click.option("--supersedes", multiple=True, metavar="ID", help="Decision id it replaces; repeat.")
@click.option(
    "--reconfirm",
    "reconfirms",
    metavar="ID",
    help="Instead: ask a person to re-confirm this current decision as it stands (no --subject or "
    "--decision; give --rationale and --evidence).",
)
@click.option(
    "--link",
    "links",
    multiple=True,
    metavar="PATTERN",
    help="A path or glob from the repository root it governs (kernel/store/**, a.py#Name); repeat.",
)
@click.option(
    "--agent",
    "--proposer",
    "proposer",
    envvar="CTX_AGENT",
    help="Who proposes: the agent's name, as in ctx log (default: CTX_AGENT, else the user).",
)
@click.option("--session", envvar="CTX_SESSION", help="Session id (default: CTX_SESSION).")
@click.option(
    "--input",
    "input_file",
    type=click.File("rb"),
    metavar="FILE|-",
    help="Read the proposal as JSON (schemas/propose-input.schema.json) from a file or -.",
)
@click.option(
    "--json",
    "json_option",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="",
    help="Print the queued proposal as JSON (schemas/proposal.schema.json).",
)
@click.option("--json-out", "json_out", is_flag=True, hidden=True, help="Deprecated: use --json.")
@_with_store
def propose(
    ctx: Ctx,
    subject: str | None,
    decision: str | None,
    rationale: str | None,
    title: str | None,
    evidence: tuple[str, ...],
    supersedes: tuple[str, ...],
    reconfirms: str | None,
    links: tuple[str, ...],
    proposer: str | None,
    session: str | None,
    input_file: Any,
    json_option: str | None,
    json_out: bool,
) -> None:
    """Queue a decision for a person to ratify. By default it supersedes the subject's current one.

    --reconfirm ID asks a person to re-confirm a current decision instead (it still holds after the
    code its links govern changed): ratifying the request re-confirms it, as ctx reconfirm does.

    --input reads the whole proposal as a JSON document; --json prints the result as JSON, as on
    every command. (The earlier spellings --json FILE for input and --json-out still work, with a
    note, until the next release.)
    """
    as_json = json_out or json_option == ""
    json_input = input_file
    if json_out:
        _say("ctx: --json-out is deprecated: use --json", err=True)
    if json_option:
        if json_input is not None:
            raise UsageError("give one input: --input FILE")
        try:
            json_input = click.open_file(json_option, "rb")
        except OSError as exc:
            raise UsageError(f"cannot read {json_option}: {exc.strerror or exc}") from None
        _say(f"ctx: --json {json_option} is deprecated for input: use --input {json_option}", err=True)
    fields: dict[str, Any] = {
        "subject": subject,
        "decision": decision,
        "rationale": rationale,
        "title": title,
        "evidence": list(evidence),
        "supersedes": list(supersedes),
        "links": list(links),
        "proposer": proposer,
        "session": session,
        "reconfirms": reconfirms,
    }
    if json_input is not None:
        named = ("subject", "decision", "rationale", "title", "reconfirms")
        given = [name for name in named if fields[name] is not None]
        given += [name for name in ("evidence", "supersedes", "links") if fields[name]]
        if given:
            raise UsageError(f"give the proposal either as --input or as options, not both (--{given[0]})")
        fields = _propose_document(json_input.read(MAX_JSON_INPUT_BYTES + 1))
        fields["proposer"] = fields.get("proposer") or proposer
        fields["session"] = fields.get("session") or session
    _check_proposed(fields)
    for key in ("subject", "decision", "rationale", "title"):
        if fields.get(key) is not None:
            _check_utf8(fields[key], key)
    fields["proposer"] = ctx.actor(fields.get("proposer"), f"cli:{getpass.getuser()}", "proposer")
    proposal = ctx.propose(**fields)
    if as_json:
        _emit_json(proposal.to_dict())
        return
    _say(proposal.id)
    if proposal.reconfirms:
        _say(f"asks a person to re-confirm {proposal.reconfirms} ({proposal.subject})", err=True)
    if proposal.supersedes:
        _say(f"would supersede: {', '.join(proposal.supersedes)}", err=True)
    if proposal.near_duplicate_of:
        _say(
            f"near-duplicate of pending {proposal.near_duplicate_of} "
            f"(similarity {proposal.near_duplicate_score:.0f})",
            err=True,
        )


def _check_proposed(fields: dict[str, Any]) -> None:
    """Refuse a proposal that lacks its text, or a request to re-confirm that restates it."""
    if fields.get("reconfirms") is not None:
        for name in ("subject", "decision", "title", "supersedes", "links"):
            if fields.get(name):
                flag = "link" if name == "links" else name
                raise UsageError(f"--reconfirm takes the decision as it stands: give no --{flag}")
        return
    if not fields.get("subject"):
        raise UsageError("missing --subject")
    if not fields.get("decision"):
        raise UsageError("missing --decision")


def _propose_document(raw: bytes) -> dict[str, Any]:
    document = read_json(raw, max_bytes=MAX_JSON_INPUT_BYTES)
    from pydantic import ValidationError  # noqa: PLC0415 - only for JSON input

    from ctx_kernel.kernel.contracts import ProposeInput, first_problem  # noqa: PLC0415

    try:
        return ProposeInput.model_validate(document).model_dump()
    except ValidationError as exc:
        raise UsageError(f"invalid proposal JSON: {first_problem(exc)}") from None


@cli.command()
@click.argument("proposal_id", metavar="ID", shell_complete=_complete_pending)
@click.option("--decision", help="Ratify this amended text instead (the amendment is recorded).")
@click.option("--reviewer", help="Your name (default: CTX_REVIEWER or config; asked on a terminal).")
@click.option(
    "--settle/--no-settle",
    default=True,
    show_default=True,
    help="Close the other proposals of its review group as settled by this one, as ctx review does.",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@click.option("--review-by", "review_by", metavar="DATE", help="Due for review on this date (YYYY-MM-DD).")
@click.option(
    "--review-every", "review_every", metavar="DAYS", help="Due for review this often: 90d, 12w, 6m, 1y."
)
@click.option(
    "--closes",
    "approved_closes",
    multiple=True,
    metavar="ID",
    help="With --yes: also close this current decision, ratified after the proposal was made.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/ratification.schema.json).")
@_with_store
def ratify(
    ctx: Ctx,
    proposal_id: str,
    decision: str | None,
    reviewer: str | None,
    settle: bool,
    yes: bool,
    review_by: str | None,
    review_every: str | None,
    approved_closes: tuple[str, ...],
    as_json: bool,
) -> None:
    """Ratify a pending proposal: it becomes the current decision on its subject.

    It shows exactly what changes (the plan ctx review shows) and carries out that plan, or
    refuses if another reviewer changed the subject in the meantime. With --yes nothing is shown,
    so it approves what the proposal was made against: a current decision ratified since then is
    closed only when named with --closes. A request to re-confirm a decision (ctx propose
    --reconfirm) is ratified by re-confirming that decision, as ctx reconfirm does: no new decision.
    """
    check_review(review_by, review_every)
    plan = ctx.plan_ratification(proposal_id, decision=decision, settle=None if settle else [])
    name = _reviewer(ctx, reviewer, yes, "ratifying")
    if yes:
        approved = {ctx.resolve_id(d, "decision") for d in approved_closes}
        for unseen in plan.closes_unseen():
            if unseen.id not in approved:
                raise StalePlanError(
                    f"not ratified: {unseen.subject} now has current decision {unseen.id}, ratified by "
                    f"{text.visible(unseen.ratified_by)} at {unseen.ratified_at[:19]}, after "
                    f"{plan.proposal.id} was proposed; run `ctx ratify {plan.proposal.id}` to see the "
                    f"plan, or add --closes {unseen.id}"
                )
    if not yes:
        _say(f"Ratifying {plan.proposal.id} by {plan.proposal.proposer}:", err=True)
        for line in plan.lines():
            _say(f"  {line}", err=True)
    _confirm(f"Ratify {plan.proposal.id} as {name}?", yes)
    result = ctx.ratify(plan, reviewer=name, review_by=review_by, review_every=review_every)
    if as_json:
        _emit_json(result.to_dict())
        return
    if result.reconfirmed:
        _say(f"re-confirmed {result.decision.id}")
        return
    _say(result.decision.id)
    for old in result.superseded:
        _say(f"superseded {old}", err=True)
    for other in result.settled:
        _say(f"settled {other}", err=True)


@cli.command()
@click.argument("proposal_id", metavar="ID", shell_complete=_complete_pending)
@click.option("--reason", required=True, help="Why it is rejected (kept for audit).")
@click.option("--reviewer", help="Your name (default: CTX_REVIEWER or config; asked on a terminal).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the proposal as JSON (schemas/proposal.schema.json)."
)
@_with_store
def reject(ctx: Ctx, proposal_id: str, reason: str, reviewer: str | None, yes: bool, as_json: bool) -> None:
    """Reject a pending proposal with a reason."""
    proposal = ctx.pending(proposal_id)
    name = _reviewer(ctx, reviewer, yes, "rejecting")
    if not yes:
        _say(f"{proposal.id} on {proposal.subject} by {proposal.proposer}:\n  {proposal.decision}", err=True)
    _confirm(f"Reject {proposal.id} ({proposal.subject}) as {name}?", yes)
    rejected = ctx.reject(proposal.id, reviewer=name, reason=_check_utf8(reason, "reason"))
    if as_json:
        _emit_json(rejected.to_dict())
        return
    _say(f"rejected {proposal.id}")


@cli.command()
@click.argument("proposal_id", metavar="ID", shell_complete=_complete_pending)
@click.option("--reason", help="Why it is withdrawn.")
@click.option(
    "--agent",
    "--actor",
    "actor",
    envvar="CTX_AGENT",
    help="Who withdraws it (default: CTX_AGENT, else the user).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the proposal as JSON (schemas/proposal.schema.json)."
)
@_with_store
def withdraw(ctx: Ctx, proposal_id: str, reason: str | None, actor: str | None, as_json: bool) -> None:
    """Withdraw a pending proposal."""
    withdrawn = ctx.withdraw(
        proposal_id, actor=ctx.actor(actor, f"cli:{getpass.getuser()}", "agent"), reason=reason
    )
    if as_json:
        _emit_json(withdrawn.to_dict())
        return
    _say(f"withdrawn {withdrawn.id}")


@cli.command()
@click.argument("subject", shell_complete=_complete_subject)
@click.option("--reason", required=True, help="Why the decision no longer holds.")
@click.option("--reviewer", help="Your name (default: CTX_REVIEWER or config; asked on a terminal).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the decision as JSON (schemas/decision.schema.json)."
)
@_with_store
def retire(ctx: Ctx, subject: str, reason: str, reviewer: str | None, yes: bool, as_json: bool) -> None:
    """Close the current decision on SUBJECT with no successor."""
    name = _reviewer(ctx, reviewer, yes, "retiring")
    if not yes:
        for current in ctx.decisions(subject):
            if current.subject == text.normalise_subject(subject):
                _say(f"{current.id} on {current.subject}:\n  {current.decision}", err=True)
    _confirm(f"Retire the current decision on {text.normalise_subject(subject)} as {name}?", yes)
    decision = ctx.retire(subject, reviewer=name, reason=reason)
    if as_json:
        _emit_json(decision.to_dict())
        return
    _say(f"retired {decision.id}")
