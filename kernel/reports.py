"""The reports the services return (status, doctor, reindex, ...): records like those in
``kernel/records.py``, whose JSON form and schema come from their fields the same way.

They live below the services so that ``kernel/contracts.py`` can build their schemas without
importing a service; ``ctx log`` and ``ctx propose`` never load this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from ctx_kernel.kernel.records import Record
from ctx_kernel.kernel.spec import ProposalId, Sha256, Spec, Timestamp

NonNegative = Annotated[int, Spec(ge=0)]


@dataclass(frozen=True)
class ModelPlace(Record):
    """Where the embedding model comes from, found without loading it."""

    model: str
    source: Literal["model_dir", "package", "fastembed cache", "disabled"]
    folder: str | None
    problem: str | None
    # True: its files match the pinned sha256; False: other files (an organisation's own model);
    # None: not checked (fastembed's cache, or vectors off).
    verified: bool | None = None


@dataclass(frozen=True)
class LastVerify(Record):
    """The outcome of the last full ``ctx audit verify``."""

    at: str
    ok: bool
    rows: NonNegative
    problem: str | None


@dataclass(frozen=True)
class StoreStatus(Record):
    """``ctx status --json``: the store at a glance."""

    store: str
    store_id: str | None
    schema_version: NonNegative
    evidence: NonNegative
    decisions: NonNegative
    current_decisions: NonNegative
    pending: NonNegative
    stale: NonNegative
    encrypted: bool
    model: ModelPlace
    vector_model: str | None
    last_verify: LastVerify | None
    stale_decisions: Annotated[
        int | None,
        Spec(ge=0, description="Current decisions that may be stale (ctx stale); null: not checked."),
    ] = None


@dataclass(frozen=True)
class Check(Record):
    """One `ctx doctor` check: what was checked, whether it passed, and what to do if not."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None


@dataclass
class DoctorReport(Record):
    """``ctx doctor --json``: every check, and whether all passed."""

    COMPUTED: ClassVar[tuple[str, ...]] = ("ok",)
    COMPUTED_BEFORE: ClassVar[dict[str, str]] = {"ok": "checks"}

    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return all(c.ok for c in self.checks)


@dataclass(frozen=True)
class ReindexReport(Record):
    """``ctx reindex --json``: what was embedded."""

    model: str
    dim: Annotated[int, Spec(ge=1)]
    previous_model: str | None
    decisions: int
    evidence: int
    seconds: float
    resumed: Annotated[
        bool, Spec(description="True when this run carried on after an interrupted reindex.")
    ] = False


@dataclass(frozen=True)
class TableCopy(Record):
    """One table of a ``ctx migrate``: its rows in the source, and how many this run wrote."""

    table: str
    rows: Annotated[int, Spec(ge=0, description="Rows in the source when the copy started.")]
    copied: Annotated[int, Spec(ge=0, description="Rows this run wrote; the others were there already.")]


@dataclass(frozen=True)
class MigrateReport(Record):
    """``ctx migrate --json``: what was copied where; running it again resumes an interrupted copy."""

    source: str
    target: Annotated[str, Spec(description="The target, a server URL without its password.")]
    store_id: str | None
    tables: list[TableCopy]
    resolved: Annotated[
        int, Spec(ge=0, description="Proposals resolved on the target once their decisions were there.")
    ]
    closed: Annotated[int, Spec(ge=0, description="Decision windows the source closed since an earlier run.")]
    vectors: Annotated[int, Spec(ge=0, description="Vectors copied (0 when the target embeds them again).")]
    vector_model: str | None
    audit_rows: NonNegative
    last_hash: Sha256 | None
    resumed: Annotated[bool, Spec(description="True when the target held part of this store already.")]
    seconds: float


@dataclass(kw_only=True)
class ExportReport(Record):
    """``ctx audit verify FILE --json``: whether an export is intact and signed by the trusted key."""

    COMPUTED: ClassVar[tuple[str, ...]] = ("ok", "problem")
    COMPUTED_BEFORE: ClassVar[dict[str, str]] = {"ok": "file", "problem": "problems"}

    file: str
    manifest: str
    format: Literal["jsonl", "csv"] | None = None
    records: Annotated[int, Spec(ge=0, description="Records read before the first problem, or all.")] = 0
    first_seq: int | None = None
    last_seq: int | None = None
    anchor_hash: Sha256 | None = None
    last_hash: Sha256 | None = None
    signed_by: Annotated[Sha256 | None, Spec(description="The key id the manifest names.")] = None
    trusted_key: Annotated[Sha256, Spec(description="The id of the key the signature was checked against.")]
    trusted_key_source: Annotated[
        str, Spec(description="Where the trusted key came from (--pubkey or local).")
    ]
    signature_ok: bool = False
    first_bad_line: Annotated[
        int | None, Spec(description="JSON Lines: the line; CSV: the spreadsheet row (the header is row 1).")
    ] = None
    first_bad_seq: int | None = None
    problems: list[str] = field(default_factory=list)
    served_entries: Annotated[
        int | None, Spec(description="Served log entries the export holds (--served), checked; else null.")
    ] = None

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.problems

    @property
    def problem(self) -> str | None:
        """The first problem: a bad record if there is one, else the signature, else the manifest."""
        return self.problems[0] if self.problems else None


@dataclass(frozen=True)
class Related(Record):
    """A record surfaced next to a decision hit, and why."""

    relation: Literal["superseded", "later", "conflict", "pending"]
    id: Annotated[str, Spec(pattern=r"^(pr|dc)_[0-9A-HJKMNP-TV-Z]{26}$")]
    subject: str
    text: str
    current: bool
    valid_from: Timestamp | None
    valid_until: Timestamp | None
    why: str
    warning: str | None = None
    matched: bool = False


