"""The PostgreSQL backend: a shared team store in one database, every write in one transaction.

What differs from SQLite (kernel/store/sqlite/store.py), and why:

- **Writers.** :meth:`PostgresStore.transaction` opens a READ COMMITTED transaction and first
  takes a transaction-scoped advisory lock, so one writer at a time holds the store across
  processes and machines, as SQLite's BEGIN IMMEDIATE does for one file: read-then-write cannot
  race. A writer waits up to :data:`LOCK_WAIT` for it and then gives up with a StoreError.
- **Reads outside a transaction** run in autocommit (each statement its own snapshot);
  :meth:`PostgresStore.snapshot` is REPEATABLE READ READ ONLY, which, like a WAL read
  transaction, never blocks a writer.
- **data_version** is a one-row counter that a statement trigger on every table bumps, together
  with ``pg_notify('ctx_changes', table)``; both take effect at commit. Unlike SQLite's pragma it
  changes after this connection's own commits too (a spurious refresh, never a missed one).
- **integrity_check** cannot ask the server to check its pages; it checks what the invariants
  rest on: every constraint validated, every ctx trigger present and enabled, and every ctx
  function as this ctx defines it (one ``ALTER TABLE ... DISABLE TRIGGER`` turns an invariant off
  without changing a row).
- **schema_objects** reports tables, indexes, constraints, triggers and functions from the
  catalog with their definitions as the server prints them. ``ctx audit verify`` does not compare
  them with SQLite's recorded DDL (kernel/store/sqlite/migrations/schema.json, SQLite's text); it runs
  :meth:`PostgresStore.integrity_check` instead (see :mod:`ctx_kernel.kernel.audit.schema`), as
  the server's printed definitions vary between its versions while the checked facts do not.
- **No sealed vault.** Encryption at rest on a shared server is the server's job (disk
  encryption, TLS); the vault's promise that no freed page keeps old text cannot be kept with
  PostgreSQL's WAL, archives and replicas. :meth:`PostgresStore.seal_refusal` says so, and
  ``ctx encrypt`` and ``ctx rekey`` refuse, ``vault()`` is None and ``is_sealed()`` False.
- **Types.** Timestamps are timestamptz and lists jsonb in the database; on this connection they
  load as ctx's canonical ``...Z`` text and as JSON text, so rows read back exactly as SQLite's.
  Text is compared and sorted with ``COLLATE "C"`` (byte order, as SQLite), whatever the
  database's locale.
- **A dropped connection** (a server restart, for the long-running ``ctx mcp`` and ``ctx review``)
  is reopened by the next statement outside a transaction, or by the next BEGIN (nothing of that
  transaction has run yet, so it is simply begun again); inside a transaction the loss ends it
  with a StoreError, as any failed write does, and nothing of it is kept. This costs nothing per
  call: the driver's ``broken`` flag is read only after a statement failed. A psycopg_pool pool
  (min 1, ``check=ConnectionPool.check_connection``) was the alternative: it validates a
  connection with an empty statement at every checkout, one round trip per call (31 us over a
  local Unix socket on the 2-core test machine, a network round trip to a remote server), and
  would still need this handling for a connection lost inside a transaction.
- **Schema.** Created and upgraded by Alembic from its own revisions (``postgres/migrations``) by
  ``ctx init --db postgresql://...``; opening never migrates (the role that opens is usually not
  the tables' owner) and an older schema is refused with what the administrator must run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

import psycopg
from psycopg.adapt import Loader
from psycopg.types.datetime import TimestamptzLoader

from ctx_kernel.kernel import clock
from ctx_kernel.kernel.errors import RefusedError, StoreError
from ctx_kernel.kernel.records import AuditEvent, Decision, Evidence, Proposal
from ctx_kernel.kernel.sealing import Vault
from ctx_kernel.kernel.store.base import BackendCheck, Missing, Roles, ServedLog
from ctx_kernel.kernel.store.postgres import connection, roles, schema
from ctx_kernel.kernel.store.postgres.copy import PostgresCopy
from ctx_kernel.kernel.store.postgres.index import PostgresIndex
from ctx_kernel.kernel.store.postgres.team import TeamMixin
from ctx_kernel.kernel.store.rows import AUDIT, DECISION, EVIDENCE, PROPOSAL
from ctx_kernel.kernel.store.served import SharedServed
from ctx_kernel.kernel.store.shared import Dialect, SharedRows, like_prefix

# pg_advisory_xact_lock(int, int) keys: "ctxK" (the SQLite store's application_id), then 1 for
# the writer lock. The two-key form never collides with the single-key locks of schema.py.
WRITER_LOCK = "SELECT pg_advisory_xact_lock(1668577355, 1)"
# How long a writer waits for another one (SQLite's writer waits up to 120 s too).
LOCK_WAIT = "120s"
# One round trip: the wait bounded for the lock alone, then the server's own lock_timeout again.
_TAKE_WRITER_LOCK = (
    f"SET LOCAL lock_timeout = '{LOCK_WAIT}'; {WRITER_LOCK}; SET LOCAL lock_timeout TO DEFAULT"
)
# The extensions the schema creates, by name ("CREATE EXTENSION IF NOT EXISTS vector" -> "vector").
_EXTENSIONS = [statement.rsplit(" ", 1)[-1] for statement in schema.EXTENSIONS]
# PostgreSQL's SQL where the statements of kernel/store/shared.py leave it a choice: psycopg's
# placeholders, text compared and ordered by its bytes as SQLite's (whatever the database's
# locale), LIKE's default escape (a backslash), greatest(), a list bound as one array, and booleans.
POSTGRES = Dialect(
    placeholder="%s",
    collate=' COLLATE "C"',
    like_escape="",
    greatest="greatest",
    list_chunk=None,
    native_booleans=True,
)
NO_VAULT = (
    "a PostgreSQL store does not seal evidence: encryption at rest on a shared server is the "
    "server's (disk encryption, TLS), and its WAL and replicas keep old pages the vault could not scrub"
)


class _Stamp(TimestamptzLoader):
    """timestamptz as ctx's canonical text (UTC, microseconds, ``Z``)."""

    def load(self, data: Any) -> str:  # type: ignore[override]
        return clock.format_ts(super().load(data))


