"""The SQLite side of recall: entity mentions, vectors, and look-ups by the recall rankers.

Vector layout (chosen from measurements on a 2-core machine, see bench/): each store
(decisions, evidence) has a sqlite-vec ``vec0`` table holding one *binary-quantised*
vector per chunk and a plain table holding the exact float32 vector. KNN runs over the
bits (Hamming distance; ~10x less to scan than float32), then the candidates are
rescored exactly with cosine similarity by primary-key look-ups, which cost well under
a millisecond. Sentence embeddings keep their neighbourhoods under sign quantisation far
better than random vectors do, and rescoring restores the exact order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.sealing import Vault
from ctx_kernel.kernel.store.shared import CHUNK_SLOTS, INDEX_KINDS, index_table
from ctx_kernel.kernel.store.sqlite import driver
from ctx_kernel.kernel.store.sqlite.fts import match_string
from ctx_kernel.kernel.store.sqlite.vectors import VectorMirror

# Evidence terms whose frequency is remembered (a few bytes each).
TERM_CACHE = 100_000
# A vec0 search (no copy of the bits in memory yet) takes at most VEC0_WORK / rows candidates, and
# at least VEC0_MIN_K: 2,000 at 10,000 rows, 200 at 100,000, 100 at a million.
VEC0_WORK = 20_000_000
VEC0_MIN_K = 100
# Subqueries per compound SELECT (SQLite's default SQLITE_MAX_COMPOUND_SELECT is 500).
_COMPOUND_TERMS = 200


def _marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


class IndexQueries:
    """Mixed into the SQLite store: the queries of the recall and index code that are SQLite's own
    (FTS5, vec0 and its copy in memory, rowids); those PostgreSQL runs alike are in ``shared.py``."""

    _conn: Any
    path: Path
    _mirrors: dict[str, VectorMirror]
    # (FTS term, threshold) -> (postings counted up to the threshold, evidence rows then)
    _term_counts: dict[tuple[str, int], tuple[int, int]]

    def _q(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> tuple[Any, ...] | None:
        raise NotImplementedError

    def _evidence_match(self, query: TextQuery) -> str:
        raise NotImplementedError

    def vault(self) -> Vault | None:
        raise NotImplementedError

    # -- entities -------------------------------------------------------------------------

    def add_mentions(self, item: str, names: Iterable[str]) -> None:
        """Record that record ``item`` mentions each entity in ``names``."""
        rows = [(name,) for name in names]
        if not rows:
            return
        self._conn.executemany("INSERT OR IGNORE INTO entity (name) VALUES (?)", rows)
        self._conn.executemany(
            "INSERT OR IGNORE INTO entity_mention (entity_id, item) SELECT id, ? FROM entity WHERE name = ?",
            [(item, name) for (name,) in rows],
        )

    def entity_items(self, entity_ids: Sequence[int], prefix: str, limit: int) -> dict[int, list[str]]:
        """Up to ``limit`` newest items with id prefix ``prefix`` mentioning each entity."""
        out: dict[int, list[str]] = {i: [] for i in entity_ids}
        # One statement of per-entity index range scans instead of a statement per entity
        # (recall asks about ten to forty entities); SQLite allows 500 terms in a compound select.
        part = (
            "SELECT * FROM (SELECT entity_id, item FROM entity_mention WHERE entity_id = ? "
            "AND item >= ? AND item < ? ORDER BY item DESC LIMIT ?)"
        )
        ids = list(dict.fromkeys(entity_ids))
        for start in range(0, len(ids), _COMPOUND_TERMS):
            chunk = ids[start : start + _COMPOUND_TERMS]
            params = [p for entity_id in chunk for p in (entity_id, prefix, prefix + "~", limit)]
            for entity_id, item in self._q(" UNION ALL ".join([part] * len(chunk)), params):
                out[entity_id].append(item)
        for items in out.values():
            items.sort(reverse=True)  # a compound select promises no order
        return out

    def item_count(self, kind: str) -> int:
        """How many decisions or evidence texts the store holds."""
        table = index_table(kind)
        # Rows are never deleted, so the largest rowid is the count (and costs no scan).
        row = self._one(f"SELECT coalesce(max(rowid), 0) FROM {table}")
        return int(row[0]) if row else 0

    def add_conflict(
        self, decision_id: str, other_id: str, term: str, clause: str, other_clause: str
    ) -> None:
        """Record that two decisions take opposite stances on ``term`` (both directions)."""
        self._conn.executemany(
            "INSERT OR REPLACE INTO decision_conflict (decision_id, other_id, term, clause, other_clause) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (decision_id, other_id, term, clause, other_clause),
                (other_id, decision_id, term, other_clause, clause),
            ],
        )

    # -- keyword --------------------------------------------------------------------------

    def fts_decision_ids(
        self, query: TextQuery, limit: int, current_only: bool = False
    ) -> list[tuple[str, float]]:
        """Ids of decisions (any window, or only current ones) matching ``query``, best first,
        with their relevance (negated BM25)."""
        match = match_string(query)
        if not current_only:
            # Rank inside the FTS index and look ids up for the top rows only (as for evidence).
            top = self._q(
                "SELECT rowid, bm25(decision_fts, 4.0, 1.0, 0.5) AS score FROM decision_fts "
                "WHERE decision_fts MATCH ? ORDER BY score LIMIT ?",
                (match, limit),
            )
            ids = self._ids_for_rowids("decision", [r[0] for r in top])
            return [(ids[rowid], -score) for rowid, score in top if rowid in ids]
        window = "AND d.valid_until IS NULL"
        return [
            (r[0], -r[1])
            for r in self._q(
                f"""SELECT d.id, bm25(decision_fts, 4.0, 1.0, 0.5) AS score
                   FROM decision_fts JOIN decision d ON d.rowid = decision_fts.rowid
                   WHERE decision_fts MATCH ? {window} ORDER BY score LIMIT ?""",
                (match, limit),
            )
        ]

    def fts_evidence_ids(self, query: TextQuery, limit: int) -> list[tuple[str, float]]:
        """Ids of evidence matching ``query``, best first, with their relevance (negated BM25)."""
        # Rank inside the FTS index first and look ids up for the top rows only: joining every
        # match to the evidence table costs more than the ranking itself on frequent words.
        top = self._q(
            "SELECT rowid, bm25(evidence_fts) AS score FROM evidence_fts WHERE evidence_fts MATCH ? "
            "ORDER BY score LIMIT ?",
            (self._evidence_match(query), limit),
        )
        ids = self._ids_for_rowids("evidence", [r[0] for r in top])
        return [(ids[rowid], -score) for rowid, score in top if rowid in ids]

    def evidence_term_counts(self, terms: Sequence[str], cap: int) -> dict[str, int]:
        """How many evidence texts hold each of ``terms``, counted up to ``cap``.

        Counting walks a term's postings (about 0.05 us each, a twentieth of ranking them), and
        each answer is kept with the number of rows it was counted over: rows are only ever
        added, so a term counted at the cap stays there, and one counted below it is counted
        again only once enough rows were added to reach it. The vault's state and the row count
        are read once for all the terms.
        """
        vault = self.vault()
        rows = self.item_count("evidence")
        cache = self._term_counts
        out: dict[str, int] = {}
        for term in terms:
            plain = match_string(TextQuery((term,)))
            match = plain if vault is None else vault.match(plain)
            known = cache.get((match, cap))
            if known is not None and (known[0] >= cap or known[0] + rows - known[1] < cap):
                out[term] = known[0]
                continue
            row = self._one(
                "SELECT count(*) FROM (SELECT 1 FROM evidence_fts WHERE evidence_fts MATCH ? LIMIT ?)",
                (match, cap),
            )
            out[term] = int(row[0]) if row else 0
            if len(cache) > TERM_CACHE:
                cache.clear()
            cache[(match, cap)] = (out[term], rows)
        return out

    # -- records by id --------------------------------------------------------------------

    def evidence_neighbours(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """The evidence logged just before and just after each of ``ids`` in the same session
        (or, without a session, from the same source)."""
        if not ids:
            return {}
        rows = self._q(
            "SELECT e.id, n.id FROM evidence e JOIN evidence n ON n.rowid IN (e.rowid - 1, e.rowid + 1) "
            "AND (n.session = e.session "
            "OR (e.session IS NULL AND n.session IS NULL AND n.source = e.source)) "
            f"WHERE e.id IN ({_marks(ids)}) ORDER BY n.rowid",
            list(ids),
        )
        out: dict[str, list[str]] = {}
        for item, neighbour in rows:
            out.setdefault(item, []).append(neighbour)
        return out

    def _ids_for_rowids(self, kind: str, rowids: Sequence[int]) -> dict[int, str]:
        """Record ids of decision or evidence rowids (which never leave this backend)."""
        if not rowids:
            return {}
        table = index_table(kind)
        rows = self._q(f"SELECT rowid, id FROM {table} WHERE rowid IN ({_marks(rowids)})", list(rowids))
        return {r[0]: r[1] for r in rows}

    def _rowids_for_ids(self, kind: str, ids: Sequence[str]) -> dict[str, int]:
        """Rowids of decision or evidence ids."""
        if not ids:
            return {}
        table = index_table(kind)
        rows = self._q(f"SELECT id, rowid FROM {table} WHERE id IN ({_marks(ids)})", list(ids))
        return {r[0]: r[1] for r in rows}

    def chain_ids(self, decision_id: str) -> list[str]:
        """Every decision linked to ``decision_id`` through supersession, in either direction."""
        return [
            r[0]
            for r in self._q(
                """WITH RECURSIVE chain(id) AS (
                     SELECT ?
                     UNION SELECT s.new_id FROM supersession s JOIN chain c ON s.old_id = c.id
                     UNION SELECT s.old_id FROM supersession s JOIN chain c ON s.new_id = c.id
                   ) SELECT id FROM chain""",
                (decision_id,),
            )
        ]

    def chains_of(self, decision_ids: Sequence[str]) -> dict[str, list[str]]:
        """:meth:`chain_ids` of several decisions in one query."""
        out: dict[str, list[str]] = {i: [] for i in decision_ids}
        if not decision_ids:
            return out
        for root, member in self._q(
            """WITH RECURSIVE chain(root, id) AS (
                 SELECT value, value FROM json_each(?)
                 UNION SELECT c.root, s.new_id FROM supersession s JOIN chain c ON s.old_id = c.id
                 UNION SELECT c.root, s.old_id FROM supersession s JOIN chain c ON s.new_id = c.id
               ) SELECT root, id FROM chain""",
            (json.dumps(list(decision_ids)),),
        ):
            out[root].append(member)
        return out

    # -- vectors --------------------------------------------------------------------------

    def vector_tables_exist(self) -> bool:
        """True when the KNN tables have been created (for the stored model's dimension)."""
        row = self._one("SELECT 1 FROM sqlite_master WHERE name = 'vec_decision'")
        return row is not None

    def embeds(self, kind: str) -> bool:
        """Every login of a file writes every vector."""
        return True

    def create_vector_tables(self, dim: int) -> None:
        """Create the binary-quantised KNN tables for vectors of ``dim`` dimensions."""
        for kind in INDEX_KINDS:
            self._conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS vec_{kind} USING vec0("
                f"chunk_id INTEGER PRIMARY KEY, bits bit[{int(dim)}])"
            )

    def drop_vectors(self) -> None:
        """Forget every vector (the model changed)."""
        for kind in INDEX_KINDS:
            self._conn.execute(f"DROP TABLE IF EXISTS vec_{kind}")
            self._conn.execute(f"DELETE FROM {kind}_vector")

    def insert_vectors(self, kind: str, rows: Sequence[tuple[str, int, bytes]]) -> int:
        """Store ``(item id, chunk number, float32 bytes)``; chunks another process stored are skipped."""
        table = index_table(kind)
        rowids = self._rowids_for_ids(kind, list(dict.fromkeys(item for item, _, _ in rows)))
        added = 0
        for item, chunk, emb in rows:
            if not 0 <= chunk < CHUNK_SLOTS:
                raise ValueError(f"chunk number {chunk} is outside 0..{CHUNK_SLOTS - 1}")
            owner = rowids[item]
            chunk_id = owner * CHUNK_SLOTS + chunk
            cursor = self._conn.execute(
                f"INSERT OR IGNORE INTO {table}_vector (chunk_id, owner_rowid, emb) VALUES (?, ?, ?)",
                (chunk_id, owner, emb),
            )
            if cursor.rowcount:
                self._conn.execute(
                    f"INSERT INTO vec_{table} (chunk_id, bits) VALUES (?, vec_quantize_binary(?))",
                    (chunk_id, emb),
                )
                added += 1
        return added

    def vectors_in_memory(self, timeout: float = 60.0) -> bool:
        """Wait up to ``timeout`` seconds for the in-memory copies of the vectors being loaded; True
        when every kind searched so far is held in memory (benchmarks time the warm path with it)."""
        return all([mirror.wait(timeout) for mirror in list(self._mirrors.values())])

    def vectors_held(self) -> dict[str, str]:
        """How each kind's vectors are held in memory: ``"exact"`` or ``"bits"`` (kinds not held
        are left out)."""
        held = {kind: mirror.held() for kind, mirror in list(self._mirrors.items())}
        return {kind: how for kind, how in held.items() if how is not None}

    def nearest(self, kind: str, query: bytes, candidates: int, limit: int) -> list[tuple[str, float]]:
        """``(id, cosine similarity)``, most similar first: Hamming KNN over bits, then exact rescoring.

        A process that searches a kind more than once holds a copy in memory once it is loaded
        (kernel/store/sqlite/vectors.py): its bits, and for a small kind its vectors too, which
        rescore the nearest there (a large kind's are rescored here); ``vec0`` answers until then.
        """
        table = index_table(kind)
        mirror = self._mirrors.get(kind)
        if mirror is None:
            mirror = self._mirrors.setdefault(kind, VectorMirror(self.path, kind, driver.connect))
        found = mirror.search(self._conn, query, candidates)
        if found is not None and found.similarities is not None and found.owners is not None:
            # The vectors and their records' ids are held: rescored in memory already.
            return list(_best_per_owner(zip(found.owners, found.similarities, strict=True), limit).items())
        if found is None:
            # vec0's scan costs about chunks x k (k = 1,000 over a million chunks: 1.9 s, k = 100:
            # 0.13 s): a search without a copy in memory takes fewer candidates in a large store.
            k = min(candidates, max(VEC0_MIN_K, VEC0_WORK // max(1, self.item_count(kind))))
            nearest = f"SELECT chunk_id FROM vec_{table} WHERE bits MATCH vec_quantize_binary(?) AND k = ?"
            params: list[Any] = [query, query, k]
        elif not found.chunk_ids:
            return []
        else:
            nearest, params = _marks(found.chunk_ids), [query, *found.chunk_ids]
        rows = self._q(
            f"""SELECT chunk_id, 1.0 - vec_distance_cosine(emb, ?) AS similarity FROM {table}_vector
                WHERE chunk_id IN ({nearest}) ORDER BY similarity DESC, chunk_id""",
            params,
        )
        # owner rowid -> its best chunk's similarity
        by_owner = _best_per_owner(((chunk_id // CHUNK_SLOTS, sim) for chunk_id, sim in rows), limit)
        # Only the owners kept are looked up: a join per candidate reads a page of the large
        # table for each (4.6 ms for 200 candidates at 100k evidence texts, against 0.7 ms).
        owners = list(by_owner)
        ids = dict(self._q(f"SELECT rowid, id FROM {table} WHERE rowid IN ({_marks(owners)})", owners))
        return [(ids[owner], similarity) for owner, similarity in by_owner.items() if owner in ids]


_Owner = TypeVar("_Owner", int, str)


def _best_per_owner(found: Iterable[tuple[_Owner, float | None]], limit: int) -> dict[_Owner, float]:
    """The first similarity of each owner of chunks ``found`` most similar first (its best chunk's),
    for the first ``limit`` owners."""
    best: dict[_Owner, float] = {}
    for owner, similarity in found:
        # A vector of zeros has no direction: its cosine is undefined (NULL), not a match.
        if similarity is not None and owner not in best:
            best[owner] = float(similarity)
            if len(best) == limit:
                break
    return best
