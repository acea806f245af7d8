"""Random sequences of kernel operations, with every invariant checked after every step."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.errors import NotFoundError, RefusedError
from ctx_kernel.kernel.records import Decision, Proposal
from ctx_kernel.kernel.store.sqlite import driver

# A small alphabet so that subjects collide; "db" is the parent of "db.driver" but not of "dbx".
SPELLINGS = {
    "auth.tokens": ("auth.tokens", "Auth . Tokens"),
    "db": ("db", "DB"),
    "db.driver": ("db.driver", " db.Driver "),
    "dbx": ("dbx",),
}
SUBJECTS = tuple(SPELLINGS)
spelled_subject = st.sampled_from([(s, spelling) for s, many in SPELLINGS.items() for spelling in many])
NOTES = (
    "We measured p99 latency at 40 ms with the pooled driver.",
    "Refresh tokens leaked in logs last quarter.",
    "The team agreed to keep Postgres.",
    "Benchmarks: asyncpg is twice as fast as psycopg here.",
)
CHOICES = (
    "Use JWT with refresh rotation",
    "Use opaque session ids stored server side",
    "Use Postgres 16",
    "Use asyncpg as the driver",
    "Use SQLite for local development",
)
REVIEWER = "alice"
# The fields of a decision that never change once it exists.
FROZEN_FIELDS = (
    "subject",
    "decision",
    "rationale",
    "valid_from",
    "ratified_by",
    "ratified_at",
    "proposal_id",
    "amended",
    "evidence",
)
# The fields of a proposal fixed once it has left 'pending'.
RESOLUTION_FIELDS = ("status", "resolved_at", "resolved_by", "resolution_note", "decision_id")
UNKNOWN_DECISION = "dc_00000000000000000000000000"


class KernelMachine(RuleBasedStateMachine):
    """A model of the kernel (current decision per subject, proposal states, audit actions)."""

    # A store made by Ctx.init once per test run; each example gets its own copy of the file
    # (Ctx.init runs the migrations, ~75 ms; a copy is ~2 ms, which keeps shrinking fast).
    template: Path | None = None

    def __init__(self) -> None:
        super().__init__()
        # The facade under test, and a raw connection (``execute(...).fetchall()``) to its store.
        self.kernel, self.conn = self.open_copy()
        self.evidence_ids: dict[str, str] = {}  # text -> id
        self.proposed: dict[str, Proposal] = {}  # as returned by propose
        self.status: dict[str, str] = {}  # the model's status of every proposal
        self.current: dict[str, str] = {}  # subject -> id of its current decision
        self.decision_ids: list[str] = []
        self.actions: Counter[str] = Counter()  # audit rows the model expects, by action
        self.seen_decisions: dict[str, Decision] = {}
        self.seen_resolved: dict[str, Proposal] = {}

    def open_copy(self) -> tuple[Ctx, Any]:
        """A fresh copy of the template store, opened."""
        assert self.template is not None
        self.folder = Path(tempfile.mkdtemp(prefix="ctx-props-"))
        path = self.folder / ".ctx" / "ctx.db"
        path.parent.mkdir()
        for suffix in ("", "-wal"):
            source = self.template.with_name(self.template.name + suffix)
            if source.exists():
                shutil.copyfile(source, path.with_name(path.name + suffix))
        return Ctx.open(path), driver.connect(path, load_vec=False)

    def teardown(self) -> None:
        self.conn.close()
        self.kernel.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- helpers --------------------------------------------------------------------------

    def _expected_targets(self, proposal: Proposal) -> list[str]:
        targets = list(proposal.explicit_supersedes)
        current = self.current.get(proposal.subject)
        if current is not None and current not in targets:
            targets.append(current)
        return targets

    def _current_on(self, subject: str) -> list[str]:
        return [d.id for d in self.kernel.decisions(subject) if d.subject == subject]

    # -- rules ----------------------------------------------------------------------------

    def _log(self, body: str) -> str:
        result = self.kernel.log(body, agent="agent-a")
        if body in self.evidence_ids:
            assert result.duplicate and result.id == self.evidence_ids[body]
        else:
            assert not result.duplicate
            self.evidence_ids[body] = result.id
            self.actions["evidence.logged"] += 1
        assert self.kernel.evidence(result.id).text == body
        return result.id

    @rule(
        subject=spelled_subject,
        choice=st.sampled_from(CHOICES),
        note=st.none() | st.sampled_from(NOTES),
        data=st.data(),
    )
    def propose(self, subject: tuple[str, str], choice: str, note: str | None, data: st.DataObject) -> None:
        normal, spelling = subject
        evidence = [self._log(note)] if note is not None else []
        if self.evidence_ids:
            evidence += data.draw(st.lists(st.sampled_from(sorted(self.evidence_ids.values())), max_size=2))
        explicit: list[str] = []
        if self.decision_ids:
            explicit = data.draw(
                st.lists(st.sampled_from(tuple(self.decision_ids)), max_size=2), label="supersedes"
            )
        if data.draw(st.integers(0, 7), label="0 = first try superseding an unknown decision") == 0:
            # A refused write leaves nothing behind: no proposal, no audit row.
            rows_before = self.kernel.audit.verify().rows
            with pytest.raises(NotFoundError):
                self.kernel.propose(spelling, choice, supersedes=[*explicit, UNKNOWN_DECISION])
            assert len(self.kernel.store.list_proposals(status=None)) == len(self.status)
            assert self.kernel.audit.verify().rows == rows_before
        proposal = self.kernel.propose(
            spelling, choice, rationale="why not", evidence=evidence, supersedes=explicit, proposer="agent-a"
        )
        assert proposal.subject == normal
        assert proposal.status == "pending" and proposal.decision_id is None
        assert proposal.explicit_supersedes == list(dict.fromkeys(explicit))
        assert proposal.supersedes == self._expected_targets(proposal)
        assert sorted(proposal.evidence) == sorted(set(evidence))
        assert proposal.id not in self.status
        # near-duplicate detection only points at proposals still pending, and always at an exact twin
        twins = [
            pid
            for pid in self._pending()
            if (self.proposed[pid].subject, self.proposed[pid].decision) == (normal, choice)
        ]
        if proposal.near_duplicate_of is not None:
            assert proposal.near_duplicate_of in self._pending()
            assert proposal.near_duplicate_score >= 82
        assert (proposal.near_duplicate_of is not None) >= bool(twins)
        self.proposed[proposal.id] = proposal
        self.status[proposal.id] = "pending"
        self.actions["proposal.created"] += 1
        stored = self.kernel.proposal(proposal.id)
        assert (stored.subject, stored.decision, stored.supersedes, stored.status) == (
            normal,
            choice,
            proposal.supersedes,
            "pending",
        )
        assert sorted(stored.evidence) == sorted(proposal.evidence)

    def _pending(self) -> list[str]:
        return [pid for pid, status in self.status.items() if status == "pending"]

    def _has_pending(self) -> bool:
        return bool(self._pending())

    def _has_resolved(self) -> bool:
        return any(status != "pending" for status in self.status.values())

    @precondition(_has_pending)
    @rule(data=st.data(), amend=st.sampled_from([None, None, "same", "padded", "new"]))
    def ratify(self, data: st.DataObject, amend: str | None) -> None:
        proposal_id = data.draw(st.sampled_from(self._pending()), label="proposal")
        proposal = self.proposed[proposal_id]
        text = {
            None: None,
            "same": proposal.decision,
            "padded": f"  {proposal.decision}\n",
            "new": f"{proposal.decision}, amended by the reviewer",
        }[amend]
        targets = self._expected_targets(proposal)
        # settle nothing: the model keeps the rest of the review group pending
        result = self.kernel.ratify(proposal_id, reviewer=REVIEWER, decision=text, settle=[])
        new = result.decision
        assert result.proposal_id == proposal_id
        assert result.superseded == targets
        assert new.subject == proposal.subject and new.current and new.closed_by is None
        assert new.decision == (text.strip() if text is not None else proposal.decision)
        assert new.amended == (amend == "new")
        assert new.proposal_id == proposal_id and new.ratified_by == REVIEWER
        assert new.valid_from == new.ratified_at
        assert sorted(new.supersedes) == sorted(targets) and new.superseded_by == []
        assert sorted(new.evidence) == sorted(proposal.evidence)
        for old_id in targets:
            old = self.kernel.decision(old_id)
            assert not old.current and old.valid_until <= new.valid_from
            assert new.id in old.superseded_by
        # model: every target that was current closes now, at the new decision's start
        for subject, current in list(self.current.items()):
            if current in targets:
                del self.current[subject]
                assert self.kernel.decision(current).valid_until == new.valid_from
                assert self.kernel.decision(current).closed_by == "superseded"
        self.current[proposal.subject] = new.id
        self.decision_ids.append(new.id)
        self.status[proposal_id] = "ratified"
        self.actions["proposal.ratified"] += 1
        self.actions["decision.superseded"] += len(targets)
        stored = self.kernel.proposal(proposal_id)
        assert stored.status == "ratified" and stored.decision_id == new.id
        assert stored.resolved_by == REVIEWER
        # after ratifying a proposal for S, S's current decision is the new one
        assert self._current_on(proposal.subject) == [new.id]

    @precondition(_has_pending)
    @rule(data=st.data())
    def reject(self, data: st.DataObject) -> None:
        proposal_id = data.draw(st.sampled_from(self._pending()), label="proposal")
        before = dict(self.current)
        result = self.kernel.reject(proposal_id, reviewer=REVIEWER, reason="not convinced")
        assert result.status == "rejected" and result.resolution_note == "not convinced"
        assert result.decision_id is None and result.resolved_by == REVIEWER
        self.status[proposal_id] = "rejected"
        self.actions["proposal.rejected"] += 1
        assert {d.subject: d.id for d in self.kernel.decisions()} == before

    @precondition(_has_pending)
    @rule(data=st.data(), reason=st.sampled_from([None, "changed my mind"]))
    def withdraw(self, data: st.DataObject, reason: str | None) -> None:
        proposal_id = data.draw(st.sampled_from(self._pending()), label="proposal")
        before = dict(self.current)
        result = self.kernel.withdraw(proposal_id, actor="agent-a", reason=reason)
        assert result.status == "withdrawn" and result.resolution_note == reason
        assert result.decision_id is None and result.resolved_by == "agent-a"
        self.status[proposal_id] = "withdrawn"
        self.actions["proposal.withdrawn"] += 1
        assert {d.subject: d.id for d in self.kernel.decisions()} == before

    @precondition(_has_resolved)
    @rule(data=st.data(), action=st.sampled_from(["ratify", "amend", "reject", "withdraw"]))
    def act_on_resolved(self, data: st.DataObject, action: str) -> None:
        # A proposal leaves 'pending' once; every later resolution is refused and changes nothing.
        resolved = [pid for pid, status in self.status.items() if status != "pending"]
        proposal_id = data.draw(st.sampled_from(resolved), label="proposal")
        calls = {
            "ratify": lambda: self.kernel.ratify(proposal_id, reviewer=REVIEWER),
            "amend": lambda: self.kernel.ratify(proposal_id, reviewer=REVIEWER, decision="Use COBOL"),
            "reject": lambda: self.kernel.reject(proposal_id, reviewer=REVIEWER, reason="no"),
            "withdraw": lambda: self.kernel.withdraw(proposal_id, actor="agent-a"),
        }
        before = self.kernel.proposal(proposal_id)
        rows_before = self.kernel.audit.verify().rows
        with pytest.raises(RefusedError):
            calls[action]()
        assert self.kernel.proposal(proposal_id) == before
        assert self.kernel.audit.verify().rows == rows_before

    @precondition(lambda self: bool(self.current))
    @rule(subject=spelled_subject)
    def retire(self, subject: tuple[str, str]) -> None:
        normal, spelling = subject
        current = self.current.get(normal)
        if current is None:
            rows_before = self.kernel.audit.verify().rows
            with pytest.raises(RefusedError):
                self.kernel.retire(spelling, reviewer=REVIEWER, reason="obsolete")
            assert self.kernel.audit.verify().rows == rows_before
            return
        retired = self.kernel.retire(spelling, reviewer=REVIEWER, reason="obsolete")
        assert retired.id == current
        assert retired.closed_by == "retired" and retired.close_reason == "obsolete"
        assert retired.valid_until is not None and retired.valid_until >= retired.valid_from
        del self.current[normal]
        self.actions["decision.retired"] += 1
        assert self._current_on(normal) == []

    # -- invariants -----------------------------------------------------------------------

    @invariant()
    def everything_holds(self) -> None:
        self._decisions_hold()
        self._links_hold()
        self._proposals_hold()
        self._audit_holds()

    def _decisions_hold(self) -> None:
        decisions = {d.id: d for d in self.kernel.decisions(include_closed=True)}
        # kernel rows are never deleted, never edited; a closed window never moves again
        assert set(self.seen_decisions) <= set(decisions)
        assert sorted(decisions) == sorted(self.decision_ids)
        for did, then in self.seen_decisions.items():
            now = decisions[did]
            for name in FROZEN_FIELDS:
                assert getattr(now, name) == getattr(then, name), f"{did}.{name} changed"
            if then.valid_until is not None:
                assert (now.valid_until, now.closed_by, now.close_reason) == (
                    then.valid_until,
                    then.closed_by,
                    then.close_reason,
                ), f"closed decision {did} changed its window"
            assert set(then.superseded_by) <= set(now.superseded_by)
        self.seen_decisions = decisions

        by_subject: dict[str, list[Decision]] = defaultdict(list)
        for d in decisions.values():
            by_subject[d.subject].append(d)
            assert (d.valid_until is None) == (d.closed_by is None)
            assert d.valid_until is None or d.valid_until >= d.valid_from
        for subject, rows in by_subject.items():
            # at most one current decision per subject; windows of one subject never overlap
            assert sum(d.current for d in rows) <= 1, f"two current decisions on {subject}"
            rows.sort(key=lambda d: (d.valid_from, d.id))
            for earlier, later in itertools.pairwise(rows):
                assert earlier.valid_until is not None, f"{earlier.id} still open after {later.id}"
                assert earlier.valid_until <= later.valid_from, f"{earlier.id} overlaps {later.id}"
            # point in time: a non-empty window is what the subject's as_of query returns
            for d in rows:
                if d.valid_until is None or d.valid_until > d.valid_from:
                    at = [
                        x.id
                        for x in self.kernel.decisions(subject, as_of=d.valid_from)
                        if x.subject == subject
                    ]
                    assert at == [d.id]
        # the model's current decisions are the kernel's, and subtree queries agree
        assert {d.subject: d.id for d in self.kernel.decisions()} == self.current
        for subject in SUBJECTS:
            expected = {i for s, i in self.current.items() if s == subject or s.startswith(subject + ".")}
            assert {d.id for d in self.kernel.decisions(subject)} == expected

    def _links_hold(self) -> None:
        decisions = self.seen_decisions
        links = self.conn.execute("SELECT old_id, new_id FROM supersession").fetchall()
        successors: dict[str, list[str]] = defaultdict(list)
        for old_id, new_id in links:
            old, new = decisions[old_id], decisions[new_id]
            assert old_id != new_id
            assert old.valid_until is not None, f"{old_id} is superseded but still current"
            assert old.valid_until <= new.valid_from and old.valid_from <= new.valid_from
            assert new_id in old.superseded_by and old_id in new.supersedes
            successors[old_id].append(new_id)
        assert len(links) == self.actions["decision.superseded"]
        # a decision closed as superseded was closed at the start of one of its successors
        for d in decisions.values():
            if d.closed_by == "superseded":
                assert d.valid_until in {decisions[n].valid_from for n in successors[d.id]}
        # acyclic: repeatedly remove decisions without predecessors (Kahn)
        indegree = Counter(new for _, new in links)
        ready = [d for d in decisions if indegree[d] == 0]
        removed = 0
        while ready:
            node = ready.pop()
            removed += 1
            for nxt in successors[node]:
                indegree[nxt] -= 1
                if indegree[nxt] == 0:
                    ready.append(nxt)
        assert removed == len(decisions), "the supersession links contain a cycle"

    def _proposals_hold(self) -> None:
        proposals = {p.id: p for p in self.kernel.store.list_proposals(status=None)}
        assert {pid: p.status for pid, p in proposals.items()} == self.status
        for pid, p in proposals.items():
            original = self.proposed[pid]
            assert (p.subject, p.decision, p.supersedes, p.created_at) == (
                original.subject,
                original.decision,
                original.supersedes,
                original.created_at,
            )
            if p.status == "pending":
                assert p.resolved_at is None and p.decision_id is None
                continue
            # it left 'pending' once; the resolution never changes afterwards
            if pid in self.seen_resolved:
                then = self.seen_resolved[pid]
                assert [getattr(p, f) for f in RESOLUTION_FIELDS] == [
                    getattr(then, f) for f in RESOLUTION_FIELDS
                ]
            self.seen_resolved[pid] = p
            assert p.resolved_at is not None and p.resolved_at >= p.created_at
            if p.status == "ratified":
                assert self.seen_decisions[p.decision_id].proposal_id == pid
            else:
                assert p.decision_id is None
        assert {p.id for p in self.kernel.queue()} == {i for i, s in self.status.items() if s == "pending"}

    def _audit_holds(self) -> None:
        report = self.kernel.audit.verify(state=True)  # the chain, and the tables replayed against it
        assert report.ok, report
        assert report.rows == sum(self.actions.values())
        assert Counter(e.action for e in self.kernel.audit.events()) == self.actions
        count = self.conn.execute("SELECT count(*) FROM evidence").fetchone()[0]
        assert count == len(self.evidence_ids)


@pytest.mark.slow
def test_kernel_state_machine() -> None:
    with tempfile.TemporaryDirectory(prefix="ctx-props-template-") as folder:
        template = Path(folder) / "ctx.db"
        Ctx.init(template)[0].close()
        KernelMachine.template = template
        try:
            run_state_machine_as_test(
                KernelMachine,
                settings=settings(
                    max_examples=40,
                    stateful_step_count=25,
                    deadline=None,
                    database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
                ),
            )
        finally:
            KernelMachine.template = None
