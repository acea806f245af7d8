"""The reports the services return (status, doctor, reindex, ...): records like those in
``kernel/records.py``, whose JSON form and schema come from their fields the same way.

They live below the services so that ``kernel/contracts.py`` can build their schemas without
importing a service; ``ctx log`` and ``ctx propose`` never load this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar, Literal

from ctx_kernel.kernel.records import Record, Spec

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
