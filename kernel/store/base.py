"""The interface the kernel needs from a storage backend, and what every backend must guarantee.

SQLite is the embedded default (kernel/store/sqlite/store.py); a shared server backend (PostgreSQL
with pgvector) implements the same protocol without touching the kernel's logic. Every backend
passes the shared contract suite in tests/backend/.

What crosses this interface is backend-neutral:

- records (:mod:`ctx_kernel.kernel.records`) and their string ids (``ev_``, ``pr_``, ``dc_``);
  no row number, rowid or chunk key ever leaves a backend;
- full-text queries as :class:`~ctx_kernel.kernel.language.query.TextQuery` (words, never a query
  language), answered best first with a *relevance* where higher is better; the scale is the
  backend's own (SQLite: negated BM25), so callers compare scores within one answer only;
- vectors as little-endian float32 bytes, owned by an item id and a chunk number.

Invariants the database itself must enforce, so that no code path (nor a hand-written SQL
statement) can break them; a refused write raises :class:`~ctx_kernel.kernel.errors.RefusedError`
from :meth:`Store.transaction`:

- evidence is append-only: no row is updated or deleted, except that sealing may replace a
  text by its encrypted form (the content hash stays);
- a proposal is resolved once, from pending, and never edited or deleted;
- a decision's kernel fields never change; only its validity window is closed, once; no
  decision is deleted;
- one current decision per subject (at most one open window), and windows of a subject never
  overlap;
- supersession links are permanent, never self-links, and a successor never starts before
  the decision it supersedes (cycles are refused by the kernel through :meth:`Store.is_ancestor`
  inside the same transaction);
- the audit log is append-only and each row's ``prev_hash`` is the hash of the row before it.

Copying a store to another backend (``ctx migrate``) goes through the interface too: every
backend exports and restores the tables :data:`~ctx_kernel.kernel.store.rows.COPIED_TABLES`
declares, row for row, as column-to-value dicts, and its vectors. A restore is an ordinary
insert: the invariants above hold for it, so a faithful copy must be written in an order they
accept (a proposal before its resolution, a decision before the links to it, the audit chain in
sequence), never with them switched off.

Transactions: writes happen inside :meth:`Store.transaction`, which serialises writers (one at a
time per store, across processes) and commits everything or nothing. Reads outside a
transaction see committed data; inside :meth:`Store.snapshot` they all see the same state.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from ctx_kernel.kernel.errors import RefusedError
from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.records import AuditEvent, Decision, Evidence, Proposal, Snapshot

if TYPE_CHECKING:
    from ctx_kernel.kernel.sealing import Vault


class ConflictRow(NamedTuple):
    """A recorded conflict of a decision with another that holds at the moment asked about."""

    other_id: str
    term: str
    clause: str
    other_clause: str
    other_subject: str
    other_text: str
    other_valid_from: str
    other_valid_until: str | None


class ConflictPair(NamedTuple):
    """Two current decisions that take opposite stances, as recorded (``decision_id`` sorts first)."""

    decision_id: str
    other_id: str
    term: str
    clause: str
    other_clause: str


class BackendCheck(NamedTuple):
    """One check of `ctx doctor` a backend makes of itself."""

    name: str
    ok: bool
    detail: str
    advice: str | None


class ChangeWatch(Protocol):
    """Wakes a reader (the review app) when another connection commits to the store.

    SQLite polls ``data_version`` on each wait; PostgreSQL listens for the commit's notification
    on a connection of its own and wakes at once.
    """

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; True when a commit landed since the previous call."""

    def close(self) -> None:
        """Release the watch's own connection; a ``wait`` in progress returns soon after."""


Port = TypeVar("Port")


@dataclass(frozen=True)
class Missing:
    """A capability a backend does not offer, and why, in one line for a person."""

    reason: str


def offered(port: Port | Missing) -> Port:
    """``port`` when the backend offers it; refused, in the backend's words, when it does not."""
    if isinstance(port, Missing):
        raise RefusedError(port.reason)
    return port


