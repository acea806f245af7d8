"""The proposal queue: proposing, finding near-duplicates and look-alike subjects, review groups,
and closing a proposal without ratifying it (reject, withdraw)."""

from __future__ import annotations

from collections.abc import Sequence

from ctx_kernel.kernel import clock, ids, text
from ctx_kernel.kernel.decisions import review
from ctx_kernel.kernel.decisions.review import QueueEntry
from ctx_kernel.kernel.errors import NotFoundError, RefusedError, UsageError
from ctx_kernel.kernel.facts.links import check_links
from ctx_kernel.kernel.limits import (
    MAX_LIST_LIMIT,
    NEAR_DUPLICATE_SCORE,
    PROPOSAL_CREATED,
    PROPOSAL_REJECTED,
    PROPOSAL_WITHDRAWN,
)
from ctx_kernel.kernel.payloads import ProposalClosed, ProposalCreated, ProposalState
from ctx_kernel.kernel.records import ABSENT, Proposal, ProposalStatus, omit_none
from ctx_kernel.kernel.store.base import Store
from ctx_kernel.kernel.text import visible
from ctx_kernel.kernel.vault.service import VaultService

# The audit action of each way a proposal is closed without being ratified.
_CLOSED_AS: dict[ProposalStatus, str] = {"rejected": PROPOSAL_REJECTED, "withdrawn": PROPOSAL_WITHDRAWN}