class _JsonText(Loader):
    """jsonb as its JSON text, which the row maps parse as they do SQLite's."""

    def load(self, data: Any) -> str:
        return bytes(data).decode("utf-8")


_WRITES = ("INSERT", "UPDATE", "DELETE", "MERGE")


class PostgresStore(SharedServed, SharedRows, TeamMixin, PostgresIndex, PostgresCopy):
    """A ctx store in one PostgreSQL database."""

    dialect = "postgresql"
    sql_dialect = POSTGRES
    parallel_reads = True
    # Only the tables' owner may alter them, and the vector columns' dimension is an ALTER TABLE.
    owner_sets_vectors = True

    def __init__(self, url: str, conn: psycopg.Connection[Any]) -> None:
        self._url = url
        self.location = connection.describe(url)
        self._conn = conn
        self._in_tx = False
        self._in_snapshot = False
        self._changes = 0
        self._reader: PostgresStore | None = None
        self._session_user: str | None = None

    @classmethod
    def create(cls, url: str) -> PostgresStore:
        """Create (or upgrade) the schema in the database at ``url`` and open it."""
        from ctx_kernel.kernel.store.postgres import migrate  # noqa: PLC0415 - Alembic loads only here

        migrate.upgrade(url)
        return cls.open(url)

    @classmethod
    def open(cls, url: str) -> PostgresStore:
        """Open the ctx store in the database at ``url``; refuse an older schema or another application's."""
        conn = cls._connect(url)
        try:
            connection.check_current(conn, connection.describe(url))
        except BaseException:
            conn.close()
            raise
        return cls(url, conn)

    @staticmethod
    def _connect(url: str) -> psycopg.Connection[Any]:
        conn = connection.connect(url)
        conn.adapters.register_loader("timestamptz", _Stamp)
        conn.adapters.register_loader("jsonb", _JsonText)
        return conn

    @property
    def login(self) -> str:
        """The login this connection authenticated as (``session_user``): the actor of every act."""
        if self._session_user is None:
            row = self._one("SELECT session_user::text")
            assert row is not None
            self._session_user = str(row[0])
        return self._session_user

    def close(self) -> None:
        """Release the connection (and the reader's)."""
        if self._reader is not None:
            self._reader.close()
        self._conn.close()

    def reader(self) -> PostgresStore:
        """A second connection to the same database, for reads that run beside this one's."""
        if self._reader is None:
            self._reader = self.detached()
        return self._reader

    def detached(self) -> PostgresStore:
        """A new connection to the same database, for a thread of the caller's own; the caller closes it."""
        return PostgresStore(self._url, self._connect(self._url))

    # -- transactions -------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN, the writer lock (so read-then-write cannot race) ... COMMIT; nested calls join."""
        if self._in_tx:
            yield
            return
        self._in_tx = True
        try:
            with self._begin():
                try:
                    self._conn.execute(_TAKE_WRITER_LOCK)
                except psycopg.errors.LockNotAvailable as exc:
                    raise StoreError(f"store {self.location} stayed locked by another writer") from exc
                yield
        except psycopg.IntegrityError as exc:
            # An invariant the database holds (trigger, unique index, exclusion, CHECK) refused it.
            raise RefusedError(f"refused by the store: {connection.first_line(exc)}") from exc
        except psycopg.Error as exc:
            raise connection.store_error(self.location, exc) from exc
        finally:
            self._in_tx = False

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A nested step inside a transaction that can fail alone (its writes are undone)."""
        try:
            with self._conn.transaction():
                yield
        except psycopg.IntegrityError as exc:
            raise RefusedError(f"refused by the store: {connection.first_line(exc)}") from exc

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """REPEATABLE READ READ ONLY: every read inside sees one committed state; no writer waits."""
        if self._in_tx or self._in_snapshot:
            yield
            return
        self._in_snapshot = True
        try:
            with self._begin():
                self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield
        except psycopg.OperationalError as exc:
            raise connection.store_error(self.location, exc) from exc
        finally:
            self._in_snapshot = False

    @contextmanager
    def _begin(self) -> Iterator[None]:
        """BEGIN ... COMMIT (ROLLBACK on error); a connection found dropped at BEGIN, when nothing
        of the transaction has run yet, is reopened and BEGIN tried once more."""
        with ExitStack() as stack:
            self._revive()
            try:
                stack.enter_context(self._conn.transaction())
            except psycopg.OperationalError:
                if not self._conn.broken:
                    raise
                self._revive()
                stack.enter_context(self._conn.transaction())
            yield

    def _revive(self) -> None:
        """Reopen a connection the server dropped (a restart), between transactions only."""
        if self._conn.broken or self._conn.closed:
            old = self._conn
            self._conn = self._connect(self._url)
            old.close()

    def _run(self, statement: str, params: tuple[Any, ...] | list[Any] = ()) -> psycopg.Cursor[Any]:
        # The statements are ctx's own text (never user text), not LiteralString-typed.
        query: Any = statement
        outside = not (self._in_tx or self._in_snapshot)
        try:
            try:
                cursor: psycopg.Cursor[Any] = self._conn.execute(query, params)
            except psycopg.OperationalError:
                if not (outside and self._conn.broken):
                    raise
                self._revive()
                cursor = self._conn.execute(query, params)
        except psycopg.Error as exc:
            # Inside a transaction the transaction reports it (and rolls back); savepoints catch
            # the integrity errors they expect. Outside, this is the edge: one line.
            if not outside and not isinstance(exc, psycopg.OperationalError):
                raise
            if isinstance(exc, psycopg.IntegrityError):
                raise RefusedError(f"refused by the store: {connection.first_line(exc)}") from exc
            raise connection.store_error(self.location, exc) from exc
        status = cursor.statusmessage or ""
        if status.startswith(_WRITES) and cursor.rowcount > 0:
            self._changes += cursor.rowcount
        return cursor

    def _q(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self._run(sql, params)
        return cursor.fetchall() if cursor.description is not None else []

    def _one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> tuple[Any, ...] | None:
        cursor = self._run(sql, params)
        row: tuple[Any, ...] | None = cursor.fetchone() if cursor.description is not None else None
        return row

    def _exec(self, statement: str, params: tuple[Any, ...] | list[Any] = ()) -> None:
        self._run(statement, params)

    def _many(self, statement: str, rows: list[tuple[Any, ...]]) -> None:
        for row in rows:
            self._run(statement, row)

    # -- state ----------------------------------------------------------------------------

    def data_version(self) -> int:
        """The change counter: bumped, at commit, by every statement that writes a ctx table."""
        row = self._one("SELECT version FROM ctx_change")
        return int(row[0]) if row else 0

    def change_count(self) -> int:
        """Rows this connection has inserted, updated or deleted since it opened."""
        return self._changes

    def decision_version(self) -> tuple[object, ...]:
        """The change counter and this connection's own changes: any write counts (a superset)."""
        return (self.data_version(), self.change_count())

    def schema_version(self) -> int:
        """The number of the last PostgreSQL revision applied (p001 is SQLite's m007 schema)."""
        return connection.schema_version(self._conn)

    def keyword_index_problems(self) -> list[str]:
        """None to find: the postings are written only by the server's own SECURITY DEFINER
        triggers, and no login but the owner may write them (verify names a changed trigger)."""
        return []

    def integrity_check(self) -> str:
        """'ok' when every constraint is validated and every ctx trigger and function is in place."""
        expressions = connection.shipped_policy_expressions(self._url)
        problems = connection.invariant_problems(self._conn, expressions)
        return "; ".join(problems) if problems else "ok"

    def schema_objects(self) -> list[tuple[str, str, str, str | None]]:
        """``(type, name, table, definition)`` of every table, index, constraint, trigger and function."""
        return connection.schema_objects(self._conn)

    # -- who may do what, and the server's health ----------------------------------------

    def _login(self) -> tuple[str, str, bool, str | None]:
        """``(login, the tables' owner, whether the login acts as the owner, its ctx group or None)``."""
        row = self._one(
            "SELECT current_user::text, pg_get_userbyid(relowner)::text, "
            "pg_has_role(current_user, relowner, 'USAGE') FROM pg_class WHERE oid = 'evidence'::regclass"
        )
        assert row is not None  # the store's tables exist once it is open
        groups = self._q(
            "SELECT g FROM unnest(%s::text[]) WITH ORDINALITY AS t(g, n) "
            "WHERE pg_has_role(current_user, g, 'MEMBER') ORDER BY n",
            (list(roles.GROUPS),),
        )
        return row[0], row[1], bool(row[2]), groups[0][0] if groups else None

    def owner_refusal(self, act: str) -> str | None:
        """None for the tables' owner; anyone else is told that the owner, by name, runs ``act``."""
        login, owner, is_owner, group = self._login()
        if is_owner:
            return None
        what = f"a {group}" if group else "in no ctx group"
        return (
            f"{act} alters and rebuilds the store's tables, which on a server only their owner may do: "
            f"ask {owner} (the administrator) to run it; this login, {login}, is {what}"
        )

    def backend_checks(self) -> list[BackendCheck]:
        """The server's version, ctx's extensions with their versions, and what this login may do."""
        version = self._one("SHOW server_version")
        checks: list[BackendCheck] = [
            BackendCheck("server", True, f"PostgreSQL {version[0] if version else '?'}", None)
        ]
        found = dict(
            self._q(
                "SELECT extname::text, extversion FROM pg_extension WHERE extname = ANY(%s)", (_EXTENSIONS,)
            )
        )
        missing = [name for name in _EXTENSIONS if name not in found]
        listed = ", ".join(f"{name} {found[name]}" for name in _EXTENSIONS if name in found)
        if missing:
            checks.append(
                BackendCheck(
                    "extensions",
                    False,
                    f"missing {', '.join(missing)}" + (f" (present: {listed})" if listed else ""),
                    f"a superuser runs CREATE EXTENSION {missing[0]} in the database, then `ctx init --db`",
                )
            )
        else:
            checks.append(BackendCheck("extensions", True, listed, None))
        login, owner, is_owner, group = self._login()
        if is_owner:
            checks.append(BackendCheck("role", True, f"{login} owns the tables (the administrator)", None))
        elif group is not None:
            checks.append(BackendCheck("role", True, f"{login} is a {group}: {roles.JOBS[group]}", None))
        else:
            checks.append(
                BackendCheck(
                    "role",
                    False,
                    f"{login} is in none of {', '.join(roles.GROUPS)}: only what was granted to it alone",
                    f"{owner} (the administrator) makes it a member of one: GRANT {roles.AGENT} TO {login}",
                )
            )
        return checks

    # -- the vault: not on a shared server ------------------------------------------------

    def sealing(self) -> Missing:
        """None: a PostgreSQL store does not seal evidence (:data:`NO_VAULT`)."""
        return Missing(NO_VAULT)

    def roles(self) -> Roles:
        """This store: the administrator's connection grants a team's roles."""
        return self

    def served(self) -> ServedLog:
        """This store: its ``served`` table, which an agent's login only appends to (p008)."""
        return self

    def vault(self) -> Vault | None:
        """None: a PostgreSQL store is never sealed."""
        return None

    def is_sealed(self) -> bool:
        """False: a PostgreSQL store is never sealed."""
        return False

    def _evidence(self, row: Sequence[Any]) -> Evidence:
        return Evidence(**EVIDENCE.fields_of(row))

    # -- evidence -------------------------------------------------------------------------

    def insert_evidence(self, evidence: Evidence) -> None:
        """Append evidence; its full-text column is generated by the database."""
        self._write(EVIDENCE.insert(), self.sql_dialect.row(EVIDENCE, evidence))

    def ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids starting with ``prefix`` (whose ``ev_``/``pr_``/``dc_`` names the kind)."""
        table = {"ev": "evidence", "pr": "proposal", "dc": "decision"}[prefix[:2]]
        rows = self._q(
            f'SELECT id FROM {table} WHERE starts_with(id, %s) ORDER BY id COLLATE "C" LIMIT %s',
            (prefix, limit),
        )
        return [r[0] for r in rows]

    def _proposals(self, rows: list[tuple[Any, ...]]) -> list[Proposal]:
        ids = [r[0] for r in rows]
        cited: dict[str, list[str]] = {i: [] for i in ids}
        if ids:
            for pid, eid in self._q(
                "SELECT proposal_id, evidence_id FROM proposal_evidence WHERE proposal_id = ANY(%s) "
                'ORDER BY evidence_id COLLATE "C"',
                (ids,),
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
        where: list[str] = []
        params: list[Any] = []
        if status is not None:
            where.append("status = %s")
            params.append(status)
        if subject is not None:
            where.append("(subject = %s OR subject LIKE %s)")
            params += [subject, like_prefix(subject)]
        if proposer is not None:
            where.append("proposer = %s")
            params.append(proposer)
        clause = " WHERE " + " AND ".join(where) if where else ""
        statement = f'SELECT {PROPOSAL.select()} FROM proposal{clause} ORDER BY created_at, id COLLATE "C"'
        if limit is not None:
            statement += " LIMIT %s"
            params.append(limit)
        return self._proposals(self._q(statement, params))

    def pending_proposals_on(self, subjects: Sequence[str], decision_ids: Sequence[str]) -> list[Proposal]:
        """Pending proposals, oldest first, on any of ``subjects`` or superseding any of ``decision_ids``."""
        if not subjects and not decision_ids:
            return []
        rows = self._q(
            f"SELECT {PROPOSAL.select()} FROM proposal WHERE status = 'pending' "
            "AND (subject = ANY(%s) OR supersedes ?| %s::text[]) "
            'ORDER BY created_at, id COLLATE "C"',
            (list(subjects), list(decision_ids)),
        )
        return self._proposals(rows)

    def pending_texts(self) -> list[tuple[str, str, str]]:
        """``(id, subject, decision)`` of every pending proposal."""
        return [
            (r[0], r[1], r[2])
            for r in self._q(
                "SELECT id, subject, decision FROM proposal WHERE status = 'pending' "
                'ORDER BY created_at, id COLLATE "C"'
            )
        ]

    def resolve_proposal(
        self,
        proposal_id: str,
        status: str,
        at: str,
        by: str,
        note: str | None,
        decision_id: str | None,
    ) -> None:
        """Move a pending proposal to ratified, rejected or withdrawn; the database refuses a second.

        ``decision_id`` is set only when there is one: a pending proposal has none, and an agent's
        login, which withdraws, holds no privilege on that column (only a ratification sets it).
        """
        resolution = "status = %s, resolved_at = %s, resolved_by = %s, resolution_note = %s"
        params: list[Any] = [status, at, by, note]
        if decision_id is not None:
            resolution += ", decision_id = %s"
            params.append(decision_id)
        done = self._run(f"UPDATE proposal SET {resolution} WHERE id = %s", [*params, proposal_id])
        if done.rowcount != 1:
            # Row-level security hides the row from this login (an agent's is its own proposals).
            raise RefusedError(
                f"store {self.location}: this login may not do that (an agent's login withdraws only "
                f"its own proposals, and {proposal_id} is another's)"
            )

    # -- decisions ------------------------------------------------------------------------

    def connected_decisions(self, subject: str, limit: int | None = None) -> list[Decision]:
        """The subject's decisions and all decisions linked to them by supersession, oldest first
        (the newest ``limit`` of them when given: LIMIT NULL is no limit)."""
        rows = self._q(
            f"""WITH RECURSIVE chain(id) AS (
                  SELECT id FROM decision WHERE subject = %s
                  UNION
                  SELECT CASE WHEN s.old_id = c.id THEN s.new_id ELSE s.old_id END
                  FROM supersession s JOIN chain c ON c.id IN (s.old_id, s.new_id)
                )
                SELECT {DECISION.select()} FROM decision WHERE id IN (SELECT id FROM chain)
                ORDER BY valid_from DESC, id COLLATE "C" DESC LIMIT %s""",
            (subject, limit),
        )
        return self._decisions(rows[::-1])

    # -- audit ----------------------------------------------------------------------------

    def append_audit(
        self, at: str, actor: str, action: str, target: str, before: Any, after: Any
    ) -> AuditEvent:
        """Append a hash-chained audit row; must run inside :meth:`transaction`.

        ``ctx_audit_append`` reads the chain's end under the audit lock and computes the row's hash
        in the server, in this write transaction; the insert trigger checks the link and the hash
        again, so even a client that computes its own rows cannot fork the chain.
        """
        if not self._in_tx:
            raise RuntimeError("append_audit needs an open transaction")
        before_json = None if before is None else json.dumps(before, sort_keys=True)
        after_json = None if after is None else json.dumps(after, sort_keys=True)
        row = self._one(
            f"SELECT {AUDIT.select()} FROM ctx_audit_append(%s, %s, %s, %s, %s, %s)",
            (at, actor, action, target, before_json, after_json),
        )
        assert row is not None
        return AuditEvent(**AUDIT.fields_of(row))

    def audit_rows(self) -> Iterator[dict[str, Any]]:
        """Every audit row, in sequence order."""
        for row in self._q(f"SELECT {AUDIT.select()} FROM audit ORDER BY seq"):
            yield dict(zip(AUDIT.columns, row, strict=True))
