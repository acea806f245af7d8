"""Rebuild the derived tables (keyword index, entity mentions) from the rows ``ctx audit verify`` checks.

Verify does not check derived data; ``ctx reindex`` rebuilds it from verified rows instead, so a
planted or deleted index entry cannot outlive a reindex. A sealed vault's evidence index holds keyed
tokens that only ctx writes, and its evidence has no mentions, so only decisions are rebuilt there.
"""

from __future__ import annotations

from ctx_kernel.kernel.language import entities
from ctx_kernel.kernel.store.base import Store

_CHUNK = 500


def rebuild_index(store: Store) -> None:
    """Rebuild the keyword index and the entity mentions of every decision (and plain evidence text)."""
    with store.transaction():
        plain = not store.is_sealed()
        store.rebuild_text_index(evidence=plain)
        for decision in store.decisions(include_closed=True):
            store.add_mentions(
                decision.id, entities.for_decision(decision.subject, decision.decision, decision.rationale)
            )
        if not plain:
            return
        ids = store.evidence_ids()
        for start in range(0, len(ids), _CHUNK):
            found = store.evidence_by_ids(ids[start : start + _CHUNK])
            for evidence_id, evidence in found.items():
                store.add_mentions(evidence_id, entities.extract(evidence.text))
