"""Records to table rows and back, by column name: each table's columns are the record's fields.

A :class:`RowMap` is generated from a record's dataclass fields: every field is the column of the
same name, except the fields a link table holds (a decision's cited evidence, its supersession
links). Lists are stored as JSON text and booleans as integers, as ``kernel/store/models.py``
declares the tables; ``tests/test_migrations.py`` checks that each table's columns are exactly its
record's. Queries select ``RowMap.columns`` and rows are read back by those names, so a column
added to a table cannot shift a field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol, get_origin, get_type_hints

from ctx_kernel.kernel.records import AuditEvent, Decision, Evidence, Proposal


@dataclass(frozen=True)
class RowMap:
    """How one record type is stored in one table."""

    record: type
    table: str
    columns: tuple[str, ...]  # the stored fields, in the record's order
    json_columns: tuple[str, ...]  # list fields, stored as JSON text
    bool_columns: tuple[str, ...]  # stored as 0 or 1

    @classmethod
    def of(cls, record: type, table: str, *, linked: tuple[str, ...] = ()) -> RowMap:
        """The map of ``record`` to ``table``; ``linked`` fields live in link tables, not columns."""
        hints = get_type_hints(record)
        stored = tuple(f.name for f in fields(record) if f.name not in linked)
        return cls(
            record,
            table,
            stored,
            tuple(c for c in stored if get_origin(hints[c]) is list),
            tuple(c for c in stored if hints[c] is bool),
        )

    def select(self, alias: str = "") -> str:
        """The column list of a SELECT, each prefixed with ``alias.`` when given."""
        prefix = f"{alias}." if alias else ""
        return ", ".join(prefix + c for c in self.columns)

    def insert(self) -> str:
        """An INSERT of one row, its values from :meth:`values`."""
        marks = ", ".join("?" * len(self.columns))
        return f"INSERT INTO {self.table} ({self.select()}) VALUES ({marks})"

    def values(self, record: Any, **stored: Any) -> tuple[Any, ...]:
        """The row of ``record`` for :meth:`insert`; ``stored`` overrides a field's stored value."""
        return sqlite_values(self, lambda c: stored[c] if c in stored else getattr(record, c))

    def fields_of(self, row: Sequence[Any]) -> dict[str, Any]:
        """A row selected with :meth:`select` as the record's stored fields, by name."""
        # Not strict: the row was selected with these very columns (and this runs per row of a long queue).
        return sqlite_fields(self, dict(zip(self.columns, row, strict=False)))

    def build(self, row: Sequence[Any], **linked: Any) -> Any:
        """The record of a row selected with :meth:`select`, with its linked fields."""
        return self.record(**self.fields_of(row), **linked)


class Columns(Protocol):
    """A table's columns and which of them SQLite stores as JSON text or as 0 or 1."""

    @property
    def columns(self) -> tuple[str, ...]: ...

    @property
    def json_columns(self) -> tuple[str, ...]: ...

    @property
    def bool_columns(self) -> tuple[str, ...]: ...


def sqlite_values(spec: Columns, value_of: Callable[[str], Any]) -> tuple[Any, ...]:
    """The values of ``spec``'s columns (``value_of`` each) as SQLite stores them: lists as JSON
    text, booleans as 0 or 1."""
    row = []
    for column in spec.columns:
        value = value_of(column)
        if column in spec.json_columns:
            value = json.dumps(value)
        elif column in spec.bool_columns:
            value = int(value)
        row.append(value)
    return tuple(row)


def sqlite_fields(spec: Columns, found: dict[str, Any]) -> dict[str, Any]:
    """``found`` (a SQLite row by column name) with its JSON text and 0/1 values read back."""
    for column in spec.json_columns:
        raw = found[column]
        # Most lists are empty; skipping the JSON parser for "[]" halves a long queue's load.
        found[column] = [] if raw == "[]" else json.loads(raw)
    for column in spec.bool_columns:
        found[column] = bool(found[column])
    return found


