"""The kernel facade: the one API the CLI, the MCP server and the review app call."""

from __future__ import annotations

import base64
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctx_kernel.kernel import clock, text
from ctx_kernel.kernel.audit.chain import ChainReport, verify_chain
from ctx_kernel.kernel.capture.ingest import BatchReport, EvidenceInput, Item, Prepared, prepare, prepare_all
from ctx_kernel.kernel.decisions.review import (
    STALE_AFTER,
    ClosingWindow,
    ProposalContext,
    QueueEntry,
    RatificationPlan,
    RatifyPreview,
    age,
    plain_diff,
    short_age,
    word_diff,
)
from ctx_kernel.kernel.errors import (
    CtxError,
    NotFoundError,
    RefusedError,
    StalePlanError,
    StoreError,
    UsageError,
)
from ctx_kernel.kernel.recall import entities
from ctx_kernel.kernel.records import (
    AuditEvent,
    Decision,
    Evidence,
    LogResult,
    Proposal,
    Ratification,
    SearchResults,
)
from ctx_kernel.kernel.store import create_store, open_store
from ctx_kernel.kernel.store.base import Store
from ctx_kernel.kernel.store.query import TextQuery
from ctx_kernel.kernel.text import visible

__all__ = [
    "STALE_AFTER",
    "AuditEvent",
    "ClosingWindow",
    "Ctx",
    "CtxError",
    "Decision",
    "Evidence",
    "Proposal",
    "ProposalContext",
    "QueueEntry",
    "Ratification",
    "RatificationPlan",
    "RatifyPreview",
    "StalePlanError",
    "age",
    "plain_diff",
    "short_age",
    "visible",
    "word_diff",
]

if TYPE_CHECKING:
    # Recall, embeddings and ADR sharing import lazily: `ctx log` and `ctx propose` are an
    # agent's hot path and need none of them (each costs milliseconds to import).
    from concurrent.futures import ThreadPoolExecutor

    from ctx_kernel.kernel.adr.export import AdrExport
    from ctx_kernel.kernel.adr.importer import ImportReport
    from ctx_kernel.kernel.audit.export import ExportResult
    from ctx_kernel.kernel.audit.signing import KeyInfo, Passphrase
    from ctx_kernel.kernel.audit.store_checks import CheckpointResult
    from ctx_kernel.kernel.audit.verify_export import ExportReport
    from ctx_kernel.kernel.recall import embeddings as embed
    from ctx_kernel.kernel.recall import engine as recall
    from ctx_kernel.kernel.recall.embeddings import Embedder
    from ctx_kernel.kernel.recall.inject import Injection
    from ctx_kernel.kernel.status import StoreStatus

# token_sort_ratio of "subject decision" against each pending proposal; 82 flags rewordings
# and reorderings of the same sentence but not a different choice on the same subject.
NEAR_DUPLICATE_SCORE = 82.0
# The configured embedding model (see kernel.embed.resolve).
AUTO = "auto"
# Rows recall embeds before it answers; the rest waits for `ctx reindex` (a bound on latency).
BACKFILL_ON_RECALL = 128
MAX_QUERY_CHARS = 2000
DEFAULT_BUDGET = 2000
# Records per transaction in a bulk log: large enough that commits (an fsync each) are a small
# share of the time, small enough that an interrupted run loses little work.
LOG_BATCH = 500
MIN_BUDGET = 200
MAX_BUDGET = 1_000_000


