"""Pydantic models of every machine-readable input and output; ``schemas/`` is generated from them.

Run ``python -m ctx_kernel.kernel.contracts`` to rewrite ``schemas/`` after changing a model; a test
fails while the files are stale. The records' schemas are built from the record dataclasses
themselves (:func:`record_model`), so a record's fields are written once, in ``kernel/records.py``
or, for the services' reports, ``kernel/reports.py``; the hosts print the records' ``to_dict`` and
tests validate it against these schemas.
``ctx propose --input`` imports this module to validate its input, and the MCP server (``ctx mcp``)
to validate every tool's arguments: the ``*-input`` schemas are its tools' input schemas, word for
word.
"""

from __future__ import annotations

import functools
import json
import operator
import sys
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path
from types import UnionType
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    Self,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ctx_kernel.kernel import inputs, payloads, records, reports
from ctx_kernel.kernel.chain import ChainReport
from ctx_kernel.kernel.limits import (
    AuditEventType,
    RecallMode,
)
from ctx_kernel.kernel.spec import (
    DecisionId,
    EvidenceId,
    EvidenceKind,
    ProposalId,
    Sha256,
    Timestamp,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


OutputFormat = Literal["text", "json"]
FORMAT_HELP = (
    "text (default): compact lines with ids, subject, one line each and warnings; expand "
    "an id with the show tool. json: the full result object, as the CLI's --json prints it."
)


class _ToolInput(_Strict):
    """Arguments of an MCP tool: each takes ``format``, how the result comes back."""

    format: OutputFormat = Field(default="text", description=FORMAT_HELP)


def input_model(args: type[Any], name: str, base: type[BaseModel] = _Strict) -> type[BaseModel]:
    """The model that validates an operation's arguments, built from its input record
    (:mod:`kernel.inputs`): each field with its type, limits, default and description."""
    hints = get_type_hints(args, include_extras=True)
    shape: dict[str, Any] = {}
    for item in fields(args):
        description = item.metadata.get("description")
        if item.default_factory is not MISSING:
            spec = Field(default_factory=item.default_factory, description=description)
        elif item.default is not MISSING:
            spec = Field(default=item.default, description=description)
        else:
            spec = Field(description=description)
        shape[item.name] = (hints[item.name], spec)
    model: type[BaseModel] = create_model(
        name, __base__=base, __doc__=args.__doc__, __module__=__name__, **shape
    )
    return model


# Each operation's arguments as JSON: ``ctx propose --input`` reads ProposeInput, and each MCP tool
# validates its arguments with the model built from its input record (which adds ``format``).


def _proposal_or_request(schema: dict[str, Any], model: type[Any]) -> None:
    # A proposal names its subject and decision; a request to re-confirm names the decision instead.
    # Said in the document's schema only: some MCP hosts refuse a tool input schema that has anyOf
    # at its top level, so the tool's schema leaves it to the kernel's check (the same message).
    if model.__name__ == "ProposeInput":
        schema["anyOf"] = [{"required": ["subject", "decision"]}, {"required": ["reconfirms"]}]


class _ProposeDocument(_Strict):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_proposal_or_request)

    @model_validator(mode="after")
    def _named_or_requested(self) -> Self:
        """A proposal names its subject and decision; a request to re-confirm restates neither."""
        if getattr(self, "reconfirms", None) is None:
            for name in ("subject", "decision"):
                if getattr(self, name, None) is None:
                    raise PydanticCustomError(
                        "missing", f"{name} is required, unless reconfirms names a decision to re-confirm"
                    )
            return self
        for name in ("subject", "decision", "title", "supersedes", "links"):
            if getattr(self, name, None):
                raise PydanticCustomError(
                    "restated", f"a request to re-confirm takes the decision as it stands: give no {name}"
                )
        return self


