"""What each operation takes: its arguments as records, each field written once.

An operation (``kernel/hosts/operations.py``) names one of these as its input. From the same
fields come the MCP tool's input schema (``kernel/contracts.py`` builds a pydantic model of each
and ``schemas/*-input.schema.json`` from it), the CLI command's arguments and options (their help
is the field's description) and the command reference. Like the records, these are dataclasses
with their limits in :class:`~ctx_kernel.kernel.spec.Spec`: every CLI process loads them,
and none may import pydantic.

A field's ``metadata`` holds its description and how the CLI spells it when not ``--field-name``
(:func:`arg`).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field
from typing import Annotated, Any, Literal

from ctx_kernel.kernel import text
from ctx_kernel.kernel.limits import (
    DEFAULT_BUDGET,
    DEFAULT_MODE,
    DEFAULT_RRF_K,
    MAX_BUDGET,
    MAX_LIST_LIMIT,
    MAX_QUERY_CHARS,
    MAX_RECALL_K,
    MAX_RRF_K,
    MAX_SEARCH_LIMIT,
    MIN_BUDGET,
    RecallMode,
)
from ctx_kernel.kernel.spec import DecisionId, EvidenceId, EvidenceKind, Spec

Name = Annotated[str, Spec(min_length=1, max_length=text.MAX_NAME_CHARS)]
SessionText = Annotated[str, Spec(max_length=text.MAX_NAME_CHARS)]
SubjectText = Annotated[str, Spec(min_length=1, max_length=text.MAX_SUBJECT_CHARS)]
QueryText = Annotated[str, Spec(min_length=1, max_length=MAX_QUERY_CHARS)]
# Ids in arguments are plain strings: the kernel checks them and names the problem
# ("malformed id 'x': ...", "no decision dc_..."), the same message on every surface.
AnyIdText = Annotated[str, Spec(min_length=1, max_length=100)]
# A character count bounds the UTF-8 size only from below; the kernel checks the bytes.
EvidenceText = Annotated[str, Spec(min_length=1, max_length=text.MAX_EVIDENCE_BYTES)]
Ranker = Literal["keyword", "entity", "vector"]
AS_OF_HELP = "A date (its end, UTC) or an ISO 8601 time (default: now)."
ListLimit = Annotated[int, Spec(ge=1, le=MAX_LIST_LIMIT)]


def arg(
    description: str | None,
    default: Any = MISSING,
    *,
    factory: Any = MISSING,
    flag: str | None = None,
    short: str | None = None,
    metavar: str | None = None,
) -> Any:
    """A field with its description, and the CLI's spelling where it is not ``--field-name``."""
    metadata = {"description": description, "flag": flag, "short": short, "metavar": metavar}
    return field(default=default, default_factory=factory, metadata=metadata)


@dataclass(frozen=True, kw_only=True)
class ProposeArgs:
    """A proposal as an agent sends it (``ctx propose --input -``, MCP ``propose_decision``)."""

    subject: SubjectText | None = arg(
        "Dotted subject, e.g. auth.tokens (required unless reconfirms is given).", None
    )
    decision: Annotated[str, Spec(min_length=1, max_length=text.MAX_DECISION_CHARS)] | None = arg(
        "The decision, one or two sentences (required unless reconfirms is given).", None
    )
    reconfirms: AnyIdText | None = arg(
        "Instead of a new decision: ask a person to re-confirm this current decision (id or handle) "
        "as it stands, e.g. after checking that the code its links govern changed and it still holds. "
        "Give no subject, decision, title, supersedes or links; give the reasoning as rationale and "
        "cite evidence. Only a person re-confirms (by ratifying the request).",
        None,
        flag="--reconfirm",
        metavar="ID",
    )
    rationale: Annotated[str, Spec(max_length=text.MAX_RATIONALE_CHARS)] | None = arg("Why.", None)
    evidence: Annotated[list[EvidenceId], Spec(max_length=100)] = arg(
        "Ids of logged evidence it cites.", factory=list
    )
    supersedes: Annotated[list[DecisionId], Spec(max_length=100)] = arg(
        "Decisions it replaces besides the subject's current one (which it replaces anyway).", factory=list
    )
    proposer: Name | None = arg(
        "Who proposes (default: the agent's name). Over MCP the server's agent name is "
        "recorded and any other name is refused.",
        None,
    )
    session: SessionText | None = arg("The agent's session id.", None)
    title: Annotated[str, Spec(min_length=1, max_length=text.MAX_TITLE_CHARS)] | None = arg(
        "A short title, as an ADR's heading (default: none).", None
    )
    links: Annotated[list[Annotated[str, Spec(min_length=1, max_length=300)]], Spec(max_length=50)] = arg(
        "Paths or globs from the repository root the decision governs (kernel/store/**, "
        "pyproject.toml, a.py#Name): a person sees them when ratifying, and ctx stale reports the "
        "decision when they change.",
        factory=list,
    )


@dataclass(frozen=True, kw_only=True)
class LogArgs:
    """Evidence as an agent logs it (MCP ``log_evidence``; ``ctx log``)."""

    text: EvidenceText = arg(
        "Raw text: a conversation excerpt, a note, a log. Logging the same text again returns its first id."
    )
    kind: EvidenceKind = arg("What the text is.", "note")
    agent: Name | None = arg(
        "Who logged it (default: the agent's name). Over MCP the server's agent name is "
        "recorded and any other name is refused.",
        None,
    )
    session: SessionText | None = arg("The agent's session id.", None)
    tags: Annotated[list[SessionText], Spec(max_length=50)] = arg(None, factory=list)
    source: Annotated[str, Spec(max_length=2_000)] | None = arg(
        "Where the text came from: a path, URL or path#Lline.", None
    )


