"""The kernel facade: the one API the CLI, the MCP server and the review app call.

``Ctx`` opens the store, builds one service per capability over it and delegates to them; the
services check their own input. The vault, queue and recall services are built with it (a
long-running host warms recall on another thread); the decision kernel, audit and encryption
services, and their modules, on first use, which `ctx log` and `ctx propose`, an agent's hot
path, never make.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

from ctx_kernel.kernel import clock, ids
from ctx_kernel.kernel.capture.ingest import BatchReport, Item
from ctx_kernel.kernel.decisions.queue import QueueService
from ctx_kernel.kernel.decisions.review import (
    STALE_AFTER,
    ClosingWindow,
    ProposalContext,
    QueueEntry,
    RatificationPlan,
    ReconfirmationPlan,
    age,
    plain_diff,
    short_age,
    word_diff,
)
from ctx_kernel.kernel.errors import CtxError, RefusedError, StalePlanError, StoreError, UsageError
from ctx_kernel.kernel.facts.service import FactsService, conflict_rules
from ctx_kernel.kernel.limits import (
    AUTO,
    COPY_BATCH,
    DEFAULT_BUDGET,
    DEFAULT_MODE,
    DEFAULT_RRF_K,
    MAX_INJECT_CHARS,
    META_CONFLICT_RULES,
)
from ctx_kernel.kernel.recall.service import RecallService
from ctx_kernel.kernel.records import (
    AuditEvent,
    Decision,
    Evidence,
    History,
    LogResult,
    Proposal,
    Ratification,
    SearchResults,
    Snapshot,
    Timeline,
)
from ctx_kernel.kernel.store import create_store, open_store
from ctx_kernel.kernel.store.base import ChangeWatch, Store
from ctx_kernel.kernel.text import json_visible, plural, visible
from ctx_kernel.kernel.vault.service import LogManyOptions, LogOptions, VaultService

__all__ = [
    "STALE_AFTER",
    "AuditEvent",
    "ClosingWindow",
    "Ctx",
    "CtxError",
    "Decision",
    "Evidence",
    "History",
    "Proposal",
    "ProposalContext",
    "QueueEntry",
    "Ratification",
    "RatificationPlan",
    "StalePlanError",
    "age",
    "json_visible",
    "plain_diff",
    "plural",
    "short_age",
    "visible",
    "word_diff",
]

if TYPE_CHECKING:
    from ctx_kernel.kernel.adr.export import AdrExport
    from ctx_kernel.kernel.adr.importer import ImportReport
    from ctx_kernel.kernel.audit.served import ServedService
    from ctx_kernel.kernel.audit.service import AuditService
    from ctx_kernel.kernel.decisions.kernel import DecisionService
    from ctx_kernel.kernel.facts.stale import StaleFacts
    from ctx_kernel.kernel.recall import embeddings as embed
    from ctx_kernel.kernel.recall.embeddings import Embedder
    from ctx_kernel.kernel.recall.inject import Injection
    from ctx_kernel.kernel.recall.results import Recall
    from ctx_kernel.kernel.reports import (
        MigrateReport,
        ReindexReport,
        Related,
        StoreStatus,
        VectorStatus,
    )
    from ctx_kernel.kernel.store.copy import Progress
    from ctx_kernel.kernel.vault.encryption import EncryptionService, SealReport


class Ctx:
    """A project's ctx store: evidence vault, proposal queue and decision kernel."""

    def __init__(self, store: Store, *, embedder: Embedder | str | None = AUTO) -> None:
        self.store = store
        # Each service depends only on the store and on the services below it.
        self._vault = VaultService(store)
        self._queue = QueueService(store, self._vault)
        self._recall = RecallService(store, self._vault, embedder=embedder)
        # What is derived about decisions: ``conflicts()``, ``record_conflicts``, ``ensure_conflicts``.
        self.facts = FactsService(store, self._recall)

    @cached_property
    def _decisions(self) -> DecisionService:
        from ctx_kernel.kernel.decisions.kernel import DecisionService  # noqa: PLC0415

        return DecisionService(self.store, self._queue, self._recall, self.facts, self.staleness)

    @cached_property
    def staleness(self) -> StaleFacts:
        """Which current decisions may no longer hold (``report``, ``markers``), worked out from the
        git checkout of the working folder against the snapshots taken at a person's acts."""
        from ctx_kernel.kernel.facts.stale import StaleFacts  # noqa: PLC0415

        return StaleFacts(self.store, self.location)

    @cached_property
    def audit(self) -> AuditService:
        """The audit log: ``verify``, ``checkpoint`` (sign its head), ``export`` (signed), ``events``;
        keys and exports that need no store are ``AuditService``'s own (``signing_key``,
        ``create_signing_key``, ``verify_export``)."""
        from ctx_kernel.kernel.audit.service import AuditService  # noqa: PLC0415

        return AuditService(self.store)

    @cached_property
    def served(self) -> ServedService:
        """What agents were served: ``record`` an answer, ``report`` who was told what, ``check``,
        ``fold``."""
        from ctx_kernel.kernel.audit.served import ServedService  # noqa: PLC0415

        return ServedService(self.store)

    @cached_property
    def _encryption(self) -> EncryptionService:
        from ctx_kernel.kernel.vault.encryption import EncryptionService  # noqa: PLC0415

        return EncryptionService(self.store)

    # -- lifecycle ------------------------------------------------------------------------
    @classmethod
    def init(cls, path: Path | str, *, embedder: Embedder | str | None = AUTO) -> tuple[Ctx, bool]:
        """Create the store at ``path`` (a file, or a server's URL), or open it; True when created."""
        if isinstance(path, Path) and path.exists() and not path.is_file():
            raise UsageError(f"{path} exists and is not a file")
        created = isinstance(path, Path) and not path.exists()
        store = create_store(path)
        try:
            # Read and written under the write lock: two `ctx init` on one server name it once.
            with store.transaction():
                if store.get_meta("store_id") is None:
                    created = created or not isinstance(path, Path)
                    store.set_meta("store_id", ids.new_id("ev")[3:])
                    store.set_meta("created_at", clock.now())
                    store.set_meta(META_CONFLICT_RULES, conflict_rules())
        except BaseException:
            store.close()
            raise
        ctx = cls(store, embedder=embedder)
        try:
            # Only the owner may give the vector columns their dimension, and agents embed what
            # they log only once it is set: the owner's init chooses the model when it is here
            # (SQLite does so at the first embedding), loading it only when none is chosen yet.
            # Another login's init leaves vectors as it found them.
            if store.owner_sets_vectors and not (
                store.get_meta("vector_model") is not None and store.vector_tables_exist()
            ):
                ctx.prepare_vectors()
        except BaseException:
            ctx.close()
            raise
        return ctx, created

    @classmethod
    def open(cls, path: Path | str, *, embedder: Embedder | str | None = AUTO) -> Ctx:
        """Open an existing store; ``embedder`` is AUTO (the configured model), an embedder, or None."""
        return cls(open_store(path), embedder=embedder)

    def close(self) -> None:
        """Release the store."""
        self._recall.close()
        self.store.close()

    def __enter__(self) -> Ctx:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def location(self) -> str:
        """Where the store lives: its file, or its server's user, host and database (never a password)."""
        return self.store.location

    def data_version(self) -> int:
        """A number that changes whenever another connection commits to the store (cheap to poll)."""
        return self.store.data_version()

    def watch_changes(self) -> ChangeWatch:
        """A watch whose ``wait(timeout)`` is True once another connection commits (see ChangeWatch)."""
        return self.store.watch_changes()

    def integrity_check(self) -> str:
        """The store's own consistency check."""
        result = self.store.integrity_check()
        if result != "ok":
            raise StoreError(f"store {self.location} failed its integrity check: {result}")
        return result

    def status(self) -> StoreStatus:
        """The store at a glance: counts, the queue, vectors, encryption, the last full verify."""
        from ctx_kernel.kernel.status import store_status  # noqa: PLC0415

        return self.staleness.counted(store_status(self.store))

    @property
    def login(self) -> str | None:
        """The server login every act is bound to; None for a file store."""
        return self.store.login

    def actor(self, claimed: str | None, fallback: str, what: str) -> str:
        """The name an act is recorded under: on a server its login (a claimed other name is
        refused, as the database would), on a file the name given, else ``fallback``."""
        login = self.store.login
        if claimed is not None and not claimed.strip():
            raise UsageError(f"{what} is blank: give a name, or leave it out")
        claimed = claimed.strip() if claimed is not None else None
        if login is None:
            return claimed or fallback
        if claimed is not None and claimed != login:
            raise RefusedError(
                f"on {self.location} you act as your login {visible(login)!r}, not as the {what} "
                f"{visible(claimed)!r}: leave the name out, or connect as that login"
            )
        return login

    # -- evidence -------------------------------------------------------------------------
    def log(self, body: str, **options: Unpack[LogOptions]) -> LogResult:
        """Append text to the evidence vault, secrets redacted; the same text again returns its first id."""
        return self._vault.log(body, **options)

    def log_many(self, items: Iterable[Item], **options: Unpack[LogManyOptions]) -> BatchReport:
        """Log many records, ``batch_size`` to a transaction; a bad item is reported and skipped."""
        return self._vault.log_many(items, **options)

    def handles(self, record_ids: Iterable[str]) -> dict[str, str]:
        """Each id's handle: the short end of it (``3WCX``) lists print and every command takes."""
        return self._vault.handles(record_ids)

    def resolve_id(self, value: str, kind: str | None = None) -> str:
        """The one id ``value`` names: the id, its start (four or more characters) or its handle."""
        return self._vault.resolve_id(value, kind)

    def evidence(self, evidence_id: str) -> Evidence:
        """One evidence text by id."""
        return self._vault.evidence(evidence_id)

    def recent_evidence(
        self, limit: int = 5, *, since: str | None = None, agent: str | None = None, kind: str | None = None
    ) -> list[Evidence]:
        """The newest evidence texts, newest first: logged at or after ``since`` (a date means its
        start, UTC), by ``agent``, of ``kind``, when given."""
        return self._vault.recent(limit, since=since, agent=agent, kind=kind)

    def show(self, item_id: str) -> Evidence | Proposal | Decision:
        """Any record by id."""
        return self._decisions.show(item_id)

    # -- proposals ------------------------------------------------------------------------
    def propose(
        self,
        subject: str | None,
        decision: str | None,
        *,
        rationale: str | None = None,
        evidence: Sequence[str] = (),
        supersedes: Sequence[str] = (),
        proposer: str | None = None,
        session: str | None = None,
        title: str | None = None,
        links: Sequence[str] = (),
        reconfirms: str | None = None,
    ) -> Proposal:
        """Queue a proposal for a person to ratify; records what it would supersede and near-duplicates,
        and the paths and globs of the repository its decision governs (``links``).

        With ``reconfirms`` (a current decision's id or handle) it asks a person to re-confirm that
        decision instead: its subject and text are the decision's, so none is given, and ratifying it
        re-confirms the decision (:meth:`reconfirm`) rather than making a new one.

        The proposer defaults to ``agent``, on a server to the login (the database refuses another
        name for every login but the tables' owner)."""
        proposer = proposer or self.actor(None, "agent", "proposer")
        if reconfirms is not None:
            named = (("subject", subject), ("decision", decision), ("title", title))
            given = [name for name, value in named if value is not None]
            given += [name for name, values in (("supersedes", supersedes), ("links", links)) if values]
            if given:
                raise UsageError(
                    f"a request to re-confirm {reconfirms} takes the decision as it stands: "
                    f"give no {given[0]}"
                )
            return self._queue.propose_reconfirmation(
                reconfirms, rationale=rationale, evidence=evidence, proposer=proposer, session=session
            )
        if subject is None:
            raise UsageError("missing subject")
        if decision is None:
            raise UsageError("missing decision")
        return self._queue.propose(
            subject,
            decision,
            rationale=rationale,
            evidence=evidence,
            supersedes=supersedes,
            proposer=proposer,
            session=session,
            title=title,
            links=links,
        )

    def proposal(self, proposal_id: str) -> Proposal:
        """One proposal by id."""
        return self._queue.proposal(proposal_id)

    def queue(
        self, subject: str | None = None, proposer: str | None = None, *, limit: int | None = None
    ) -> list[Proposal]:
        """Pending proposals, oldest first, optionally for one subject subtree or proposer; the
        oldest ``limit`` when given."""
        return self._queue.queue(subject, proposer, limit=limit)

    def pending(self, proposal_id: str) -> Proposal:
        """A proposal that is still pending; refuses one that was already resolved."""
        return self._queue.pending(proposal_id)

    def reject(self, proposal_id: str, *, reviewer: str, reason: str) -> Proposal:
        """A person's act: reject a pending proposal, keeping it and the reason for audit."""
        return self._queue.reject(proposal_id, reviewer=reviewer, reason=reason)

    def withdraw(self, proposal_id: str, *, actor: str, reason: str | None = None) -> Proposal:
        """Withdraw a pending proposal (its proposer changed their mind)."""
        return self._queue.withdraw(proposal_id, actor=actor, reason=reason)

    # -- review ---------------------------------------------------------------------------
    def review_queue(self, subject: str | None = None, proposer: str | None = None) -> list[QueueEntry]:
        """Pending proposals, oldest first, with the decision each would supersede and its review group."""
        return self._queue.review_queue(subject, proposer)

    def review_group(self, proposal_id: str) -> list[Proposal]:
        """The other pending proposals settled together with this one (same subject or near-duplicate)."""
        return self._queue.review_group(proposal_id)

    def proposal_conflicts(self, proposal_ids: Sequence[str]) -> dict[str, list[Related]]:
        """For each pending proposal, the current decisions on other subjects it contradicts."""
        return self._decisions.proposal_conflicts(proposal_ids)

    def proposal_context(self, proposal_id: str, *, related: int = 5) -> ProposalContext:
        """A proposal with everything the detail view shows, and the change ratifying it would make."""
        return self._decisions.proposal_context(proposal_id, related=related)

    def plan_ratification(
        self, proposal_id: str, *, decision: str | None = None, settle: Sequence[str] | None = None
    ) -> RatificationPlan:
        """What ratifying would change, to show a person and then pass to :meth:`ratify` as it is."""
        return self._decisions.plan_ratification(proposal_id, decision=decision, settle=settle)

    def ratify(
        self,
        proposal: str | RatificationPlan,
        *,
        reviewer: str,
        decision: str | None = None,
        settle: Sequence[str] | None = None,
        review_by: str | None = None,
        review_every: str | int | None = None,
    ) -> Ratification:
        """A person's act: carry out a shown plan (or refuse it as stale), or plan and ratify an id;
        ``review_by`` (a date) and ``review_every`` (``90d``) make it due for review."""
        return self._decisions.ratify(
            proposal,
            reviewer=reviewer,
            decision=decision,
            settle=settle,
            review_by=review_by,
            review_every=review_every,
        )

    def ratify_all(self, plans: Sequence[RatificationPlan], *, reviewer: str) -> list[Ratification]:
        """Ratify several shown plans in one transaction: all of them, or none if any is refused."""
        return self._decisions.ratify_all(plans, reviewer=reviewer)

    # -- decisions ------------------------------------------------------------------------
    def plan_reconfirmation(
        self, decision_id: str, *, review_by: str | None = None, review_every: str | int | None = None
    ) -> ReconfirmationPlan:
        """What re-confirming a current decision records, to show a person and pass to :meth:`reconfirm`."""
        return self._decisions.plan_reconfirmation(
            decision_id, review_by=review_by, review_every=review_every
        )

    def reconfirm(self, plan: str | ReconfirmationPlan, *, reviewer: str) -> Snapshot:
        """A person's act: a current decision still holds; a new snapshot, audited (refused if what
        the plan showed changed)."""
        return self._decisions.reconfirm(plan, reviewer=reviewer)

    def retire(self, subject: str, *, reviewer: str, reason: str) -> Decision:
        """Close the current decision on a subject with no successor."""
        return self._decisions.retire(subject, reviewer=reviewer, reason=reason)

    def decision(self, decision_id: str) -> Decision:
        """One decision by id."""
        return self._decisions.decision(decision_id)

    def decisions(
        self,
        subject: str | None = None,
        *,
        as_of: str | None = None,
        include_closed: bool = False,
        limit: int | None = None,
    ) -> list[Decision]:
        """Current decisions, those valid at ``as_of``, or all of them; ``subject`` takes a subtree;
        the first ``limit`` (by subject) when given."""
        return self._decisions.decisions(subject, as_of=as_of, include_closed=include_closed, limit=limit)

    def timeline(self, target: str, *, around: int = 5) -> Timeline:
        """A subject's evidence, proposals and decisions in time order, around one record or whole."""
        return self._decisions.timeline(target, around)

    def history(self, subject: str) -> list[Decision]:
        """A subject's supersede chain, with the decisions on other subjects it links to, oldest first."""
        return self._decisions.history(subject)

    def subject_history(self, subject: str, *, limit: int | None = None) -> History:
        """A subject's chain, and the proposals on it that were rejected or withdrawn (never in
        force), each oldest first; the newest ``limit`` of each when given."""
        return self._decisions.subject_history(subject, limit=limit)

    # -- sharing --------------------------------------------------------------------------
    def import_adrs(self, folder: Path, *, reviewer: str, dry_run: bool = False) -> ImportReport:
        """Import a folder of ADR Markdown files; each record is one audit event; re-import is a no-op."""
        from ctx_kernel.kernel.adr.importer import import_adrs  # noqa: PLC0415

        return import_adrs(self._decisions, self._vault, folder, reviewer, dry_run=dry_run)

    def export_adrs(self, folder: Path, *, force: bool = False) -> AdrExport:
        """Write decisions and open proposals as ADR files in ``folder``, in place where they came from."""
        from ctx_kernel.kernel.adr.export import export_adrs  # noqa: PLC0415

        return export_adrs(self.store, folder, force=force)

    # -- search and recall ----------------------------------------------------------------
    def search(self, query: str, *, limit: int = 10, as_of: str | None = None) -> SearchResults:
        """Keyword search, answered as ratified decisions and unratified evidence, never blended."""
        return self._recall.search(query, limit=limit, as_of=as_of)

    def recall(
        self,
        query: str,
        *,
        k: int = 10,
        as_of: str | None = None,
        mode: str = DEFAULT_MODE,
        rrf_k: int = DEFAULT_RRF_K,
        min_scores: dict[str, float] | None = None,
    ) -> Recall:
        """Decisions that hold (with what contradicts them) and unratified evidence matching ``query``."""
        self.facts.keep_current()
        found = self._recall.recall(query, k=k, as_of=as_of, mode=mode, rrf_k=rrf_k, min_scores=min_scores)
        return self.staleness.marked(found)

    def inject(
        self,
        query: str | None = None,
        *,
        budget: int = DEFAULT_BUDGET,
        max_chars: int | None = MAX_INJECT_CHARS,
        via: str = "shell",
    ) -> Injection:
        """The session-start block within ``budget`` tokens and ``max_chars`` characters (None: no
        cap): current decisions, superseded ones, conflicts, proposals, evidence, and an index of
        the current decisions that did not fit. ``via`` is where the agent reads it: "shell" (the
        CLI, a session hook) or "mcp", so the block names the way to ask for more it has there."""
        self.facts.keep_current()
        markers = self.staleness.markers()
        return self._recall.inject(query, budget=budget, max_chars=max_chars, via=via, markers=markers)

    def embedding(self) -> embed.Resolution:
        """The embedding model this store uses (resolved once), or why vectors are off."""
        return self._recall.embedding()

    def warm(self) -> None:
        """Load the embedding model, the recall code and the entity names before a recall needs them."""
        self._recall.warm()

    def prepare_vectors(self, backfill: int = 0) -> tuple[Embedder | None, VectorStatus]:
        """The embedder to query with (None when vectors are off), after embedding up to ``backfill`` rows."""
        return self._recall.prepare_vectors(backfill)

    def reindex(
        self,
        *,
        download: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ReindexReport:
        """Embed every text again with the configured model, resuming an interrupted reindex."""
        report = self._recall.reindex(download=download, progress=progress)
        self.facts.ensure_conflicts(force=True)
        return report

    def migrate(
        self, to: str, *, batch_size: int = COPY_BATCH, progress: Progress | None = None, force: bool = False
    ) -> MigrateReport:
        """Copy this store to ``to`` (a file, sqlite:PATH or a server URL); run again, it resumes.
        Refused, unless ``force``: a source that does not verify (a copy would launder what was
        changed under the audit log), a target that is a symbolic link to nothing."""
        from ctx_kernel.kernel.store import copy  # noqa: PLC0415 - only ctx migrate copies

        if not force:
            verified = self.audit.verify(state=True)
            if not verified.ok:
                raise RefusedError(
                    f"this store does not verify ({verified.problem}): nothing copied; find out why with "
                    "`ctx audit verify`, or pass --force to copy it as it is"
                )
        with Ctx(copy.open_target(self.store, to, follow_dangling=force), embedder=None) as target:
            derive, store = target.facts.rebuild, target.store
            return copy.copy_store(self.store, store, derive=derive, batch_size=batch_size, progress=progress)

    # -- encryption at rest -------------------------------------------------------------
    @property
    def encrypted(self) -> bool:
        """True when evidence text is sealed at rest (or being sealed)."""
        return self._encryption.encrypted

    def encrypt(
        self, *, key_file: Path | None = None, progress: Callable[[int, int], None] | None = None
    ) -> SealReport:
        """Seal every evidence text with AES-256-GCM, resumably; new evidence is sealed from now on."""
        report = self._encryption.encrypt(key_file=key_file, progress=progress)
        self._recall.forget_entities()  # the evidence's mentions are gone
        return report

    def rekey(
        self, *, key_file: Path | None = None, progress: Callable[[int, int], None] | None = None
    ) -> SealReport:
        """Seal every evidence text again under a new key; resumable after any interruption."""
        return self._encryption.rekey(key_file=key_file, progress=progress)