ProposeInput = input_model(inputs.ProposeArgs, "ProposeInput", _ProposeDocument)
ProposeToolInput = create_model(
    "ProposeToolInput",
    __base__=ProposeInput,
    __doc__="MCP ``propose_decision``: the ``ctx propose --input`` document, and how the result comes back.",
    __module__=__name__,
    format=(OutputFormat, Field(default="text", description=FORMAT_HELP)),
)
TOOL_INPUTS: dict[type[Any], type[BaseModel]] = {inputs.ProposeArgs: ProposeToolInput}
for _args, _name in (
    (inputs.LogArgs, "LogInput"),
    (inputs.RecallArgs, "RecallInput"),
    (inputs.InjectArgs, "InjectInput"),
    # Named before it took --limit too; the file keeps its published name.
    (inputs.HistoryArgs, "SubjectInput"),
    (inputs.SubjectAtArgs, "SubjectAtInput"),
    (inputs.DecisionsArgs, "DecisionsInput"),
    (inputs.QueueArgs, "QueueInput"),
    (inputs.ShowArgs, "ShowInput"),
    (inputs.SearchArgs, "SearchInput"),
    (inputs.EvidenceArgs, "EvidenceListInput"),
    (inputs.WithdrawArgs, "WithdrawInput"),
    (inputs.TimelineArgs, "TimelineInput"),
):
    TOOL_INPUTS[_args] = input_model(_args, _name, _ToolInput)


def input_schema_name(model: type[BaseModel]) -> str:
    """The file in ``schemas/`` (without ``.schema.json``) that is this model's schema."""
    return next(name for name, known in SCHEMAS.items() if known is model)


def tool_input_schema(args: type[Any]) -> str:
    """The file in ``schemas/`` (without ``.schema.json``) of the tool that takes ``args``."""
    return input_schema_name(TOOL_INPUTS[args])


_MODELS: dict[type, type[BaseModel]] = {}


def record_model(record: type[Any], name: str | None = None) -> type[BaseModel]:
    """The output model of a record, built from its dataclass: its JSON keys (:func:`records.json_keys`),
    each required unless the record omits it while None or it may be ABSENT; a record it holds becomes
    that record's model (named ``<Record>Out`` unless built first under another name)."""
    if record in _MODELS:
        return _MODELS[record]
    model = create_model(
        name or f"{record.__name__}Out",
        __base__=_Strict,
        __doc__=record.__doc__,
        __module__=__name__,
        **_shape(record),
    )
    _MODELS[record] = model
    return model


def _shape(record: type[Any]) -> dict[str, Any]:
    """The output model's fields of a record: each JSON key with its type and whether it is required,
    the ``SPREAD`` field replaced by the fields of the record it holds."""
    hints = get_type_hints(record, include_extras=True)
    absent = records.may_be_absent(record)
    shape: dict[str, Any] = {}
    for key in records.json_keys(record):
        if key in absent:
            present = functools.reduce(
                operator.or_, [a for a in get_args(hints[key]) if a is not records.Absent]
            )
            shape[key] = (_output_type(present), Field(default=None, json_schema_extra=_no_default))
        elif key == record.SPREAD:
            shape.update(_shape(hints[key]))
        elif key in record.COMPUTED:
            shape[key] = (
                _output_type(get_type_hints(getattr(record, key).fget, include_extras=True)["return"]),
                ...,
            )
        else:
            shape[key] = (_output_type(hints[key]), None if key in record.OMIT_NONE else ...)
    return shape


def _no_default(schema: dict[str, Any]) -> None:
    # A key that may be left out has no value standing in for it: the JSON form simply lacks it.
    del schema["default"]


# A current decision's staleness marker: present only when it may be stale.
StaleLine = Annotated[
    str | None,
    Field(
        default=None,
        json_schema_extra=_no_default,
        description="Present when it may be stale: the one line that says why (ctx stale).",
    ),
]


def _output_type(hint: Any) -> Any:
    """``hint`` with every record class in it replaced by its output model."""
    if isinstance(hint, type) and is_dataclass(hint):
        return record_model(hint)
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        return Annotated[(_output_type(args[0]), *hint.__metadata__)]
    if origin in (Union, UnionType):
        return functools.reduce(operator.or_, [_output_type(arg) for arg in args])
    if origin in (list, tuple) and args:
        return list[_output_type(args[0])]  # type: ignore[misc]
    return hint


if TYPE_CHECKING:
    # A type checker cannot follow classes built at run time; to it these are plain models.
    class EvidenceOut(_Strict): ...

    class DecisionOut(_Strict): ...

    class ProposalOut(_Strict): ...

    class LogOut(_Strict): ...

    class RatificationOut(_Strict): ...

    class RejectedLine(_Strict): ...

    class LogBatchOut(_Strict): ...

    class RelatedOut(_Strict): ...

    class VectorStatusOut(_Strict): ...

    class RankerScoreOut(_Strict): ...

    class ScoresOut(_Strict): ...

    class DecisionSourceOut(_Strict): ...

    class EvidenceSourceOut(_Strict): ...

    class SearchOut(_Strict): ...

    class HistoryOut(_Strict): ...