class Sealing(Protocol):
    """Sealing evidence at rest: a backend whose freed pages and log can be scrubbed (a file)."""

    def offer_key(self, where: str, key: bytes) -> None:
        """Make a key from elsewhere (a key file, a rekey's new key) available to unlock the vault."""

    def forget_vault(self) -> None:
        """Read the vault's keys again on next use (after encrypt or rekey changed them)."""

    def plain_evidence(self, limit: int) -> list[tuple[str, str]]:
        """``(id, text)`` of up to ``limit`` evidence rows still in clear, oldest first."""

    def sealed_evidence_not_under(self, key_id: str, limit: int) -> list[tuple[str, bytes]]:
        """``(id, sealed blob)`` of up to ``limit`` rows sealed under another key than ``key_id``,
        oldest first."""

    def count_evidence_to_seal(self, key_id: str | None) -> int:
        """Rows that are plain, or sealed under another key than ``key_id``."""

    def seal_evidence(self, evidence_id: str, blob: bytes, plain: str | None, index_text: str | None) -> None:
        """Replace a row's text by its sealed form (the one update evidence allows); for a row that
        was plain (``plain`` given), its full-text entry becomes ``index_text`` (keyed tokens)."""

    def forget_evidence_derivatives(self) -> None:
        """Drop what was derived from plain evidence text: vectors, entity mentions, lone entities."""

    def secure_delete(self) -> None:
        """Overwrite what this connection frees from now on, where the backend can."""

    def scrub(self) -> None:
        """Leave no freed page or log segment holding old text, then clear the scrub-pending marker."""


class Roles(Protocol):
    """A team's database roles: a server whose logins are its people and agents."""

    def grant_role(self, role: str, login: str, *, create_login: bool, password: str | None) -> None:
        """Make the server login ``login`` an agent, a reviewer or an auditor (``role``) in one
        transaction, on this connection (the administrator's); a RefusedError where the backend
        has no roles (SQLite: the file's permissions decide who writes)."""


