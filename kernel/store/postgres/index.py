"""The PostgreSQL side of recall: full-text search, entities, conflicts and vectors.

The same answers as the SQLite store's :class:`~ctx_kernel.kernel.store.sqlite.index.IndexQueries`
wherever :class:`~ctx_kernel.kernel.store.base.Store` defines them, from PostgreSQL's own tools:

- Full text: ranked by BM25 as SQLite's ``bm25()`` ranks (:mod:`.fts`; weights subject 4 :
  decision 1 : rationale 0.5, as in SQLite), so both backends put the same rows first; relevance
  is higher-is-better and, as in SQLite, comparable within one answer only. A query of words is
  ranked from the postings tables (one row per lexeme and row, schema.POSTINGS) by an index-only
  aggregate; a query holding a phrase (``user_id`` is ``user`` then ``id``) from the generated
  ``search`` tsvectors and their GIN indexes, to the same scores. Term counts for the idf (and
  for :meth:`evidence_term_counts`) are counted up to a cap and remembered per connection.
- Snippets of ``ctx search``: ``ts_headline`` with matches in [brackets] (cut from the text's
  words when the text as written hides them inside a path or a dotted name). Recall cuts its own
  from the texts it read (kernel/recall/snippets.py), the same on both backends.
- Entities: the store lists names and postings; the matching itself (rapidfuzz) stays in the
  shared recall code (kernel/language/entities.py) so both backends rank alike. The schema's
  trigram index is not used here: the recall code matches against its in-memory name list, which
  it refreshes by id (``entity_names``, in kernel/store/shared.py), so no query ever searches names.
- Vectors: pgvector, each kind's ``emb`` column indexed for KNN by
  :func:`~ctx_kernel.kernel.store.postgres.schema.vector_statements` (HNSW over halfvec, cosine;
  the measurements that chose it are there); :meth:`nearest` asks the index for ``candidates``
  chunks, rescores them exactly by cosine similarity and keeps each item's best chunk.

Orders that SQLite takes from its binary collation (ids, subjects) are made with ``COLLATE "C"``
or in Python, as the database's collation may sort punctuation and case differently.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from typing import Any

from psycopg import sql

from ctx_kernel.kernel.errors import StoreError
from ctx_kernel.kernel.language.query import TextQuery
from ctx_kernel.kernel.records import Decision, Evidence
from ctx_kernel.kernel.store.postgres import fts, schema
from ctx_kernel.kernel.store.rows import EVIDENCE
from ctx_kernel.kernel.store.shared import CHUNK_SLOTS, index_table

KINDS = schema.VECTOR_KINDS
# Evidence terms whose frequency is remembered (a few bytes each).
TERM_CACHE = 100_000
# Column weights (D, C, B, A) as SQLite's bm25() takes them: a decision's subject (A) : decision
# (B) : rationale (C) = 4 : 1 : 0.5; evidence has one column.
_WEIGHTS = {"decision": (0.0, 0.5, 1.0, 4.0), "evidence": (1.0, 1.0, 1.0, 1.0)}
# Term frequencies (for idf and common terms) are counted up to this many rows: past it a term's
# idf hardly changes, and counting costs a scan of its postings.
FREQUENCY_CAP = 10_000
# A count or an average length is made again once the rows have grown by a tenth (and 100 rows).
_STALE, _SLACK = 1.1, 100
# A term in this many rows is worth leaving out of a first, cheaper ranking (see _ranked).
_PRUNE_FROM = 500
# What probing a row's posting of a term costs, in postings read in a row (see _ranked).
_PROBE_COST = 3
# The average length is sampled from this many newest rows.
_SAMPLE = 2_000
# ts_headline marks matches with two private-use characters, made brackets once it is known
# whether any match was marked (a text may hold brackets of its own).
_OPEN, _CLOSE = "\ue000", "\ue001"
_HEADLINE = (
    f'StartSel={_OPEN}, StopSel={_CLOSE}, MaxWords={{words}}, MinWords={{least}}, FragmentDelimiter=" … "'
)
_EVIDENCE_COLUMNS = EVIDENCE.select("e")


def _snippet(words: int) -> tuple[str, str]:
    """The snippet of ``e.text`` for ``q.q`` (matches in [brackets]), and the LATERAL item it needs.

    PostgreSQL's parser keeps ``src/auth/policy.py`` or ``orders.status`` whole, where the index
    holds their words (schema.words); when the text as written shows no match, the snippet is cut
    from its words instead, so the words that matched are bracketed either way.
    """
    options = _HEADLINE.format(words=words, least=max(words // 2, 1))
    cut = f"ts_headline('{fts.CONFIG}', e.text, q.q, '{options}')"
    split = f"ts_headline('{fts.CONFIG}', {schema.words('e.text')}, q.q, '{options}')"
    marked = f"CASE WHEN strpos(h.cut, '{_OPEN}') > 0 THEN h.cut ELSE {split} END"
    return (
        f"replace(replace({marked}, '{_OPEN}', '['), '{_CLOSE}', ']')",
        f"CROSS JOIN LATERAL (SELECT {cut} AS cut) AS h",
    )


def _vector_text(emb: bytes) -> str:
    """pgvector's text form of little-endian float32 bytes (``[x,y,...]``)."""
    if len(emb) % 4:
        raise ValueError(f"a vector is float32 bytes, not {len(emb)} bytes")
    return "[" + ",".join(map(repr, struct.unpack(f"<{len(emb) // 4}f", emb))) + "]"