else:
    EvidenceOut = record_model(records.Evidence)
    DecisionOut = record_model(records.Decision)
    ProposalOut = record_model(records.Proposal)
    LogOut = record_model(records.LogResult, "LogOut")
    RatificationOut = record_model(records.Ratification)
    RejectedLine = record_model(records.Rejected, "RejectedLine")
    LogBatchOut = record_model(records.BatchReport, "LogBatchOut")
    RelatedOut = record_model(reports.Related, "RelatedOut")
    VectorStatusOut = record_model(reports.VectorStatus)
    RankerScoreOut = record_model(reports.RankerScore)
    ScoresOut = record_model(reports.Scores)
    DecisionSourceOut = record_model(reports.DecisionSource)
    EvidenceSourceOut = record_model(reports.EvidenceSource)
    # The hits' models keep the names the search schema has always given them.
    record_model(records.DecisionMatch, "DecisionHit")
    record_model(records.EvidenceMatch, "EvidenceHit")
    SearchOut = record_model(records.SearchResults, "SearchOut")
    HistoryOut = record_model(records.History, "HistoryOut")


class LogRecordInput(_Strict):
    """One line of ``ctx log --jsonl``: an evidence text and what is known about it."""

    text: Annotated[str, StringConstraints(min_length=1)]
    kind: EvidenceKind | None = Field(default=None, description="Default: --kind, else note.")
    source: Annotated[str, StringConstraints(max_length=2_000)] | None = Field(
        default=None, description="Where the text came from: a path, URL or path#Lline."
    )
    tags: list[inputs.Name] | None = Field(default=None, max_length=50)
    created_at: str | None = Field(
        default=None, description="When the text was written (ISO 8601; no zone means UTC)."
    )
    agent: inputs.Name | None = None
    session: inputs.Name | None = None
    speaker: inputs.Name | None = Field(
        default=None, description="Who wrote it: user, assistant, tool, system."
    )


class TranscriptOut(_Strict):
    """One transcript file read by ``ctx ingest transcript``."""

    path: str
    format: Literal["claude-code", "codex", "aider"] | None
    lines: int = Field(ge=0)
    turns: int = Field(ge=0)
    problems: int = Field(ge=0)
    warnings: list[RejectedLine]


class IngestOut(LogBatchOut):
    """The result of ``ctx ingest transcript``: the vault totals and each file's parse."""

    files: list[TranscriptOut]


class SubjectDecisionOut(_Strict):
    """MCP ``get_decision``: the decision in force on exactly one subject, or null."""

    subject: str
    as_of: Timestamp | None
    decision: DecisionOut | None


class DecisionsOut(_Strict):
    """``ctx decisions``: current decisions, or those valid at ``as_of``, or all."""

    as_of: Timestamp | None
    decisions: list[DecisionOut]


class EvidenceListOut(_Strict):
    """``ctx evidence``: the newest evidence texts, newest first; unratified, never decisions."""

    since: Timestamp | None = Field(description="The moment --since named, as a time (null: no bound).")
    evidence: list[EvidenceOut]


class QueueOut(_Strict):
    """``ctx queue``: pending proposals, oldest first."""

    proposals: list[ProposalOut]


class ShowOut(_Strict):
    """``ctx show``: one record of any kind."""

    kind: Literal["evidence", "proposal", "decision"]
    record: EvidenceOut | ProposalOut | DecisionOut


EventType = AuditEventType


def _payload_annotations(schema: dict[str, Any]) -> None:
    """For each action, what its ``before`` and ``after`` texts hold: the JSON Schema of its payload
    records (``kernel/payloads.py``) as ``contentSchema``. Validators must not check content keywords
    by default (JSON Schema 2020-12 validation, section 8), so what validates does not change."""
    schema["allOf"] = [
        {
            "if": {"properties": {"action": {"const": action}}, "required": ["action"]},
            "then": {
                "properties": {
                    name: {
                        "contentMediaType": "application/json",
                        "contentSchema": TypeAdapter(record_model(record, record.__name__)).json_schema(),
                    }
                    for name, record in zip(("before", "after"), shapes, strict=True)
                    if record is not None
                }
            },
        }
        for action, shapes in payloads.PAYLOADS.items()
    ]