@dataclass(frozen=True)
class VectorStatus(Record):
    """Whether the vector ranker took part."""

    state: Literal["on", "partial", "off", "unused"]  # unused: the recall mode asked for no vectors
    model: str | None  # the embedding model, when one is known
    pending: NonNegative  # texts not embedded yet
    note: str | None


@dataclass(frozen=True)
class RankerScore(Record):
    """One ranker's view of a hit: raw score (higher is better; BM25 negated) and rank (1 is best)."""

    rank: Annotated[int, Spec(ge=1)]
    score: float
    detail: str | None = None


@dataclass(frozen=True)
class Scores(Record):
    """Each ranker's score, or null when that ranker did not return the hit."""

    keyword: RankerScore | None
    entity: RankerScore | None
    vector: RankerScore | None


@dataclass(frozen=True)
class DecisionSource(Record):
    """Where a decision came from: a ratified proposal or an imported ADR file."""

    kind: Literal["proposal", "adr"]
    path: str | None
    proposal_id: ProposalId | None
    adr_number: int | None


@dataclass(frozen=True)
class EvidenceSource(Record):
    """Who logged an evidence text, and how."""

    kind: str
    agent: str | None
    session: str | None
    tags: list[str]


@dataclass(frozen=True)
class StaleDecision(Record):
    """A current decision that may no longer hold: the code it governs changed since a person last
    confirmed it, a link matches nothing any more, or its review date has passed."""

    decision_id: Annotated[str, Spec(description="The decision's id.")]
    subject: str
    decision: str
    confirmed_at: Annotated[Timestamp, Spec(description="When a person last ratified or re-confirmed it.")]
    confirmed_by: str
    snapshot_commit: Annotated[str | None, Spec(description="HEAD when it was last confirmed.")]
    reasons: list[Literal["changed", "unmatched", "review_due"]]
    commits: Annotated[int, Spec(ge=0, description="Commits since the snapshot touching its links.")]
    authors: list[str]
    last_change_at: Annotated[Timestamp | None, Spec(description="The newest of those commits' times.")]
    files_changed: Annotated[int, Spec(ge=0, description="Paths changed under its links since then.")]
    paths: Annotated[list[str], Spec(description="Paths added or modified under its links since then.")]
    renamed: Annotated[list[str], Spec(description="Renames touching its links, as 'old -> new'.")]
    deleted: list[str]
    changed_links: list[str]
    links: Annotated[list[str], Spec(description="Every link of its snapshot.")]
    unmatched_links: Annotated[list[str], Spec(description="Links that match nothing in HEAD's tree.")]
    moved: Annotated[
        list[str], Spec(description="Symbol links defined in another file now, as 'path#Name -> path'.")
    ]
    review_due: Annotated[str | None, Spec(description="The review date (YYYY-MM-DD) that has passed.")]
    compared_by_content: Annotated[
        str | None,
        Spec(description="Why the snapshot commit could not be used (digests of HEAD compared instead)."),
    ]
    line: Annotated[str, Spec(description="The one line an agent is shown beside the decision.")]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: its fields, which hold JSON values already (a report lists a thousand of
        these: the generic walk of :func:`records.to_json` would be most of a warm `ctx stale`)."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class StaleReport(Record):
    """``ctx stale --json``: the current decisions that may be stale, and what they were compared with."""

    repository: Annotated[str | None, Spec(description="The git checkout's root; null without one.")]
    head: Annotated[str | None, Spec(description="The commit compared against (HEAD).")]
    note: Annotated[str | None, Spec(description="Why links were not checked (no git, no repository).")]
    checked: Annotated[int, Spec(ge=0, description="Current decisions with links or a review date.")]
    stale: list[StaleDecision]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (see :meth:`StaleDecision.to_dict`)."""
        return {**self.__dict__, "stale": [item.to_dict() for item in self.stale]}


ServedValidity = Literal["current", "superseded", "retired", "unratified"]


@dataclass(frozen=True)
class ServedItem(Record):
    """A decision or evidence text an answer gave an agent: its id, content digest and validity then."""

    id: str
    digest: Annotated[Sha256, Spec(description="sha256 of the content served (evidence: its content hash).")]
    validity: Annotated[
        ServedValidity,
        Spec(description="What the answer said the decision was then; evidence is unratified."),
    ]


@dataclass(frozen=True)
class ServedEntry(Record):
    """One entry of the served log: an answer that gave an agent stored content."""

    seq: Annotated[int, Spec(ge=1)]
    at: Timestamp
    host: Annotated[str, Spec(description="Where it was served: hook, shell or mcp.")]
    agent: str
    session: str | None
    operation: Annotated[str, Spec(description="The operation answered (inject, recall, show, ...).")]
    request: Annotated[Sha256, Spec(description="sha256 of the request's canonical JSON.")]
    items: list[ServedItem]
    missed: Annotated[
        NonNegative,
        Spec(description="Answers this process served but could not record just before this one."),
    ]
    hash: Sha256


@dataclass(frozen=True)
class LateServing(Record):
    """A decision an answer gave as in force after its successor was ratified."""

    seq: Annotated[int, Spec(ge=1)]
    at: Timestamp
    agent: str
    session: str | None
    decision_id: str
    superseded_at: Timestamp
    superseded_by: list[str]


@dataclass(frozen=True)
class ServedReport(Record):
    """``ctx audit served``: the entries asked for, in order, and what was served after it was superseded."""

    asked: Annotated[str, Spec(description="The question, in words.")]
    entries: list[ServedEntry]
    folded: Annotated[NonNegative, Spec(description="Entries folded into signed daily digests (not listed).")]
    after_superseded: Annotated[
        list[LateServing] | None,
        Spec(
            description="With --after-superseded: every decision served as in force after it was superseded."
        ),
    ] = None