class PostgresIndex:
    """Mixed into the PostgreSQL store: the queries of the recall and index code that are
    PostgreSQL's own (the rest, which SQLite runs alike, are ``kernel/store/shared.py``'s).

    The store provides ``_conn`` (a psycopg connection in autocommit mode; transactions are
    explicit), ``_q``/``_one`` (run a statement with ``%s`` placeholders), ``_evidence`` (an
    Evidence from an evidence row) and ``decisions_by_ids``. On that connection timestamptz
    values load as ctx's canonical text (``...Z``) and jsonb as JSON text, as SQLite returns them.
    """

    _conn: Any
    # (kind, term) -> (rows holding it, counted up to a cap; the kind's rowid watermark then)
    _text_counts: dict[tuple[str, str], tuple[int, int]]
    _vector_dim: int | None
    _average_lengths: dict[str, tuple[float, int]]  # kind -> (average words per row, watermark then)
    _term_lexemes: dict[str, str | None]  # term -> its one lexeme (None: a phrase or no word)

    def _q(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _one(self, sql: str, params: tuple[Any, ...] | list[Any] = ()) -> tuple[Any, ...] | None:
        raise NotImplementedError

    def _evidence(self, row: tuple[Any, ...]) -> Evidence:
        raise NotImplementedError

    def decisions_by_ids(self, ids: Sequence[str]) -> dict[str, Decision]:
        raise NotImplementedError

    def _term_cache(self) -> dict[tuple[str, str], tuple[int, int]]:
        cache = getattr(self, "_text_counts", None)
        if cache is None:
            cache = self._text_counts = {}
        return cache

    # -- entities -------------------------------------------------------------------------

    def add_mentions(self, item: str, names: Iterable[str]) -> None:
        """Record that record ``item`` mentions each entity in ``names`` (idempotent)."""
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return
        # Sorted, so two writers adding the same new names lock their index entries in one order.
        self._q(
            "INSERT INTO entity (name) SELECT unnest(%s::text[]) ORDER BY 1 ON CONFLICT (name) DO NOTHING",
            (sorted(wanted),),
        )
        self._q(
            "INSERT INTO entity_mention (entity_id, item) SELECT id, %s FROM entity WHERE name = ANY(%s) "
            "ON CONFLICT DO NOTHING",
            (item, wanted),
        )

    def entity_items(self, entity_ids: Sequence[int], prefix: str, limit: int) -> dict[int, list[str]]:
        """Up to ``limit`` newest items with id prefix ``prefix`` mentioning each entity."""
        out: dict[int, list[str]] = {i: [] for i in entity_ids}
        if not entity_ids:
            return out
        # One statement of per-entity range scans of the primary key (item is in the C collation,
        # so the range and the order are those of the ids' bytes, as in SQLite).
        for entity_id, item in self._q(
            """SELECT e.id, m.item FROM unnest(%s::bigint[]) AS e (id) CROSS JOIN LATERAL (
                 SELECT item FROM entity_mention
                 WHERE entity_id = e.id AND item >= %s AND item < %s
                 ORDER BY item DESC LIMIT %s) AS m""",
            (list(dict.fromkeys(entity_ids)), prefix, prefix + "~", limit),
        ):
            out[int(entity_id)].append(item)
        for items in out.values():
            items.sort(reverse=True)
        return out

    def item_count(self, kind: str) -> int:
        """How many decisions or evidence texts the store holds."""
        # Exact: an identity column skips the values a rolled-back insert took, so max(rowid)
        # (SQLite's answer) would overcount here.
        table = sql.Identifier(index_table(kind))
        row = self._one(sql.SQL("SELECT count(*) FROM {}").format(table).as_string())
        return int(row[0]) if row else 0

    def _rowid_watermark(self, kind: str) -> int:
        """The largest rowid of ``kind``: never falls, so rows added since are at most its growth."""
        table = sql.Identifier(index_table(kind))
        row = self._one(sql.SQL("SELECT coalesce(max(rowid), 0) FROM {}").format(table).as_string())
        return int(row[0]) if row else 0

    # -- conflicts ------------------------------------------------------------------------

    def add_conflict(
        self, decision_id: str, other_id: str, term: str, clause: str, other_clause: str
    ) -> None:
        """Record that two decisions take opposite stances on ``term`` (both directions)."""
        self._q(
            """INSERT INTO decision_conflict (decision_id, other_id, term, clause, other_clause)
               VALUES (%s, %s, %s, %s, %s), (%s, %s, %s, %s, %s)
               ON CONFLICT (decision_id, other_id) DO UPDATE SET term = excluded.term,
                 clause = excluded.clause, other_clause = excluded.other_clause""",
            (
                decision_id,
                other_id,
                term,
                clause,
                other_clause,
                other_id,
                decision_id,
                term,
                other_clause,
                clause,
            ),
        )

    # -- keyword --------------------------------------------------------------------------

    def _ranked(
        self, kind: str, query: TextQuery, limit: int, where: str = "", params: Sequence[Any] = ()
    ) -> list[tuple[int, str, float]]:
        """``(rowid, id, BM25 relevance)`` of the rows of ``kind`` matching ``query`` (and ``where``,
        on alias ``t``), best first."""
        rows, average = self._text_statistics(kind)
        frequencies = self._frequencies(kind, query.terms, rows)
        idfs = [fts.idf(rows, frequencies[term]) for term in query.terms]
        lexemes = self._lexemes(query.terms)
        postings = [lexemes[term] for term in query.terms]

        def best(matching: list[int] | None) -> list[tuple[int, str, float]]:
            if all(postings):
                statement, bound = fts.ranked_postings(
                    query, f"{index_table(kind)}_posting", _WEIGHTS[kind], idfs, average, postings, matching
                )
                # Without a condition on the rows, only the best are joined to their ids.
                best_first = "ORDER BY s.score DESC, s.rowid LIMIT %s"
                scored = (
                    f"({statement}) AS s"
                    if where
                    else f"(SELECT * FROM ({statement}) AS s {best_first}) AS s"
                )
                statement = (
                    f"SELECT s.rowid, t.id, s.score FROM {scored} "
                    f"JOIN {index_table(kind)} t ON t.rowid = s.rowid WHERE true {where} {best_first}"
                )
                if not where:
                    bound = [*bound, limit]
            else:
                source, score, bound = fts.ranked(query, "t", _WEIGHTS[kind], idfs, average, matching)
                statement = (
                    f"SELECT t.rowid, t.id, {score} AS score FROM {index_table(kind)} t CROSS JOIN {source} "
                    f"WHERE t.search @@ q.q {where} ORDER BY score DESC, t.rowid LIMIT %s"
                )
            return [(int(r[0]), r[1], float(r[2])) for r in self._q(statement, [*bound, *params, limit])]

        # A common term has thousands of postings (or rows to read). Rank the rows that hold one
        # of the rarer terms first (scored on every term): when the last of them still scores
        # more than the common terms alone ever can, no row holding only those would make the
        # list, and the answer is exact without reading them. Fewer terms left out, next.
        # From postings, a first ranking probes each chosen row once per term: worth it only while
        # those probes cost less than reading every posting (a probe costs about three postings
        # read in a row: measured at 100k, 21k probes 50 ms, a whole ranking of 20k postings 26 ms).
        order = sorted(range(len(query.terms)), key=lambda i: frequencies[query.terms[i]])
        read = sum(frequencies[term] for term in query.terms)
        for kept in range(1, len(order)) if query.mode == "any" else ():
            if frequencies[query.terms[order[kept]]] < _PRUNE_FROM:
                continue
            chosen = sum(frequencies[query.terms[i]] for i in order[:kept])
            if all(postings) and chosen * len(order) * _PROBE_COST > read:
                break
            first = best(order[:kept])
            if len(first) >= limit and first[-1][2] > sum(fts.ceiling(idfs[i]) for i in order[kept:]):
                return first
        return best(None)

    def _lexemes(self, terms: Sequence[str]) -> dict[str, str | None]:
        """Each term's one lexeme in the index, or None for a term that is a phrase or no word
        (those are matched against the tsvectors instead of the postings)."""
        cache = getattr(self, "_term_lexemes", None)
        if cache is None:
            cache = self._term_lexemes = {}
        missing = [term for term in dict.fromkeys(terms) if term not in cache]
        if missing:
            if len(cache) > TERM_CACHE:
                cache.clear()
            # A query of one node is one lexeme, and the same text's tsvector holds just that one.
            for term, lexeme in self._q(
                f"""SELECT u.term, CASE WHEN numnode(phraseto_tsquery('{fts.CONFIG}', u.term)) = 1 THEN
                      (SELECT min(lexeme) FROM unnest(to_tsvector('{fts.CONFIG}', u.term))) END
                    FROM unnest(%s::text[]) AS u (term)""",
                (missing,),
            ):
                cache[term] = lexeme
        return {term: cache[term] for term in terms}

    def _text_statistics(self, kind: str) -> tuple[int, float]:
        """The rows of ``kind`` (its rowid watermark) and their average length in words, which is
        sampled from the newest rows and sampled again when the rows have grown by a tenth."""
        rows = self._rowid_watermark(kind)
        averages = getattr(self, "_average_lengths", None)
        if averages is None:
            averages = self._average_lengths = {}
        known = averages.get(kind)
        if known is None or rows > known[1] * _STALE + _SLACK:
            found = self._one(
                f"SELECT avg({fts.length('search')}) FROM (SELECT search FROM {index_table(kind)} "
                "ORDER BY rowid DESC LIMIT %s) AS newest",
                (_SAMPLE,),
            )
            known = averages[kind] = (float(found[0] or 1.0) if found else 1.0, rows)
        return rows, known[0]

    def _frequencies(
        self, kind: str, terms: Sequence[str], rows: int, threshold: int | None = None
    ) -> dict[str, int]:
        """How many rows of ``kind`` hold each term, counted up to ``FREQUENCY_CAP`` (or ``threshold``).

        Each count is kept with the rowid watermark ``rows`` it was made at. Rows are only ever
        added, so with ``threshold`` a count is made again only when it could have crossed the
        threshold since; without, when the rows have grown by a tenth (an idf barely moves).
        """
        cache = self._term_cache()
        cap = max(FREQUENCY_CAP, threshold or 0)
        out: dict[str, int] = {}
        for term in dict.fromkeys(terms):
            known = cache.get((kind, term))
            if known is not None and threshold is not None:
                count, at = known
                fresh = (count >= threshold or count + rows - at < threshold) and (
                    count < FREQUENCY_CAP or threshold <= FREQUENCY_CAP
                )
            else:
                fresh = known is not None and rows <= known[1] * _STALE + _SLACK
            if known is not None and fresh:
                out[term] = known[0]
                continue
            lexeme = self._lexemes((term,))[term]
            if lexeme is not None:
                found = self._one(
                    f"""SELECT count(*) FROM (SELECT 1 FROM {index_table(kind)}_posting
                        WHERE term = %s LIMIT %s) AS hits""",
                    [lexeme, cap],
                )
            else:
                source, bound = fts.tsquery(TextQuery((term,)))
                found = self._one(
                    f"""SELECT count(*) FROM (SELECT 1 FROM {index_table(kind)} t, {source}
                        WHERE t.search @@ q.q LIMIT %s) AS hits""",
                    [*bound, cap],
                )
            out[term] = int(found[0]) if found else 0
            if len(cache) > TERM_CACHE:
                cache.clear()
            cache[(kind, term)] = (out[term], rows)
        return out

    def fts_decision_ids(
        self, query: TextQuery, limit: int, current_only: bool = False
    ) -> list[tuple[str, float]]:
        """Ids of decisions (any window, or only current ones) matching ``query``, best first,
        with their relevance (BM25, subject 4 : decision 1 : rationale 0.5, as SQLite)."""
        window = "AND t.valid_until IS NULL" if current_only else ""
        return [(item, score) for _, item, score in self._ranked("decision", query, limit, window)]

    def search_decisions(
        self, query: TextQuery, limit: int, as_of: str | None = None
    ) -> list[tuple[Decision, float]]:
        """Decisions matching ``query``, best first with their relevance, current ones unless ``as_of``."""
        if as_of is None:
            window, params = "AND t.valid_until IS NULL", []
        else:
            window = "AND t.valid_from <= %s AND (t.valid_until IS NULL OR t.valid_until > %s)"
            params = [as_of, as_of]
        rows = self._ranked("decision", query, limit, window, params)
        found = self.decisions_by_ids([item for _, item, _ in rows])
        return [(found[item], score) for _, item, score in rows if item in found]

    def fts_evidence_ids(self, query: TextQuery, limit: int) -> list[tuple[str, float]]:
        """Ids of evidence matching ``query``, best first, with their relevance (BM25)."""
        return [(item, score) for _, item, score in self._ranked("evidence", query, limit)]

    def search_evidence(self, query: TextQuery, limit: int) -> list[tuple[Evidence, float, str]]:
        """Evidence matching ``query`` with a snippet (matches in [brackets]), best first, with relevance."""
        ranked = self._ranked("evidence", query, limit)
        if not ranked:
            return []
        source, terms = fts.tsquery(query)
        snippet, lateral = _snippet(16)
        # The headline is cut only for the rows kept: ts_headline parses the whole text again.
        rows = self._q(
            f"""SELECT {_EVIDENCE_COLUMNS}, {snippet}
                FROM evidence e CROSS JOIN {source} {lateral} WHERE e.rowid = ANY(%s)""",
            [*terms, [rowid for rowid, _, _ in ranked]],
        )
        found = {r[0]: r for r in rows}
        return [
            (self._evidence(found[item][:-1]), score, found[item][-1])
            for _, item, score in ranked
            if item in found
        ]

    def evidence_term_counts(self, terms: Sequence[str], cap: int) -> dict[str, int]:
        """How many evidence texts hold each of ``terms``, counted up to ``cap``.

        Counts are kept with the evidence rowid watermark they were made at: rows are only ever
        added, so a term counted at the cap stays there, and one counted below it is counted
        again only once the watermark has grown enough to reach it.
        """
        rows = self._rowid_watermark("evidence")
        counts = self._frequencies("evidence", terms, rows, cap)
        return {term: min(counts[term], cap) for term in terms}

    def rebuild_text_index(self, *, evidence: bool) -> None:
        """Make the full-text postings again (of decisions, and of evidence) and forget entity
        mentions so they are extracted again.

        The tsvector columns are generated from the rows by PostgreSQL itself, so they never drift
        from the text; the postings are derived from them and made again in one transaction.
        """
        kinds = ["decision", "evidence"] if evidence else ["decision"]
        with self._conn.transaction():
            for kind in kinds:
                for statement in schema.posting_rebuild(kind):
                    self._q(statement)
            self._q("DELETE FROM entity_mention WHERE starts_with(item, %s)", ("dc_",))
            if evidence:
                self._q("DELETE FROM entity_mention WHERE starts_with(item, %s)", ("ev_",))
        if evidence:
            self._term_cache().clear()

    # -- records by id --------------------------------------------------------------------

    def evidence_neighbours(self, ids: Sequence[str]) -> dict[str, list[str]]:
        """The evidence logged just before and just after each of ``ids`` in the same session
        (or, without a session, from the same source)."""
        if not ids:
            return {}
        # The rows logged right before and after (SQLite: rowid - 1 and + 1; an identity column
        # can skip values, so here the nearest rowid on either side).
        rows = self._q(
            """SELECT e.id, n.id FROM evidence e CROSS JOIN LATERAL (
                 (SELECT * FROM evidence p WHERE p.rowid < e.rowid ORDER BY p.rowid DESC LIMIT 1)
                 UNION ALL
                 (SELECT * FROM evidence f WHERE f.rowid > e.rowid ORDER BY f.rowid LIMIT 1)) AS n
               WHERE e.id = ANY(%s) AND (n.session = e.session
                 OR (e.session IS NULL AND n.session IS NULL AND n.source = e.source))
               ORDER BY n.rowid""",
            (list(ids),),
        )
        out: dict[str, list[str]] = {}
        for item, neighbour in rows:
            out.setdefault(item, []).append(neighbour)
        return out

    def chain_ids(self, decision_id: str) -> list[str]:
        """Every decision linked to ``decision_id`` through supersession, in either direction."""
        return self.chains_of([decision_id])[decision_id]

    def chains_of(self, decision_ids: Sequence[str]) -> dict[str, list[str]]:
        """:meth:`chain_ids` of several decisions in one query."""
        out: dict[str, list[str]] = {i: [] for i in decision_ids}
        if not decision_ids:
            return out
        # A recursive term may name the recursive table only once, so one join follows a link
        # either way (each side by its own index); UNION stops at a member seen before.
        for root, member in self._q(
            """WITH RECURSIVE chain (root, id) AS (
                 SELECT r, r FROM unnest(%s::text[]) AS roots (r)
                 UNION
                 SELECT c.root, CASE WHEN s.old_id = c.id THEN s.new_id ELSE s.old_id END
                 FROM chain c JOIN supersession s ON s.old_id = c.id OR s.new_id = c.id
               ) SELECT root, id FROM chain""",
            (list(dict.fromkeys(decision_ids)),),
        ):
            out[root].append(member)
        return out

    # -- vectors --------------------------------------------------------------------------

    def _dimension(self) -> int | None:
        """The vector columns' dimension, once the owner has set it (pgvector keeps it as the typmod)."""
        dim = getattr(self, "_vector_dim", None)
        if dim is None:
            row = self._one(
                "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'evidence_vector'::regclass "
                "AND attname = 'emb'"
            )
            dim = self._vector_dim = int(row[0]) if row and row[0] > 0 else None
        return dim

    def vector_tables_exist(self) -> bool:
        """True when the owner has given the vector columns a dimension and indexed them."""
        self._vector_dim = None
        row = self._one("SELECT to_regclass(%s) IS NOT NULL", (schema.VECTOR_INDEXES["evidence"],))
        return bool(row and row[0]) and self._dimension() is not None

    def embeds(self, kind: str) -> bool:
        """Whether this login may insert ``kind``'s vectors (p006: not an agent's, for decisions)."""
        row = self._one("SELECT has_table_privilege(%s, 'INSERT')", (f"{index_table(kind)}_vector",))
        return bool(row and row[0])

    def create_vector_tables(self, dim: int) -> None:
        """Fix the vector columns at ``dim`` dimensions and index them (the tables' owner only)."""
        if self.vector_tables_exist():
            if self._dimension() == dim:
                return
            raise StoreError(
                f"the store's vectors have {self._dimension()} dimensions, not {dim}: run `ctx reindex`"
            )
        row = self._one(
            "SELECT pg_has_role(current_user, relowner, 'USAGE') FROM pg_class "
            "WHERE oid = 'evidence_vector'::regclass"
        )
        if not (row and row[0]):
            raise StoreError(
                "only the store's owner sets the vector dimension: ask the administrator to run "
                "`ctx reindex` once"
            )
        for statement in schema.vector_statements(dim):
            self._q(statement)
        self._vector_dim = dim

    def drop_vectors(self) -> None:
        """Forget every vector and the columns' dimension (the model changed)."""
        for kind in KINDS:
            table = sql.Identifier(f"{kind}_vector")
            index = sql.Identifier(schema.VECTOR_INDEXES[kind])
            self._q(sql.SQL("DROP INDEX IF EXISTS {}").format(index).as_string())
            self._q(sql.SQL("DELETE FROM {}").format(table).as_string())
            self._q(sql.SQL("ALTER TABLE {} ALTER COLUMN emb TYPE vector").format(table).as_string())
        self._vector_dim = None

    def insert_vectors(self, kind: str, rows: Sequence[tuple[str, int, bytes]]) -> int:
        """Store ``(item id, chunk number, float32 bytes)``; chunks another process stored are skipped."""
        table = index_table(kind)
        if not rows:
            return 0
        for _, chunk, _ in rows:
            if not 0 <= chunk < CHUNK_SLOTS:
                raise ValueError(f"chunk number {chunk} is outside 0..{CHUNK_SLOTS - 1}")
        found = self._q(
            f"""INSERT INTO {table}_vector (chunk_id, owner_rowid, emb)
                SELECT t.rowid * {CHUNK_SLOTS} + v.chunk, t.rowid, v.emb::vector
                FROM unnest(%s::text[], %s::int[], %s::text[]) AS v (item, chunk, emb)
                JOIN {table} t ON t.id = v.item
                ON CONFLICT (chunk_id) DO NOTHING RETURNING chunk_id""",
            (
                [item for item, _, _ in rows],
                [chunk for _, chunk, _ in rows],
                [_vector_text(emb) for _, _, emb in rows],
            ),
        )
        return len(found)

    def nearest(self, kind: str, query: bytes, candidates: int, limit: int) -> list[tuple[str, float]]:
        """``(id, cosine similarity)``, most similar first: ``candidates`` chunks from the HNSW index,
        rescored exactly, each item by its best chunk."""
        table = index_table(kind)
        dim = self._dimension()
        if dim is None:
            return []
        # An HNSW scan yields at most ef_search rows (40 by default): let it consider them all.
        self._one("SELECT set_config('hnsw.ef_search', %s, false)", (str(max(40, candidates)),))
        knn = schema.knn_order(dim)
        vector = _vector_text(query)
        rows = self._q(
            f"""WITH near AS (SELECT owner_rowid, emb FROM {table}_vector ORDER BY {knn} LIMIT %s)
                SELECT t.id, 1 - (near.emb <=> %s::vector({dim})) AS similarity
                FROM near JOIN {table} t ON t.rowid = near.owner_rowid
                ORDER BY similarity DESC""",
            (vector, candidates, vector),
        )
        best: dict[str, float] = {}
        for item, similarity in rows:
            # A vector of zeros has no direction: its cosine is undefined (NaN), not a match.
            if similarity is not None and not math.isnan(similarity) and item not in best:
                best[item] = float(similarity)
        return list(best.items())[:limit]