class AuditRecordOut(_Strict):
    """One audit event in an export (a line of FILE, or a CSV row).

    ``seq`` ... ``after`` are the exact hashed fields: ``hash`` is sha256 of ``prev_hash`` followed
    by the canonical JSON (sorted keys, no whitespace, UTF-8) of ``{seq, at, actor, action, target,
    before, after}``. The fields between are derived from them for reading; verification checks
    that they agree. For each action, ``contentSchema`` says what ``before`` and ``after`` hold (a
    key a row may lack, left out by ctx or not yet written by an earlier ctx, is not required).
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra=_payload_annotations)

    seq: Annotated[int, Field(ge=1)]
    at: Timestamp
    event: EventType
    actor: str
    reviewer: str | None = Field(
        description="The person, for a ratification, rejection, retirement, supersession or import."
    )
    action: str
    target: str
    subject: str | None
    text: str | None = Field(description="The decision text proposed, ratified or imported.")
    amended_from: str | None = Field(description="The proposed text, when the reviewer amended it.")
    reason: str | None
    decision_id: DecisionId | None
    superseded_by: DecisionId | None
    settled_by: ProposalId | None
    evidence: list[EvidenceId] = Field(description="Evidence the proposal or ratification cites.")
    content_hash: Sha256 | None = Field(description="sha256 of a logged evidence text (never exported).")
    before: str | None = Field(description="The hashed JSON text of the state before, exactly as stored.")
    after: str | None = Field(description="The hashed JSON text of the state after, exactly as stored.")
    prev_hash: Sha256
    hash: Sha256


class AuditCountsOut(_Strict):
    """Records per event type."""

    proposal: Annotated[int, Field(ge=0)]
    ratification: Annotated[int, Field(ge=0)]
    rejection: Annotated[int, Field(ge=0)]
    withdrawal: Annotated[int, Field(ge=0)]
    supersession: Annotated[int, Field(ge=0)]
    retirement: Annotated[int, Field(ge=0)]
    evidence: Annotated[int, Field(ge=0)]
    import_: Annotated[int, Field(ge=0, alias="import")]
    vault: Annotated[int, Field(ge=0, description="Encryption at rest turned on, or its key rotated.")]
    other: Annotated[int, Field(ge=0)]


class AuditKeyOut(_Strict):
    """The signing key's public half (for identification; a verifier trusts its own copy)."""

    algorithm: Literal["ed25519"]
    key_id: Sha256 = Field(description="sha256 of the raw 32-byte public key.")
    public_key: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9+/]{43}=$")] = Field(
        description="The raw public key, base64."
    )


class AuditServedSectionOut(_Strict):
    """An export's served log (``ctx audit export --served``): its file and its place in the served chain."""

    file: str = Field(description="The served entries' file (JSON Lines) when it was written.")
    sha256: Sha256 = Field(description="sha256 of that file's bytes.")
    entries: Annotated[int, Field(ge=0)]
    first_seq: Annotated[int, Field(ge=1)] | None
    last_seq: Annotated[int, Field(ge=1)] | None
    anchor_hash: Sha256 = Field(
        description="The hash the first entry links to (of the entry or fold before it)."
    )
    last_hash: Sha256


class AuditManifestBody(_Strict):
    """What the signature covers: the export's shape, its place in the store's chain, and the key."""

    format: Literal["ctx-audit-export"]
    format_version: Literal[1]
    records_file: str = Field(description="The records file's name when it was written.")
    records_format: Literal["jsonl", "csv"]
    records_sha256: Sha256 = Field(description="sha256 of the records file's bytes.")
    records: Annotated[int, Field(ge=1)]
    counts: AuditCountsOut
    first_seq: Annotated[int, Field(ge=1)]
    last_seq: Annotated[int, Field(ge=1)]
    anchor_hash: Sha256 = Field(
        description="The hash the first record links to: the hash of row first_seq - 1, or 64 zeros."
    )
    first_hash: Sha256
    last_hash: Sha256
    since: Timestamp | None
    until: Timestamp | None
    first_at: Timestamp
    last_at: Timestamp
    exported_at: Timestamp
    store_id: str
    store_schema_version: int
    store_head_seq: Annotated[int, Field(ge=1)] = Field(description="The store's last audit row then.")
    store_head_hash: Sha256
    key: AuditKeyOut
    served: AuditServedSectionOut | None = Field(
        None, description="With --served: the served log's entries, in a file of their own."
    )


class AuditSignatureOut(_Strict):
    """An Ed25519 signature of the manifest's canonical JSON, base64."""

    algorithm: Literal["ed25519"]
    value: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9+/]{86}==$")]


