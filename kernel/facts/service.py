"""The facts derived about decisions: found, recorded, kept current with the rules that find them."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ctx_kernel.kernel.errors import StoreError
from ctx_kernel.kernel.limits import META_CONFLICT_RULES
from ctx_kernel.kernel.records import Decision, Proposal
from ctx_kernel.kernel.store.base import Store

if TYPE_CHECKING:
    from ctx_kernel.kernel.facts.conflicts import ConflictDetector
    from ctx_kernel.kernel.recall.service import RecallService
    from ctx_kernel.kernel.reports import Related


def conflict_rules() -> str:
    """The version of the rules contradictions are found with (recorded with the ones found)."""
    from ctx_kernel.kernel.language.conflicts import RULES_VERSION  # noqa: PLC0415 - lazy, see the module

    return RULES_VERSION


class FactsService:
    """Finds and records the contradictions between current decisions, and lists them."""

    def __init__(self, store: Store, recall: RecallService) -> None:
        self.store = store
        self.recall = recall

    def _detector(self) -> ConflictDetector:
        from ctx_kernel.kernel.facts.conflicts import ConflictDetector  # noqa: PLC0415 - rapidfuzz loads with it

        return ConflictDetector(self.store, self.recall.entity_index)

    def record_conflicts(self, decision_ids: Sequence[str]) -> int:
        """Detect and record the conflicts of newly ratified or imported current decisions."""
        detector = self._detector()
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
        if not force and self.store.get_meta(META_CONFLICT_RULES) == conflict_rules():
            return
        with self.store.transaction():
            self.store.clear_conflicts()
            self.record_conflicts([d.id for d in self.store.decisions()])
            self.store.set_meta(META_CONFLICT_RULES, conflict_rules())
        self.recall.forget_decisions()  # its cache keeps the conflicts of the decisions it read

    def keep_current(self) -> None:
        """:meth:`ensure_conflicts` before an answer; a read-only login (or a busy store) answers
        with the conflicts recorded."""
        with contextlib.suppress(StoreError):
            self.ensure_conflicts()

    def conflicts(self) -> list[tuple[Decision, Related]]:
        """Pairs of current decisions on different subjects that take opposite stances, newest first."""
        self.keep_current()
        return self.recall.recorded_conflicts()

    def proposal_conflicts(self, proposals: Sequence[Proposal]) -> dict[str, list[Related]]:
        """The current decisions on other subjects that each proposal contradicts."""
        from ctx_kernel.kernel.facts.conflicts import as_decision  # noqa: PLC0415
        from ctx_kernel.kernel.recall.expansion import conflict_item  # noqa: PLC0415

        detector = self._detector()
        return {
            proposal.id: [
                conflict_item(other, c.term, c.clause, c.other_clause)
                for other, c in detector.find(as_decision(proposal))
            ]
            for proposal in proposals
        }

    def rebuild(self) -> None:
        """Derive the keyword index, entity mentions and conflicts from the rows again (a copied store)."""
        self.recall.rebuild_index()
        self.ensure_conflicts(force=True)
