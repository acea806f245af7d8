"""What the audit log's rows say: each action's ``before`` and ``after`` payloads, as records.

The services build these and append their JSON form (``to_dict``, which the store serialises with
sorted keys); ``ctx audit verify`` reads them back with ``from_audit`` to replay the log against the
tables, and ``kernel/contracts.py`` describes them in ``schemas/audit-record.schema.json``. A row is
hashed into the chain and signed in exports, so a payload's keys, values and omissions never change
for an action already written: a new key is a new field that rows written before lack.

A field typed ``X | Absent`` is a key a row may lack: one ctx leaves out (a title nobody gave) or one
an earlier ctx did not write yet. Read back, such a key is :data:`~records.ABSENT` when the row lacks
it, so the replay can tell "not recorded" from "recorded as null"; every other key is in every row
ctx has written of that action.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Annotated, Any, Final, Literal, Self

from ctx_kernel.kernel.limits import (
    DECISION_CONFIRMED,
    DECISION_IMPORTED,
    DECISION_RETIRED,
    DECISION_SUPERSEDED,
    EVIDENCE_LOGGED,
    PROPOSAL_CREATED,
    PROPOSAL_IMPORTED,
    PROPOSAL_RATIFIED,
    PROPOSAL_REJECTED,
    PROPOSAL_WITHDRAWN,
    VAULT_ENCRYPTED,
    VAULT_REKEYED,
)
from ctx_kernel.kernel.records import (
    ABSENT,
    Absent,
    ClosedBy,
    ProposalStatus,
    Record,
    may_be_absent,
)
from ctx_kernel.kernel.spec import DecisionId, EvidenceId, ProposalId, Sha256, Spec, Timestamp

KeyId = Annotated[str, Spec(pattern=r"^[0-9a-f]{16}$", description="A vault key's public fingerprint.")]


# Per payload class: each field's name and what it reads as when a row lacks its key.
_LACKING: dict[type, tuple[tuple[str, Absent | None], ...]] = {}


def _lacking(record: type[AuditPayload]) -> tuple[tuple[str, Absent | None], ...]:
    if record not in _LACKING:
        absent = may_be_absent(record)
        _LACKING[record] = tuple((f.name, ABSENT if f.name in absent else None) for f in fields(record))
    return _LACKING[record]


@dataclass(frozen=True, kw_only=True)
class AuditPayload(Record):
    """The JSON object in an audit row's ``before`` or ``after``."""

    @classmethod
    def from_audit(cls, data: Mapping[str, Any]) -> Self:
        """The payload a row's JSON object holds. Values are taken as the row holds them, unchecked (the
        replay compares them with the tables); a key the row lacks is ABSENT where the field allows it,
        else None (a damaged row: no ctx leaves such a key out, and the replay compares it as none)."""
        return cls(**{name: data.get(name, lacking) for name, lacking in _lacking(cls)})

    def to_dict(self) -> dict[str, Any]:
        """The JSON object a row holds: every field but those ABSENT.

        The fields hold JSON values already (text, numbers, None, lists and objects of them), so this
        skips :func:`records.to_json`'s walk: every evidence text logged writes one.
        """
        return {
            name: value for name, _ in _lacking(type(self)) if (value := getattr(self, name)) is not ABSENT
        }


@dataclass(frozen=True, kw_only=True)
class EvidenceLogged(AuditPayload):
    """``evidence.logged``: what is known about a text entering the vault (never the text)."""

    content_hash: Sha256
    kind: str | Absent
    agent: str | Absent | None
    session: str | Absent | None
    tags: list[str] | Absent
    source: str | Absent | None
    speaker: str | Absent | None
    occurred_at: Timestamp | Absent | None
    redacted: (
        Annotated[int, Spec(ge=1, description="Secrets replaced by placeholders, when any were.")] | Absent
    ) = ABSENT


@dataclass(frozen=True, kw_only=True)
class ProposalCreated(AuditPayload):
    """``proposal.created``: the proposal as queued."""

    subject: str
    decision: str
    rationale: str | None
    evidence: list[EvidenceId]
    supersedes: list[DecisionId] | Absent
    explicit_supersedes: list[DecisionId] | Absent
    near_duplicate_of: ProposalId | Absent | None
    near_duplicate_score: float | Absent | None
    session: str | Absent | None
    title: str | Absent = ABSENT  # when the proposer gave one
    deciders: list[str] | Absent = ABSENT  # when the proposal names any
    links: list[str] | Absent = ABSENT  # the paths and globs it governs, when it names any
    # The current decision it asks a person to re-confirm, when it is such a request.
    reconfirms: DecisionId | Absent = ABSENT


@dataclass(frozen=True, kw_only=True)
class ProposalState(AuditPayload):
    """A proposal's status before a person's act resolved it."""

    status: ProposalStatus


