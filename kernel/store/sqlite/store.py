"""The embedded SQLite backend: one file per project, WAL, every write in one transaction."""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ctx_kernel.kernel.chain import GENESIS_HASH, row_hash
from ctx_kernel.kernel.errors import RefusedError, StoreError
from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.limits import META_CONFLICT_RULES
from ctx_kernel.kernel.records import AuditEvent, Decision, Evidence, Proposal
from ctx_kernel.kernel.sealing import SCRUB_PENDING, Vault, VaultError, is_sealed
from ctx_kernel.kernel.sealing import snippet as vault_snippet
from ctx_kernel.kernel.store import lists
from ctx_kernel.kernel.store.base import BackendCheck, Missing, Sealing, ServedLog
from ctx_kernel.kernel.store.rows import AUDIT, DECISION, EVIDENCE, PROPOSAL
from ctx_kernel.kernel.store.served import SharedServed
from ctx_kernel.kernel.store.shared import Dialect, SharedRows, like_prefix
from ctx_kernel.kernel.store.sqlite import driver, migrate
from ctx_kernel.kernel.store.sqlite.copy import SQLiteCopy
from ctx_kernel.kernel.store.sqlite.fts import match_string
from ctx_kernel.kernel.store.sqlite.index import IndexQueries
from ctx_kernel.kernel.store.sqlite.vectors import VectorMirror
from ctx_kernel.kernel.store.sqlite.watch import SQLITE_HAS_NO_ROLES, DataVersionWatch
from ctx_kernel.kernel.store.writelock import WriteLock

# Values bound in one IN list: well under the 32,766 variables a SQLite statement may hold.
_LIST_CHUNK = 500
# SQLite's SQL where the statements of kernel/store/shared.py leave it a choice: qmark placeholders,
# text compared by its bytes (the default BINARY collation), LIKE escaping only with ESCAPE, the
# two-argument max, lists bound value by value, and booleans stored as 0 or 1.
SQLITE = Dialect(
    placeholder="?",
    collate="",
    like_escape=" ESCAPE '\\'",
    greatest="max",
    list_chunk=_LIST_CHUNK,
    native_booleans=False,
)


