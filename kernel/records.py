"""The records the facade returns: frozen dataclasses, each the one definition of its shape.

A record's JSON form (:func:`to_json`, what the CLI and MCP hosts print) walks its fields, and
``kernel/contracts.py`` generates its JSON Schema in ``schemas/`` from the same class, reading the
``Annotated`` facts below (:class:`Spec`). The SQLite store maps rows to records by these field
names. Dataclasses rather than pydantic models or msgspec Structs: this module loads in every
``ctx log`` / ``ctx propose`` process, and pydantic costs ~100 ms to import there while a record's
build-and-serialise cost is microseconds in every spelling (``just bench-shapes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from pathlib import PurePath
from typing import Annotated, Any, ClassVar, Final, Literal, TypeVar, get_args, get_type_hints

from ctx_kernel.kernel.spec import DecisionId, EvidenceId, ProposalId, Sha256, Spec, Timestamp

ProposalStatus = Literal["pending", "ratified", "rejected", "withdrawn"]
ClosedBy = Literal["superseded", "retired"]


class Absent(Enum):
    """The type of :data:`ABSENT`: a field typed ``X | Absent`` is a key its JSON form may lack."""

    ABSENT = "absent"

    def __repr__(self) -> str:
        return "ABSENT"


# A key left out: a record's JSON form has no key for a field holding it (see :func:`to_json`).
ABSENT: Final = Absent.ABSENT

_T = TypeVar("_T")


def omit_none(value: _T | None) -> _T | Absent:
    """``value``, or :data:`ABSENT` (its key left out) when it is None."""
    return ABSENT if value is None else value


_MAY_BE_ABSENT: dict[type, frozenset[str]] = {}


def may_be_absent(record: type) -> frozenset[str]:
    """The fields of a record typed ``X | Absent``: the keys its JSON form may lack."""
    if record not in _MAY_BE_ABSENT:
        hints = get_type_hints(record)
        _MAY_BE_ABSENT[record] = frozenset(
            f.name for f in fields(record) if Absent in get_args(hints[f.name])
        )
    return _MAY_BE_ABSENT[record]


_JSON_KEYS: dict[type, tuple[str, ...]] = {}


def json_keys(record: type) -> tuple[str, ...]:
    """The keys of a record's JSON form in order: its fields, each ``COMPUTED`` property placed before
    the field ``COMPUTED_BEFORE`` names for it, or after them all."""
    if record not in _JSON_KEYS:
        before: dict[str, str] = getattr(record, "COMPUTED_BEFORE", {})
        keys = [f.name for f in fields(record)]
        for name in getattr(record, "COMPUTED", ()):
            keys.insert(keys.index(before[name]) if name in before else len(keys), name)
        _JSON_KEYS[record] = tuple(keys)
    return _JSON_KEYS[record]


def to_json(value: Any) -> Any:
    """A record (or a list of them) as JSON-ready data, keyed as :func:`json_keys` orders it; a
    field holding :data:`ABSENT` is left out, and so is one named in ``OMIT_NONE`` while it is None,
    and the record in the ``SPREAD`` field gives its own keys in that field's place."""
    if is_dataclass(value) and not isinstance(value, type):
        omit: tuple[str, ...] = getattr(value, "OMIT_NONE", ())
        spread: str | None = getattr(value, "SPREAD", None)
        data = {}
        for key in json_keys(type(value)):
            item = getattr(value, key)
            if key == spread:
                data.update(to_json(item))
            elif item is not ABSENT and (item is not None or key not in omit):
                data[key] = to_json(item)
        return data
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    if isinstance(value, PurePath):
        return str(value)
    return value