@dataclass(frozen=True, kw_only=True)
class ProposalRatified(AuditPayload):
    """``proposal.ratified``: the decision a proposal became."""

    status: ProposalStatus
    decision_id: DecisionId
    subject: str
    decision: str
    supersedes: list[DecisionId]
    evidence: list[EvidenceId] | Absent
    title: str | Absent = ABSENT  # when the proposal has one
    deciders: list[str] | Absent = ABSENT  # when the proposal names any
    amended_from: (
        Annotated[str, Spec(description="The proposed text, when the reviewer amended it.")] | Absent
    ) = ABSENT
    reconfirmed: (
        Annotated[
            DecisionId,
            Spec(
                description="The decision a re-confirmation request asked about, re-confirmed by this "
                "act (decision_id names it; no decision is made or superseded)."
            ),
        ]
        | Absent
    ) = ABSENT


@dataclass(frozen=True, kw_only=True)
class ProposalClosed(AuditPayload):
    """``proposal.rejected`` and ``proposal.withdrawn``: a proposal closed without becoming a decision."""

    status: ProposalStatus
    reason: str | None
    # A proposal of a review group closed with the one ratified: which one, and the decision it became.
    settled_by: ProposalId | Absent = ABSENT
    decision_id: DecisionId | Absent = ABSENT


@dataclass(frozen=True, kw_only=True)
class ProposalImported(AuditPayload):
    """``proposal.imported``: a pending or rejected ADR kept as a proposal."""

    subject: str
    status: ProposalStatus
    source: str
    adr_number: int | None
    decision: str | Absent
    rationale: str | Absent | None
    proposer: str | Absent
    created_at: Timestamp | Absent
    reason: str | Absent | None
    title: str | Absent | None
    deciders: list[str] | Absent
    evidence: list[EvidenceId] | Absent
    attribution: dict[str, str] | Absent = ABSENT  # who the file says decided, when it says
    links: list[str] | Absent = ABSENT  # the paths and globs a pending one governs, when it names any


@dataclass(frozen=True, kw_only=True)
class DecisionWindow(AuditPayload):
    """A decision's window before it was closed or linked: its end, if it had one."""

    valid_until: Timestamp | None


@dataclass(frozen=True, kw_only=True)
class DecisionSuperseded(AuditPayload):
    """``decision.superseded``: a decision linked as replaced by a newer one."""

    valid_until: Timestamp | None
    superseded_by: DecisionId
    # Why its window closed, when the link closed it (a decision closed before keeps its reason).
    reason: str | Absent = ABSENT
    # When the link holds from, when that is not the row's own time (an imported ADR's chain).
    linked_at: Timestamp | Absent = ABSENT

    def linked(self, at: str) -> str:
        """When the link holds from, for a row written at ``at``."""
        return at if self.linked_at is ABSENT else self.linked_at


@dataclass(frozen=True, kw_only=True)
class DecisionRetired(AuditPayload):
    """``decision.retired``: a decision closed with no successor."""

    valid_until: Timestamp
    reason: str


@dataclass(frozen=True, kw_only=True)
class DecisionImported(AuditPayload):
    """``decision.imported``: an ADR kept as a decision, with the window its file gives."""

    subject: str
    decision: str
    valid_from: Timestamp
    valid_until: Timestamp | None
    source: str
    adr_number: int | None
    status: str  # as the ADR states it
    rationale: str | Absent | None
    ratified_by: str | Absent
    closed_by: ClosedBy | Absent | None
    close_reason: str | Absent | None
    title: str | Absent | None
    deciders: list[str] | Absent
    evidence: list[EvidenceId] | Absent
    attribution: dict[str, str] | Absent = ABSENT  # who the file says decided, when it says


@dataclass(frozen=True, kw_only=True)
class DecisionConfirmed(AuditPayload):
    """``decision.confirmed``: a person ratified or re-confirmed a decision that governs code or has
    a review date, and the snapshot of the repository its staleness is measured from."""

    act: Literal["ratified", "reconfirmed"]
    git_commit: str | None
    links: list[dict[str, Any]]
    review_by: str | None
    review_every: int | None


@dataclass(frozen=True, kw_only=True)
class VaultKey(AuditPayload):
    """``vault.encrypted`` and ``vault.rekeyed``: the key the vault is sealed with."""

    key_id: KeyId | None


# Each action's payloads: the record its ``before`` holds and the one its ``after`` holds (None: null).
PAYLOADS: Final[dict[str, tuple[type[AuditPayload] | None, type[AuditPayload]]]] = {
    EVIDENCE_LOGGED: (None, EvidenceLogged),
    PROPOSAL_CREATED: (None, ProposalCreated),
    PROPOSAL_RATIFIED: (ProposalState, ProposalRatified),
    PROPOSAL_REJECTED: (ProposalState, ProposalClosed),
    PROPOSAL_WITHDRAWN: (ProposalState, ProposalClosed),
    PROPOSAL_IMPORTED: (None, ProposalImported),
    DECISION_SUPERSEDED: (DecisionWindow, DecisionSuperseded),
    DECISION_RETIRED: (DecisionWindow, DecisionRetired),
    DECISION_IMPORTED: (None, DecisionImported),
    DECISION_CONFIRMED: (None, DecisionConfirmed),
    VAULT_ENCRYPTED: (None, VaultKey),
    VAULT_REKEYED: (VaultKey, VaultKey),
}