class QueueService:
    """Pending proposals: what agents propose and a person has not yet ratified."""

    def __init__(self, store: Store, vault: VaultService) -> None:
        self.store = store
        self.vault = vault

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
        links: Sequence[str] = (),
    ) -> Proposal:
        """Queue a proposal for a person to ratify; records what it would supersede and near-duplicates,
        and the paths and globs its decision governs (``links``, checked to stay in the repository)."""
        subject = text.normalise_subject(subject)
        title = text.optional_shown(title, "title", text.MAX_TITLE_CHARS)
        if title is not None and (not title.strip() or "\n" in title):
            raise UsageError("the title must be one non-empty line")
        decision = text.require_shown(decision, "decision", text.MAX_DECISION_CHARS)
        rationale = text.optional_shown(rationale, "rationale", text.MAX_RATIONALE_CHARS)
        proposer = text.require_shown(proposer, "proposer", text.MAX_NAME_CHARS)
        session = text.optional_shown(session, "session", text.MAX_NAME_CHARS)
        evidence_ids = list(dict.fromkeys(self.vault.resolve_id(e, "evidence") for e in evidence))
        explicit = list(dict.fromkeys(self.vault.resolve_id(d, "decision") for d in supersedes))
        linked = check_links(links) if links else []
        # What needs no lock is done before taking it, so other writers never wait on an import: the
        # near-duplicate match (a badge for the reviewer, read from committed proposals) and the
        # confusable tables the subject check below may need.
        duplicate_of, score = self._near_duplicate(subject, decision)
        if not subject.isascii() or not all(s.isascii() for s in self.store.known_subjects()):
            text.skeleton("\u0430")  # loads the TR39 tables
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
            would_supersede = review.supersede_targets(explicit, current)
            proposal = Proposal(
                id=ids.new_id("pr"),
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
            if linked:
                self.store.insert_proposal_links(proposal.id, linked)
            self.store.append_audit(
                proposal.created_at,
                proposer,
                PROPOSAL_CREATED,
                proposal.id,
                None,
                _created(proposal, linked).to_dict(),
            )
        return proposal

    def propose_reconfirmation(
        self,
        decision_id: str,
        *,
        rationale: str | None = None,
        evidence: Sequence[str] = (),
        proposer: str = "agent",
        session: str | None = None,
    ) -> Proposal:
        """Queue a request for a person to re-confirm a current decision (its subject and text are the
        decision's, as it stands), with the proposer's reasoning and evidence; refused for a decision
        that is not current."""
        target = self.vault.resolve_id(decision_id, "decision")
        rationale = text.optional_shown(rationale, "rationale", text.MAX_RATIONALE_CHARS)
        proposer = text.require_shown(proposer, "proposer", text.MAX_NAME_CHARS)
        session = text.optional_shown(session, "session", text.MAX_NAME_CHARS)
        evidence_ids = list(dict.fromkeys(self.vault.resolve_id(e, "evidence") for e in evidence))
        with self.store.transaction():
            missing = self.store.missing_evidence(evidence_ids)
            if missing:
                raise NotFoundError(f"no evidence {missing[0]}")
            found = self.store.get_decision(target)
            if found is None:
                raise NotFoundError(f"no decision {target}")
            if not found.current:
                raise RefusedError(
                    f"{found.id} is not current ({found.closed_by}): only a current decision is "
                    "re-confirmed; propose a decision on its subject instead"
                )
            proposal = Proposal(
                id=ids.new_id("pr"),
                subject=found.subject,
                decision=found.decision,
                rationale=rationale,
                proposer=proposer,
                session=session,
                created_at=clock.now(),
                status="pending",
                supersedes=[],
                explicit_supersedes=[],
                near_duplicate_of=None,
                near_duplicate_score=None,
                resolved_at=None,
                resolved_by=None,
                resolution_note=None,
                decision_id=None,
                evidence=evidence_ids,
                reconfirms=found.id,
            )
            self.store.insert_proposal(proposal)
            created = _created(proposal).to_dict()
            at = proposal.created_at
            self.store.append_audit(at, proposer, PROPOSAL_CREATED, proposal.id, None, created)
        return proposal

    def check_new_subject(self, subject: str) -> None:
        """Refuse a subject that looks like a different existing one (Unicode TR39 skeletons)."""
        known = self.store.known_subjects()
        if subject in known:
            return
        mine = text.lookalike_key(subject)
        for other in known:
            if subject.isascii() and other.isascii():
                continue  # an ASCII subject is its own skeleton
            if text.lookalike_key(other) == mine:
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
        found = self.store.get_proposal(self.vault.resolve_id(proposal_id, "proposal"))
        if found is None:
            raise NotFoundError(f"no proposal {proposal_id}")
        return found

    def queue(
        self, subject: str | None = None, proposer: str | None = None, *, limit: int | None = None
    ) -> list[Proposal]:
        """Pending proposals, oldest first, optionally for one subject subtree or proposer; the
        oldest ``limit`` when given."""
        subject = text.normalise_subject(subject) if subject is not None else None
        return self.store.list_proposals(
            "pending", subject, text.check_limit(limit, MAX_LIST_LIMIT), proposer
        )

    def pending(self, proposal_id: str) -> Proposal:
        """A proposal that is still pending; refuses one that was already resolved."""
        proposal = self.proposal(proposal_id)
        if proposal.status != "pending":
            who = f"by {visible(proposal.resolved_by or '?')} at {(proposal.resolved_at or '?')[:19]}"
            note = f": {visible(proposal.resolution_note)}" if proposal.resolution_note else ""
            raise RefusedError(f"proposal {proposal.id} is {proposal.status}, not pending ({who}{note})")
        return proposal

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

    def _resolve(self, proposal_id: str, status: ProposalStatus, actor: str, note: str | None) -> Proposal:
        pid = self.vault.resolve_id(proposal_id, "proposal")
        with self.store.transaction():
            self.pending(pid)
            at = clock.now()
            self.store.resolve_proposal(pid, status, at, actor, note, None)
            self.store.append_audit(
                at,
                actor,
                _CLOSED_AS[status],
                pid,
                ProposalState(status="pending").to_dict(),
                ProposalClosed(status=status, reason=note).to_dict(),
            )
            return self.proposal(pid)

    def review_queue(self, subject: str | None = None, proposer: str | None = None) -> list[QueueEntry]:
        """Pending proposals, oldest first, with the decision each would supersede and its review group."""
        current = {d.subject: d for d in self.store.decisions()}
        everything = review.group_queue(self.store.list_proposals("pending"), current)
        if subject is None and proposer is None:
            return everything
        wanted = {p.id for p in self.queue(subject, proposer)}
        return [entry for entry in everything if entry.proposal.id in wanted]

    def review_group(self, proposal_id: str) -> list[Proposal]:
        """The other pending proposals settled together with this one (same subject or near-duplicate)."""
        # Read only the group's neighbourhood: this runs inside every ratification's transaction.
        mine = self.proposal(proposal_id)
        same = [p for p in self.store.list_proposals("pending", mine.subject) if p.subject == mine.subject]
        same_ids = [p.id for p in same]
        linked = self.store.pending_near_duplicates(same_ids)
        for target in sorted({p.near_duplicate_of for p in same if p.near_duplicate_of} - set(same_ids)):
            found = self.store.get_proposal(target)
            if found is not None and found.status == "pending":
                linked.append(found)
        return review.group_members([*same, *linked], mine.id)


def _created(proposal: Proposal, links: Sequence[str] = ()) -> ProposalCreated:
    return ProposalCreated(
        subject=proposal.subject,
        decision=proposal.decision,
        rationale=proposal.rationale,
        evidence=proposal.evidence,
        supersedes=proposal.supersedes,
        explicit_supersedes=proposal.explicit_supersedes,
        near_duplicate_of=proposal.near_duplicate_of,
        near_duplicate_score=proposal.near_duplicate_score,
        session=proposal.session,
        title=omit_none(proposal.title),
        deciders=proposal.deciders or ABSENT,
        links=list(links) or ABSENT,
        reconfirms=proposal.reconfirms or ABSENT,
    )