class Record:
    """A record the hosts print: its JSON form comes from its fields, never a hand-kept copy."""

    # Read-only properties that the JSON form carries with the fields (and the schema with them),
    # after them unless COMPUTED_BEFORE names the field each goes before.
    COMPUTED: ClassVar[tuple[str, ...]] = ()
    COMPUTED_BEFORE: ClassVar[dict[str, str]] = {}
    # Optional fields the JSON form leaves out while they are None (the schema does not require them).
    OMIT_NONE: ClassVar[tuple[str, ...]] = ()
    # A field holding a record whose keys stand in the field's place, as if they were this record's
    # own (a search hit is its decision's keys and its score).
    SPREAD: ClassVar[str | None] = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form: the fields and computed properties, in :func:`json_keys` order."""
        data: dict[str, Any] = to_json(self)
        return data


@dataclass(frozen=True)
class Evidence(Record):
    """An evidence text: raw, unratified, never changed."""

    id: EvidenceId
    text: str
    kind: str
    agent: str | None
    session: str | None
    tags: list[str]
    content_hash: Sha256
    created_at: Timestamp
    source: str | None = None
    speaker: str | None = None
    occurred_at: Timestamp | None = None


@dataclass(frozen=True)
class Decision(Record):
    """A ratified decision with its validity window and supersession links."""

    COMPUTED: ClassVar[tuple[str, ...]] = ("current",)

    id: DecisionId
    subject: str
    decision: str
    rationale: str | None
    valid_from: Timestamp
    valid_until: Timestamp | None
    ratified_by: str
    ratified_at: Timestamp
    proposal_id: ProposalId | None
    amended: bool
    closed_by: ClosedBy | None
    close_reason: str | None
    evidence: list[EvidenceId] = field(default_factory=list)
    supersedes: list[DecisionId] = field(default_factory=list)
    superseded_by: list[DecisionId] = field(default_factory=list)
    source: str | None = None
    adr_number: int | None = None
    title: str | None = None  # as the ADR or the proposer titled it
    deciders: list[str] = field(default_factory=list)  # who the record says decided (attribution)

    @property
    def current(self) -> bool:
        """True while the window is open."""
        return self.valid_until is None

    def valid_at(self, moment: str) -> bool:
        """True when ``moment`` falls inside the window ``[valid_from, valid_until)``."""
        return self.valid_from <= moment and (self.valid_until is None or moment < self.valid_until)


@dataclass(frozen=True)
class Proposal(Record):
    """A proposal and its review state."""

    id: ProposalId
    subject: str
    decision: str
    rationale: str | None
    proposer: str
    session: str | None
    created_at: Timestamp
    status: ProposalStatus
    supersedes: list[DecisionId]
    explicit_supersedes: list[DecisionId]
    near_duplicate_of: ProposalId | None
    near_duplicate_score: float | None
    resolved_at: Timestamp | None
    resolved_by: str | None
    resolution_note: str | None
    decision_id: DecisionId | None
    evidence: list[EvidenceId] = field(default_factory=list)
    source: str | None = None
    adr_number: int | None = None
    title: str | None = None  # as the ADR or the proposer titled it
    deciders: list[str] = field(default_factory=list)  # who the record says decided (attribution)
    # The current decision this proposal asks a person to re-confirm (its subject and text are that
    # decision's); ratified, it records the re-confirmation and makes no new decision.
    reconfirms: DecisionId | None = None


@dataclass(frozen=True)
class AuditEvent(Record):
    """One row of the hash-chained audit log."""

    seq: int
    at: str
    actor: str
    action: str
    target: str
    before: str | None
    after: str | None
    prev_hash: str
    hash: str


@dataclass(frozen=True)
class LogResult(Record):
    """The result of ``ctx log``: the evidence id, and whether the text was already there."""

    id: EvidenceId
    duplicate: bool
    redacted: Annotated[int, Spec(ge=0, description="Secrets replaced by placeholders before storing.")] = 0


@dataclass(frozen=True)
class Ratification(Record):
    """The result of ``ctx ratify``."""

    proposal_id: ProposalId
    decision: Decision
    superseded: list[DecisionId]
    settled: Annotated[
        list[ProposalId], Spec(description="Pending proposals of its review group closed with it.")
    ] = field(default_factory=list)
    reconfirmed: Annotated[
        bool,
        Spec(
            description="True when the proposal asked to re-confirm a current decision: that decision "
            "was re-confirmed (a new snapshot), and no decision was made or superseded."
        ),
    ] = False


MAX_REJECTED_KEPT = 1_000  # rejected lines listed in a report; the rest are counted


@dataclass(frozen=True)
class Rejected(Record):
    """An input line that was skipped."""

    OMIT_NONE: ClassVar[tuple[str, ...]] = ("source",)

    line: Annotated[int, Spec(ge=0)]
    error: str
    source: Annotated[str | None, Spec(description="The input file, when several were read.")] = None


@dataclass
class BatchReport(Record):
    """The result of ``ctx log --jsonl``: what was committed, line by line."""

    # Filled as each batch commits, so an interrupted run reports truly.

    added: Annotated[int, Spec(ge=0)] = 0
    duplicates: Annotated[int, Spec(ge=0)] = 0
    redacted: Annotated[int, Spec(ge=0)] = 0
    rejected_count: Annotated[int, Spec(ge=0)] = 0
    rejected: Annotated[list[Rejected], Spec(description="The first 1000 rejected lines.")] = field(
        default_factory=list
    )
    lines: Annotated[int, Spec(ge=0)] = 0  # input lines committed or rejected so far
    interrupted: bool = False

    def reject(self, line: int, error: str, source: str | None = None) -> None:
        """Record a skipped line, keeping at most MAX_REJECTED_KEPT of them listed."""
        self.rejected_count += 1
        if len(self.rejected) < MAX_REJECTED_KEPT:
            self.rejected.append(Rejected(line, error, source))

    def absorb(self, other: BatchReport) -> None:
        """Add another input's counts to these totals."""
        self.added += other.added
        self.duplicates += other.duplicates
        self.redacted += other.redacted
        self.lines += other.lines
        self.interrupted = self.interrupted or other.interrupted
        for rejected in other.rejected:
            self.reject(rejected.line, rejected.error, rejected.source)
        self.rejected_count += other.rejected_count - len(other.rejected)


