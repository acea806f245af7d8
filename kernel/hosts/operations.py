"""Every operation the hosts offer, each declared once.

An :class:`Operation` names its input record (:mod:`kernel.inputs`), the schema of its JSON answer,
how it runs against the facade and which surfaces offer it. From that one declaration come:

- the MCP tool (``kernel/hosts/mcp.py``): its name, description, annotations and input schema;
- the CLI command (``kernel/hosts/cli/``, :func:`~ctx_kernel.kernel.hosts.cli.base.operation_command`):
  its arguments and options, their help and limits, and ``--json``; the CLI adds only how the answer
  reads to a person;
- the JSON Schemas (``kernel/contracts.py`` builds the input models from the same records) and
  the command reference (``docs/reference.md``, written from the CLI built here).

Adding an operation means an input record, a declaration here, the service method it calls and, if
the store must answer something new, the store port (docs/architecture.md has a worked example).

This module imports neither click nor pydantic: every CLI process loads it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctx_kernel.kernel import envelopes, inputs, text
from ctx_kernel.kernel.errors import RefusedError

if TYPE_CHECKING:
    from ctx_kernel.kernel.facade import Ctx


@dataclass(frozen=True)
class Caller:
    """Who is calling: the name written as proposer or evidence author when the call names none,
    and where their answers are read ("shell": the CLI and hooks; "mcp": an MCP client's tools)."""

    name: str
    session: str | None
    via: str = "shell"


@dataclass(frozen=True)
class Tool:
    """How the MCP server offers an operation."""

    name: str
    title: str
    # What the tool does, for the agent choosing it (the CLI shows the operation's summary).
    description: str
    writes: bool = False
    # Calling it twice with the same arguments has the effect of calling it once.
    idempotent: bool = True


@dataclass(frozen=True)
class Operation:
    """One operation: what it takes, what it answers, how it runs, and where it is offered."""

    # The CLI command's name (and the operation's, in the reference).
    name: str
    # One line: the CLI command's help and the reference's summary.
    summary: str
    arguments: type[Any]
    # The file in ``schemas/`` (without ``.schema.json``) its JSON answer is valid against.
    result: str
    # Runs it on the facade; returns what the facade returned.
    run: Callable[[Ctx, Any, Caller], Any]
    # The JSON answer of that result, for these arguments.
    answer: Callable[[Any, Any], dict[str, Any]]
    tool: Tool | None = None
    # The CLI offers it as ``ctx NAME``, with these fields as positional arguments (the rest are
    # options). False: the CLI's command is written by hand (it reads files or standard input).
    command: bool = True
    positional: tuple[str, ...] = ()


def _as_dict(_args: Any, result: Any) -> dict[str, Any]:
    data: dict[str, Any] = result.to_dict()
    return data


def _same_name(field: str, claimed: str | None, caller: Caller) -> None:
    """Refuse a call that names someone other than the server's agent as its author."""
    if claimed is not None and claimed.strip() and claimed.strip() != caller.name:
        raise RefusedError(
            f"{field} {text.visible(claimed.strip())!r} is not this server's agent {caller.name!r}: "
            "an MCP client acts under the name the server was started with (ctx mcp --agent NAME)"
        )


def _propose(ctx: Ctx, args: inputs.ProposeArgs, caller: Caller) -> Any:
    _same_name("proposer", args.proposer, caller)
    return ctx.propose(
        args.subject,
        args.decision,
        rationale=args.rationale,
        evidence=args.evidence,
        supersedes=args.supersedes,
        proposer=caller.name,
        session=args.session or caller.session,
        title=args.title,
        links=args.links,
        reconfirms=args.reconfirms,
    )


def _log(ctx: Ctx, args: inputs.LogArgs, caller: Caller) -> Any:
    _same_name("agent", args.agent, caller)
    return ctx.log(
        args.text,
        kind=args.kind,
        agent=caller.name,
        session=args.session or caller.session,
        tags=args.tags,
        source=args.source,
    )


def _withdraw(ctx: Ctx, args: inputs.WithdrawArgs, caller: Caller) -> Any:
    proposal = ctx.proposal(args.id)
    if proposal.proposer != caller.name:
        raise RefusedError(
            f"{proposal.id} was proposed by {text.visible(proposal.proposer)!r}, not by this server's "
            f"agent {caller.name!r}: only a person withdraws another's proposal "
            "(ctx withdraw, ctx review)"
        )
    return ctx.withdraw(proposal.id, actor=caller.name, reason=args.reason)


def _recall(ctx: Ctx, args: inputs.RecallArgs, _caller: Caller) -> Any:
    min_scores = {str(ranker): score for ranker, score in (args.min_scores or {}).items()}
    return ctx.recall(
        args.query, k=args.k, as_of=args.as_of, mode=args.mode, rrf_k=args.rrf_k, min_scores=min_scores
    )


def _subject_decision(ctx: Ctx, args: inputs.SubjectAtArgs, _caller: Caller) -> Any:
    subject = text.normalise_subject(args.subject)
    held = [d for d in ctx.decisions(subject, as_of=args.as_of) if d.subject == subject]
    return held[0] if held else None


OPERATIONS: dict[str, Operation] = {
    operation.name: operation
    for operation in (
        Operation(
            "propose",
            "Queue a proposed decision for a person to ratify.",
            inputs.ProposeArgs,
            "proposal",
            _propose,
            _as_dict,
            Tool(
                "propose_decision",
                "Propose a decision",
                "Queue a decision for a person to ratify; it is not in force until they do. By default it "
                "supersedes the subject's current decision. Cite logged evidence ids. Returns the proposal "
                "with what it would supersede and any near-duplicate pending proposal. With reconfirms "
                "(and no subject or decision) it asks a person to re-confirm a current decision that "
                "still holds after its linked code changed.",
                writes=True,
                # Proposing twice queues two proposals.
                idempotent=False,
            ),
            command=False,
        ),
        Operation(
            "log",
            "Append raw text to the evidence vault (append-only, unratified).",
            inputs.LogArgs,
            "log",
            _log,
            _as_dict,
            Tool(
                "log_evidence",
                "Log evidence",
                "Append raw text (a conversation excerpt, a note, a log) to the evidence vault, "
                "append-only and unratified. Logging the same text again returns its first id "
                "(duplicate: true).",
                writes=True,
            ),
            command=False,
        ),
        Operation(
            "recall",
            "Decisions in force (with what contradicts them) and unratified evidence, in two sections.",
            inputs.RecallArgs,
            "recall",
            _recall,
            _as_dict,
            Tool(
                "recall",
                "Recall decisions and evidence",
                "Hybrid search (keyword, entity, vector): ratified decisions in force, each with the "
                "superseded decisions it replaced (do not apply those), conflicts and pending proposals, "
                "and unratified evidence in a separate section. The text is an index, a line per hit named "
                "by its handle: timeline shows what came before and after it, show the whole record.",
            ),
            positional=("query",),
        ),
        Operation(
            "inject",
            "Print the context block an agent reads at session start, within a token budget.",
            inputs.InjectArgs,
            "inject",
            lambda ctx, args, caller: ctx.inject(args.query, budget=args.budget, via=caller.via),
            _as_dict,
            Tool(
                "inject_context",
                "Session context",
                "The context block to read at the start of a session, within a token budget: current "
                "decisions (relevant to query, if given), superseded ones not to apply, conflicts, pending "
                "proposals, a few evidence snippets, and an index (handle and subject) of the current "
                "decisions that did not fit: show or get_decision expands one. The text content is the "
                "Markdown block.",
            ),
        ),
        Operation(
            "history",
            "Show SUBJECT's supersede chain with validity windows, and its rejected or withdrawn "
            "proposals, oldest first.",
            inputs.HistoryArgs,
            "history",
            lambda ctx, args, _caller: ctx.subject_history(args.subject, limit=args.limit),
            _as_dict,
            Tool(
                "decision_history",
                "Decision history",
                "A subject's supersede chain, oldest first, with validity windows, including decisions on "
                "other subjects linked to it; and the proposals on it a person rejected or their proposer "
                "withdrew (never in force).",
            ),
            positional=("subject",),
        ),
        Operation(
            "timeline",
            "A subject's evidence, proposals and decisions in time order, around one record or whole.",
            inputs.TimelineArgs,
            "timeline",
            lambda ctx, args, _caller: ctx.timeline(args.target, around=args.around),
            _as_dict,
            Tool(
                "timeline",
                "Timeline around a record",
                "What came before and after a record (id or handle) or on a subject: evidence logged, "
                "proposals made, ratified, rejected or withdrawn, decisions in force, superseded or "
                "retired, in time order. The step between a compact hit and show.",
            ),
            positional=("target",),
        ),
        Operation(
            "get",
            "The decision in force on exactly one subject, now or at a moment.",
            inputs.SubjectAtArgs,
            "subject-decision",
            _subject_decision,
            lambda args, held: envelopes.subject_decision(
                text.normalise_subject(args.subject), args.as_of, held
            ),
            Tool(
                "get_decision",
                "Decision on a subject",
                "The decision in force on exactly this subject, now or at as_of; decision is null when "
                "none holds.",
            ),
            # `ctx decisions --subject S` and `ctx history S` answer this at a terminal.
            command=False,
        ),
        Operation(
            "decisions",
            "List current decisions (or those valid at a date, or all).",
            inputs.DecisionsArgs,
            "decisions",
            lambda ctx, args, _caller: ctx.decisions(
                args.subject, as_of=args.as_of, include_closed=args.include_closed, limit=args.limit
            ),
            lambda args, found: envelopes.decisions(found, args.as_of),
            Tool(
                "list_decisions",
                "List decisions",
                "Current decisions (a subject takes its whole subtree), those valid at as_of, or all of "
                "them including superseded and retired ones.",
            ),
        ),
        Operation(
            "queue",
            "List pending proposals, oldest first.",
            inputs.QueueArgs,
            "queue",
            lambda ctx, args, _caller: ctx.queue(args.subject, args.proposer, limit=args.limit),
            lambda _args, pending: envelopes.queue(pending),
            Tool(
                "list_pending",
                "Pending proposals",
                "Proposals awaiting a person's review, oldest first: not in force.",
            ),
        ),
        Operation(
            "show",
            "Show one evidence text, proposal or decision by id.",
            inputs.ShowArgs,
            "show",
            lambda ctx, args, _caller: ctx.show(args.id),
            lambda _args, record: envelopes.show(record),
            Tool(
                "show",
                "Show a record",
                "Expand an id: the whole evidence text (ev_), proposal (pr_) or decision (dc_), by id or "
                "by a unique prefix of one.",
            ),
            positional=("id",),
        ),
        Operation(
            "search",
            "Keyword search: ratified decisions and unratified evidence, in two sections.",
            inputs.SearchArgs,
            "search",
            lambda ctx, args, _caller: ctx.search(args.query, limit=args.limit, as_of=args.as_of),
            _as_dict,
            Tool(
                "search",
                "Keyword search",
                "Keyword search in two sections that are never blended: ratified decisions and unratified "
                "evidence.",
            ),
            positional=("query",),
        ),
        Operation(
            "evidence",
            "List the newest evidence texts (unratified), newest first.",
            inputs.EvidenceArgs,
            "evidence-list",
            lambda ctx, args, _caller: ctx.recent_evidence(
                args.limit, since=args.since, agent=args.agent, kind=args.kind
            ),
            lambda args, found: envelopes.evidence_list(found, args.since),
            Tool(
                "list_evidence",
                "List recent evidence",
                "The newest evidence texts, newest first, optionally logged since a moment, by one agent "
                "or of one kind: unratified notes, never decisions.",
            ),
        ),
        Operation(
            "withdraw",
            "Withdraw a pending proposal (kept for audit).",
            inputs.WithdrawArgs,
            "proposal",
            _withdraw,
            _as_dict,
            Tool(
                "withdraw_proposal",
                "Withdraw own proposal",
                "Withdraw a pending proposal this agent made, in this session or an earlier one (the "
                "proposer is the agent's name). Another agent's proposal cannot be withdrawn here.",
                writes=True,
            ),
            # A person's `ctx withdraw` withdraws any proposal, as themselves.
            command=False,
        ),
    )
}

TOOLS: dict[str, Operation] = {
    operation.tool.name: operation for operation in OPERATIONS.values() if operation.tool is not None
}