@dataclass(frozen=True)
class ReindexReport:
    """What ``ctx reindex`` embedded."""

    model: str
    dim: int
    previous_model: str | None
    decisions: int
    evidence: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (``schemas/reindex.schema.json``)."""
        return asdict(self)


class Ctx:
    """A project's ctx store: evidence vault, proposal queue and decision kernel."""

    def __init__(self, store: Store, *, embedder: Embedder | str | None = AUTO) -> None:
        self.store = store
        self._embedder_choice = embedder
        self._resolution: embed.Resolution | None = None
        # warm() may resolve the model on another thread while a recall asks for it.
        self._resolution_lock = threading.Lock()
        self._entity_index_cache: recall.EntityIndex | None = None
        self._decision_cache: recall.DecisionCache | None = None
        self._executor: ThreadPoolExecutor | None = None

    # -- lifecycle ------------------------------------------------------------------------

    @classmethod
    def init(cls, path: Path, *, embedder: Embedder | str | None = AUTO) -> tuple[Ctx, bool]:
        """Create the store at ``path`` (or open it if it exists); True when it was created."""
        created = not path.exists()
        if path.exists() and not path.is_file():
            raise UsageError(f"{path} exists and is not a file")
        store = create_store(path)
        if store.get_meta("store_id") is None:
            with store.transaction():
                store.set_meta("store_id", clock.new_id("ev")[3:])
                store.set_meta("created_at", clock.now())
                store.set_meta("conflict_rules", _conflict_rules())
        return cls(store, embedder=embedder), created

    @classmethod
    def open(cls, path: Path, *, embedder: Embedder | str | None = AUTO) -> Ctx:
        """Open an existing store; ``embedder`` is AUTO (the configured model), an embedder, or None."""
        return cls(open_store(path), embedder=embedder)

    def close(self) -> None:
        """Release the store."""
        if self._executor is not None:
            self._executor.shutdown()
        self.store.close()

    @property
    def _entity_index(self) -> recall.EntityIndex:
        from ctx_kernel.kernel.recall import engine as recall  # noqa: PLC0415 - lazy, see the imports

        if self._entity_index_cache is None:
            self._entity_index_cache = recall.EntityIndex()
        return self._entity_index_cache

    def _pool(self) -> ThreadPoolExecutor:
        from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctx-recall")
        return self._executor

    def __enter__(self) -> Ctx:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def location(self) -> str:
        """Where the store lives."""
        return self.store.location

    # -- evidence -------------------------------------------------------------------------

    def log(
        self,
        body: str,
        *,
        kind: str = "note",
        agent: str | None = None,
        session: str | None = None,
        tags: Iterable[str] = (),
        source: str | None = None,
        speaker: str | None = None,
        occurred_at: str | None = None,
        redact: bool = True,
    ) -> LogResult:
        """Append text to the evidence vault; the same text logged again returns its first id.

        Obvious secrets are replaced by typed placeholders first unless ``redact`` is False;
        the result says how many.
        """
        record = EvidenceInput(body, kind, agent, session, tuple(tags), source, speaker, occurred_at)
        prepared = prepare(record, redact=redact)
        with self.store.transaction():
            return self._append(prepared)

    def log_many(
        self,
        items: Iterable[Item],
        *,
        redact: bool = True,
        report: BatchReport | None = None,
        batch_size: int = LOG_BATCH,
        progress: Callable[[BatchReport], None] | None = None,
        origin: str | None = None,
        parallel: bool = False,
    ) -> BatchReport:
        """Log many records, ``batch_size`` to a transaction; a bad item is reported and skipped.

        ``report`` is updated only as each batch commits, so when the run is interrupted it
        says exactly what is in the vault; running the same input again adds nothing.
        ``progress`` is called after every commit; ``origin`` names the input in rejections.
        With ``parallel``, a second process checks, redacts and scans the records while this
        one writes (worth its ~0.2 s start for thousands of records).
        """
        report = report if report is not None else BatchReport()
        batch: list[tuple[int, Prepared]] = []
        failed: list[tuple[int, str]] = []

        def commit() -> None:
            added = duplicates = redacted = 0
            with self.store.transaction():
                for _, prepared in batch:
                    result = self._append(prepared)
                    added += not result.duplicate
                    duplicates += result.duplicate
                    redacted += 0 if result.duplicate else result.redacted
            report.added += added
            report.duplicates += duplicates
            report.redacted += redacted
            for line, error in failed:
                report.reject(line, error, origin)
            report.lines = max([report.lines, *(line for line, _ in batch), *(line for line, _ in failed)])
            batch.clear()
            failed.clear()
            if progress is not None:
                progress(report)

        for line, prepared, error in prepare_all(items, redact=redact, parallel=parallel):
            if prepared is None:
                failed.append((line, error or "rejected"))
            else:
                batch.append((line, prepared))
            if len(batch) + len(failed) >= batch_size:
                commit()
        if batch or failed:
            commit()
        return report

    def _append(self, prepared: Prepared) -> LogResult:
        """Write one prepared record inside the caller's transaction, or find its twin."""
        existing = self.store.evidence_id_for_hash(prepared.digest)
        if existing is not None:
            return LogResult(existing, duplicate=True, redacted=prepared.redacted)
        evidence = Evidence(
            id=clock.new_id("ev"),
            text=prepared.body,
            kind=prepared.kind,
            agent=prepared.agent,
            session=prepared.session,
            tags=prepared.tags,
            content_hash=prepared.digest,
            created_at=clock.now(),
            source=prepared.source,
            speaker=prepared.speaker,
            occurred_at=prepared.occurred_at,
        )
        self.store.insert_evidence(evidence)
        if not self.store.is_sealed():  # a sealed text's entities would give its words away
            mentions = prepared.mentions if prepared.mentions is not None else entities.extract(prepared.body)
            self.store.add_mentions(evidence.id, mentions)
        details: dict[str, Any] = {
            "content_hash": prepared.digest,
            "kind": prepared.kind,
            "agent": prepared.agent,
            "session": prepared.session,
            "tags": prepared.tags,
            "source": prepared.source,
            "speaker": prepared.speaker,
            "occurred_at": prepared.occurred_at,
        }
        if prepared.redacted:
            details["redacted"] = prepared.redacted
        self.store.append_audit(
            evidence.created_at, prepared.agent or "unknown", "evidence.logged", evidence.id, None, details
        )
        return LogResult(evidence.id, duplicate=False, redacted=prepared.redacted)

    def resolve_id(self, value: str, kind: str | None = None) -> str:
        """A full id, or the one id that starts with ``value`` (``pr_01M8Q`` for ``pr_01M8Q...``,
        at least four characters after the underscore, as git abbreviates commits)."""
        try:
            return clock.check_id(value, kind)
        except UsageError:
            prefix = clock.id_prefix(value, kind)
            if prefix is None:
                raise
        found = self.store.ids_with_prefix(prefix, 6)
        if not found:
            raise NotFoundError(f"no {kind or clock.ID_PREFIXES[prefix[:2]]} with an id starting {prefix}")
        if len(found) > 1:
            more = ", ..." if len(found) > 5 else ""
            raise UsageError(
                f"{prefix} is ambiguous: it starts {', '.join(found[:5])}{more}; give more of the id"
            )
        return found[0]

    def evidence(self, evidence_id: str) -> Evidence:
        """One evidence text by id."""
        found = self.store.get_evidence(self.resolve_id(evidence_id, "evidence"))
        if found is None:
            raise NotFoundError(f"no evidence {evidence_id}")
        return found

    # -- proposals ------------------------------------------------------------------------

    def propose(
        self,
        subject: str,
        decision: str,
        *,
        rationale: str | None = None,
        evidence: Sequence[str] = (),
        supersedes: Sequence[str] = (),
        proposer: str = "agent",
        session: str | None = None,
        title: str | None = None,
    ) -> Proposal:
        """Queue a proposal for a person to ratify; records what it would supersede and near-duplicates."""
        subject = text.normalise_subject(subject)
        title = text.optional_shown(title, "title", text.MAX_TITLE_CHARS)
        if title is not None and (not title.strip() or "\n" in title):
            raise UsageError("the title must be one non-empty line")
        decision = text.require_shown(decision, "decision", text.MAX_DECISION_CHARS)
        rationale = text.optional_shown(rationale, "rationale", text.MAX_RATIONALE_CHARS)
        proposer = text.require_shown(proposer, "proposer", text.MAX_NAME_CHARS)
        session = text.optional_shown(session, "session", text.MAX_NAME_CHARS)
        evidence_ids = list(dict.fromkeys(self.resolve_id(e, "evidence") for e in evidence))
        explicit = list(dict.fromkeys(self.resolve_id(d, "decision") for d in supersedes))
        with self.store.transaction():
            missing = self.store.missing_evidence(evidence_ids)
            if missing:
                raise NotFoundError(f"no evidence {missing[0]}")
            for decision_id in explicit:
                if self.store.get_decision(decision_id) is None:
                    raise NotFoundError(f"no decision {decision_id}")
            current = self.store.current_decision(subject)
            if current is None:
                self.check_new_subject(subject)
            would_supersede = list(explicit)
            if current is not None and current.id not in would_supersede:
                would_supersede.append(current.id)
            duplicate_of, score = self._near_duplicate(subject, decision)
            proposal = Proposal(
                id=clock.new_id("pr"),
                subject=subject,
                decision=decision,
                rationale=rationale,
                proposer=proposer,
                session=session,
                created_at=clock.now(),
                status="pending",
                supersedes=would_supersede,
                explicit_supersedes=explicit,
                near_duplicate_of=duplicate_of,
                near_duplicate_score=score,
                resolved_at=None,
                resolved_by=None,
                resolution_note=None,
                decision_id=None,
                evidence=evidence_ids,
                title=title.strip() if title is not None else None,
            )
            self.store.insert_proposal(proposal)
            self.store.append_audit(
                proposal.created_at,
                proposer,
                "proposal.created",
                proposal.id,
                None,
                _proposal_summary(proposal),
            )
        return proposal

    def check_new_subject(self, subject: str) -> None:
        """Refuse a subject that looks like a different existing one (Unicode TR39 skeletons)."""
        known = self.store.known_subjects()
        if subject in known:
            return
        mine = text.skeleton(subject)
        for other in known:
            if subject.isascii() and other.isascii():
                continue  # an ASCII subject is its own skeleton
            if text.skeleton(other) == mine:
                odd = next(
                    (i for i, (a, b) in enumerate(zip(subject, other, strict=False)) if a != b),
                    min(len(subject), len(other)),
                )
                detail = (
                    f" (character {odd + 1} is {text.describe_char(subject[odd])})"
                    if odd < len(subject)
                    else ""
                )
                raise RefusedError(
                    f"subject {subject} looks like the existing subject {other} but is a different "
                    f"string{detail}: use {other}, or a subject that does not look like it"
                )

    def _near_duplicate(self, subject: str, decision: str) -> tuple[str | None, float | None]:
        pending = self.store.pending_texts()
        if not pending:
            return None, None
        from rapidfuzz import fuzz, process, utils  # noqa: PLC0415 - only with pending proposals

        match = process.extractOne(
            f"{subject} {decision}",
            {pid: f"{subj} {dec}" for pid, subj, dec in pending},
            scorer=fuzz.token_sort_ratio,
            processor=utils.default_process,
            score_cutoff=NEAR_DUPLICATE_SCORE,
        )
        if match is None:
            return None, None
        return match[2], round(float(match[1]), 1)

    def proposal(self, proposal_id: str) -> Proposal:
        """One proposal by id."""
        found = self.store.get_proposal(self.resolve_id(proposal_id, "proposal"))
        if found is None:
            raise NotFoundError(f"no proposal {proposal_id}")
        return found

    def queue(self, subject: str | None = None, proposer: str | None = None) -> list[Proposal]:
        """Pending proposals, oldest first, optionally for one subject subtree or proposer."""
        subject = text.normalise_subject(subject) if subject is not None else None
        found = self.store.list_proposals("pending", subject)
        if proposer is not None:
            found = [p for p in found if p.proposer == proposer]
        return found

    def pending(self, proposal_id: str) -> Proposal:
        """A proposal that is still pending; refuses one that was already resolved."""
        proposal = self.proposal(proposal_id)
        if proposal.status != "pending":
            who = f"by {visible(proposal.resolved_by or '?')} at {(proposal.resolved_at or '?')[:19]}"
            note = f": {visible(proposal.resolution_note)}" if proposal.resolution_note else ""
            raise RefusedError(f"proposal {proposal.id} is {proposal.status}, not pending ({who}{note})")
        return proposal

    def plan_ratification(
        self, proposal_id: str, *, decision: str | None = None, settle: Sequence[str] | None = None
    ) -> RatificationPlan:
        """What ratifying would change: the new decision, what it supersedes and closes, the
        proposals it settles (default: its whole review group) and what it contradicts.

        Show it to the person, then pass it to :meth:`ratify`, which carries out exactly this
        plan or refuses if the store changed in between.
        """
        from ctx_kernel.kernel.decisions import review  # noqa: PLC0415

        settled = None if settle is None else [self.resolve_id(s, "proposal") for s in settle]
        return review.plan(self, self.pending(proposal_id), decision, settled)

    def preview_ratify(
        self, proposal_id: str, *, decision: str | None = None, settle: Sequence[str] | None = None
    ) -> RatificationPlan:
        """The same as :meth:`plan_ratification` (its earlier name)."""
        return self.plan_ratification(proposal_id, decision=decision, settle=settle)

    def ratify(
        self,
        proposal: str | RatificationPlan,
        *,
        reviewer: str,
        decision: str | None = None,
        settle: Sequence[str] | None = None,
    ) -> Ratification:
        """A person's act: turn a pending proposal into the current decision on its subject.

        Given a plan from :meth:`plan_ratification` (what the person was shown), carries out
        exactly that plan, or refuses with :class:`StalePlanError` naming what changed since.
        Given a proposal id, plans and carries out in one step: ``decision`` ratifies an
        amended text (recorded), ``settle`` names the review-group proposals closed as settled
        by this one (default: the whole group, as the review app does).
        Atomically closes the windows the plan closes and links each superseded decision.
        """
        reviewer = text.require_shown(reviewer, "reviewer", text.MAX_NAME_CHARS)
        with self.store.transaction():
            return self._ratify(proposal, reviewer, decision, settle)

    def ratify_all(self, plans: Sequence[RatificationPlan], *, reviewer: str) -> list[Ratification]:
        """Ratify several shown plans in one transaction: all of them, or none if any is refused."""
        reviewer = text.require_shown(reviewer, "reviewer", text.MAX_NAME_CHARS)
        touched: dict[str, str] = {}
        for plan in plans:
            for pid in [plan.proposal.id, *(p.id for p in plan.settles)]:
                if pid in touched:
                    raise UsageError(f"{pid} is in the plans of both {touched[pid]} and {plan.proposal.id}")
                touched[pid] = plan.proposal.id
        with self.store.transaction():
            return [self._ratify(plan, reviewer, None, None) for plan in plans]

    def _ratify(
        self,
        proposal: str | RatificationPlan,
        reviewer: str,
        decision: str | None,
        settle: Sequence[str] | None,
    ) -> Ratification:
        from ctx_kernel.kernel.decisions import review  # noqa: PLC0415

        if isinstance(proposal, RatificationPlan):
            if decision is not None or settle is not None:
                raise UsageError("a ratification plan already holds the text and the proposals it settles")
            shown = proposal
            pending = self._still_pending(shown.proposal.id, None)
            for other in shown.settles:
                self._still_pending(other.id, shown.proposal.id)
            amended = shown.text if shown.amended else None
            plan = review.plan(self, pending, amended, [p.id for p in shown.settles], conflicts=False)
            reason = review.stale_reason(shown, plan, self.store.get_decision)
            if reason is not None:
                raise StalePlanError(f"not ratified: {reason}")
        else:
            pid = self.resolve_id(proposal, "proposal")
            settled = None if settle is None else [self.resolve_id(s, "proposal") for s in settle]
            plan = review.plan(self, self.pending(pid), decision, settled, conflicts=False)
        return self._carry_out(plan, reviewer)

    def _still_pending(self, proposal_id: str, settled_by: str | None) -> Proposal:
        found = self.proposal(proposal_id)
        if found.status == "pending":
            return found
        when = f" by {text.visible(found.resolved_by or '?')} at {(found.resolved_at or '?')[:19]}"
        if settled_by is None:
            raise RefusedError(f"proposal {found.id} was already {found.status}{when}")
        raise StalePlanError(
            f"not ratified: {found.id}, which approving {settled_by} was shown to settle, was "
            f"{found.status}{when} since; review it again"
        )

    def _carry_out(self, plan: RatificationPlan, reviewer: str) -> Ratification:
        """Write ``plan`` inside the caller's transaction (its freshness already checked)."""
        proposal = plan.proposal
        replaced = plan.supersedes
        # A successor never starts before what it replaces, even if the wall clock stepped back.
        at = clock.latest([clock.now(), *(old.valid_from for old in replaced)])
        new = Decision(
            id=clock.new_id("dc"),
            subject=proposal.subject,
            decision=plan.text,
            rationale=proposal.rationale,
            valid_from=at,
            valid_until=None,
            ratified_by=reviewer,
            ratified_at=at,
            proposal_id=proposal.id,
            amended=plan.amended,
            closed_by=None,
            close_reason=None,
            evidence=list(proposal.evidence),
            title=proposal.title,
            deciders=list(proposal.deciders),
        )
        for window in plan.closes:
            self.store.close_decision(window.decision.id, at, "superseded", f"superseded by {new.id}")
        self.store.insert_decision(new)
        self.store.add_mentions(new.id, entities.for_decision(new.subject, new.decision, new.rationale))
        for old in replaced:
            if self.store.is_ancestor(old.id, new.id):
                raise RefusedError(f"superseding {old.id} would make a cycle")
            self.store.link(old.id, new.id, at)
        self.record_conflicts([new.id])
        self.store.resolve_proposal(proposal.id, "ratified", at, reviewer, None, new.id)
        after: dict[str, Any] = {
            "status": "ratified",
            "decision_id": new.id,
            "subject": new.subject,
            "decision": new.decision,
            "supersedes": [old.id for old in replaced],
            "evidence": list(new.evidence),
        }
        if new.title is not None:
            after["title"] = new.title
        if new.deciders:
            after["deciders"] = new.deciders
        if new.amended:
            after["amended_from"] = proposal.decision
        self.store.append_audit(at, reviewer, "proposal.ratified", proposal.id, {"status": "pending"}, after)
        for old in replaced:
            self.store.append_audit(
                at,
                reviewer,
                "decision.superseded",
                old.id,
                {"valid_until": old.valid_until},
                {"valid_until": old.valid_until or at, "superseded_by": new.id}
                | ({} if old.valid_until else {"reason": f"superseded by {new.id}"}),
            )
        settled = [other.id for other in plan.settles]
        for other in settled:
            note = f"settled by {proposal.id}, ratified as {new.id}"
            self.store.resolve_proposal(other, "rejected", at, reviewer, note, None)
            self.store.append_audit(
                at,
                reviewer,
                "proposal.rejected",
                other,
                {"status": "pending"},
                {"status": "rejected", "reason": note, "settled_by": proposal.id, "decision_id": new.id},
            )
        result = self.store.get_decision(new.id)
        assert result is not None
        return Ratification(proposal.id, result, [old.id for old in replaced], settled)

    def _require_decision(self, decision_id: str) -> Decision:
        found = self.store.get_decision(decision_id)
        if found is None:
            raise NotFoundError(f"no decision {decision_id}")
        return found

    def reject(self, proposal_id: str, *, reviewer: str, reason: str) -> Proposal:
        """A person's act: reject a pending proposal, keeping it and the reason for audit."""
        reviewer = text.require_shown(reviewer, "reviewer", text.MAX_NAME_CHARS)
        reason = text.require_shown(reason, "reason", text.MAX_REASON_CHARS)
        return self._resolve(proposal_id, "rejected", reviewer, reason)

    def withdraw(self, proposal_id: str, *, actor: str, reason: str | None = None) -> Proposal:
        """Withdraw a pending proposal (its proposer changed their mind)."""
        actor = text.require_shown(actor, "actor", text.MAX_NAME_CHARS)
        reason = text.optional_shown(reason, "reason", text.MAX_REASON_CHARS)
        return self._resolve(proposal_id, "withdrawn", actor, reason)

    def _resolve(self, proposal_id: str, status: str, actor: str, note: str | None) -> Proposal:
        pid = self.resolve_id(proposal_id, "proposal")
        with self.store.transaction():
            self.pending(pid)
            at = clock.now()
            self.store.resolve_proposal(pid, status, at, actor, note, None)
            self.store.append_audit(
                at,
                actor,
                f"proposal.{status}",
                pid,
                {"status": "pending"},
                {"status": status, "reason": note},
            )
            return self.proposal(pid)

    # -- review ---------------------------------------------------------------------------

    def data_version(self) -> int:
        """A number that changes whenever another connection commits to the store (cheap to poll)."""
        return self.store.data_version()

    def review_queue(self, subject: str | None = None, proposer: str | None = None) -> list[QueueEntry]:
        """Pending proposals, oldest first, with the decision each would supersede and its review group."""
        from ctx_kernel.kernel.decisions import review  # noqa: PLC0415

        current = {d.subject: d for d in self.store.decisions()}
        everything = review.group_queue(self.store.list_proposals("pending"), current)
        if subject is None and proposer is None:
            return everything
        wanted = {p.id for p in self.queue(subject, proposer)}
        return [entry for entry in everything if entry.proposal.id in wanted]

    def review_group(self, proposal_id: str) -> list[Proposal]:
        """The other pending proposals settled together with this one (same subject or near-duplicate)."""
        from ctx_kernel.kernel.decisions import review  # noqa: PLC0415

        # Read only the group's neighbourhood: this runs inside every ratification's transaction.
        mine = self.proposal(proposal_id)
        same = [p for p in self.store.list_proposals("pending", mine.subject) if p.subject == mine.subject]
        ids = [p.id for p in same]
        linked = self.store.pending_near_duplicates(ids)
        for target in sorted({p.near_duplicate_of for p in same if p.near_duplicate_of} - set(ids)):
            found = self.store.get_proposal(target)
            if found is not None and found.status == "pending":
                linked.append(found)
        return review.group_members([*same, *linked], mine.id)

    def proposal_conflicts(self, proposal_ids: Sequence[str]) -> dict[str, list[recall.Related]]:
        """For each pending proposal, the current decisions on other subjects it contradicts."""
        from ctx_kernel.kernel.decisions import review  # noqa: PLC0415

        return review.proposal_conflicts(self, [self.resolve_id(p, "proposal") for p in proposal_ids])

    def proposal_context(self, proposal_id: str, *, related: int = 5) -> ProposalContext:
        """A proposal with its subject's current decision and chain, contradictions, related decisions
        found by recall, cited evidence, review group, and the change ratifying it would make."""
        from ctx_kernel.kernel.decisions import review  # noqa: PLC0415

        return review.context(self, self.proposal(proposal_id), related)

    # -- decisions ------------------------------------------------------------------------

    def retire(self, subject: str, *, reviewer: str, reason: str) -> Decision:
        """Close the current decision on a subject with no successor."""
        subject = text.normalise_subject(subject)
        reviewer = text.require_shown(reviewer, "reviewer", text.MAX_NAME_CHARS)
        reason = text.require_shown(reason, "reason", text.MAX_REASON_CHARS)
        with self.store.transaction():
            current = self.store.current_decision(subject)
            if current is None:
                raise RefusedError(f"no current decision on {subject} to retire")
            at = clock.now()
            self.store.close_decision(current.id, at, "retired", reason)
            self.store.append_audit(
                at,
                reviewer,
                "decision.retired",
                current.id,
                {"valid_until": None},
                {"valid_until": at, "reason": reason},
            )
            return self._require_decision(current.id)

    def decision(self, decision_id: str) -> Decision:
        """One decision by id."""
        return self._require_decision(self.resolve_id(decision_id, "decision"))

    def decisions(
        self, subject: str | None = None, *, as_of: str | None = None, include_closed: bool = False
    ) -> list[Decision]:
        """Current decisions, those valid at ``as_of``, or all of them; ``subject`` takes a subtree."""
        subject = text.normalise_subject(subject) if subject is not None else None
        moment = clock.parse_when(as_of) if as_of is not None else None
        return self.store.decisions(subject, moment, include_closed)

    def history(self, subject: str) -> list[Decision]:
        """A subject's supersede chain, with the decisions on other subjects it links to, oldest first."""
        subject = text.normalise_subject(subject)
        chain = self.store.connected_decisions(subject)
        if not chain:
            raise NotFoundError(f"no decisions on {subject}")
        return chain

    def show(self, item_id: str) -> Evidence | Proposal | Decision:
        """Any record by id."""
        checked = self.resolve_id(item_id)
        kind = clock.ID_PREFIXES[checked[:2]]
        if kind == "evidence":
            return self.evidence(checked)
        if kind == "proposal":
            return self.proposal(checked)
        return self.decision(checked)

    # -- sharing --------------------------------------------------------------------------

    def import_adrs(self, folder: Path, *, reviewer: str, dry_run: bool = False) -> ImportReport:
        """Import a folder of ADR Markdown files; each record is one audit event; re-import is a no-op."""
        from ctx_kernel.kernel.adr.importer import import_adrs  # noqa: PLC0415

        return import_adrs(self, folder, reviewer, dry_run=dry_run)

    def export_adrs(self, folder: Path, *, force: bool = False) -> AdrExport:
        """Write decisions and open proposals as ADR files in ``folder``, in place where they came from."""
        from ctx_kernel.kernel.adr.export import export_adrs  # noqa: PLC0415

        return export_adrs(self, folder, force=force)

    # -- search and audit -----------------------------------------------------------------

    def search(self, query: str, *, limit: int = 10, as_of: str | None = None) -> SearchResults:
        """Keyword search, answered as ratified decisions and unratified evidence, never blended."""
        if limit < 1 or limit > 1000:
            raise UsageError("limit must be between 1 and 1000")
        wanted = TextQuery.from_text(query)
        if wanted is None:
            raise UsageError("the query has no words to search for")
        moment = clock.parse_when(as_of) if as_of is not None else None
        # The store's relevance is higher-is-better; search answers with BM25 (lower is better),
        # as schemas/search.schema.json documents.
        return SearchResults(
            query=query,
            decisions=[(d, -s) for d, s in self.store.search_decisions(wanted, limit, moment)],
            evidence=[(e, -s, snip) for e, s, snip in self.store.search_evidence(wanted, limit)],
        )

    def recall(
        self,
        query: str,
        *,
        k: int = 10,
        as_of: str | None = None,
        mode: str = "hybrid",
        rrf_k: int = 60,
        min_scores: dict[str, float] | None = None,
    ) -> recall.Recall:
        """Decisions that hold (with what contradicts them) and unratified evidence matching ``query``.

        ``min_scores`` drops a ranker's hits whose raw score is below the given value
        (``{"vector": 0.4}``: cosine similarity; keyword: negated BM25; entity: idf-weighted match).
        """
        from ctx_kernel.kernel.recall import engine as recall  # noqa: PLC0415 - lazy, see the imports

        query = text.require_text(query, "query", MAX_QUERY_CHARS)
        if TextQuery.from_text(query) is None:
            raise UsageError("the query has no words to search for")
        if mode not in recall.MODES:
            raise UsageError(f"unknown mode {mode!r}: use one of {', '.join(recall.MODES)}")
        if not 1 <= k <= 100:
            raise UsageError("k must be between 1 and 100")
        if not 1 <= rrf_k <= 10_000:
            raise UsageError("rrf-k must be between 1 and 10000")
        moment = clock.parse_when(as_of) if as_of is not None else None
        # A read-only or busy store still answers, with the conflicts it has recorded.
        with contextlib.suppress(StoreError):
            self.ensure_conflicts()
        if mode in ("hybrid", "vector"):
            embedder, status = self.prepare_vectors(BACKFILL_ON_RECALL)
            if embedder is None and mode == "vector":
                raise RefusedError(f"vector mode needs vectors, and they are off: {status.note}")
        else:
            embedder, status = None, recall.VectorStatus("unused", None, 0, f"not used in {mode} mode")
        unknown = sorted(set(min_scores or {}) - set(recall.RANKERS))
        if unknown:
            raise UsageError(f"unknown ranker {unknown[0]!r}: use one of {', '.join(recall.RANKERS)}")
        if self._decision_cache is None:
            self._decision_cache = recall.DecisionCache()
        recaller = recall.Recaller(self.store, self._entity_index, embedder, min_scores, self._decision_cache)
        if embedder is not None:
            recaller.start_vectors(query, max(recall.OVERFETCH, 5 * k), self._pool())
        decisions, closed = recaller.decisions(query, mode, k, rrf_k, moment)
        return recall.Recall(
            query=query,
            mode=mode,
            as_of=moment,
            k=k,
            rrf_k=rrf_k,
            vectors=status,
            decisions=decisions,
            closed=closed,
            evidence=recaller.evidence(query, mode, k, rrf_k),
        )

    def inject(self, query: str | None = None, *, budget: int = DEFAULT_BUDGET) -> Injection:
        """The session-start block: current decisions, superseded ones, conflicts, proposals, evidence."""
        from ctx_kernel.kernel.recall import inject  # noqa: PLC0415

        if not MIN_BUDGET <= budget <= MAX_BUDGET:
            raise UsageError(f"budget must be between {MIN_BUDGET} and {MAX_BUDGET} tokens")
        if query is not None:
            query = text.require_text(query, "query", MAX_QUERY_CHARS)
            if TextQuery.from_text(query) is None:
                raise UsageError("the query has no words to search for")
        return inject.build(self, query, budget)

    def conflicts(self) -> list[tuple[Decision, recall.Related]]:
        """Pairs of current decisions on different subjects that take opposite stances, newest first."""
        from ctx_kernel.kernel.recall import engine as recall  # noqa: PLC0415

        self.ensure_conflicts()
        pairs = self.store.current_conflict_pairs()
        found = self.store.decisions_by_ids(sorted({i for p in pairs for i in p[:2]}))
        out = []
        for decision_id, other_id, term, clause, other_clause in pairs:
            out.append(
                (found[decision_id], recall.conflict_item(found[other_id], term, clause, other_clause))
            )
        return out

    def record_conflicts(self, decision_ids: Sequence[str]) -> int:
        """Detect and record the conflicts of newly ratified or imported current decisions."""
        from ctx_kernel.kernel.recall import engine as recall  # noqa: PLC0415

        detector = recall.ConflictDetector(self.store, self._entity_index)
        found = 0
        with self.store.transaction():
            for decision in self.store.decisions_by_ids(list(decision_ids)).values():
                if not decision.current:
                    continue
                for other, conflict in detector.find(decision):
                    self.store.add_conflict(
                        decision.id, other.id, conflict.term, conflict.clause, conflict.other_clause
                    )
                    found += 1
        return found

    def ensure_conflicts(self, *, force: bool = False) -> None:
        """Detect conflicts among all current decisions if this store was not scanned by these rules."""
        if not force and self.store.get_meta("conflict_rules") == _conflict_rules():
            return
        with self.store.transaction():
            self.store.clear_conflicts()
            self.record_conflicts([d.id for d in self.store.decisions()])
            self.store.set_meta("conflict_rules", _conflict_rules())

    def recent_evidence(self, limit: int = 5) -> list[Evidence]:
        """The newest evidence texts, newest first."""
        ids = self.store.recent_evidence_ids(limit)
        found = self.store.evidence_by_ids(ids)
        return [found[i] for i in ids if i in found]

    def embedding(self) -> embed.Resolution:
        """The embedding model this store uses (resolved once), or why vectors are off."""
        from ctx_kernel.kernel.recall import embeddings as embed  # noqa: PLC0415

        with self._resolution_lock:
            if self._resolution is None:
                if self._embedder_choice == AUTO:
                    self._resolution = embed.resolve()
                elif self._embedder_choice is None:
                    self._resolution = embed.Resolution(None, "disabled", "vectors are disabled")
                else:
                    assert not isinstance(self._embedder_choice, str)
                    self._resolution = embed.Resolution(self._embedder_choice, "given")
            return self._resolution

    def warm(self) -> None:
        """Load the embedding model and the recall code before the first recall needs them.

        Touches no store connection, so a long-running host (``ctx mcp``) can call it on a
        background thread at startup while other calls use the store.
        """
        import rapidfuzz.fuzz  # noqa: PLC0415 - imported for the cost: recall's first use
        import rapidfuzz.process  # noqa: F401, PLC0415

        from ctx_kernel.kernel.recall import engine as recall  # noqa: F401, PLC0415

        embedder = self.embedding().embedder
        if embedder is not None:
            embedder.embed_query("warm up")  # the first inference allocates onnxruntime's buffers

    def prepare_vectors(self, backfill: int = 0) -> tuple[Embedder | None, recall.VectorStatus]:
        """The embedder to query with (None when vectors are off), after embedding up to ``backfill`` rows."""
        from ctx_kernel.kernel.recall import engine as recall  # noqa: PLC0415

        resolution = self.embedding()
        embedder = resolution.embedder
        if embedder is None:
            pending = recall.pending_total(self.store)
            return None, recall.VectorStatus("off", None, pending, f"vectors are off: {resolution.reason}")
        stored = self.store.get_meta("vector_model")
        if stored is None or not self.store.vector_tables_exist():
            with self.store.transaction():
                stored = self.store.get_meta("vector_model")
                if stored is None:
                    self._adopt_model(embedder)
                    stored = embedder.model_id
                elif stored == embedder.model_id:
                    self.store.create_vector_tables(embedder.dim)
        if stored != embedder.model_id or self.store.get_meta("vector_dim") != str(embedder.dim):
            pending = recall.pending_total(self.store)
            note = (
                f"vectors are off: this store was embedded with {stored}, and the configured model is "
                f"{embedder.model_id}; run `ctx reindex` to re-embed"
            )
            return None, recall.VectorStatus("off", stored, pending, note)
        if backfill:
            # A read-only or busy store still answers; its rows wait for `ctx reindex`.
            with contextlib.suppress(StoreError):
                recall.backfill(self.store, embedder, backfill)
        pending = recall.pending_total(self.store)
        if pending:
            note = (
                f"{pending} records have no vector yet (found by keyword and entity only): run `ctx reindex`"
            )
            return embedder, recall.VectorStatus("partial", embedder.model_id, pending, note)
        return embedder, recall.VectorStatus("on", embedder.model_id, 0, None)

    def _adopt_model(self, embedder: Embedder) -> None:
        """Record the store's embedding model and create its KNN tables (inside a transaction)."""
        self.store.set_meta("vector_model", embedder.model_id)
        self.store.set_meta("vector_dim", str(embedder.dim))
        self.store.create_vector_tables(embedder.dim)

    def reindex(
        self,
        *,
        download: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ReindexReport:
        """Embed every decision and evidence text again with the configured model."""
        from ctx_kernel.kernel.recall import embeddings as embed  # noqa: PLC0415
        from ctx_kernel.kernel.recall import engine as recall  # noqa: PLC0415

        resolution = embed.resolve(download=download) if self._embedder_choice == AUTO else self.embedding()
        embedder = resolution.embedder
        if embedder is None:
            raise RefusedError(f"cannot embed: {resolution.reason}")
        self._resolution = resolution
        started = time.perf_counter()
        with self.store.transaction():
            previous = self.store.get_meta("vector_model")
            self.store.drop_vectors()
            self._adopt_model(embedder)
        total = recall.pending_total(self.store)
        done = 0

        def step(count: int) -> None:
            nonlocal done
            done += count
            if progress is not None:
                progress(done, total)

        if progress is not None:
            progress(0, total)
        recall.backfill(self.store, embedder, total, step)
        from ctx_kernel.kernel.recall.derived import rebuild_index  # noqa: PLC0415

        rebuild_index(self.store)
        self._entity_index_cache = None
        self.ensure_conflicts(force=True)
        return ReindexReport(
            model=embedder.model_id,
            dim=embedder.dim,
            previous_model=previous,
            decisions=self.store.item_count("decision"),
            evidence=self.store.item_count("evidence"),
            seconds=round(time.perf_counter() - started, 2),
        )

    # -- encryption at rest -------------------------------------------------------------

    @property
    def encrypted(self) -> bool:
        """True when evidence text is sealed at rest (or being sealed)."""
        return self.store.is_sealed()

    def encrypt(
        self, *, key_file: Path | None = None, progress: Callable[[int, int], None] | None = None
    ) -> SealReport:
        """Seal every evidence text with AES-256-GCM; resumable, and new evidence is sealed from now on.

        The key is ``CTX_VAULT_KEY`` if set, else the key file (``key_file``, ``CTX_VAULT_KEY_FILE``
        or the store's file in the config folder), created 0600 when it does not exist yet.
        Vectors and entity mentions of evidence are dropped: they would give its content away.
        """
        from ctx_kernel.kernel.vault import sealing as vault  # noqa: PLC0415 - cryptography loads for sealed stores only

        store_id = self._store_id()
        if self.store.get_meta("vault_key_id") is not None and self.store.get_meta("vault_encrypting") != "1":
            if self.store.get_meta(vault.SCRUB_PENDING):
                return self._finish_scrub(key_file or vault.key_path(store_id))
            raise RefusedError("the evidence vault is already encrypted (`ctx rekey` changes its key)")
        key, where, created = self._vault_key(store_id, key_file)
        current = self.store.get_meta("vault_key_id")
        if current is not None and current != vault.key_id(key):
            raise vault.VaultError(
                f"the key from {where} is not the key this store's encryption started with"
            )
        self.store.offer_key(where, key)
        self.store.secure_delete()
        if current is None:
            index_key = vault.new_key()
            with self.store.transaction():
                self.store.set_meta("vault_key_id", vault.key_id(key))
                self.store.set_meta(
                    "vault_index_key", _wrap(vault.seal_with(key, index_key, vault.INDEX_KEY_AAD))
                )
                self.store.set_meta("vault_encrypting", "1")
                self.store.append_audit(
                    clock.now(), _operator(), "vault.encrypted", store_id, None, {"key_id": vault.key_id(key)}
                )
            self.store.forget_vault()
        sealer = self.store.vault()
        assert sealer is not None
        total, done = self.store.count_evidence_to_seal(None), 0
        while rows := self.store.plain_evidence(SEAL_BATCH):
            with self.store.transaction():
                for evidence_id, text in rows:
                    blob = sealer.seal(evidence_id, text)
                    self.store.seal_evidence(evidence_id, blob, text, sealer.index_text(text))
            done += len(rows)
            if progress is not None:
                progress(done, total)
        with self.store.transaction():
            self.store.forget_evidence_derivatives()
            self.store.set_meta("vault_encrypting", "0")
            self.store.set_meta(vault.SCRUB_PENDING, "1")
        self.store.forget_vault()
        self._entity_index_cache = None
        self.store.scrub()
        return SealReport(sealed=done, key_id=vault.key_id(key), key_source=where, key_created=created)

    def rekey(
        self, *, key_file: Path | None = None, progress: Callable[[int, int], None] | None = None
    ) -> SealReport:
        """Seal every evidence text again under a new key; resumable after any interruption.

        The new key waits in ``<key file>.new`` until every row is sealed with it, then replaces
        the key file; until then each row opens with the old key or the new one.
        """
        from ctx_kernel.kernel.vault import sealing as vault  # noqa: PLC0415

        store_id = self._store_id()
        if self.store.get_meta("vault_key_id") is None:
            raise RefusedError("the evidence vault is not encrypted: run `ctx encrypt` first")
        if self.store.get_meta("vault_encrypting") == "1":
            raise RefusedError("`ctx encrypt` has not finished: run it again first")
        path = key_file or vault.key_path(store_id)
        if key_file is not None:
            current_key = vault.read_key_file(key_file)
            if current_key is not None:
                self.store.offer_key(str(key_file), current_key)
        _settle_key_file(path, self.store.get_meta("vault_key_id") or "")
        pending = vault.pending_path(path)
        upcoming = self.store.get_meta("vault_rekey_to")
        if upcoming is None and self.store.get_meta(vault.SCRUB_PENDING):
            return self._finish_scrub(path)  # the last rekey sealed every row; its file rewrite was cut short
        old = self.store.vault()  # unlocks with the current key (and the new one when resuming)
        assert old is not None
        if upcoming is None:
            new = vault.new_key()
            pending.unlink(missing_ok=True)  # a new key from a run that never started sealing
            vault.write_key_file(pending, new)
            with self.store.transaction():
                self.store.set_meta("vault_rekey_to", vault.key_id(new))
                self.store.set_meta(
                    "vault_index_key_next", _wrap(vault.seal_with(new, old.index_key, vault.INDEX_KEY_AAD))
                )
            upcoming = vault.key_id(new)
        else:
            new_read = vault.read_key_file(pending)
            if new_read is None or vault.key_id(new_read) != upcoming:
                raise vault.VaultError(
                    f"an interrupted rekey left rows sealed with key {upcoming}, which is not in {pending}"
                )
            new = new_read
        self.store.offer_key(str(pending), new)
        self.store.secure_delete()
        sealer = self.store.vault()
        assert sealer is not None and sealer.seal_id == upcoming
        total, done = self.store.count_evidence_to_seal(upcoming), 0
        while rows := self.store.sealed_evidence_not_under(upcoming, SEAL_BATCH):
            with self.store.transaction():
                for evidence_id, blob in rows:
                    self.store.seal_evidence(
                        evidence_id, sealer.seal(evidence_id, sealer.open(evidence_id, blob)), None, None
                    )
            done += len(rows)
            if progress is not None:
                progress(done, total)
        with self.store.transaction():
            previous = self.store.get_meta("vault_key_id")
            self.store.set_meta("vault_key_id", upcoming)
            self.store.set_meta("vault_index_key", self.store.get_meta("vault_index_key_next") or "")
            self.store.delete_meta("vault_rekey_to")
            self.store.delete_meta("vault_index_key_next")
            self.store.set_meta(vault.SCRUB_PENDING, "1")
            self.store.append_audit(
                clock.now(),
                _operator(),
                "vault.rekeyed",
                store_id,
                {"key_id": previous},
                {"key_id": upcoming},
            )
        _settle_key_file(path, upcoming)
        self.store.forget_vault()
        self.store.scrub()
        return SealReport(sealed=done, key_id=upcoming, key_source=str(path), key_created=True)

    def _finish_scrub(self, key_source: Path) -> SealReport:
        """Rewrite the file after an encrypt or rekey that sealed every row but was cut short there."""
        self.store.scrub()
        return SealReport(
            sealed=0,
            key_id=self.store.get_meta("vault_key_id") or "",
            key_source=str(key_source),
            key_created=False,
        )

    def _store_id(self) -> str:
        store_id = self.store.get_meta("store_id")
        if store_id is None:
            raise StoreError("the store has no id: run `ctx init` on it")
        return store_id

    def _vault_key(self, store_id: str, key_file: Path | None) -> tuple[bytes, str, bool]:
        """The key to encrypt with and where it is; a new key file when there is none yet."""
        from ctx_kernel.kernel.vault import sealing as vault  # noqa: PLC0415

        if key_file is None and os.environ.get("CTX_VAULT_KEY"):
            return vault.decode_key(os.environ["CTX_VAULT_KEY"], "CTX_VAULT_KEY"), "CTX_VAULT_KEY", False
        path = key_file or vault.key_path(store_id)
        key = vault.read_key_file(path)
        if key is not None:
            return key, str(path), False
        key = vault.new_key()
        vault.write_key_file(path, key)
        return key, str(path), True

    def verify_audit(
        self, *, state: bool = False, checkpoints: Sequence[Path] = (), pubkey: Path | None = None
    ) -> ChainReport:
        """Recompute the audit chain; the report names the first bad row.

        With ``state``, also check the chain against every signed checkpoint found (and the files in
        ``checkpoints``, trusting ``pubkey`` or your own keys), the schema against the migrations, and
        replay the log against every table it describes, so an edit beside the log is found too.
        """
        if not state:
            return verify_chain(self.store.audit_rows())
        from ctx_kernel.kernel.status import record_verify  # noqa: PLC0415

        report = self._verified_log(checkpoints, pubkey)[0]
        record_verify(self, report.ok, report.rows, report.problem)
        return report

    def _verified_log(
        self, checkpoints: Sequence[Path] = (), pubkey: Path | None = None
    ) -> tuple[ChainReport, list[dict[str, Any]]]:
        """The whole log and its report: the chain, signed heads, schema and tables (one snapshot)."""
        from ctx_kernel.kernel.audit.store_checks import verify_store  # noqa: PLC0415

        with self.store.snapshot():
            rows = list(self.store.audit_rows())
            report = verify_chain(rows)
            if report.ok:
                report = verify_store(self.store, rows, report, checkpoints=checkpoints, pubkey=pubkey)
        return report, rows

    def checkpoint_audit(self, *, passphrase: Passphrase, out: Path | None = None) -> CheckpointResult:
        """Sign the audit chain's head with your key and keep it beside the store (and at ``out``).

        Refuses when the store does not verify: a checkpoint vouches for the history it signs.
        """
        from ctx_kernel.kernel.audit import signing  # noqa: PLC0415 - cryptography loads only here
        from ctx_kernel.kernel.audit import store_checks as audit_store  # noqa: PLC0415

        key, key_info = signing.unlock(passphrase)
        report, rows = self._verified_log()
        if not report.ok:
            raise RefusedError(f"not signing: the store's audit log does not verify: {report.problem}")
        return audit_store.sign_checkpoint(self.store, rows, key, key_info, signed_at=clock.now(), out=out)

    def export_audit(
        self,
        out: Path,
        *,
        passphrase: Passphrase,
        since: str | None = None,
        until: str | None = None,
        fmt: str = "jsonl",
    ) -> ExportResult:
        """Write a signed export of the audit log (``out`` and ``out.manifest.json``), or of a time range.

        ``passphrase`` unlocks the signing key: the text, or a function that asks for it (called only
        once the key is found). Refuses when the store's chain is broken or its tables disagree with
        the log: an export vouches for what it holds.
        """
        from ctx_kernel.kernel.audit import export as audit_export  # noqa: PLC0415
        from ctx_kernel.kernel.audit import signing  # noqa: PLC0415 - cryptography loads only here
        from ctx_kernel.kernel.store.migrate import HEAD_VERSION  # noqa: PLC0415

        if fmt not in audit_export.RECORD_FORMATS:
            raise UsageError(f"unknown format {fmt!r}: use one of {', '.join(audit_export.RECORD_FORMATS)}")
        start = clock.parse_when(since, end_of_day=False) if since is not None else None
        end = clock.parse_when(until) if until is not None else None
        if start is not None and end is not None and start > end:
            raise UsageError(f"--since {since} is after --until {until}")
        key, key_info = signing.unlock(passphrase)
        report, rows = self._verified_log()
        if not report.ok:
            raise RefusedError(f"not exporting: the store's audit log does not verify: {report.problem}")
        selected = audit_export.select_range(rows, start, end)
        if not selected:
            where = " in that range" if start or end else ""
            raise RefusedError(f"no audit events{where}: nothing to export")
        facts = audit_export.StoreFacts(
            store_id=self.store.get_meta("store_id") or "unknown",
            schema_version=HEAD_VERSION,  # opening a store upgrades it to this version
            head_seq=rows[-1]["seq"],
            head_hash=report.last_hash,
        )
        result = audit_export.write_export(
            selected,
            out,
            fmt=fmt,
            since=start,
            until=end,
            exported_at=clock.now(),
            store=facts,
            key=key,
            key_info=key_info,
        )
        from ctx_kernel.kernel.audit.store_checks import keep_signed_head  # noqa: PLC0415

        keep_signed_head(self.store, result.document)  # a signed export is a checkpoint too
        return result

    @staticmethod
    def verify_audit_export(
        path: Path, *, pubkey: Path | None = None, manifest: Path | None = None
    ) -> ExportReport:
        """Check an export file against its signed manifest and a trusted public key; needs no store.

        ``pubkey`` is the exporter's public key (PEM); without it the local signing key is trusted.
        """
        from ctx_kernel.kernel.audit import signing  # noqa: PLC0415
        from ctx_kernel.kernel.audit import verify_export as audit_verify  # noqa: PLC0415

        if pubkey is not None:
            trusted, _ = signing.load_public_key(pubkey)
            source = f"--pubkey {pubkey}"
        else:
            if not signing.has_key():
                raise UsageError("no key to trust: pass --pubkey with the exporter's public key (PEM)")
            info = signing.local_key()
            trusted = signing.parse_public_key(info.public_pem.encode("ascii"), str(info.public_path))
            source = f"local key {info.public_path}"
        return audit_verify.verify_export(
            path, manifest_path=manifest, trusted=trusted, trusted_source=source
        )

    @staticmethod
    def create_signing_key(passphrase: Passphrase, *, force: bool = False) -> KeyInfo:
        """Create the user's audit signing key (private half encrypted with ``passphrase``)."""
        from ctx_kernel.kernel.audit import signing  # noqa: PLC0415

        return signing.init_key(passphrase, force=force)

    @staticmethod
    def signing_key() -> KeyInfo:
        """The user's audit signing key's public half; refuses when there is none."""
        from ctx_kernel.kernel.audit import signing  # noqa: PLC0415

        return signing.local_key()

    def audit_events(self) -> list[AuditEvent]:
        """The whole audit log, oldest first."""
        return [AuditEvent(**row) for row in self.store.audit_rows()]

    def status(self) -> StoreStatus:
        """The store at a glance: counts, the queue, vectors, encryption, the last full verify."""
        from ctx_kernel.kernel.status import store_status  # noqa: PLC0415

        return store_status(self)

    def integrity_check(self) -> str:
        """The store's own consistency check."""
        result = self.store.integrity_check()
        if result != "ok":
            raise StoreError(f"store {self.location} failed its integrity check: {result}")
        return result


def _conflict_rules() -> str:
    from ctx_kernel.kernel.recall.conflicts import RULES_VERSION  # noqa: PLC0415 - lazy, see the imports

    return RULES_VERSION


def _proposal_summary(proposal: Proposal) -> dict[str, Any]:
    return {
        "subject": proposal.subject,
        "decision": proposal.decision,
        "rationale": proposal.rationale,
        "evidence": proposal.evidence,
        "supersedes": proposal.supersedes,
        "explicit_supersedes": proposal.explicit_supersedes,
        "near_duplicate_of": proposal.near_duplicate_of,
        "near_duplicate_score": proposal.near_duplicate_score,
        "session": proposal.session,
    } | ({"title": proposal.title} if proposal.title is not None else {})


SEAL_BATCH = 500


@dataclass(frozen=True)
class SealReport:
    """What ``ctx encrypt`` or ``ctx rekey`` did."""

    sealed: int
    key_id: str
    key_source: str
    key_created: bool


def _wrap(blob: bytes) -> str:
    return base64.b64encode(blob).decode("ascii")


def _operator() -> str:
    import getpass  # noqa: PLC0415

    return f"cli:{getpass.getuser()}"


def _settle_key_file(path: Path, current_id: str) -> None:
    """Finish a rekey's last step if it was cut short: the new key replaces the key file."""
    from ctx_kernel.kernel.vault import sealing as vault  # noqa: PLC0415

    pending = vault.pending_path(path)
    key = vault.read_key_file(pending)
    if key is not None and vault.key_id(key) == current_id:
        os.replace(pending, path)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