@dataclass(frozen=True, kw_only=True)
class RecallArgs:
    """Arguments of ``ctx recall`` (MCP ``recall``)."""

    query: QueryText = arg("A question or keywords, in plain words.")
    k: Annotated[int, Spec(ge=1, le=MAX_RECALL_K)] = arg("Hits per section.", 10)
    as_of: str | None = arg(AS_OF_HELP, None, metavar="DATE")
    mode: RecallMode = arg("Which rankers to use; hybrid fuses all three.", DEFAULT_MODE)
    rrf_k: Annotated[int, Spec(ge=1, le=MAX_RRF_K)] = arg(
        "Reciprocal rank fusion constant (decisions, and evidence in single-ranker modes;"
        " hybrid evidence fuses normalised scores).",
        DEFAULT_RRF_K,
    )
    min_scores: dict[Ranker, Annotated[float, Spec(finite=True)]] | None = arg(
        'Drop a ranker\'s hits below this raw score, e.g. {"vector": 0.4} (cosine).', None
    )


@dataclass(frozen=True, kw_only=True)
class InjectArgs:
    """Arguments of ``ctx inject`` (MCP ``inject_context``)."""

    query: QueryText | None = arg(
        "What the session is about (default: every current decision).", None, short="-q"
    )
    budget: Annotated[int, Spec(ge=MIN_BUDGET, le=MAX_BUDGET)] = arg(
        "Token budget (1 token ~ 4 characters).", DEFAULT_BUDGET
    )


@dataclass(frozen=True, kw_only=True)
class HistoryArgs:
    """Arguments of ``ctx history`` (MCP ``decision_history``)."""

    subject: SubjectText = arg("Dotted subject, e.g. auth.tokens.")
    limit: ListLimit | None = arg(
        "Only the newest N decisions of the chain, and of the rejected or withdrawn proposals "
        "(default: all).",
        None,
        short="-n",
        metavar="N",
    )


@dataclass(frozen=True, kw_only=True)
class SubjectAtArgs:
    """A subject and a moment (MCP ``get_decision``)."""

    subject: SubjectText = arg("Dotted subject, e.g. auth.tokens.")
    as_of: str | None = arg(AS_OF_HELP, None, metavar="DATE")


@dataclass(frozen=True, kw_only=True)
class DecisionsArgs:
    """Arguments of ``ctx decisions`` (MCP ``list_decisions``)."""

    subject: SubjectText | None = arg(
        "Only this subject and its sub-subjects (auth includes auth.tokens).", None
    )
    as_of: str | None = arg(AS_OF_HELP, None, metavar="DATE")
    include_closed: bool = arg("Include superseded and retired decisions.", False, flag="--all")
    limit: ListLimit | None = arg(
        "At most N decisions, in subject order (default: all).", None, short="-n", metavar="N"
    )


@dataclass(frozen=True, kw_only=True)
class QueueArgs:
    """Arguments of ``ctx queue`` (MCP ``list_pending``)."""

    subject: SubjectText | None = arg("Only this subject and its sub-subjects.", None)
    proposer: Name | None = arg("Only this proposer.", None)
    limit: ListLimit | None = arg("Only the oldest N (default: all).", None, short="-n", metavar="N")


@dataclass(frozen=True, kw_only=True)
class ShowArgs:
    """An id of any record (MCP ``show``)."""

    id: AnyIdText = arg(
        "An evidence (ev_), proposal (pr_) or decision (dc_) id, or a unique prefix of one "
        "(four or more characters after the underscore).",
        metavar="ID",
    )


@dataclass(frozen=True, kw_only=True)
class SearchArgs:
    """Arguments of ``ctx search`` (MCP ``search``)."""

    query: QueryText = arg("Keywords; any text is searched as plain words.")
    limit: Annotated[int, Spec(ge=1, le=MAX_SEARCH_LIMIT)] = arg(
        "Hits per section.", 10, short="-n", metavar="N"
    )
    as_of: str | None = arg(AS_OF_HELP, None, metavar="DATE")


@dataclass(frozen=True, kw_only=True)
class EvidenceArgs:
    """Arguments of ``ctx evidence`` (MCP ``list_evidence``)."""

    since: str | None = arg(
        "Only texts logged at or after this moment: a date (its start, UTC) or an ISO 8601 time.",
        None,
        metavar="DATE",
    )
    agent: Name | None = arg("Only texts this agent logged.", None)
    kind: EvidenceKind | None = arg("Only texts of this kind.", None)
    limit: ListLimit = arg("At most N texts, the newest first.", 20, short="-n", metavar="N")


@dataclass(frozen=True, kw_only=True)
class WithdrawArgs:
    """A proposal to withdraw (MCP ``withdraw_proposal``: only one this server made)."""

    id: AnyIdText = arg("A pending proposal's id (pr_) that this server proposed.", metavar="ID")
    reason: Annotated[str, Spec(max_length=text.MAX_REASON_CHARS)] | None = arg("Why it is withdrawn.", None)


@dataclass(frozen=True, kw_only=True)
class TimelineArgs:
    """A record or a subject to tell in time order (``ctx timeline``, MCP ``timeline``)."""

    target: Annotated[str, Spec(min_length=1, max_length=text.MAX_SUBJECT_CHARS)] = arg(
        "A record (its id, the start of one, or its handle) or a dotted subject, e.g. auth.tokens.",
        metavar="ID|SUBJECT",
    )
    around: Annotated[int, Spec(ge=1, le=100)] = arg(
        "Entries shown before and after the record (for a subject: its newest 2 x AROUND + 1).", 5
    )