class SQLiteStore(SharedServed, SharedRows, IndexQueries, SQLiteCopy):
    """A ctx store in one SQLite file."""

    dialect = "sqlite"
    sql_dialect = SQLITE
    parallel_reads = False
    owner_sets_vectors = False
    # A file has no logins: the names a host gives are recorded as given.
    login = None

    def __init__(self, path: Path, conn: Any) -> None:
        self.path = path
        self.location = str(path)
        self._conn = conn
        self._in_tx = False
        self._in_snapshot = False
        self._reader: SQLiteStore | None = None
        self._vault: Vault | None = None
        self._offered: list[tuple[str, bytes]] = []
        # True while this connection's transaction holds the write lock and the vault is known
        # to be plain: no other writer can seal it before the transaction ends.
        self._tx_plain = False
        self._write_lock = WriteLock(path)
        self._term_counts = {}
        # kind -> its vectors' copy in memory, shared with the reader (see sqlite_vectors.py)
        self._mirrors: dict[str, VectorMirror] = {}

    @classmethod
    def create(cls, path: Path) -> SQLiteStore:
        """Create (or upgrade) the store file at ``path`` and open it."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create a store at {path}: {exc.strerror or exc}") from exc
        migrate.upgrade(path)
        return cls.open(path)

    @classmethod
    def open(cls, path: Path) -> SQLiteStore:
        """Open an existing store, upgrading its schema when it is older than this ctx."""
        if not path.is_file():
            raise StoreError(f"no ctx store at {path}: run `ctx init` first")
        state = migrate.probe(path)  # refuses another application's file before anything is written
        try:
            conn = driver.connect(path)
            migrate.ensure_current(conn, path)
            if state != migrate.MARKED:
                migrate.mark(conn)
        except driver.dbapi.DatabaseError as exc:
            raise migrate.database_error(path, exc) from exc
        return cls(path, conn)

    def close(self) -> None:
        """Release the connection (and the reader's)."""
        if self._reader is not None:
            self._reader.close()
        for mirror in self._mirrors.values():
            mirror.close()
        self._conn.close()
        self._write_lock.close()

    def reader(self) -> SQLiteStore:
        """A second connection to the same file, for reads that run beside this one's."""
        if self._reader is None:
            self._reader = self.detached()
            self._reader._mirrors = self._mirrors
        return self._reader

    def detached(self) -> SQLiteStore:
        """A new connection to the same file, for a thread of the caller's own; the caller closes it."""
        other = SQLiteStore(self.path, driver.connect(self.path))
        other._vault = self._vault
        other._offered = self._offered  # the same list: keys offered later unlock it too
        return other

    # -- transactions -------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE (the write lock up front, so read-then-write cannot race) ... COMMIT."""
        if self._in_tx:
            yield
            return
        with self._writer():
            self._begin()
            self._in_tx = True
            self._tx_plain = False
            try:
                yield
                self._conn.execute("COMMIT")
            except BaseException as exc:
                # An interrupt raised just after COMMIT returned lands here with nothing to undo.
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, driver.dbapi.IntegrityError):
                    # An invariant the database holds (trigger, unique index, CHECK) refused the write.
                    raise RefusedError(f"refused by the store: {exc}") from exc
                if isinstance(exc, driver.dbapi.OperationalError):
                    raise StoreError(f"store {self.path}: {exc}") from exc
                raise
            finally:
                self._in_tx = False
                self._tx_plain = False

    @contextmanager
    def _writer(self) -> Iterator[None]:
        """Hold the store's OS writer lock (kernel.store.writelock) meanwhile, where there is one."""
        self._write_lock.acquire()
        try:
            yield
        finally:
            self._write_lock.release()

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A nested step inside a transaction that can fail alone."""
        self._conn.execute("SAVEPOINT step")
        try:
            yield
        except BaseException as exc:
            self._conn.execute("ROLLBACK TO step")
            self._conn.execute("RELEASE step")
            if isinstance(exc, driver.dbapi.IntegrityError):
                raise RefusedError(f"refused by the store: {exc}") from exc
            raise
        self._conn.execute("RELEASE step")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A deferred read transaction: WAL gives every read inside it the same committed state."""
        if self._in_tx or self._in_snapshot:
            yield
            return
        self._conn.execute("BEGIN")
        self._in_snapshot = True
        try:
            yield
        finally:
            self._in_snapshot = False
            if self._conn.in_transaction:
                self._conn.execute("COMMIT")

    def _begin(self) -> None:
        # Behind the OS writer lock this waits only for writers that do not take it (migrations,
        # other tools). busy_timeout already waits; a writer that still lost retries with jitter.
        deadline = time.monotonic() + 120
        while True:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                return
            except driver.dbapi.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise StoreError(f"store {self.path} stayed locked by another writer") from exc
                time.sleep(random.uniform(0.005, 0.05))

    def _q(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._conn.execute(sql, params).fetchall()
        return rows

    def _one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self._conn.execute(sql, params).fetchone()
        return row

    def _exec(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> None:
        self._conn.execute(sql, params)

    def _many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self._conn.executemany(sql, rows)

    # -- meta -----------------------------------------------------------------------------

    def schema_version(self) -> int:
        """The number of the last migration applied (``PRAGMA user_version``)."""
        row = self._one("PRAGMA user_version")
        return int(row[0]) if row else 0

    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value (the vault's keys are metadata: whether it is plain is read again)."""
        super().set_meta(key, value)
        self._tx_plain = False

    def delete_meta(self, key: str) -> None:
        """Forget one meta key (whether the vault is plain is read again)."""
        super().delete_meta(key)
        self._tx_plain = False

    # -- the sealed vault -----------------------------------------------------------------

    def owner_refusal(self, act: str) -> str | None:
        """None: whoever may write the file may rebuild it."""
        return None

    def backend_checks(self) -> list[BackendCheck]:
        """The SQLite driver loads sqlite-vec."""
        return driver.doctor_checks()

    def sealing(self) -> Sealing:
        """This store: one file's pages and log can be scrubbed, so the vault's promise holds."""
        return self

    def roles(self) -> Missing:
        """None: a SQLite store has no roles."""
        return Missing(SQLITE_HAS_NO_ROLES)

    def served(self) -> ServedLog:
        """This store: its ``served`` table keeps what agents were told."""
        return self

    def vault(self) -> Vault | None:
        """The keys of a sealed (encrypted) vault, unlocked on first use; None for a plain one."""
        if self._vault is None:
            if self._tx_plain:
                return None
            meta = dict(self._q("SELECT key, value FROM meta WHERE key LIKE 'vault%' OR key = 'store_id'"))
            if "vault_key_id" not in meta:
                self._tx_plain = self._in_tx
                return None
            self._vault = Vault.unlock(meta, meta["store_id"], self._offered)
        return self._vault

    def offer_key(self, where: str, key: bytes) -> None:
        """Make a key from elsewhere (a --key-file, a rekey's new key) available to unlock the vault."""
        self._offered.append((where, key))
        self.forget_vault()

    def plain_evidence(self, limit: int) -> list[tuple[str, str]]:
        """``(id, text)`` of evidence rows still in clear, oldest first."""
        return [
            (r[0], r[1])
            for r in self._q(
                "SELECT id, text FROM evidence WHERE typeof(text) = 'text' ORDER BY rowid LIMIT ?",
                (limit,),
            )
        ]

    def sealed_evidence_not_under(self, key_id: str, limit: int) -> list[tuple[str, bytes]]:
        """``(id, blob)`` of sealed rows whose key is not ``key_id``, oldest first."""
        return [
            (r[0], r[1])
            for r in self._q(
                "SELECT id, text FROM evidence WHERE typeof(text) = 'blob' "
                "AND substr(text, 6, 8) <> ? ORDER BY rowid LIMIT ?",
                (bytes.fromhex(key_id), limit),
            )
        ]

    def count_evidence_to_seal(self, key_id: str | None) -> int:
        """Rows that are plain, or sealed under another key than ``key_id``."""
        row = self._one(
            "SELECT count(*) FROM evidence WHERE typeof(text) = 'text' "
            "OR (? IS NOT NULL AND substr(text, 6, 8) <> ?)",
            (key_id, bytes.fromhex(key_id) if key_id else None),
        )
        return int(row[0]) if row else 0

    def seal_evidence(self, evidence_id: str, blob: bytes, plain: str | None, index_text: str | None) -> None:
        """Replace a row's text by its sealed form; a plain row's index words become keyed tokens."""
        row = self._one("SELECT rowid FROM evidence WHERE id = ?", (evidence_id,))
        if row is None:
            raise StoreError(f"no evidence {evidence_id} to seal")
        rowid = row[0]
        if plain is not None:
            self._conn.execute(
                "INSERT INTO evidence_fts (evidence_fts, rowid, text) VALUES ('delete', ?, ?)", (rowid, plain)
            )
            self._conn.execute("INSERT INTO evidence_fts (rowid, text) VALUES (?, ?)", (rowid, index_text))
        self._conn.execute("UPDATE evidence SET text = ? WHERE rowid = ?", (blob, rowid))

    def forget_evidence_derivatives(self) -> None:
        """Drop what was derived from plain evidence text: its vectors, entity mentions, lone entities."""
        self._conn.execute("DELETE FROM evidence_vector")
        if self._one("SELECT 1 FROM sqlite_master WHERE name = 'vec_evidence'"):
            self._conn.execute("DELETE FROM vec_evidence")
        self._conn.execute("DELETE FROM entity_mention WHERE item LIKE 'ev\\_%' ESCAPE '\\'")
        self._conn.execute("DELETE FROM entity WHERE id NOT IN (SELECT entity_id FROM entity_mention)")

    def secure_delete(self) -> None:
        """Zero what this connection frees from now on (old plain text, ciphertext under an old key)."""
        self._conn.execute("PRAGMA secure_delete = ON")

    def scrub(self) -> None:
        """Rewrite the file so no freed page or cell keeps old text, empty the WAL, then clear the marker.

        secure_delete alone is not enough: cells moved by a b-tree rebalance and the plain words of
        merged index segments survive in pages that other tables reuse. VACUUM rewrites every page in
        place, in one transaction, so a crash leaves the old file or the new one and connections that
        other processes hold stay valid (unlike a copy renamed over the file). The WAL then holds the
        new pages only, and a TRUNCATE checkpoint copies them over the old ones and empties it.
        """
        with self.transaction():
            self._conn.execute("INSERT INTO evidence_fts (evidence_fts) VALUES ('optimize')")
        before = self._rowid_digest()
        with self._writer():
            self._conn.execute("VACUUM")
            # SQLite documents that VACUUM may renumber implicit rowids; it keeps them for tables with
            # an index (evidence and decision have their primary keys), and the text indexes need that.
            if self._rowid_digest() != before:
                raise StoreError(f"store {self.path}: VACUUM renumbered rows; restore it from a backup")
            self._truncate_wal(required=True)
        with self.transaction():
            self.delete_meta(SCRUB_PENDING)
        self._truncate_wal(required=False)

    def _rowid_digest(self) -> str:
        digest = hashlib.sha256()
        for table in ("evidence", "decision"):
            for rowid, ident in self._conn.execute(f"SELECT rowid, id FROM {table} ORDER BY rowid"):
                digest.update(f"{table}:{rowid}:{ident}\n".encode())
        return digest.hexdigest()

    def _truncate_wal(self, *, required: bool) -> None:
        busy, _, _ = self._one("PRAGMA wal_checkpoint(TRUNCATE)") or (0, 0, 0)
        if busy and required:
            raise StoreError(
                f"store {self.path}: another process kept reading while the old pages were being "
                "overwritten; run the command again when it is done"
            )

    def is_sealed(self) -> bool:
        """True when evidence text is encrypted at rest (without needing the key)."""
        if self._vault is not None:
            return True
        if self._tx_plain:
            return False
        sealed = self.get_meta("vault_key_id") is not None
        self._tx_plain = self._in_tx and not sealed
        return sealed

    def forget_vault(self) -> None:
        """Read the vault's keys again on next use (after encrypt or rekey changed them)."""
        self._vault = None
        self._term_counts.clear()
        if self._reader is not None:
            self._reader._vault = None

    def _evidence(self, row: Sequence[Any]) -> Evidence:
        found = EVIDENCE.fields_of(row)
        if is_sealed(found["text"]):
            vault = self.vault()
            if vault is None:
                raise VaultError(f"evidence {found['id']} is sealed but the store names no vault key")
            found["text"] = vault.open(found["id"], found["text"])
            if hashlib.sha256(found["text"].encode("utf-8")).hexdigest() != found["content_hash"]:
                raise VaultError(f"evidence {found['id']} does not match its content hash: it was altered")
        return Evidence(**found)

    def _evidence_match(self, query: TextQuery) -> str:
        """An evidence FTS5 query as the index holds it (keyed tokens in a sealed vault)."""
        match = match_string(query)
        vault = self.vault()
        return match if vault is None else vault.match(match)

    # -- evidence -------------------------------------------------------------------------

    def insert_evidence(self, evidence: Evidence) -> None:
        """Append evidence to the vault; the FTS index follows (by trigger, or keyed tokens if sealed)."""
        vault = self.vault()
        text = evidence.text if vault is None else vault.seal(evidence.id, evidence.text)
        cursor = self._conn.execute(EVIDENCE.insert(), EVIDENCE.values(evidence, text=text))
        if vault is not None:
            self._conn.execute(
                "INSERT INTO evidence_fts (rowid, text) VALUES (?, ?)",
                (cursor.lastrowid, vault.index_text(evidence.text)),
            )

    def ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids starting with ``prefix`` (whose ``ev_``/``pr_``/``dc_`` names the kind)."""
        table = {"ev": "evidence", "pr": "proposal", "dc": "decision"}[prefix[:2]]
        # A range on the primary key: '~' sorts after every character an id holds.
        rows = self._q(
            f"SELECT id FROM {table} WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (prefix, prefix + "~", limit),
        )
        return [r[0] for r in rows]

    def _proposals(
        self, rows: list[tuple[Any, ...]], cited_by: tuple[str, list[Any]] | None = None
    ) -> list[Proposal]:
        """Build proposals with their cited evidence; ``cited_by`` is a WHERE clause over
        ``proposal`` selecting the same rows, which reads a long list's citations in one query."""
        ids = [r[0] for r in rows]
        cited: dict[str, list[str]] = {i: [] for i in ids}
        if cited_by is not None and len(ids) > _LIST_CHUNK:
            where, params = cited_by
            found = self._q(
                "SELECT pe.proposal_id, pe.evidence_id FROM proposal_evidence pe "
                f"JOIN proposal ON proposal.id = pe.proposal_id {where} ORDER BY pe.evidence_id",
                params,
            )
            for pid, eid in found:
                if pid in cited:
                    cited[pid].append(eid)
        else:
            for chunk in self.sql_dialect.chunks(ids):
                among, params = self.sql_dialect.among("proposal_id", chunk)
                for pid, eid in self._q(
                    f"SELECT proposal_id, evidence_id FROM proposal_evidence WHERE {among} "
                    "ORDER BY evidence_id",
                    params,
                ):
                    cited[pid].append(eid)
        return [PROPOSAL.build(r, evidence=cited[r[0]]) for r in rows]

    def list_proposals(
        self,
        status: str | None = "pending",
        subject: str | None = None,
        limit: int | None = None,
        proposer: str | None = None,
    ) -> list[Proposal]:
        """Proposals, oldest first, optionally by status, subject subtree and proposer; the first
        ``limit`` when given."""
        where, params = [], []
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if subject is not None:
            where.append("(subject = ? OR subject LIKE ? ESCAPE '\\')")
            params += [subject, like_prefix(subject)]
        if proposer is not None:
            where.append("proposer = ?")
            params.append(proposer)
        clause = " WHERE " + " AND ".join(where) if where else ""
        sql = f"SELECT {PROPOSAL.select()} FROM proposal{clause} ORDER BY created_at, id"
        rows = self._q(sql + (" LIMIT ?" if limit is not None else ""), [*params, limit] if limit else params)
        return self._proposals(rows, (clause.replace("subject", "proposal.subject"), params))

    def pending_proposals_on(self, subjects: Sequence[str], decision_ids: Sequence[str]) -> list[Proposal]:
        """Pending proposals, oldest first, on any of ``subjects`` or superseding any of ``decision_ids``."""
        if not subjects and not decision_ids:
            return []
        # The subject index finds the first kind; the second is a scan of the pending rows that
        # supersede something, in SQL: no proposal is built unless it is returned.
        rows = self._q(
            f"SELECT {PROPOSAL.select()} FROM proposal WHERE status = 'pending' AND id IN ("
            f"SELECT id FROM proposal WHERE subject IN (SELECT value FROM json_each(?)) "
            "UNION SELECT id FROM proposal WHERE status = 'pending' AND supersedes != '[]' "
            "AND EXISTS (SELECT 1 FROM json_each(proposal.supersedes) "
            "WHERE value IN (SELECT value FROM json_each(?)))) ORDER BY created_at, id",
            (json.dumps(list(subjects)), json.dumps(list(decision_ids))),
        )
        return self._proposals(rows)

    def pending_texts(self) -> list[tuple[str, str, str]]:
        """``(id, subject, decision)`` of every pending proposal."""
        return [(r[0], r[1], r[2]) for r in self._q(lists.PENDING_TEXTS)]

    def resolve_proposal(
        self,
        proposal_id: str,
        status: str,
        at: str,
        by: str,
        note: str | None,
        decision_id: str | None,
    ) -> None:
        """Move a pending proposal to ratified, rejected or withdrawn."""
        self._conn.execute(
            "UPDATE proposal SET status = ?, resolved_at = ?, resolved_by = ?, resolution_note = ?, "
            "decision_id = ? WHERE id = ?",
            (status, at, by, note, decision_id, proposal_id),
        )

    # -- decisions ------------------------------------------------------------------------

    def connected_decisions(self, subject: str, limit: int | None = None) -> list[Decision]:
        """The subject's decisions and all decisions linked to them by supersession, oldest first
        (the newest ``limit`` of them when given)."""
        rows = self._q(
            f"""WITH RECURSIVE chain(id) AS (
                  SELECT id FROM decision WHERE subject = ?
                  UNION
                  SELECT s.new_id FROM supersession s JOIN chain c ON s.old_id = c.id
                  UNION
                  SELECT s.old_id FROM supersession s JOIN chain c ON s.new_id = c.id
                )
                SELECT {DECISION.select()} FROM decision WHERE id IN (SELECT id FROM chain)
                ORDER BY valid_from DESC, id DESC LIMIT ?""",
            (subject, -1 if limit is None else limit),
        )
        return self._decisions(rows[::-1])

    # -- audit ----------------------------------------------------------------------------

    def append_audit(
        self, at: str, actor: str, action: str, target: str, before: Any, after: Any
    ) -> AuditEvent:
        """Append a hash-chained audit row; must run inside :meth:`transaction`.

        The last row is read here, inside the write transaction (BEGIN IMMEDIATE holds SQLite's
        write lock), so no other writer can append between the read and the insert; the
        ``audit_linked`` trigger refuses a row that does not link to the last one anyway.
        """
        if not self._in_tx:
            raise RuntimeError("append_audit needs an open transaction")
        last = self._one("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")
        seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS_HASH)
        before_json = None if before is None else json.dumps(before, sort_keys=True)
        after_json = None if after is None else json.dumps(after, sort_keys=True)
        row = {
            "seq": seq,
            "at": at,
            "actor": actor,
            "action": action,
            "target": target,
            "before": before_json,
            "after": after_json,
        }
        digest = row_hash(prev, row)
        self._conn.execute(
            "INSERT INTO audit (seq, at, actor, action, target, before, after, prev_hash, hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*row.values(), prev, digest),
        )
        return AuditEvent(
            seq=seq,
            at=at,
            actor=actor,
            action=action,
            target=target,
            before=before_json,
            after=after_json,
            prev_hash=prev,
            hash=digest,
        )

    def audit_rows(self) -> Iterator[dict[str, Any]]:
        """Every audit row, in order."""
        cursor = self._conn.execute(f"SELECT {AUDIT.select()} FROM audit ORDER BY seq")
        names = [d[0] for d in cursor.description]
        for row in cursor:
            yield dict(zip(names, row, strict=True))

    def rebuild_text_index(self, *, evidence: bool) -> None:
        """Rebuild the keyword index of decisions (and of evidence) from the rows, and forget mentions."""
        self._conn.execute("INSERT INTO decision_fts (decision_fts) VALUES ('rebuild')")
        self._conn.execute("DELETE FROM entity_mention WHERE item LIKE 'dc\\_%' ESCAPE '\\'")
        if evidence:
            self._term_counts.clear()
            self._conn.execute("INSERT INTO evidence_fts (evidence_fts) VALUES ('rebuild')")
            self._conn.execute("DELETE FROM entity_mention WHERE item LIKE 'ev\\_%' ESCAPE '\\'")

    def schema_objects(self) -> list[tuple[str, str, str, str | None]]:
        """``(type, name, table, sql)`` of every table, index and trigger in the database."""
        return [
            (r[0], r[1], r[2], r[3])
            for r in self._q(
                "SELECT type, name, tbl_name, sql FROM sqlite_master "
                "WHERE type IN ('table', 'index', 'trigger') ORDER BY type, name"
            )
        ]

    # -- search ---------------------------------------------------------------------------

    def search_decisions(
        self, query: TextQuery, limit: int, as_of: str | None = None
    ) -> list[tuple[Decision, float]]:
        """Decisions matching ``query``, best first with their relevance (negated BM25), current
        ones unless ``as_of``."""
        match = match_string(query)
        if as_of is None:
            window, params = "d.valid_until IS NULL", [match]
        else:
            window = "d.valid_from <= ? AND (d.valid_until IS NULL OR d.valid_until > ?)"
            params = [match, as_of, as_of]
        rows = self._q(
            f"""SELECT {DECISION.select("d")},
                       bm25(decision_fts, 4.0, 1.0, 0.5) AS score
                FROM decision_fts JOIN decision d ON d.rowid = decision_fts.rowid
                WHERE decision_fts MATCH ? AND {window}
                ORDER BY score LIMIT ?""",
            [*params, limit],
        )
        return list(zip(self._decisions([r[:-1] for r in rows]), [-r[-1] for r in rows], strict=True))

    def search_evidence(self, query: TextQuery, limit: int) -> list[tuple[Evidence, float, str]]:
        """Evidence matching ``query`` with a snippet, best first with its relevance (negated BM25)."""
        match = match_string(query)
        vault = self.vault()
        snippet = "snippet(evidence_fts, 0, '[', ']', '…', 16)" if vault is None else "''"
        rows = self._q(
            f"""SELECT {EVIDENCE.select("e")},
                       bm25(evidence_fts) AS score, {snippet}
                FROM evidence_fts JOIN evidence e ON e.rowid = evidence_fts.rowid
                WHERE evidence_fts MATCH ? ORDER BY score LIMIT ?""",
            (self._evidence_match(query), limit),
        )
        found = [(self._evidence(r[:-2]), -r[-2], r[-1]) for r in rows]
        if vault is not None:
            found = [(e, score, vault_snippet(e.text, match)) for e, score, _ in found]
        return found

    def data_version(self) -> int:
        """SQLite's ``data_version``: changes when another connection commits."""
        row = self._one("PRAGMA data_version")
        assert row is not None
        return int(row[0])

    def decision_version(self) -> tuple[object, ...]:
        """Decisions are inserted, closed only with a supersession row or by retiring (one current
        decision fewer), and never otherwise changed (triggers refuse it); their conflicts are
        recorded with them, or all again under other rules (the rules' version is part of it).
        Index look-ups only."""
        row = self._one(
            "SELECT (SELECT coalesce(max(rowid), 0) FROM decision), "
            "(SELECT coalesce(max(rowid), 0) FROM supersession), "
            "(SELECT count(*) FROM decision WHERE valid_until IS NULL), "
            "(SELECT value FROM meta WHERE key = ?)",
            (META_CONFLICT_RULES,),
        )
        assert row is not None
        return tuple(row)

    def watch_changes(self) -> DataVersionWatch:
        """A watch over a connection of its own, polling ``data_version``: it wakes on every other
        connection's commit, this one's included."""
        return DataVersionWatch(lambda: driver.connect(self.path, load_vec=False))

    def change_count(self) -> int:
        """Rows this connection has inserted, updated or deleted since it opened."""
        return int(self._conn.total_changes)

    def integrity_check(self) -> str:
        """SQLite's own consistency check ('ok' when sound)."""
        return "; ".join(r[0] for r in self._q("PRAGMA integrity_check"))

    def keyword_index_problems(self) -> list[str]:
        """FTS5's own check of each index against its content table (``integrity-check`` with a
        non-zero rank), which ``PRAGMA integrity_check`` leaves out. A sealed vault's evidence
        index holds keyed tokens no text derives, so only the decisions' is checked there."""
        tables = ["decision_fts"] if self.is_sealed() else ["decision_fts", "evidence_fts"]
        problems = []
        # An FTS5 command is an INSERT: it runs in a write transaction of a connection of its own,
        # since a verify reads through this one in a snapshot.
        checker = self.detached()
        try:
            with checker.transaction():
                for table in tables:  # fixed names, never user text
                    try:
                        with checker.savepoint():
                            checker._conn.execute(
                                f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)"
                            )
                    except driver.dbapi.DatabaseError:
                        kind = table.removesuffix("_fts")
                        problems.append(
                            f"the keyword index of {kind} does not match the {kind} rows "
                            "(a row planted, changed or removed behind its triggers)"
                        )
        finally:
            checker.close()
        return problems