class AuditManifestOut(_Strict):
    """``FILE.manifest.json`` (and ``ctx audit export --json``): the signed manifest of an export."""

    manifest: AuditManifestBody
    signature: AuditSignatureOut


class AuditCheckpointBody(_Strict):
    """What a checkpoint's signature covers: the store and the head of its audit chain."""

    format: Literal["ctx-audit-checkpoint"]
    format_version: Literal[1]
    store_id: str
    seq: Annotated[int, Field(ge=1)] = Field(description="The audit row signed: the chain's last row then.")
    hash: Sha256 = Field(description="That row's hash, which covers every row before it.")
    signed_at: Timestamp
    key: AuditKeyOut
    served_seq: Annotated[int, Field(ge=1)] | None = Field(
        None, description="The served log's last entry then (absent when it had none)."
    )
    served_hash: Sha256 | None = Field(
        None, description="That entry's hash, which covers every entry before it."
    )


class AuditCheckpointOut(_Strict):
    """A checkpoint file (and ``ctx audit checkpoint --json``): a signed head of the store's audit chain."""

    checkpoint: AuditCheckpointBody
    signature: AuditSignatureOut


class RecallDecisionOut(_Strict):
    """A decision in force at the moment asked about, with what contradicts it."""

    id: DecisionId
    subject: str
    decision: str
    rationale: str | None
    current: bool
    valid_from: Timestamp
    valid_until: Timestamp | None
    source: DecisionSourceOut
    ratified_by: str
    rank: Annotated[int, Field(ge=1)]
    rrf: float
    scores: ScoresOut
    via: DecisionId | None
    superseded: list[RelatedOut]
    conflicts: list[RelatedOut]
    pending: list[RelatedOut]
    stale: StaleLine


class RecallClosedOut(_Strict):
    """A matching decision that no longer holds and has no successor in force."""

    id: DecisionId
    subject: str
    decision: str
    current: Literal[False]
    valid_from: Timestamp
    valid_until: Timestamp | None
    source: DecisionSourceOut
    scores: ScoresOut
    why: str
    warning: str


class RecallEvidenceOut(_Strict):
    """An evidence text: unratified, never current or superseded (its window starts when it was logged)."""

    id: EvidenceId
    label: Literal["unratified"]
    ratified: Literal[False]
    current: None
    valid_from: Timestamp
    valid_until: None
    source: EvidenceSourceOut
    created_at: Timestamp
    snippet: str
    rank: Annotated[int, Field(ge=1)]
    rrf: float
    scores: ScoresOut


class RecallOut(_Strict):
    """``ctx recall``: kernel decisions and vault evidence, never blended."""

    query: str
    mode: RecallMode
    as_of: Timestamp | None
    k: int
    rrf_k: int
    vectors: VectorStatusOut
    decisions: list[RecallDecisionOut]
    closed: list[RecallClosedOut]
    evidence: list[RecallEvidenceOut]


class InjectDecisionOut(_Strict):
    """A current decision in the session block."""

    id: DecisionId
    subject: str
    decision: str
    valid_from: Timestamp
    stale: StaleLine


class InjectSupersededOut(_Strict):
    """A superseded decision: listed so an agent does not apply it."""

    id: DecisionId
    subject: str
    decision: str
    valid_from: Timestamp | None
    valid_until: Timestamp | None
    replaced_by: DecisionId
    warning: Literal["superseded: do not apply"]


class InjectConflictOut(_Strict):
    """Two current decisions that take opposite stances."""

    id: DecisionId
    subject: str
    other_id: DecisionId
    other_subject: str
    why: str


class InjectProposalOut(_Strict):
    """A pending proposal: not in force."""

    id: ProposalId
    subject: str
    decision: str
    proposer: str
    created_at: Timestamp
    supersedes: list[DecisionId]


class InjectEvidenceOut(_Strict):
    """An evidence snippet: unratified."""

    id: EvidenceId
    kind: str
    created_at: Timestamp
    snippet: str
    ratified: Literal[False]


class InjectOmittedOut(_Strict):
    """How many items of each section did not fit the budget."""

    decisions: int
    superseded: int
    conflicts: int
    proposals: int
    evidence: int


class InjectIndexOut(_Strict):
    """A current decision that did not fit in full: named, so ``ctx show`` reaches it."""

    id: DecisionId
    handle: Annotated[str, Field(description="The end of `id` the block names it by; commands take it.")]
    subject: str


