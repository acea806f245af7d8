"""The statements both store backends run alike, written once, with what their SQL differs in named.

The SQLite and PostgreSQL stores (``store/sqlite/``, ``store/postgres/``) both inherit
:class:`SharedRows`: the reads and writes whose SQL is the same in both but for what
:class:`Dialect` names (the placeholder, the collation that orders text by its bytes, LIKE's
escape, the larger of two values, how a list of values is bound). Each backend describes its
dialect once, beside its connection. What a backend does its own way stays in its package:
sealing and FTS5 in SQLite's, row-level security, tsvector postings, jsonb and the writer lock
in PostgreSQL's, and each one's vectors. A backend that must do more in one of these methods
overrides it and calls this one.

Statements are written as SQLite takes them: ``?`` is a placeholder and nothing else, and a
``%`` is plain text (:meth:`Dialect.sql` escapes it for psycopg). No ORM: this module imports
only the records and their row maps, so ``ctx log`` and ``ctx propose`` stay as quick as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar, cast

from ctx_kernel.kernel.records import Decision, Evidence, LinkDigest, Proposal, Snapshot
from ctx_kernel.kernel.store import lists
from ctx_kernel.kernel.store.base import ConflictPair, ConflictRow
from ctx_kernel.kernel.store.rows import DECISION, EVIDENCE, PROPOSAL, RowMap

# The kinds with a keyword index and vectors, each the name of its table.
INDEX_KINDS = ("decision", "evidence")
# chunk_id = owner rowid * CHUNK_SLOTS + chunk number, in both backends' vector tables.
CHUNK_SLOTS = 16
# The link tables the audit replay reads whole, with their columns (fixed names, never user text).
LINK_TABLES = {
    "supersession": "old_id, new_id, created_at",
    "decision_evidence": "decision_id, evidence_id",
    "proposal_evidence": "proposal_id, evidence_id",
    "proposal_link": "proposal_id, pattern",
    "decision_conflict": "decision_id, other_id, term, clause, other_clause",
}


_SNAPSHOT_COLUMNS = "decision_id, taken_at, taken_by, act, git_commit, links, review_by, review_every"


def _snapshot(row: Sequence[Any]) -> Snapshot:
    links = json.loads(row[5]) if isinstance(row[5], str) else row[5]
    return Snapshot(
        decision_id=row[0],
        taken_at=row[1],
        taken_by=row[2],
        act=row[3],
        git_commit=row[4],
        links=[LinkDigest(link=x["link"], digest=x["digest"], files=x["files"]) for x in links],
        review_by=row[6],
        review_every=row[7],
    )


def index_table(kind: str) -> str:
    """The table of an index kind (``decision`` or ``evidence``); a ValueError for any other."""
    if kind not in INDEX_KINDS:
        raise ValueError(f"unknown index kind {kind!r}")
    return kind


def like_prefix(subject: str) -> str:
    """A LIKE pattern (escaped with backslashes) for the subjects below ``subject``."""
    escaped = subject.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + ".%"


class Dialect:
    """What a backend's SQL says its own way where the statement is otherwise the same.

    A plain class: generating a frozen dataclass's methods would add most of a millisecond to the
    start of every ``ctx log``, for an object each backend makes once.
    """

    __slots__ = ("collate", "greatest", "like_escape", "list_chunk", "native_booleans", "placeholder")

    def __init__(
        self,
        *,
        placeholder: str,
        collate: str,
        like_escape: str,
        greatest: str,
        list_chunk: int | None,
        native_booleans: bool,
    ) -> None:
        # The driver's placeholder: "?" (sqlite3) or "%s" (psycopg).
        self.placeholder = placeholder
        # Appended to a text column to compare and order it by its bytes, as SQLite does by default.
        self.collate = collate
        # Appended to a LIKE whose pattern escapes with a backslash, where that is not the default.
        self.like_escape = like_escape
        # The function that gives the larger of two values (SQLite's max takes two arguments).
        self.greatest = greatest
        # How many values an IN list binds at most; None: a list binds as one array (= ANY(?)).
        self.list_chunk = list_chunk
        # Whether booleans bind as booleans (else as 0 or 1); lists bind as JSON text in both.
        self.native_booleans = native_booleans

    def sql(self, statement: str) -> str:
        """``statement``, written with ``?`` placeholders, in this dialect's placeholders."""
        if self.placeholder == "?":
            return statement
        return statement.replace("%", "%%").replace("?", self.placeholder)

    def among(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A condition that ``column`` is one of ``values``, and what it binds."""
        if self.list_chunk is None:
            return f"{column} = ANY(?)", [list(values)]
        return f"{column} IN ({','.join('?' * len(values))})", list(values)

    def chunks(self, values: Sequence[Any]) -> Iterator[list[Any]]:
        """``values`` in lists that :meth:`among` may bind in one statement (none when empty)."""
        size = self.list_chunk or max(len(values), 1)
        for start in range(0, len(values), size):
            yield list(values[start : start + size])

    def row(self, rows: RowMap, record: Any) -> tuple[Any, ...]:
        """The values of :meth:`RowMap.insert` for ``record``, as this dialect binds them."""
        if not self.native_booleans:
            return rows.values(record)
        return tuple(
            json.dumps(getattr(record, c)) if c in rows.json_columns else getattr(record, c)
            for c in rows.columns
        )


class SharedRows:
    """Mixed into both stores: the rows both read and write with the same statements.

    A store provides ``sql_dialect`` and runs statements already in its dialect with ``_q``
    (all rows), ``_one`` (the first row or None), ``_exec`` and ``_many`` (one statement over
    many parameter rows); ``_evidence`` and ``_proposals`` build records from rows.
    """

    sql_dialect: ClassVar[Dialect]

    def _q(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> tuple[Any, ...] | None:
        raise NotImplementedError

    def _exec(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> None:
        raise NotImplementedError

    def _many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        raise NotImplementedError

    def _evidence(self, row: Sequence[Any]) -> Evidence:
        raise NotImplementedError

    def _proposals(self, rows: list[tuple[Any, ...]]) -> list[Proposal]:
        raise NotImplementedError

    def is_sealed(self) -> bool:
        raise NotImplementedError

    def _select(self, statement: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        return self._q(self.sql_dialect.sql(statement), params)

    def _select_one(self, statement: str, params: tuple[Any, ...] | list[Any] = ()) -> tuple[Any, ...] | None:
        return self._one(self.sql_dialect.sql(statement), params)

    def _write(self, statement: str, params: tuple[Any, ...] | list[Any] = ()) -> None:
        self._exec(self.sql_dialect.sql(statement), params)

    def _write_many(self, statement: str, rows: list[tuple[Any, ...]]) -> None:
        self._many(self.sql_dialect.sql(statement), rows)

    # -- meta -----------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A metadata value, or None."""
        row = self._select_one("SELECT value FROM meta WHERE key = ?", (key,))
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value."""
        self._write(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def delete_meta(self, key: str) -> None:
        """Forget one metadata key."""
        self._write("DELETE FROM meta WHERE key = ?", (key,))

    # -- evidence -------------------------------------------------------------------------

    def evidence_id_for_hash(self, content_hash: str) -> str | None:
        """The id of the evidence with this content hash, if any."""
        row = self._select_one("SELECT id FROM evidence WHERE content_hash = ?", (content_hash,))
        return row[0] if row else None

    def get_evidence(self, evidence_id: str) -> Evidence | None:
        """One evidence row."""
        row = self._select_one(f"SELECT {EVIDENCE.select()} FROM evidence WHERE id = ?", (evidence_id,))
        return self._evidence(row) if row else None

    def missing_evidence(self, ids: list[str]) -> list[str]:
        """Those of ``ids`` that name no evidence, in the order given."""
        if not ids:
            return []
        among, params = self.sql_dialect.among("id", ids)
        found = {r[0] for r in self._select(f"SELECT id FROM evidence WHERE {among}", params)}
        return [i for i in ids if i not in found]

    def ids_ending(self, tails: Sequence[str]) -> list[str]:
        """Every record id whose last four characters are one of ``tails``: an id is always 29
        characters, so they are its 26th to 29th, the expression the ix_*_tail indexes hold
        (m008, p007; ``substr`` is the same in both dialects)."""
        found: list[str] = []
        for chunk in self.sql_dialect.chunks(tails):
            among, params = self.sql_dialect.among("substr(id, 26, 4)", chunk)
            union = " UNION ALL ".join(
                f"SELECT id FROM {table} WHERE {among}" for table in ("evidence", "proposal", "decision")
            )
            found += [r[0] for r in self._select(union, params * 3)]
        return found

    def first_citing_subject(self, evidence_id: str) -> str | None:
        """The subject of the oldest proposal that cites this evidence, if one does."""
        row = self._select_one(
            "SELECT p.subject FROM proposal_evidence c JOIN proposal p ON p.id = c.proposal_id "
            "WHERE c.evidence_id = ? ORDER BY p.created_at, p.id LIMIT 1",
            (evidence_id,),
        )
        return str(row[0]) if row else None

    def evidence_ids(self) -> list[str]:
        """The id of every evidence row, oldest first."""
        return [r[0] for r in self._select("SELECT id FROM evidence ORDER BY rowid")]

    def evidence_by_ids(self, ids: Sequence[str]) -> dict[str, Evidence]:
        """Evidence rows by id."""
        if not ids:
            return {}
        among, params = self.sql_dialect.among("id", ids)
        rows = self._select(f"SELECT {EVIDENCE.select()} FROM evidence WHERE {among}", params)
        return {r[0]: self._evidence(r) for r in rows}

    def list_evidence(
        self, limit: int, *, since: str | None = None, agent: str | None = None, kind: str | None = None
    ) -> list[Evidence]:
        """Up to ``limit`` of the newest evidence texts, newest first, logged at or after ``since``,
        by ``agent``, of ``kind`` when given. The newest are read backwards along the rowid, which
        stops after ``limit`` matches; the times are fixed-width text, so they compare as times."""
        where: list[str] = []
        params: list[Any] = []
        for condition, value in (("created_at >= ?", since), ("agent = ?", agent), ("kind = ?", kind)):
            if value is not None:
                where.append(condition)
                params.append(value)
        clause = " WHERE " + " AND ".join(where) if where else ""
        rows = self._select(
            f"SELECT {EVIDENCE.select()} FROM evidence{clause} ORDER BY rowid DESC LIMIT ?", [*params, limit]
        )
        return [self._evidence(r) for r in rows]

    # -- proposals ------------------------------------------------------------------------

    def insert_proposal(self, proposal: Proposal) -> None:
        """Queue a proposal with its cited evidence."""
        self._write(PROPOSAL.insert(), self.sql_dialect.row(PROPOSAL, proposal))
        self._write_many(
            "INSERT INTO proposal_evidence (proposal_id, evidence_id) VALUES (?, ?)",
            [(proposal.id, e) for e in proposal.evidence],
        )

    def get_proposal(self, proposal_id: str) -> Proposal | None:
        """One proposal with its cited evidence."""
        rows = self._select(f"SELECT {PROPOSAL.select()} FROM proposal WHERE id = ?", (proposal_id,))
        return self._proposals(rows)[0] if rows else None

    def pending_near_duplicates(self, ids: list[str]) -> list[Proposal]:
        """Pending proposals flagged as near-duplicates of any of ``ids``."""
        d = self.sql_dialect
        found: list[Proposal] = []
        for chunk in d.chunks(ids):
            among, params = d.among("near_duplicate_of", chunk)
            found += self._proposals(
                self._select(
                    f"SELECT {PROPOSAL.select()} FROM proposal WHERE status = 'pending' AND {among} "
                    f"ORDER BY created_at, id{d.collate}",
                    params,
                )
            )
        return found

    def closed_proposals(self, subject: str, limit: int | None = None) -> list[Proposal]:
        """The rejected and withdrawn proposals on exactly ``subject``, oldest first (the newest
        ``limit`` of them when given)."""
        collate = self.sql_dialect.collate
        statement = (
            f"SELECT {PROPOSAL.select()} FROM proposal WHERE subject = ? "
            f"AND status IN ('rejected', 'withdrawn') ORDER BY created_at DESC, id{collate} DESC"
        )
        params: list[Any] = [subject]
        if limit is not None:
            statement += " LIMIT ?"
            params.append(limit)
        return self._proposals(self._select(statement, params))[::-1]

    def find_source(self, source: str) -> str | None:
        """The id of the decision or proposal imported from ``source``, if any."""
        row = self._select_one(
            "SELECT id FROM decision WHERE source = ? UNION ALL SELECT id FROM proposal WHERE source = ? "
            "LIMIT 1",
            (source, source),
        )
        return row[0] if row else None

    # -- decisions ------------------------------------------------------------------------

    def _decisions(self, rows: list[tuple[Any, ...]]) -> list[Decision]:
        d = self.sql_dialect
        ids = [r[0] for r in rows]
        cited: dict[str, list[str]] = {i: [] for i in ids}
        older: dict[str, list[str]] = {i: [] for i in ids}
        newer: dict[str, list[str]] = {i: [] for i in ids}
        for chunk in d.chunks(ids):
            among, params = d.among("decision_id", chunk)
            for did, eid in self._select(
                f"SELECT decision_id, evidence_id FROM decision_evidence WHERE {among} "
                f"ORDER BY evidence_id{d.collate}",
                params,
            ):
                cited[did].append(eid)
            old_among, old_params = d.among("old_id", chunk)
            new_among, new_params = d.among("new_id", chunk)
            for old, new in self._select(
                f"SELECT old_id, new_id FROM supersession WHERE {old_among} OR {new_among} "
                f"ORDER BY old_id{d.collate}, new_id{d.collate}",
                old_params + new_params,
            ):
                if new in older:
                    older[new].append(old)
                if old in newer:
                    newer[old].append(new)
        return [
            DECISION.build(r, evidence=cited[r[0]], supersedes=older[r[0]], superseded_by=newer[r[0]])
            for r in rows
        ]

    def get_decision(self, decision_id: str) -> Decision | None:
        """One decision with its evidence and links."""
        rows = self._select(f"SELECT {DECISION.select()} FROM decision WHERE id = ?", (decision_id,))
        return self._decisions(rows)[0] if rows else None

    def decisions_by_ids(self, ids: Sequence[str]) -> dict[str, Decision]:
        """Decisions by id (unknown ids are left out)."""
        found: dict[str, Decision] = {}
        for chunk in self.sql_dialect.chunks(ids):
            among, params = self.sql_dialect.among("id", chunk)
            rows = self._select(f"SELECT {DECISION.select()} FROM decision WHERE {among}", params)
            found.update((d.id, d) for d in self._decisions(rows))
        return found

    def current_decision(self, subject: str) -> Decision | None:
        """The decision on ``subject`` whose window is open."""
        rows = self._select(
            f"SELECT {DECISION.select()} FROM decision WHERE subject = ? AND valid_until IS NULL", (subject,)
        )
        return self._decisions(rows)[0] if rows else None

    def decisions(
        self,
        subject: str | None = None,
        as_of: str | None = None,
        include_closed: bool = False,
        limit: int | None = None,
    ) -> list[Decision]:
        """Decisions (current, valid at ``as_of``, or all), ``subject`` matching its whole subtree;
        the first ``limit`` when given."""
        d = self.sql_dialect
        where: list[str] = []
        params: list[Any] = []
        if subject is not None:
            where.append(f"(subject = ? OR subject LIKE ?{d.like_escape})")
            params += [subject, like_prefix(subject)]
        if as_of is not None:
            where.append("valid_from <= ? AND (valid_until IS NULL OR valid_until > ?)")
            params += [as_of, as_of]
        elif not include_closed:
            where.append("valid_until IS NULL")
        statement = f"SELECT {DECISION.select()} FROM decision"
        if where:
            statement += " WHERE " + " AND ".join(where)
        statement += f" ORDER BY subject{d.collate}, valid_from, id{d.collate}"
        if limit is not None:
            statement += " LIMIT ?"
            params.append(limit)
        return self._decisions(self._select(statement, params))

    def insert_decision(self, decision: Decision) -> None:
        """Add a decision with its cited evidence."""
        self._write(DECISION.insert(), self.sql_dialect.row(DECISION, decision))
        self._write_many(
            "INSERT INTO decision_evidence (decision_id, evidence_id) VALUES (?, ?)",
            [(decision.id, e) for e in decision.evidence],
        )

    def close_decision(self, decision_id: str, until: str, closed_by: str, reason: str | None) -> None:
        """Close an open window, once (the database refuses a second close)."""
        self._write(
            "UPDATE decision SET valid_until = ?, closed_by = ?, close_reason = ? WHERE id = ?",
            (until, closed_by, reason, decision_id),
        )

    def link(self, old_id: str, new_id: str, at: str) -> None:
        """Record that ``new_id`` supersedes ``old_id``."""
        self._write(
            "INSERT INTO supersession (old_id, new_id, created_at) VALUES (?, ?, ?)", (old_id, new_id, at)
        )

    def is_ancestor(self, candidate: str, decision_id: str) -> bool:
        """True when ``candidate`` is ``decision_id`` or reachable from it through successors."""
        row = self._select_one(
            """WITH RECURSIVE later(id) AS (
                 SELECT CAST(? AS text)
                 UNION SELECT s.new_id FROM supersession s JOIN later l ON s.old_id = l.id
               ) SELECT 1 FROM later WHERE id = ?""",
            (decision_id, candidate),
        )
        return row is not None

    def current_ids(self, subjects: Sequence[str]) -> list[str]:
        """Ids of the current decisions on ``subjects``, in id order."""
        if not subjects:
            return []
        among, params = self.sql_dialect.among("subject", subjects)
        return [
            r[0]
            for r in self._select(
                f"SELECT id FROM decision WHERE valid_until IS NULL AND {among} "
                f"ORDER BY id{self.sql_dialect.collate}",
                params,
            )
        ]

    def current_subjects(self) -> list[str]:
        """Subjects that have a current decision, in order."""
        collate = self.sql_dialect.collate
        rows = self._select(
            f"SELECT subject FROM decision WHERE valid_until IS NULL ORDER BY subject{collate}"
        )
        return [r[0] for r in rows]

    def known_subjects(self) -> list[str]:
        """Every subject a decision (current or not) or a pending proposal is on."""
        return [r[0] for r in self._select(lists.KNOWN_SUBJECTS)]

    # -- links and snapshots --------------------------------------------------------------

    def insert_proposal_links(self, proposal_id: str, links: Sequence[str]) -> None:
        """Keep the links a proposal was made with (they never change)."""
        self._write_many(
            "INSERT INTO proposal_link (proposal_id, pattern) VALUES (?, ?)",
            [(proposal_id, p) for p in links],
        )

    def proposal_links(self, proposal_id: str) -> list[str]:
        """The links a proposal was made with, in the order given."""
        rows = self._select(
            "SELECT pattern FROM proposal_link WHERE proposal_id = ? ORDER BY pattern", (proposal_id,)
        )
        return [r[0] for r in rows]

    def insert_snapshot(self, snapshot: Snapshot) -> None:
        """Append a ratification's or re-confirmation's snapshot."""
        links = json.dumps([link.to_dict() for link in snapshot.links], separators=(",", ":"))
        self._write(
            f"INSERT INTO decision_snapshot ({_SNAPSHOT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                snapshot.decision_id,
                snapshot.taken_at,
                snapshot.taken_by,
                snapshot.act,
                snapshot.git_commit,
                links,
                snapshot.review_by,
                snapshot.review_every,
            ),
        )

    def snapshots_of(self, decision_id: str) -> list[Snapshot]:
        """A decision's snapshots, oldest first."""
        rows = self._select(
            f"SELECT {_SNAPSHOT_COLUMNS} FROM decision_snapshot WHERE decision_id = ? ORDER BY taken_at",
            (decision_id,),
        )
        return [_snapshot(r) for r in rows]

    def all_snapshots(self) -> list[Snapshot]:
        """Every snapshot of every decision (what the audit replay checks), by decision and time."""
        rows = self._select(
            f"SELECT {_SNAPSHOT_COLUMNS} FROM decision_snapshot ORDER BY decision_id, taken_at"
        )
        return [_snapshot(r) for r in rows]

    def current_snapshots(self) -> list[Snapshot]:
        """The newest snapshot of every current decision that has one."""
        columns = ", ".join(f"s.{c}" for c in _SNAPSHOT_COLUMNS.split(", "))
        rows = self._select(
            f"SELECT {columns} FROM decision_snapshot s JOIN decision d ON d.id = s.decision_id "
            "WHERE d.valid_until IS NULL AND s.taken_at = "
            "(SELECT max(t.taken_at) FROM decision_snapshot t WHERE t.decision_id = s.decision_id) "
            "ORDER BY s.decision_id"
        )
        return [_snapshot(r) for r in rows]

    # -- audit ----------------------------------------------------------------------------

    def link_rows(self, table: str) -> list[tuple[Any, ...]]:
        """Every row of a link table the audit replay checks (supersession, citations, links, conflicts),
        ordered by its columns as SQLite orders them."""
        columns = LINK_TABLES[table]  # a fixed name, never user text
        collate = self.sql_dialect.collate
        order = ", ".join(c if c == "created_at" else c + collate for c in columns.split(", "))
        return self._select(f"SELECT {columns} FROM {table} ORDER BY {order}")

    # -- entities and conflicts -----------------------------------------------------------

    def entity_version(self) -> int:
        """Grows whenever an entity is added (for caches of :meth:`entity_names`)."""
        row = self._select_one("SELECT coalesce(max(id), 0) FROM entity")
        return int(row[0]) if row else 0

    def entity_names(self, after: int = 0) -> list[tuple[int, str]]:
        """``(id, name)`` of the entities whose id is above ``after``, oldest first.

        Entities are written inside the store's write transactions, which take one lock, so ids
        become visible in increasing order and a cache that asks for ids above the last it saw
        misses none. (224,000 rows at a million texts: they are returned as the driver reads them.)
        """
        rows = self._select("SELECT id, name FROM entity WHERE id > ? ORDER BY id", (after,))
        return cast("list[tuple[int, str]]", rows)

    def entity_counts(self, entity_ids: Sequence[int], prefix: str) -> dict[int, int]:
        """How many items with id prefix ``prefix`` mention each entity."""
        if not entity_ids:
            return {}
        among, params = self.sql_dialect.among("entity_id", entity_ids)
        rows = self._select(
            f"SELECT entity_id, count(*) FROM entity_mention WHERE {among} AND item >= ? AND item < ? "
            "GROUP BY entity_id",
            [*params, prefix, prefix + "~"],
        )
        return {int(r[0]): int(r[1]) for r in rows}

    def conflicts_for(self, decision_id: str) -> list[tuple[str, str, str, str]]:
        """``(other id, term, clause, other clause)`` of every recorded conflict of a decision."""
        return [
            (r[0], r[1], r[2], r[3])
            for r in self._select(
                "SELECT other_id, term, clause, other_clause FROM decision_conflict "
                f"WHERE decision_id = ? ORDER BY other_id{self.sql_dialect.collate}",
                (decision_id,),
            )
        ]

    def conflicts_at(self, decision_ids: Sequence[str], moment: str | None) -> dict[str, list[ConflictRow]]:
        """:meth:`conflicts_for` of each decision, keeping the others that hold at ``moment`` (None: now),
        each with the other's subject, text and window."""
        d = self.sql_dialect
        out: dict[str, list[ConflictRow]] = {i: [] for i in decision_ids}
        if not decision_ids:
            return out
        if moment is None:
            window, params = "d.valid_until IS NULL", []
        else:
            window = "d.valid_from <= ? AND (d.valid_until IS NULL OR d.valid_until > ?)"
            params = [moment, moment]
        among, among_params = d.among("c.decision_id", decision_ids)
        for r in self._select(
            "SELECT c.decision_id, c.other_id, c.term, c.clause, c.other_clause, "
            "d.subject, d.decision, d.valid_from, d.valid_until FROM decision_conflict c "
            f"JOIN decision d ON d.id = c.other_id WHERE {among} AND {window} "
            f"ORDER BY c.decision_id{d.collate}, c.other_id{d.collate}",
            [*among_params, *params],
        ):
            out[r[0]].append(ConflictRow(*r[1:]))
        return out

    def current_conflict_pairs(self) -> list[ConflictPair]:
        """Each conflict between current decisions, once, newest first."""
        d = self.sql_dialect
        return [
            ConflictPair(r[0], r[1], r[2], r[3], r[4])
            for r in self._select(
                f"""SELECT c.decision_id, c.other_id, c.term, c.clause, c.other_clause
                   FROM decision_conflict c
                   JOIN decision a ON a.id = c.decision_id JOIN decision b ON b.id = c.other_id
                   WHERE a.valid_until IS NULL AND b.valid_until IS NULL
                     AND c.decision_id{d.collate} < c.other_id{d.collate}
                   ORDER BY {d.greatest}(a.valid_from, b.valid_from) DESC, c.decision_id{d.collate}"""
            )
        ]

    def clear_conflicts(self) -> None:
        """Forget every recorded conflict (before detecting them again)."""
        self._write("DELETE FROM decision_conflict")

    # -- vectors --------------------------------------------------------------------------

    def pending_vectors(self, kind: str, limit: int) -> list[tuple[str, str]]:
        """``(id, text)`` of the oldest rows that have no vector yet.

        Rows are embedded in rowid order and never change, so the newest embedded rowid is a
        high-water mark; writers commit one at a time (the store's write lock), so rowids become
        visible in increasing order and none is left behind it.
        """
        if kind == "evidence" and self.is_sealed():
            return []  # a vector would give a sealed text's meaning away: sealed vaults have none
        table = index_table(kind)
        column = (
            "subject || ': ' || decision || coalesce('\n' || rationale, '')" if kind == "decision" else "text"
        )
        return [
            (r[0], r[1])
            for r in self._select(
                f"SELECT id, {column} FROM {table} "
                f"WHERE rowid > (SELECT coalesce(max(owner_rowid), 0) FROM {table}_vector) "
                "ORDER BY rowid LIMIT ?",
                (limit,),
            )
        ]

    def pending_vector_count(self, kind: str) -> int:
        """How many rows still wait for a vector."""
        if kind == "evidence" and self.is_sealed():
            return 0
        table = index_table(kind)
        row = self._select_one(
            f"SELECT count(*) FROM {table} "
            f"WHERE rowid > (SELECT coalesce(max(owner_rowid), 0) FROM {table}_vector)"
        )
        return int(row[0]) if row else 0
