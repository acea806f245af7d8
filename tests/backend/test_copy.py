"""Contract: the bulk export and faithful restore that ``ctx migrate`` copies a store with."""

from __future__ import annotations

import struct

import pytest

from ctx_kernel.kernel import clock, ids
from ctx_kernel.kernel.chain import GENESIS_HASH, row_hash
from ctx_kernel.kernel.errors import RefusedError
from ctx_kernel.kernel.store.base import Store

from .support import decision, evidence, proposal

LATER = "2026-02-01T00:00:00.000000Z"


def _all(store: Store, table: str, batch: int) -> list[dict]:
    from ctx_kernel.kernel.store.rows import COPIED

    rows, after = [], None
    while found := store.export_rows(table, after, batch):
        rows += found
        after = tuple(found[-1][c] for c in COPIED[table].cursor)
    return rows


def test_evidence_is_exported_in_the_order_it_was_written_across_batches(store: Store) -> None:
    made = [evidence(f"note {i}") for i in range(7)]
    with store.transaction():
        for item in reversed(made):  # ids (ULIDs) sort the other way
            store.insert_evidence(item)
    exported = _all(store, "evidence", 2)
    assert [r["id"] for r in exported] == [e.id for e in reversed(made)]
    assert exported[0]["tags"] == [] and exported[0]["text"] == "note 6"
    assert store.count_rows("evidence") == 7
    keys = [(made[0].id,), ("ev_" + "0" * 26,)]
    assert list(store.rows_by_key("evidence", keys)) == [(made[0].id,)]


def test_a_resolved_proposal_and_a_closed_decision_restore_as_they_are(store: Store) -> None:
    cited = evidence("why we chose it")
    queued = proposal("db.engine", "Use PostgreSQL", cites=[cited.id])
    made = decision("db.engine", "Use PostgreSQL")
    with store.transaction():
        store.insert_evidence(cited)
        store.insert_proposal(queued)
        store.insert_decision(made)
    rows = {t: _all(store, t, 100) for t in ("evidence", "proposal", "decision", "proposal_evidence")}
    # A second store of this backend gets them already resolved and closed, as a copy writes them.
    rows["proposal"][0] |= {"id": ids.new_id("pr"), "status": "rejected", "resolved_at": LATER}
    rows["proposal"][0] |= {"resolved_by": "ann", "resolution_note": "no"}
    rows["decision"][0] |= {"id": ids.new_id("dc"), "subject": "db.other", "valid_until": LATER}
    rows["decision"][0] |= {"closed_by": "retired", "close_reason": "gone", "proposal_id": None}
    with store.transaction():
        store.restore_rows("proposal", rows["proposal"])
        store.restore_rows("decision", rows["decision"])
        store.restore_rows(
            "proposal_evidence", [{"proposal_id": rows["proposal"][0]["id"], "evidence_id": cited.id}]
        )
    restored = store.get_proposal(rows["proposal"][0]["id"])
    assert restored is not None and restored.status == "rejected" and restored.evidence == [cited.id]
    closed = store.get_decision(rows["decision"][0]["id"])
    assert closed is not None and closed.valid_until == LATER and closed.closed_by == "retired"
    back = store.rows_by_key("decision", [(closed.id,)])[(closed.id,)]
    assert back == rows["decision"][0]


def test_audit_rows_restore_in_sequence_and_a_row_that_does_not_link_is_refused(store: Store) -> None:
    rows, prev = [], GENESIS_HASH
    for seq in (1, 2, 3):
        row = {"seq": seq, "at": clock.now(), "actor": "ann", "action": "evidence.logged", "target": "x"}
        row |= {"before": None, "after": '{"a": 1}'}
        digest = row_hash(prev, row)
        rows.append({**row, "prev_hash": prev, "hash": digest})
        prev = digest
    with pytest.raises(RefusedError), store.transaction():
        store.restore_rows("audit", rows[1:])  # starts in the middle of the chain
    with store.transaction():
        store.restore_rows("audit", rows)
    assert list(store.audit_rows()) == rows
    assert store.export_rows("audit", (1,), 5) == rows[1:]


def test_vectors_are_exported_as_insert_vectors_takes_them(store: Store) -> None:
    items = [evidence(f"text {i}") for i in range(3)]
    vector = struct.pack("<8f", *[0.125] * 8)
    with store.transaction():
        for item in items:
            store.insert_evidence(item)
        store.create_vector_tables(8)
        store.insert_vectors(
            "evidence", [(items[2].id, 0, vector), (items[0].id, 1, vector), (items[0].id, 0, vector)]
        )
    first = store.export_vectors("evidence", None, 2)
    assert first == [(items[0].id, 0, vector), (items[0].id, 1, vector)]
    assert store.export_vectors("evidence", first[-1][:2], 2) == [(items[2].id, 0, vector)]
    assert store.export_vectors("decision", None, 2) == []