class InjectOut(_Strict):
    """``ctx inject --format json``: the session-start block and the items in it."""

    query: str | None
    budget: int
    max_chars: Annotated[
        int | None, Field(description="The most characters `markdown` may have, whatever the budget.")
    ]
    tokens: Annotated[int, Field(ge=0, description="Estimated tokens of `markdown`; never above `budget`.")]
    token_counting: str
    decisions: list[InjectDecisionOut]
    superseded: list[InjectSupersededOut]
    conflicts: list[InjectConflictOut]
    proposals: list[InjectProposalOut]
    evidence: list[InjectEvidenceOut]
    omitted: InjectOmittedOut
    index: Annotated[
        list[InjectIndexOut],
        Field(description="Current decisions left out of `decisions`, in the order the block names them."),
    ]
    vectors: VectorStatusOut | None
    markdown: str


SCHEMAS: dict[str, type[BaseModel]] = {
    "propose-input": ProposeInput,
    "propose-tool-input": ProposeToolInput,
    "log-input": TOOL_INPUTS[inputs.LogArgs],
    "recall-input": TOOL_INPUTS[inputs.RecallArgs],
    "inject-input": TOOL_INPUTS[inputs.InjectArgs],
    "subject-input": TOOL_INPUTS[inputs.HistoryArgs],
    "subject-at-input": TOOL_INPUTS[inputs.SubjectAtArgs],
    "decisions-input": TOOL_INPUTS[inputs.DecisionsArgs],
    "queue-input": TOOL_INPUTS[inputs.QueueArgs],
    "show-input": TOOL_INPUTS[inputs.ShowArgs],
    "search-input": TOOL_INPUTS[inputs.SearchArgs],
    "evidence-list-input": TOOL_INPUTS[inputs.EvidenceArgs],
    "withdraw-input": TOOL_INPUTS[inputs.WithdrawArgs],
    "timeline-input": TOOL_INPUTS[inputs.TimelineArgs],
    "subject-decision": SubjectDecisionOut,
    "log": LogOut,
    "log-record": LogRecordInput,
    "log-batch": LogBatchOut,
    "ingest": IngestOut,
    "ratification": RatificationOut,
    "proposal": ProposalOut,
    "decision": DecisionOut,
    "evidence": EvidenceOut,
    "evidence-list": EvidenceListOut,
    "decisions": DecisionsOut,
    "queue": QueueOut,
    "history": HistoryOut,
    "show": ShowOut,
    "search": SearchOut,
    "timeline": record_model(records.Timeline, "TimelineOut"),
    "audit-verify": record_model(ChainReport, "AuditVerifyOut"),
    "audit-record": AuditRecordOut,
    "audit-manifest": AuditManifestOut,
    "audit-export-verify": record_model(reports.ExportReport, "AuditExportVerifyOut"),
    "audit-checkpoint": AuditCheckpointOut,
    "audit-served": record_model(reports.ServedReport, "AuditServedOut"),
    "recall": RecallOut,
    "inject": InjectOut,
    "reindex": record_model(reports.ReindexReport, "ReindexOut"),
    "migrate": record_model(reports.MigrateReport, "MigrateOut"),
    "status": record_model(reports.StoreStatus, "StatusOut"),
    "doctor": record_model(reports.DoctorReport, "DoctorOut"),
    "stale": record_model(reports.StaleReport, "StaleOut"),
    "snapshot": record_model(records.Snapshot, "SnapshotOut"),
}

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"


def schema_documents() -> dict[str, dict[str, Any]]:
    """Every schema file's name and JSON document."""
    documents = {}
    for name, model in SCHEMAS.items():
        document = TypeAdapter(model).json_schema()
        document = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://ctx.invalid/schemas/{name}.schema.json",
            **document,
        }
        documents[f"{name}.schema.json"] = document
    return documents


def first_problem(exc: ValidationError) -> str:
    """The first validation error as one line: ``where: what`` (``evidence.0: String should ...``)."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "document"
    return f"{where}: {first['msg']}"


def render(document: dict[str, Any]) -> str:
    """The exact text written to a schema file."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def write_schemas(folder: Path = SCHEMA_DIR) -> list[Path]:
    """Rewrite every schema file under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, document in schema_documents().items():
        path = folder / filename
        path.write_text(render(document), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_schemas(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_DIR):
        print(written_path)