class ServedLog(Protocol):
    """The served log: what each agent was told, hash-chained, append-only but for signed folds."""

    def served_head(self) -> tuple[int, str]:
        """``(seq, hash)`` of the last entry (or fold); ``(0, genesis)`` when there is none."""

    def append_served(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Append an entry after the last one, inside :meth:`Connection.transaction`; the row written."""

    def served_rows(
        self,
        *,
        session: str | None = None,
        agent: str | None = None,
        until: str | None = None,
        item: str | None = None,
    ) -> list[dict[str, Any]]:
        """Entries in order: of ``session``, of ``agent``, written up to ``until``, naming id ``item``."""

    def served_folds(self) -> list[dict[str, Any]]:
        """Every signed daily fold, oldest first."""

    def fold_served(self, fold: dict[str, Any]) -> None:
        """Keep a signed fold and delete the entries it covers (the one deletion the log allows)."""

    def served_counts(self, ids: Sequence[str]) -> dict[str, tuple[int, list[str]]]:
        """For each id: how many entries name it, and the sessions (or agents) they went to."""


class Connection(Protocol):
    """The store as a connection: where it is, its transactions, metadata and health, and the
    capabilities it offers beyond the ports every backend has."""

    location: str
    # "sqlite" or "postgresql": which backend's schema the store's objects follow.
    dialect: str
    # True when reads on separate connections overlap (a server answers them while the client
    # waits), so a recall answers the evidence on a thread and connection of its own; False when
    # the reads are this process's own work (an embedded file), which more threads only share out.
    parallel_reads: bool

    @property
    def login(self) -> str | None:
        """The login every act on a server store is bound to (the database checks it); None for a file."""

    def close(self) -> None:
        """Release the connection (and the reader's)."""

    def reader(self) -> Store:
        """A second connection to the same store, for reads that run beside this one's (another thread)."""

    def detached(self) -> Store:
        """A new connection to the same store, for a thread of the caller's own; the caller closes it."""

    # -- transactions -------------------------------------------------------------------

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction: takes the store's write lock up front (so read-then-write cannot
        race another writer), commits on exit, rolls back on error. Nested calls join the outer one.
        A write an invariant refuses raises RefusedError; a store that stays busy raises StoreError."""

    def savepoint(self) -> AbstractContextManager[None]:
        """A nested step inside a transaction that can fail alone (its writes are undone)."""

    def snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: every read inside it sees the same committed state, and no writer waits."""

    def data_version(self) -> int:
        """A value that changes when another connection commits (equal values: nothing new)."""

    def decision_version(self) -> tuple[object, ...]:
        """A value that changes whenever a decision is written, closed or linked by any connection
        (this one's uncommitted writes included); logging evidence or proposing leaves it as it is."""

    def watch_changes(self) -> ChangeWatch:
        """A watch on its own connection that wakes on other connections' commits (SQLite: it
        polls ``data_version`` each ``wait``; a server may push a notification at once)."""

    def change_count(self) -> int:
        """Rows this connection has inserted, updated or deleted since it opened."""

    def schema_version(self) -> int:
        """The number of the last migration applied."""

    def integrity_check(self) -> str:
        """The database's own consistency check ('ok' when sound)."""

    def keyword_index_problems(self) -> list[str]:
        """Where the keyword index no longer matches the rows it indexes (a row planted, changed or
        removed behind the triggers that keep it); empty when it matches."""

    def schema_objects(self) -> list[tuple[str, str, str, str | None]]:
        """``(type, name, table, definition)`` of every table, index and trigger, for audit checks."""

    # -- meta -----------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        """A metadata value, or None."""

    def set_meta(self, key: str, value: str) -> None:
        """Set a metadata value."""

    def delete_meta(self, key: str) -> None:
        """Forget one metadata key."""

    # -- who may do what, and the backend's own health -------------------------------------

    # True when only the tables' owner may give the vector columns their dimension (a shared
    # server: other logins may not alter tables), so the owner's `ctx init` chooses the model.
    owner_sets_vectors: bool

    def owner_refusal(self, act: str) -> str | None:
        """None when this login may carry out ``act`` (a command that alters or rebuilds the
        store's tables); else who may, in one line for a person."""

    def backend_checks(self) -> list[BackendCheck]:
        """What `ctx doctor` checks of this backend: its driver or server, extensions, this login."""

    # -- the sealed vault -----------------------------------------------------------------

    def sealing(self) -> Sealing | Missing:
        """The operations that seal evidence at rest (`ctx encrypt`, `ctx rekey`), or why this
        backend offers none."""

    def roles(self) -> Roles | Missing:
        """The operations that grant a team's database roles (`ctx admin grant-*`), or why this
        backend offers none."""

    def served(self) -> ServedLog | Missing:
        """The log of what agents were served (``ctx audit served``), or why this backend keeps none."""

    def vault(self) -> Vault | None:
        """The keys of a sealed (encrypted) vault, unlocked on first use; None for a plain one."""

    def is_sealed(self) -> bool:
        """True when evidence text is encrypted at rest (known without the key)."""


class EvidenceRows(Protocol):
    """The evidence vault's rows: appended once, read by id, hash and age."""

    def evidence_id_for_hash(self, content_hash: str) -> str | None:
        """The id of the evidence with this content hash, if any (the hash is unique)."""

    def insert_evidence(self, evidence: Evidence) -> None:
        """Append evidence (sealed when the vault is) and index its text; a second row with the
        same content hash is refused."""

    def ids_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids starting with ``prefix`` (``ev_``/``pr_``/``dc_`` names the kind), in order."""

    def ids_ending(self, tails: Sequence[str]) -> list[str]:
        """Every evidence, proposal and decision id whose last four characters are one of ``tails``
        (an index lookup: the handles of :mod:`ctx_kernel.kernel.ids`)."""

    def get_evidence(self, evidence_id: str) -> Evidence | None:
        """One evidence row (opened when sealed)."""

    def missing_evidence(self, ids: list[str]) -> list[str]:
        """Those of ``ids`` that name no evidence, in the order given."""

    def first_citing_subject(self, evidence_id: str) -> str | None:
        """The subject of the oldest proposal that cites this evidence, if one does."""

    def evidence_ids(self) -> list[str]:
        """The id of every evidence row, oldest first."""

    def evidence_by_ids(self, ids: Sequence[str]) -> dict[str, Evidence]:
        """Evidence rows by id (unknown ids are left out)."""

    def evidence_neighbours(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """The evidence logged just before and after each of ``ids`` in the same session or source."""

    def list_evidence(
        self, limit: int, *, since: str | None = None, agent: str | None = None, kind: str | None = None
    ) -> list[Evidence]:
        """Up to ``limit`` of the newest evidence texts, newest first (in the order they were
        logged): those logged at or after ``since``, by ``agent``, of ``kind``, when given."""


class ProposalRows(Protocol):
    """The proposal queue: proposals inserted, read, and resolved once."""

    def insert_proposal(self, proposal: Proposal) -> None:
        """Queue a proposal with its cited evidence (which must exist)."""

    def get_proposal(self, proposal_id: str) -> Proposal | None:
        """One proposal with its cited evidence."""

    def list_proposals(
        self,
        status: str | None = "pending",
        subject: str | None = None,
        limit: int | None = None,
        proposer: str | None = None,
    ) -> list[Proposal]:
        """Proposals (by status; ``subject`` matching its whole subtree; by ``proposer``), oldest
        first, the first ``limit`` of them when given."""

    def closed_proposals(self, subject: str, limit: int | None = None) -> list[Proposal]:
        """The rejected and withdrawn proposals on exactly ``subject``, oldest first (the newest
        ``limit`` of them when given)."""

    def pending_near_duplicates(self, ids: list[str]) -> list[Proposal]:
        """Pending proposals flagged as near-duplicates of any of ``ids``."""

    def pending_proposals_on(self, subjects: Sequence[str], decision_ids: Sequence[str]) -> list[Proposal]:
        """Pending proposals, oldest first, on any of ``subjects`` or superseding any of ``decision_ids``."""

    def pending_texts(self) -> list[tuple[str, str, str]]:
        """``(id, subject, decision)`` of every pending proposal, for near-duplicate checks."""

    def resolve_proposal(
        self,
        proposal_id: str,
        status: str,
        at: str,
        by: str,
        note: str | None,
        decision_id: str | None,
    ) -> None:
        """Move a pending proposal to ratified, rejected or withdrawn; a second resolution is refused."""

    def find_source(self, source: str) -> str | None:
        """The id of the decision or proposal imported from ``source``, if any."""


class DecisionRows(Protocol):
    """The decision kernel: decisions, their windows and the supersession links between them."""

    def get_decision(self, decision_id: str) -> Decision | None:
        """One decision with its evidence and links."""

    def decisions_by_ids(self, ids: Sequence[str]) -> dict[str, Decision]:
        """Decisions by id (unknown ids are left out)."""

    def current_decision(self, subject: str) -> Decision | None:
        """The decision on ``subject`` whose window is open (there is at most one)."""

    def decisions(
        self,
        subject: str | None = None,
        as_of: str | None = None,
        include_closed: bool = False,
        limit: int | None = None,
    ) -> list[Decision]:
        """Decisions (current, valid at ``as_of``, or all), with ``subject`` matching a whole
        subtree, by subject, then start of window, then id; the first ``limit`` when given."""

    def connected_decisions(self, subject: str, limit: int | None = None) -> list[Decision]:
        """The subject's decisions and every decision linked to them by supersession, oldest first
        (the newest ``limit`` of them when given)."""

    def current_ids(self, subjects: Sequence[str]) -> list[str]:
        """Ids of the current decisions on ``subjects``, in id order."""

    def current_subjects(self) -> list[str]:
        """Subjects that have a current decision, in order."""

    def known_subjects(self) -> list[str]:
        """Every subject a decision (current or not) or a pending proposal is on."""

    def insert_decision(self, decision: Decision) -> None:
        """Add a decision with its cited evidence; a second open window on a subject is refused."""

    def close_decision(self, decision_id: str, until: str, closed_by: str, reason: str | None) -> None:
        """Close an open window; closing it again, or changing anything else, is refused."""

    def link(self, old_id: str, new_id: str, at: str) -> None:
        """Record that ``new_id`` supersedes ``old_id`` (permanently)."""

    def is_ancestor(self, candidate: str, decision_id: str) -> bool:
        """True when ``candidate`` is ``decision_id`` or one of its successors (a link would cycle)."""

    def chain_ids(self, decision_id: str) -> list[str]:
        """Every decision linked to ``decision_id`` through supersession either way (itself included)."""

    def chains_of(self, decision_ids: Sequence[str]) -> dict[str, list[str]]:
        """:meth:`chain_ids` of several decisions at once."""


class LinkRows(Protocol):
    """What decisions govern in the repository: a proposal's links and a decision's snapshots."""

    def insert_proposal_links(self, proposal_id: str, links: Sequence[str]) -> None:
        """Keep the links a proposal was made with (they never change)."""

    def proposal_links(self, proposal_id: str) -> list[str]:
        """The links a proposal was made with, in the order given."""

    def insert_snapshot(self, snapshot: Snapshot) -> None:
        """Append a ratification's or re-confirmation's snapshot (snapshots are append-only)."""

    def snapshots_of(self, decision_id: str) -> list[Snapshot]:
        """A decision's snapshots, oldest first."""

    def current_snapshots(self) -> list[Snapshot]:
        """The newest snapshot of every current decision that has one."""

    def all_snapshots(self) -> list[Snapshot]:
        """Every snapshot of every decision, by decision and time."""


class AuditLog(Protocol):
    """The hash-chained audit log."""

    def append_audit(
        self, at: str, actor: str, action: str, target: str, before: Any, after: Any
    ) -> AuditEvent:
        """Append a hash-chained audit row; only inside :meth:`transaction`.

        Atomic per backend: the previous row (its sequence number and hash) is read inside the
        same write transaction that appends, never cached across transactions, so two writers
        can never both link to one row (fork the chain); the database refuses a row whose
        ``prev_hash`` is not the last row's hash.
        """

    def audit_rows(self) -> Iterator[dict[str, Any]]:
        """Every audit row, in sequence order."""

    def link_rows(self, table: str) -> list[tuple[Any, ...]]:
        """Every row of a link table the audit replay checks (supersession, citations, conflicts), sorted."""


class TextIndex(Protocol):
    """The keyword index over decisions and evidence (relevance: higher is better)."""

    def rebuild_text_index(self, *, evidence: bool) -> None:
        """Rebuild the full-text index of decisions (and of evidence) from the rows, and forget mentions."""

    def search_decisions(
        self, query: TextQuery, limit: int, as_of: str | None = None
    ) -> list[tuple[Decision, float]]:
        """Decisions (current, or valid at ``as_of``) matching ``query``, best first, with relevance."""

    def search_evidence(self, query: TextQuery, limit: int) -> list[tuple[Evidence, float, str]]:
        """Evidence matching ``query``, best first, with relevance and a snippet (matches in [brackets])."""

    def fts_decision_ids(
        self, query: TextQuery, limit: int, current_only: bool = False
    ) -> list[tuple[str, float]]:
        """Ids of decisions (any window, or current only) matching ``query``, best first, with relevance."""

    def fts_evidence_ids(self, query: TextQuery, limit: int) -> list[tuple[str, float]]:
        """Ids of evidence matching ``query``, best first, with relevance."""

    def evidence_term_counts(self, terms: Sequence[str], cap: int) -> dict[str, int]:
        """How many evidence texts hold each of the words ``terms``, counted up to ``cap`` (a count
        below it may have been made when there were fewer texts: rows only grow)."""


class DerivedRows(Protocol):
    """What is derived from the rows and kept beside them: entity mentions and recorded conflicts."""

    def add_mentions(self, item: str, names: Iterable[str]) -> None:
        """Record that record ``item`` mentions each entity in ``names`` (idempotent)."""

    def entity_version(self) -> int:
        """Grows whenever an entity is added."""

    def entity_names(self, after: int = 0) -> list[tuple[int, str]]:
        """``(id, name)`` of the entities whose id is above ``after``, oldest first."""

    def entity_items(self, entity_ids: Sequence[int], prefix: str, limit: int) -> dict[int, list[str]]:
        """Up to ``limit`` newest items (by id) with id prefix ``prefix`` mentioning each entity."""

    def entity_counts(self, entity_ids: Sequence[int], prefix: str) -> dict[int, int]:
        """How many items with id prefix ``prefix`` mention each entity."""

    def item_count(self, kind: str) -> int:
        """How many decisions or evidence texts (``kind``) the store holds."""

    def add_conflict(
        self, decision_id: str, other_id: str, term: str, clause: str, other_clause: str
    ) -> None:
        """Record that two decisions take opposite stances on ``term`` (in both directions)."""

    def conflicts_for(self, decision_id: str) -> list[tuple[str, str, str, str]]:
        """``(other id, term, clause, other clause)`` of a decision's recorded conflicts, by other id."""

    def conflicts_at(self, decision_ids: Sequence[str], moment: str | None) -> dict[str, list[ConflictRow]]:
        """:meth:`conflicts_for` of each decision, keeping the others that hold at ``moment`` (None: now)."""

    def current_conflict_pairs(self) -> list[ConflictPair]:
        """Each conflict between two current decisions, once, newest first."""

    def clear_conflicts(self) -> None:
        """Forget every recorded conflict."""


class VectorIndex(Protocol):
    """The vectors of decisions and evidence and the nearest-neighbour search over them."""

    def vector_tables_exist(self) -> bool:
        """True when vectors can be stored (the index for the model's dimension exists)."""

    def embeds(self, kind: str) -> bool:
        """Whether this login stores vectors of ``kind`` ("decision" or "evidence"): on a server a
        decision's vector is a person's to write (an agent's login may not)."""

    def create_vector_tables(self, dim: int) -> None:
        """Create the nearest-neighbour index for ``dim``-dimensional vectors."""

    def drop_vectors(self) -> None:
        """Forget every vector (the model changed)."""

    def pending_vectors(self, kind: str, limit: int) -> list[tuple[str, str]]:
        """``(id, text)`` of the oldest ``kind`` rows without a vector, oldest first (none for
        sealed evidence: a vector would give its meaning away)."""

    def pending_vector_count(self, kind: str) -> int:
        """How many rows wait for a vector."""

    def insert_vectors(self, kind: str, rows: Sequence[tuple[str, int, bytes]]) -> int:
        """Store ``(item id, chunk number, float32 bytes)`` rows; chunks already stored (by another
        process) are skipped; returns how many were added."""

    def nearest(self, kind: str, query: bytes, candidates: int, limit: int) -> list[tuple[str, float]]:
        """``(item id, cosine similarity)`` of up to ``limit`` items whose best chunk is nearest
        ``query``, most similar first (``candidates``: how many chunks the index may consider)."""


class Copying(Protocol):
    """Rows and vectors exported and restored as they are, for copying a store (ctx migrate)."""

    def count_rows(self, table: str) -> int:
        """How many rows a copied table (:data:`~ctx_kernel.kernel.store.rows.COPIED`) holds."""

    def export_rows(self, table: str, after: Sequence[Any] | None, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` rows of a copied table in its export order, starting after the row whose
        :attr:`~ctx_kernel.kernel.store.rows.CopiedTable.cursor` values are ``after`` (None: the
        first rows); inside :meth:`snapshot`, successive batches read one state."""

    def rows_by_key(self, table: str, keys: Sequence[Sequence[Any]]) -> dict[tuple[Any, ...], dict[str, Any]]:
        """The rows of a copied table whose key values are among ``keys``, by key (missing ones left out)."""

    def restore_rows(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """Insert exported rows exactly as they are, inside :meth:`transaction`; the database's
        invariants apply as to any insert (a row they refuse raises RefusedError)."""

    def export_vectors(
        self, kind: str, after: tuple[str, int] | None, limit: int
    ) -> list[tuple[str, int, bytes]]:
        """Up to ``limit`` stored ``(item id, chunk number, float32 bytes)`` of ``kind``, in the order
        the items were written, after the chunk ``after``; what :meth:`insert_vectors` takes."""


class Store(
    Connection,
    EvidenceRows,
    ProposalRows,
    DecisionRows,
    LinkRows,
    AuditLog,
    TextIndex,
    DerivedRows,
    VectorIndex,
    Copying,
    Protocol,
):
    """What the services call: every port a backend has. Sealing and roles are capabilities a
    backend may lack (:meth:`Connection.sealing`, :meth:`Connection.roles`); every statement of the
    backend's query language stays inside it."""