@dataclass(frozen=True)
class DecisionMatch(Record):
    """A decision found by keyword search with its BM25 score (lower is better)."""

    SPREAD: ClassVar[str | None] = "decision"

    decision: Decision
    score: float


@dataclass(frozen=True)
class EvidenceMatch(Record):
    """Evidence found by keyword search: always unratified."""

    SPREAD: ClassVar[str | None] = "evidence"
    COMPUTED: ClassVar[tuple[str, ...]] = ("ratified",)

    evidence: Evidence
    score: float
    snippet: str

    @property
    def ratified(self) -> Literal[False]:
        """Always False: evidence is never ratified."""
        return False


@dataclass(frozen=True)
class SearchResults(Record):
    """``ctx search``: ratified decisions and unratified evidence in separate sections."""

    query: str
    decisions: list[DecisionMatch]
    evidence: list[EvidenceMatch]


TimelineEvent = Literal[
    "logged", "proposed", "ratified", "rejected", "withdrawn", "in force", "superseded", "retired"
]


@dataclass(frozen=True)
class TimelineEntry(Record):
    """One thing that happened to a subject's records, at the moment it happened."""

    at: Timestamp
    event: TimelineEvent
    kind: Literal["evidence", "proposal", "decision"]
    id: str
    subject: str | None
    # The record's text on one line, cut to a few hundred characters (``show`` gives all of it).
    text: str
    # The record the timeline was asked around.
    focus: bool


@dataclass(frozen=True)
class Timeline(Record):
    """``ctx timeline``: a subject's evidence, proposals and decisions in time order, or those
    around one record; the entries cut off before and after are counted."""

    subject: str
    focus: str | None
    entries: list[TimelineEntry]
    omitted_before: int
    omitted_after: int


@dataclass(frozen=True)
class History(Record):
    """``ctx history``: a subject's supersede chain, and the proposals on it never in force."""

    subject: str
    decisions: Annotated[
        list[Decision],
        Spec(description="The chain, oldest first, with the decisions on other subjects linked to it."),
    ]
    proposals: Annotated[
        list[Proposal],
        Spec(
            description="Proposals on exactly this subject that a person rejected or their proposer "
            "withdrew, oldest first: never in force."
        ),
    ]


SnapshotAct = Literal["ratified", "reconfirmed"]


@dataclass(frozen=True)
class LinkDigest(Record):
    """One link of a decision as a snapshot saw it: what the link matched in the commit's tree."""

    link: Annotated[str, Spec(description="A path or glob from the repository root, maybe #Symbol.")]
    digest: Annotated[
        str | None, Spec(description="sha256 of the matched paths and their blobs; null: none matched.")
    ]
    files: Annotated[int, Spec(ge=0)]


@dataclass(frozen=True)
class Snapshot(Record):
    """A person's ratification or re-confirmation of a decision, with the repository's state then:
    what the decision's staleness is worked out against."""

    decision_id: DecisionId
    taken_at: Timestamp
    taken_by: str
    act: SnapshotAct
    git_commit: Annotated[str | None, Spec(description="HEAD then; null outside a git repository.")]
    links: list[LinkDigest]
    review_by: Annotated[str | None, Spec(description="The date (YYYY-MM-DD) it is due for review.")]
    review_every: Annotated[int | None, Spec(ge=1, description="Days between reviews, if it recurs.")]