EVIDENCE = RowMap.of(Evidence, "evidence")
PROPOSAL = RowMap.of(Proposal, "proposal", linked=("evidence",))
DECISION = RowMap.of(Decision, "decision", linked=("evidence", "supersedes", "superseded_by"))
AUDIT = RowMap.of(AuditEvent, "audit")


@dataclass(frozen=True)
class CopiedTable:
    """A table ``ctx migrate`` copies row for row, as every backend exports and restores it.

    A row crosses backends as a dict of these columns holding the record's field values (lists
    as lists, booleans as bools, times as ctx's canonical text). ``key`` names a row; rows are
    exported in ``order``, or, when ``order`` is empty, in the order they were written (the order
    recall's "oldest first" and the vector backfill rely on), and ``after`` is then the key of the
    last row of the previous batch.
    """

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    order: tuple[str, ...] = ()

    @property
    def cursor(self) -> tuple[str, ...]:
        """The columns whose values in the last row exported say where the next batch starts."""
        return self.order or self.key

    @property
    def json_columns(self) -> tuple[str, ...]:
        """Columns holding lists."""
        return _ROW_MAPS[self.name].json_columns if self.name in _ROW_MAPS else ()

    @property
    def bool_columns(self) -> tuple[str, ...]:
        """Columns holding booleans."""
        return _ROW_MAPS[self.name].bool_columns if self.name in _ROW_MAPS else ()


_ROW_MAPS = {m.table: m for m in (EVIDENCE, PROPOSAL, DECISION, AUDIT)}

# The fields an entry's hash covers, in the canonical JSON's sorted order.
SERVED_FIELDS = ("seq", "at", "host", "agent", "session", "operation", "request", "items", "missed")
SERVED_COLUMNS = (*SERVED_FIELDS, "prev_hash", "hash")
FOLD_COLUMNS = (
    "day",
    "first_seq",
    "last_seq",
    "entries",
    "items",
    "merkle_root",
    "prev_hash",
    "last_hash",
    "folded_at",
    "key_id",
    "signature",
)


# In the order a copy writes them: each after the tables its rows refer to. Proposals come in
# (created_at, id) order, as the queue shows them: a near-duplicate names an older proposal.
COPIED_TABLES: tuple[CopiedTable, ...] = (
    CopiedTable("evidence", EVIDENCE.columns, ("id",)),
    CopiedTable("proposal", PROPOSAL.columns, ("id",), ("created_at", "id")),
    CopiedTable(
        "proposal_evidence",
        ("proposal_id", "evidence_id"),
        ("proposal_id", "evidence_id"),
        ("proposal_id", "evidence_id"),
    ),
    CopiedTable(
        "proposal_link", ("proposal_id", "pattern"), ("proposal_id", "pattern"), ("proposal_id", "pattern")
    ),
    CopiedTable("decision", DECISION.columns, ("id",)),
    CopiedTable(
        "decision_evidence",
        ("decision_id", "evidence_id"),
        ("decision_id", "evidence_id"),
        ("decision_id", "evidence_id"),
    ),
    CopiedTable(
        "supersession", ("old_id", "new_id", "created_at"), ("old_id", "new_id"), ("old_id", "new_id")
    ),
    CopiedTable(
        "decision_snapshot",
        ("decision_id", "taken_at", "taken_by", "act", "git_commit", "links", "review_by", "review_every"),
        ("decision_id", "taken_at"),
        ("decision_id", "taken_at"),
    ),
    CopiedTable("audit", AUDIT.columns, ("seq",), ("seq",)),
    # The served log after its folds: an entry links to the last fold when it follows one.
    CopiedTable("served_fold", FOLD_COLUMNS, ("day",), ("first_seq",)),
    CopiedTable("served", SERVED_COLUMNS, ("seq",), ("seq",)),
)
COPIED = {t.name: t for t in COPIED_TABLES}
