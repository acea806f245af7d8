"""What `ctx status` and `ctx doctor` report: the store at a glance, and whether the install works."""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ctx_kernel.kernel.decisions.review import STALE_AFTER, age
from ctx_kernel.kernel.errors import CtxError
from ctx_kernel.kernel.limits import META_LAST_VERIFY
from ctx_kernel.kernel.recall import embeddings as embed
from ctx_kernel.kernel.reports import Check, DoctorReport, LastVerify, ModelPlace, StoreStatus
from ctx_kernel.kernel.text import plural

if TYPE_CHECKING:
    from ctx_kernel.kernel.chain import ChainReport
    from ctx_kernel.kernel.store.base import Store


class OpenStore(Protocol):
    """What `ctx doctor` checks of an open store (the facade is one)."""

    @property
    def store(self) -> Store:
        """The store itself."""
        ...

    def integrity_check(self) -> str:
        """The store's own consistency check; raises when it fails."""
        ...

    @property
    def audit(self) -> AuditVerifier:
        """The audit log."""
        ...


class AuditVerifier(Protocol):
    """The audit log as doctor uses it."""

    def verify(self, *, state: bool = False) -> ChainReport:
        """The audit chain, and with ``state`` everything the log describes, verified."""
        ...


# What a failed integrity check asks of whom: a SQLite file's pages are damaged (a backup is the
# cure); a server's invariant was turned off or predates a revision (its administrator decides).
_REPAIR = {
    "sqlite": "restore the store from a backup",
    "postgresql": "the administrator puts back what is named (docs/guide.md: A team on PostgreSQL)",
}


def locate_model() -> ModelPlace:
    """Where the configured model lives, without importing fastembed or loading anything."""
    model, folder, enabled = embed.configured_model()
    if not enabled:
        return ModelPlace(model, "disabled", None, "vectors are disabled (CTX_VECTORS or [embedding])")
    if folder is not None:
        if not (folder / embed.MODEL_FILE).is_file():
            return ModelPlace(model, "model_dir", str(folder), f"{folder} has no {embed.MODEL_FILE}")
        return ModelPlace(model, "model_dir", str(folder), None, embed.pinned_mismatch(folder) is None)
    packaged = embed.packaged_model_dir() if model == embed.DEFAULT_MODEL else None
    if packaged is not None:
        mismatch = embed.pinned_mismatch(packaged)
        return ModelPlace(model, "package", str(packaged), mismatch, mismatch is None)
    if importlib.util.find_spec("fastembed") is None:
        return ModelPlace(model, "fastembed cache", None, "fastembed is not installed")
    problem = None if embed.fastembed_cache_may_hold_a_model() else embed.no_model_reason(model)
    return ModelPlace(model, "fastembed cache", None, problem)


def _model_fix(place: ModelPlace) -> str:
    """What to run when the model cannot be found or is refused, in this installation's own terms."""
    from ctx_kernel.kernel.recall import model_extra  # noqa: PLC0415 - only when something is wrong

    if place.source == "package" and place.folder is not None:
        mismatch = embed.first_mismatch(Path(place.folder))
        if mismatch is not None:
            return f"put the file back: {embed.packaged_mismatch_fix(mismatch[0])}"
    if place.source == "model_dir":
        return f"put {embed.MODEL_FILE} and the tokenizer files in {place.folder}, or unset CTX_MODEL_DIR"
    ways = "set CTX_MODEL_DIR to a model folder, or run `ctx reindex --download` with internet"
    if place.model != embed.DEFAULT_MODEL:
        return ways
    return f"{model_extra.install_command()}; or {ways}"


def store_status(store: Store, now: datetime | None = None) -> StoreStatus:
    """Counts and states, read in one snapshot."""
    moment = now or datetime.now(UTC)
    with store.snapshot():
        pending = store.list_proposals("pending")
        stale = sum(1 for p in pending if age(p.created_at, moment) >= STALE_AFTER)
        current = len(store.current_subjects())
        raw = store.get_meta(META_LAST_VERIFY)
        status = StoreStatus(
            store=store.location,
            store_id=store.get_meta("store_id"),
            schema_version=store.schema_version(),
            evidence=store.item_count("evidence"),
            decisions=store.item_count("decision"),
            current_decisions=current,
            pending=len(pending),
            stale=stale,
            encrypted=store.is_sealed(),
            model=locate_model(),
            vector_model=store.get_meta("vector_model"),
            last_verify=LastVerify(**json.loads(raw)) if raw else None,
        )
    return status


def doctor(kernel: OpenStore | None, store_problem: str | None) -> DoctorReport:
    """Check the install and, when there is one, the store; each failure says what to do."""
    from ctx_kernel.kernel.store.sqlite import driver  # noqa: PLC0415

    report = DoctorReport()
    checks = report.checks
    # The store's backend checks itself (SQLite: the driver; a server: its version, extensions and
    # this login's role); with no store open, the local default's driver.
    backend = driver.doctor_checks() if kernel is None else kernel.store.backend_checks()
    checks.extend(Check(name, ok, detail, fix) for name, ok, detail, fix in backend)
    place = locate_model()
    if place.source == "disabled":
        checks.append(
            Check(
                "model", True, f"vectors disabled; recall uses keyword and entity ranking ({place.problem})"
            )
        )
    elif place.problem is not None:
        checks.append(Check("model", False, place.problem, _model_fix(place)))
    else:
        resolution = embed.resolve()
        if resolution.embedder is None:
            checks.append(
                Check(
                    "model", False, resolution.reason or "cannot load the model", "see `ctx reindex --help`"
                )
            )
        else:
            where = f" in {place.folder}" if place.folder else ""
            proof = {
                True: "; its files match the pinned sha256",
                False: "; not the pinned files (your own model folder)",
                None: "; files not checked (fastembed's cache)",
            }[place.verified]
            copy = getattr(resolution.embedder, "query_dir", None)
            queries = f"; queries by its int8 copy in {copy}" if copy else "; queries by the model itself"
            checks.append(
                Check("model", True, f"{place.model} from {place.source}{where} loads{proof}{queries}")
            )
    if kernel is None:
        checks.append(
            Check("store", False, store_problem or "no store", "run `ctx init` in the project folder")
        )
        return report
    status = store_status(kernel.store)
    checks.append(Check("store", True, f"{status.store} (schema version {status.schema_version})"))
    try:
        kernel.integrity_check()
        what = "SQLite integrity check" if kernel.store.dialect == "sqlite" else "invariant check"
        checks.append(Check("integrity", True, f"{what} passed"))
    except CtxError as exc:
        checks.append(Check("integrity", False, exc.message, _REPAIR[kernel.store.dialect]))
    verdict = kernel.audit.verify(state=True)
    if verdict.ok:
        checks.append(Check("audit", True, f"audit log verifies: {plural(verdict.rows, 'row')}"))
    else:
        checks.append(
            Check(
                "audit",
                False,
                f"audit log does not verify: {verdict.problem}",
                "see `ctx audit verify --help`",
            )
        )
    if status.vector_model and place.problem is None and status.vector_model != place.model:
        checks.append(
            Check(
                "vectors",
                False,
                f"the store was embedded with {status.vector_model}, the configured model is {place.model}",
                "run `ctx reindex`",
            )
        )
    return report
