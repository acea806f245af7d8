"""The PostgreSQL DDL of the store: the SQLite head schema (m001..m007) and its invariants.

Tables, columns and their meaning are those of the SQLite migrations, with native types where
they let the database hold an invariant or a type SQLite cannot:

- Timestamps are ``timestamptz`` (ctx's canonical ``...Z`` strings parse losslessly: UTC,
  microseconds), so an exclusion constraint over ``tstzrange(valid_from, valid_until)`` forbids
  overlapping windows of one subject, concurrent writers included. The one exception is
  ``audit.at``: the audit hash covers its exact text, so it stays text.
- JSON lists (tags, supersedes, deciders) are ``jsonb`` arrays, checked to be arrays. The audit
  row's ``before``/``after`` stay text for the same reason as ``at``: jsonb would rewrite them.
- ``evidence`` and ``decision`` have an identity ``rowid``, the key the vector tables' owner
  columns point at in SQLite, here with a foreign key.
- Sealed evidence: SQLite swaps a row's text for a BLOB in place; a column has one type here, so
  the ciphertext goes to ``sealed`` and ``text`` becomes NULL (exactly one of them is set).
- Full-text search is a generated ``tsvector`` column with a GIN index on evidence and decisions
  (PostgreSQL's English stemmer without stop words, like FTS5's porter tokenizer, which indexes
  every word; over the text split at every character that
  is not a letter or digit, as FTS5's unicode61 tokenizer splits it: PostgreSQL's own parser keeps
  ``src/auth/policy.py`` or ``CacheClient.set`` whole, so the word ``auth`` would not find them),
  the triggers of :data:`POSTINGS` keep each lexeme's postings for BM25 (FTS5 keeps its own),
  entity names have a trigram index, and the
  vector columns are pgvector ``vector``, given a dimension by :func:`vector_statements` once a
  model is chosen, as SQLite creates its KNN tables on the first embedding.

Every refusal raises SQLSTATE 23000 (integrity_constraint_violation), the class of the unique,
check and exclusion violations beside it, so one driver exception (``psycopg.IntegrityError``)
covers every broken invariant, as ``sqlite3.IntegrityError`` does for the SQLite triggers.

The audit chain is checked on insert: a row must carry the next ``seq`` and the previous row's
hash, and its own hash must be :func:`ctx_kernel.kernel.chain.row_hash` of its fields
(recomputed by ``ctx_audit_hash``). Appends are serialised by an advisory lock the insert trigger
takes, and ``prev_hash`` is unique besides, so concurrent writers cannot fork the chain;
``ctx_audit_append`` appends a row computed in the server.

The immutability triggers compare whole rows as jsonb minus the columns that may change, so a
column added later is frozen without rewriting the trigger (the SQLite migrations recreate
theirs each time a column is added).
"""

from __future__ import annotations

from functools import cache

from ctx_kernel.kernel.chain import GENESIS_HASH
from ctx_kernel.kernel.store.postgres import lookalikes

# pgvector's limit for an HNSW index over halfvec (the vector type itself allows 16,000).
MAX_VECTOR_DIM = 4_000
VECTOR_KINDS = ("decision", "evidence")
# Columns SQLite does not have: its implicit rowid made explicit, the sealed text's own column,
# and the generated full-text column that stands in for an FTS5 table.
POSTGRES_ONLY_COLUMNS = {"evidence": ("rowid", "sealed", "search"), "decision": ("rowid", "search")}
# Tables SQLite does without: the change counter a live reader polls (SQLite has PRAGMA data_version),
# and the full-text postings that stand in for FTS5's own.
POSTGRES_ONLY_TABLES = ("ctx_change", "ctx_lookalike_char", "decision_posting", "evidence_posting")

# The audit chain and the supersession graph each take a transaction-scoped advisory lock keyed
# by their table's oid before reading the rows they check, so two writers cannot both read the
# same tail (and fork the chain) or both miss each other's link (and close a cycle).
_AUDIT_LOCK_KEY = "'audit'::regclass::oid::bigint"
# What a writer that computes the next row itself runs first, in the transaction that appends.
AUDIT_LOCK = f"SELECT pg_advisory_xact_lock({_AUDIT_LOCK_KEY})"

_REFUSED = "USING ERRCODE = 'integrity_constraint_violation'"


def words(column: str) -> str:
    """SQL for ``column``'s text with every run of characters other than letters and digits made
    one space: what the full-text columns index (FTS5's unicode61 tokenizer splits text so)."""
    return f"regexp_replace({column}, '[^[:alnum:]]+', ' ', 'g')"


EXTENSIONS = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE EXTENSION IF NOT EXISTS btree_gist",
]

# The full-text configuration: PostgreSQL's english (Snowball stemmer) with no stop-word list, so
# that every word is indexed and searchable, as in FTS5 with the porter tokenizer.
TEXT_SEARCH_CONFIG = "ctx_english"
TEXT_SEARCH = f"'{TEXT_SEARCH_CONFIG}'::regconfig"
TEXT_SEARCH_STATEMENTS = [
    "CREATE TEXT SEARCH DICTIONARY ctx_english_stem (TEMPLATE = snowball, LANGUAGE = english)",
    f"CREATE TEXT SEARCH CONFIGURATION {TEXT_SEARCH_CONFIG} (COPY = english)",
    f"""ALTER TEXT SEARCH CONFIGURATION {TEXT_SEARCH_CONFIG}
        ALTER MAPPING REPLACE english_stem WITH ctx_english_stem""",
]

FUNCTIONS = [
    # One refusal for the triggers that forbid an operation outright; the message is the argument.
    f"""CREATE FUNCTION ctx_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         RAISE EXCEPTION '%', TG_ARGV[0] {_REFUSED};
       END $$""",
    # The one change evidence allows: its plain text sealed (or a sealed text sealed again).
    f"""CREATE FUNCTION ctx_evidence_seal_only() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NEW.sealed IS NULL OR NEW.text IS NOT NULL
            OR (to_jsonb(NEW) - ARRAY['text', 'sealed', 'search'])
               IS DISTINCT FROM (to_jsonb(OLD) - ARRAY['text', 'sealed', 'search']) THEN
           RAISE EXCEPTION 'evidence is append-only' {_REFUSED};
         END IF;
         RETURN NEW;
       END $$""",
    f"""CREATE FUNCTION ctx_proposal_resolve_once() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         resolution CONSTANT text[] := ARRAY['status', 'resolved_at', 'resolved_by', 'resolution_note',
                                             'decision_id'];
       BEGIN
         IF OLD.status <> 'pending' OR NEW.status = 'pending'
            OR (to_jsonb(NEW) - resolution) IS DISTINCT FROM (to_jsonb(OLD) - resolution) THEN
           RAISE EXCEPTION 'a proposal is resolved once, from pending, and never edited' {_REFUSED};
         END IF;
         RETURN NEW;
       END $$""",
    # search is excluded: in a BEFORE trigger NEW does not hold the generated value yet.
    f"""CREATE FUNCTION ctx_decision_close_once() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         closing CONSTANT text[] := ARRAY['valid_until', 'closed_by', 'close_reason', 'search'];
       BEGIN
         IF OLD.valid_until IS NOT NULL OR NEW.valid_until IS NULL OR NEW.valid_until < OLD.valid_from
            OR (to_jsonb(NEW) - closing) IS DISTINCT FROM (to_jsonb(OLD) - closing) THEN
           RAISE EXCEPTION 'a decision only has its window closed, once' {_REFUSED};
         END IF;
         RETURN NEW;
       END $$""",
    # Forward in time, and no cycle: the link is refused when new_id already precedes old_id in
    # some chain (it is among the decisions old_id supersedes, directly or through others).
    f"""CREATE FUNCTION ctx_supersession_check() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF (SELECT valid_from FROM decision WHERE id = NEW.new_id)
            < (SELECT valid_from FROM decision WHERE id = NEW.old_id) THEN
           RAISE EXCEPTION 'a successor cannot start before the decision it supersedes' {_REFUSED};
         END IF;
         PERFORM pg_advisory_xact_lock('supersession'::regclass::oid::bigint);
         IF EXISTS (
           WITH RECURSIVE superseded (id) AS (
             SELECT old_id FROM supersession WHERE new_id = NEW.old_id
             UNION
             SELECT s.old_id FROM supersession s JOIN superseded ON s.new_id = superseded.id)
           SELECT 1 FROM superseded WHERE id = NEW.new_id) THEN
           RAISE EXCEPTION 'a supersession chain cannot loop back on itself' {_REFUSED}, DETAIL =
             format('%s already supersedes %s, directly or through others', NEW.old_id, NEW.new_id);
         END IF;
         RETURN NEW;
       END $$""",
    # sha256 over the previous hash and the canonical JSON of the hashed fields, byte for byte
    # what ctx_kernel.kernel.chain.row_hash computes: keys in sorted order, no whitespace,
    # and to_json escapes a string as json.dumps(ensure_ascii=False) does.
    """CREATE FUNCTION ctx_audit_hash(prev_hash text, seq bigint, at text, actor text, action text,
                                      target text, before text, after text)
       RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
         SELECT encode(sha256(convert_to(prev_hash
           || '{"action":' || to_json(action)::text
           || ',"actor":' || to_json(actor)::text
           || ',"after":' || coalesce(to_json(after)::text, 'null')
           || ',"at":' || to_json(at)::text
           || ',"before":' || coalesce(to_json(before)::text, 'null')
           || ',"seq":' || seq::text
           || ',"target":' || to_json(target)::text
           || '}', 'UTF8')), 'hex')
       $$""",
    # Under READ COMMITTED each statement after the lock sees the rows committed before it was
    # granted; under REPEATABLE READ a writer that waited sees an old tail and is refused instead.
    f"""CREATE FUNCTION ctx_audit_linked() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         tail_seq bigint;
         tail_hash text;
       BEGIN
         PERFORM pg_advisory_xact_lock({_AUDIT_LOCK_KEY});
         SELECT a.seq, a.hash INTO tail_seq, tail_hash FROM audit a ORDER BY a.seq DESC LIMIT 1;
         IF NEW.seq IS DISTINCT FROM coalesce(tail_seq, 0) + 1
            OR NEW.prev_hash IS DISTINCT FROM coalesce(tail_hash, '{GENESIS_HASH}') THEN
           RAISE EXCEPTION 'audit row does not link to the previous row' {_REFUSED}, DETAIL =
             format('the chain ends at row %s', coalesce(tail_seq, 0));
         END IF;
         IF NEW.hash IS DISTINCT FROM ctx_audit_hash(NEW.prev_hash, NEW.seq, NEW.at, NEW.actor,
                                                     NEW.action, NEW.target, NEW.before, NEW.after) THEN
           RAISE EXCEPTION 'audit row hash does not match its content' {_REFUSED};
         END IF;
         RETURN NEW;
       END $$""",
]


def _forbid(table: str, operations: str, message: str) -> list[str]:
    """Row triggers refusing ``operations`` on ``table``, and a statement trigger refusing TRUNCATE.

    TRUNCATE fires no row trigger, so without the second one the table owner could empty an
    append-only table.
    """
    name = operations.lower().replace(" or ", "_")
    return [
        f"""CREATE TRIGGER {table}_no_{name} BEFORE {operations} ON {table}
           FOR EACH ROW EXECUTE FUNCTION ctx_refuse('{message}')""",
        f"""CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table}
           FOR EACH STATEMENT EXECUTE FUNCTION ctx_refuse('{message}')""",
    ]


TABLES = [
    """CREATE TABLE meta (
        key text NOT NULL PRIMARY KEY,
        value text NOT NULL
    )""",
    # Evidence vault: append-only, deduplicated by the sha256 of its plain text.
    f"""CREATE TABLE evidence (
        id text NOT NULL PRIMARY KEY,
        rowid bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        content_hash text NOT NULL UNIQUE,
        text text,
        sealed bytea,
        kind text NOT NULL,
        agent text,
        session text,
        tags jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(tags) = 'array'),
        created_at timestamptz NOT NULL,
        source text,
        speaker text,
        occurred_at timestamptz,
        search tsvector GENERATED ALWAYS AS (
            to_tsvector({TEXT_SEARCH}, {words("coalesce(text, '')")})) STORED,
        CONSTRAINT evidence_text_or_sealed CHECK ((text IS NULL) <> (sealed IS NULL)),
        CONSTRAINT evidence_sealed_magic CHECK (substring(sealed FROM 1 FOR 5) = '\\x4354584501'::bytea)
    )""",
    "CREATE INDEX ix_evidence_search ON evidence USING gin (search)",
    """CREATE TRIGGER evidence_no_update BEFORE UPDATE ON evidence
       FOR EACH ROW EXECUTE FUNCTION ctx_evidence_seal_only()""",
    *_forbid("evidence", "DELETE", "evidence is append-only"),
    # Proposal queue: only the status and resolution fields change, once, from pending.
    """CREATE TABLE proposal (
        id text NOT NULL PRIMARY KEY,
        subject text NOT NULL,
        decision text NOT NULL,
        rationale text,
        proposer text NOT NULL,
        session text,
        created_at timestamptz NOT NULL,
        supersedes jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(supersedes) = 'array'),
        explicit_supersedes jsonb NOT NULL DEFAULT '[]'
            CHECK (jsonb_typeof(explicit_supersedes) = 'array'),
        near_duplicate_of text REFERENCES proposal (id),
        near_duplicate_score double precision,
        status text NOT NULL DEFAULT 'pending'
            CHECK (status IN ('pending', 'ratified', 'rejected', 'withdrawn')),
        resolved_at timestamptz,
        resolved_by text,
        resolution_note text,
        decision_id text,
        source text,
        adr_number integer,
        title text,
        deciders jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(deciders) = 'array')
    )""",
    "CREATE INDEX ix_proposal_status ON proposal (status, created_at)",
    "CREATE INDEX ix_proposal_subject ON proposal (subject)",
    "CREATE INDEX ix_proposal_source ON proposal (source)",
    """CREATE TRIGGER proposal_resolve_once BEFORE UPDATE ON proposal
       FOR EACH ROW EXECUTE FUNCTION ctx_proposal_resolve_once()""",
    *_forbid("proposal", "DELETE", "proposals are kept for audit"),
    """CREATE TABLE proposal_evidence (
        proposal_id text NOT NULL REFERENCES proposal (id),
        evidence_id text NOT NULL REFERENCES evidence (id),
        PRIMARY KEY (proposal_id, evidence_id)
    )""",
    # Decision kernel: a row's window closes once; nothing else ever changes.
    f"""CREATE TABLE decision (
        id text NOT NULL PRIMARY KEY,
        rowid bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
        subject text NOT NULL,
        decision text NOT NULL,
        rationale text,
        valid_from timestamptz NOT NULL,
        valid_until timestamptz,
        ratified_by text NOT NULL,
        ratified_at timestamptz NOT NULL,
        proposal_id text REFERENCES proposal (id),
        amended boolean NOT NULL DEFAULT false,
        closed_by text CHECK (closed_by IN ('superseded', 'retired')),
        close_reason text,
        source text,
        adr_number integer,
        title text,
        deciders jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(deciders) = 'array'),
        search tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector({TEXT_SEARCH}, {words("subject")}), 'A')
            || setweight(to_tsvector({TEXT_SEARCH}, {words("decision")}), 'B')
            || setweight(to_tsvector({TEXT_SEARCH}, {words("coalesce(rationale, '')")}), 'C')) STORED,
        CONSTRAINT decision_window_order CHECK (valid_until IS NULL OR valid_until >= valid_from),
        CONSTRAINT decision_closed_by CHECK ((valid_until IS NULL) = (closed_by IS NULL))
    )""",
    # At most one current decision per subject. Created before the exclusion constraint, which
    # also refuses a second open window, so that this case is reported by its own name.
    "CREATE UNIQUE INDEX ux_decision_current ON decision (subject) WHERE valid_until IS NULL",
    # No two windows of one subject overlap; an open window runs to infinity. A window closed the
    # moment it opened is empty and overlaps nothing here, where SQLite's trigger counts it as
    # overlapping: revision p003 adds SQLite's rule as a trigger (P003_STATEMENTS) and keeps this.
    """ALTER TABLE decision ADD CONSTRAINT decision_no_overlap
       EXCLUDE USING gist (subject WITH =, tstzrange(valid_from, valid_until) WITH &&)""",
    "CREATE INDEX ix_decision_subject ON decision (subject, valid_from)",
    "CREATE INDEX ix_decision_source ON decision (source)",
    "CREATE INDEX ix_decision_search ON decision USING gin (search)",
    """CREATE TRIGGER decision_close_once BEFORE UPDATE ON decision
       FOR EACH ROW EXECUTE FUNCTION ctx_decision_close_once()""",
    *_forbid("decision", "DELETE", "decisions are never deleted"),
    # Deferred: a ratification writes the decision, then the proposal pointing at it.
    """ALTER TABLE proposal ADD CONSTRAINT proposal_decision_id_fkey
       FOREIGN KEY (decision_id) REFERENCES decision (id) DEFERRABLE INITIALLY DEFERRED""",
    """CREATE TABLE decision_evidence (
        decision_id text NOT NULL REFERENCES decision (id),
        evidence_id text NOT NULL REFERENCES evidence (id),
        PRIMARY KEY (decision_id, evidence_id)
    )""",
    # Supersession links: many-to-many, across subjects; a successor never predates what it replaces.
    """CREATE TABLE supersession (
        old_id text NOT NULL REFERENCES decision (id),
        new_id text NOT NULL REFERENCES decision (id),
        created_at timestamptz NOT NULL,
        PRIMARY KEY (old_id, new_id),
        CONSTRAINT supersession_not_itself CHECK (old_id <> new_id)
    )""",
    "CREATE INDEX ix_supersession_new ON supersession (new_id)",
    """CREATE TRIGGER supersession_checked BEFORE INSERT ON supersession
       FOR EACH ROW EXECUTE FUNCTION ctx_supersession_check()""",
    *_forbid("supersession", "UPDATE OR DELETE", "supersession links are permanent"),
    # Audit log: a hash chain; each row links to the row before it and no two rows to the same one.
    """CREATE TABLE audit (
        seq bigint NOT NULL PRIMARY KEY CHECK (seq > 0),
        at text NOT NULL,
        actor text NOT NULL,
        action text NOT NULL,
        target text NOT NULL,
        before text,
        after text,
        prev_hash text NOT NULL UNIQUE CHECK (prev_hash ~ '^[0-9a-f]{64}$'),
        hash text NOT NULL UNIQUE CHECK (hash ~ '^[0-9a-f]{64}$')
    )""",
    """CREATE TRIGGER audit_linked BEFORE INSERT ON audit
       FOR EACH ROW EXECUTE FUNCTION ctx_audit_linked()""",
    *_forbid("audit", "UPDATE OR DELETE", "the audit log is append-only"),
    # Recall: entities and their mentions, conflicts, and the exact vectors.
    """CREATE TABLE entity (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        name text NOT NULL UNIQUE
    )""",
    "CREATE INDEX ix_entity_name_trgm ON entity USING gin (name gin_trgm_ops)",
    # item is a record id (ev_… or dc_…); mentions are never rewritten. In the C collation, so
    # the primary key answers "the newest items with this prefix" in the ids' byte order, as SQLite.
    """CREATE TABLE entity_mention (
        entity_id bigint NOT NULL REFERENCES entity (id),
        item text COLLATE "C" NOT NULL,
        PRIMARY KEY (entity_id, item)
    )""",
    "CREATE INDEX ix_entity_mention_item ON entity_mention (item)",
    """CREATE TABLE decision_conflict (
        decision_id text NOT NULL REFERENCES decision (id),
        other_id text NOT NULL REFERENCES decision (id),
        term text NOT NULL,
        clause text NOT NULL,
        other_clause text NOT NULL,
        PRIMARY KEY (decision_id, other_id)
    )""",
    # chunk_id = owner rowid * 16 + chunk number, as in SQLite; emb is normalised.
    *(
        statement
        for kind in VECTOR_KINDS
        for statement in (
            f"""CREATE TABLE {kind}_vector (
                chunk_id bigint NOT NULL PRIMARY KEY,
                owner_rowid bigint NOT NULL REFERENCES {kind} (rowid),
                emb vector NOT NULL
            )""",
            f"CREATE INDEX ix_{kind}_vector_owner ON {kind}_vector (owner_rowid)",
        )
    ),
]

# Full-text postings: one row per (lexeme, row) of each ``search`` column, with the lexeme's
# occurrences per weight (A..D, as setweight marks the columns) and the row's length (its distinct
# lexemes, fts.length). GIN keeps no term frequencies, so BM25 over the GIN index reads the
# tsvector of every matching row; over these it is an index-only aggregate of the query terms'
# postings, as FTS5 ranks from its own. Derived data: written by the triggers below in the
# transaction that writes the row (SECURITY DEFINER, so a role that may insert evidence needs no
# grant on the postings), rebuilt by :func:`posting_rebuild`. No foreign key: a check per posting
# would cost an index probe for each of a text's words. Lexemes compare in the C collation:
# equality is all a posting is looked up by, and byte comparison is the cheapest.
POSTING_KINDS = ("decision", "evidence")


def _posting_select(rows: str) -> str:
    """SQL selecting the postings of ``rows`` (a table, transition table or subquery with ``rowid``
    and ``search``)."""
    counts = ", ".join(f"cardinality(array_positions(p.weights, '{w}'))" for w in "ABCD")
    return (
        f"SELECT p.lexeme, r.rowid, {counts}, length(r.search) "
        f"FROM {rows} r CROSS JOIN LATERAL unnest(r.search) AS p"
    )


POSTINGS = [
    statement
    for kind in POSTING_KINDS
    for statement in (
        f"""CREATE TABLE {kind}_posting (
            term text COLLATE "C" NOT NULL,
            rowid bigint NOT NULL,
            a smallint NOT NULL,
            b smallint NOT NULL,
            c smallint NOT NULL,
            d smallint NOT NULL,
            length integer NOT NULL,
            PRIMARY KEY (term, rowid) INCLUDE (a, b, c, d, length)
        )""",
        # One statement per inserting statement (a COPY of many rows included).
        f"""CREATE FUNCTION ctx_{kind}_posting_add() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
           BEGIN
             INSERT INTO {kind}_posting (term, rowid, a, b, c, d, length) {_posting_select("added")};
             RETURN NULL;
           END $$""",
        f"""CREATE TRIGGER {kind}_posting_add AFTER INSERT ON {kind} REFERENCING NEW TABLE AS added
           FOR EACH STATEMENT EXECUTE FUNCTION ctx_{kind}_posting_add()""",
        # Only a sealed evidence text changes its words (to none); a decision's never change.
        f"""CREATE FUNCTION ctx_{kind}_posting_renew() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
           BEGIN
             DELETE FROM {kind}_posting WHERE rowid = NEW.rowid;
             INSERT INTO {kind}_posting (term, rowid, a, b, c, d, length)
               {_posting_select("(SELECT NEW.rowid, NEW.search)")};
             RETURN NULL;
           END $$""",
        f"""CREATE TRIGGER {kind}_posting_renew AFTER UPDATE ON {kind}
           FOR EACH ROW WHEN (OLD.search IS DISTINCT FROM NEW.search)
           EXECUTE FUNCTION ctx_{kind}_posting_renew()""",
    )
]


def posting_rebuild(kind: str) -> list[str]:
    """SQL that makes the postings of ``kind`` again from its rows (the tables' owner runs it, in
    one transaction)."""
    if kind not in POSTING_KINDS:
        raise ValueError(f"unknown posting kind {kind!r}")
    return [
        f"DELETE FROM {kind}_posting",
        f"INSERT INTO {kind}_posting (term, rowid, a, b, c, d, length) {_posting_select(kind)}",
    ]


# Appends one row at the chain's end. SECURITY INVOKER (the default), so the insert is held to
# the caller's privileges and row-level policies: an agent can only append an agent's act.
AUDIT_APPEND = f"""CREATE FUNCTION ctx_audit_append(at text, actor text, action text, target text,
                                        before text, after text)
       RETURNS audit LANGUAGE plpgsql AS $$
       #variable_conflict use_variable
       DECLARE
         next_seq bigint;
         prev text;
         appended audit;
       BEGIN
         PERFORM pg_advisory_xact_lock({_AUDIT_LOCK_KEY});
         SELECT a.seq + 1, a.hash INTO next_seq, prev FROM audit a ORDER BY a.seq DESC LIMIT 1;
         next_seq := coalesce(next_seq, 1);
         prev := coalesce(prev, '{GENESIS_HASH}');
         INSERT INTO audit (seq, at, actor, action, target, before, after, prev_hash, hash)
         VALUES (next_seq, at, actor, action, target, before, after, prev,
                 ctx_audit_hash(prev, next_seq, at, actor, action, target, before, after))
         RETURNING * INTO appended;
         RETURN appended;
       END $$"""

# What a live reader polls or listens for: every statement that writes a ctx table bumps one
# counter row and notifies channel ``ctx_changes`` (with the table's name), both taking effect
# when the writing transaction commits, never before (a sequence would change at nextval, before
# the rows are visible). SECURITY DEFINER so that roles which may not update the counter still bump
# it; its search_path is pinned like every ctx function's. Writers already queue on the store's
# writer lock, so the counter row adds no wait of its own.
CHANGE_CHANNEL = "ctx_changes"
CHANGED_TABLES = (
    "meta",
    "evidence",
    "proposal",
    "proposal_evidence",
    "decision",
    "decision_evidence",
    "supersession",
    "audit",
    "entity",
    "entity_mention",
    "decision_conflict",
    *(f"{kind}_vector" for kind in VECTOR_KINDS),
)
CHANGE_SIGNAL = [
    """CREATE TABLE ctx_change (
        one boolean NOT NULL PRIMARY KEY DEFAULT true CHECK (one),
        version bigint NOT NULL
    )""",
    "INSERT INTO ctx_change (version) VALUES (0)",
    f"""CREATE FUNCTION ctx_changed() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
       BEGIN
         UPDATE ctx_change SET version = version + 1;
         PERFORM pg_notify('{CHANGE_CHANNEL}', TG_TABLE_NAME);
         RETURN NULL;
       END $$""",
    *(
        f"""CREATE TRIGGER {table}_changed AFTER INSERT OR UPDATE OR DELETE ON {table}
           FOR EACH STATEMENT EXECUTE FUNCTION ctx_changed()"""
        for table in CHANGED_TABLES
    ),
]

# The functions name tables unqualified, and a session's temporary schema comes first in any
# search_path that does not list it: a login could shadow ``audit`` with a temporary table of its
# own and make the chain's end look like anything. Each ctx function therefore resolves names in
# the schema it was created in, with pg_temp last.
PIN_SEARCH_PATH = """DO $$
   DECLARE
     fn regprocedure;
   BEGIN
     FOR fn IN SELECT oid::regprocedure FROM pg_proc
               WHERE pronamespace = current_schema()::regnamespace AND proname LIKE 'ctx\\_%' LOOP
       EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', fn, current_schema());
     END LOOP;
   END $$"""

# The whole schema, in order: what a migration to head runs, in one transaction.
STATEMENTS = [
    *EXTENSIONS,
    *TEXT_SEARCH_STATEMENTS,
    *FUNCTIONS,
    *TABLES,
    *POSTINGS,
    AUDIT_APPEND,
    *CHANGE_SIGNAL,
    PIN_SEARCH_PATH,
]


# Revision p003: SQLite's decision_no_overlap trigger, predicate for predicate, so that a window
# closed the moment it opened ([t, t), empty to the exclusion constraint, which lets it through) is
# refused where SQLite refuses it, and a store valid here can always be copied to SQLite.
# The trigger reads the decisions committed before it runs. ctx's writers insert under the store's
# writer lock, so none of theirs is missed; a raw SQL writer may not take that lock, so the trigger
# takes a lock of its own on the decision table before reading (as the supersession check does),
# held to the end of the transaction: a second insert at the same moment waits for the first to
# commit and then sees it. That holds under READ COMMITTED, where each statement reads afresh; a
# REPEATABLE READ or SERIALIZABLE writer reads its transaction's first snapshot and can still miss a
# concurrent row, and for those the exclusion constraint (kept from p001, and checked against
# uncommitted rows) refuses every overlap but one involving an empty window.
P003_STATEMENTS = [
    f"""CREATE FUNCTION ctx_decision_no_overlap() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         PERFORM pg_advisory_xact_lock('decision'::regclass::oid::bigint);
         IF EXISTS (
           SELECT 1 FROM decision d WHERE d.subject = NEW.subject
             AND (d.valid_until IS NULL OR d.valid_until > NEW.valid_from)
             AND (NEW.valid_until IS NULL OR NEW.valid_until > d.valid_from)) THEN
           RAISE EXCEPTION 'validity windows of one subject must not overlap' {_REFUSED};
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER decision_windows_apart BEFORE INSERT ON decision
       FOR EACH ROW EXECUTE FUNCTION ctx_decision_no_overlap()""",
    PIN_SEARCH_PATH,
]


# The KNN index of each kind's vectors (created by vector_statements).
VECTOR_INDEXES = {kind: f"ix_{kind}_vector_knn" for kind in VECTOR_KINDS}


def vector_statements(dim: int) -> list[str]:
    """SQL that fixes the vector columns at ``dim`` dimensions and indexes them for KNN.

    The index is HNSW over the vectors as ``halfvec`` (cosine distance), and the candidates it
    yields are rescored exactly against ``emb`` (:meth:`PostgresIndex.nearest`). Measured at 10k
    decisions + 100k evidence (bench/pg_bench.py --variants, 2 cores): KNN of 100 over the evidence
    took 3.9 ms with halfvec and 6.1 ms over the full vectors, both finding the exact top 10
    (recall 1.000); over the sign bits (binary_quantize, Hamming; SQLite's layout) it took 1.9 ms
    but found only 0.92 of the exact top 10, below the 0.97 asked of it. Run by the tables'
    owner, when the embedding model is chosen and before any vector is written.
    """
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= MAX_VECTOR_DIM:
        raise ValueError(f"a vector dimension is an integer from 1 to {MAX_VECTOR_DIM}, not {dim!r}")
    return [
        statement
        for kind in VECTOR_KINDS
        for statement in (
            f"ALTER TABLE {kind}_vector ALTER COLUMN emb TYPE vector({dim})",
            f"""CREATE INDEX {VECTOR_INDEXES[kind]} ON {kind}_vector
                USING hnsw ((emb::halfvec({dim})) halfvec_cosine_ops)""",
        )
    ]


def knn_order(dim: int) -> str:
    """The ORDER BY expression the KNN index of :func:`vector_statements` answers; ``%s`` is the
    query vector in pgvector's text form."""
    return f"emb::halfvec({int(dim)}) <=> %s::halfvec({int(dim)})"


# Revision p004: every act is bound to the login that does it. For any login other than the
# tables' owner (or a superuser), the database itself refuses a proposal whose proposer, a
# resolution whose resolver, a decision whose ratifier, or an audit row whose actor is not
# ``session_user``, and evidence whose agent names another login; an agent withdraws only its own
# proposals. ``session_user`` is the login the connection authenticated as: neither ``SET ROLE``
# nor a SECURITY DEFINER function changes it. A client that gives another name is refused, so no
# name a client claims is ever kept as the actor.
_NOT_ACTOR = "USING ERRCODE = 'insufficient_privilege'"
P004_STATEMENTS = [
    """CREATE FUNCTION ctx_is_owner() RETURNS boolean LANGUAGE sql STABLE AS $$
       SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = session_user AND rolsuper)
           OR pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = 'proposal'::regclass),
                          'MEMBER')
       $$""",
    f"""CREATE FUNCTION ctx_acts_as(claimed text, what text) RETURNS void LANGUAGE plpgsql AS $$
       BEGIN
         IF claimed IS DISTINCT FROM session_user::text AND NOT ctx_is_owner() THEN
           RAISE EXCEPTION 'login % acts as itself, not as the % %', session_user, what,
             quote_literal(coalesce(claimed, '')) {_NOT_ACTOR};
         END IF;
       END $$""",
    """CREATE FUNCTION ctx_proposal_acted() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'INSERT' THEN
           PERFORM ctx_acts_as(NEW.proposer, 'proposer');
         ELSIF NEW.status IS DISTINCT FROM OLD.status THEN
           PERFORM ctx_acts_as(NEW.resolved_by, 'resolver');
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER proposal_acted BEFORE INSERT OR UPDATE ON proposal
       FOR EACH ROW EXECUTE FUNCTION ctx_proposal_acted()""",
    """CREATE FUNCTION ctx_decision_acted() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         PERFORM ctx_acts_as(NEW.ratified_by, 'ratifier');
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER decision_acted BEFORE INSERT ON decision
       FOR EACH ROW EXECUTE FUNCTION ctx_decision_acted()""",
    """CREATE FUNCTION ctx_audit_acted() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         PERFORM ctx_acts_as(NEW.actor, 'actor');
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER audit_acted BEFORE INSERT ON audit
       FOR EACH ROW EXECUTE FUNCTION ctx_audit_acted()""",
    # Evidence's agent labels where a text came from ("claude-code" for a transcript's turns); it
    # may be any name but another login's.
    f"""CREATE FUNCTION ctx_evidence_acted() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NEW.agent IS DISTINCT FROM session_user::text AND NOT ctx_is_owner()
            AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = NEW.agent) THEN
           RAISE EXCEPTION 'login % acts as itself, and % is another login', session_user,
             quote_literal(NEW.agent) {_NOT_ACTOR};
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER evidence_acted BEFORE INSERT ON evidence
       FOR EACH ROW EXECUTE FUNCTION ctx_evidence_acted()""",
    "DROP POLICY proposal_agent_withdraws ON proposal",
    """CREATE POLICY proposal_agent_withdraws ON proposal FOR UPDATE TO ctx_agent
       USING (status = 'pending' AND proposer = session_user) WITH CHECK (status = 'withdrawn')""",
    PIN_SEARCH_PATH,
]


# Revision p005: the input rules of what a person ratifies, held by the database for every login
# but the tables' owner, so that raw SQL cannot queue what the facade would refuse. The facade's
# rules (kernel/text.py) stay the reference; these are the same rules in SQL where SQL can state
# them, and a strict stand-in where it cannot:
# - hidden characters (controls, bidi and format characters, line separators, invisible letters,
#   variation selectors but the emoji/text ones; a zero-width (non-)joiner beside ASCII or space);
# - a subject in its normal form (NFKC, lower case, dotted segments, no ASCII punctuation but
#   ``-`` and ``_``), of at most 200 characters, and not a look-alike of another subject: equal once
#   accents are taken off and the Cyrillic and Greek letters that look Latin are read as Latin (the
#   facade compares full TR39 skeletons);
# - the facade's size limits, names that are not blank, and a creation time within ten minutes of
#   the server's clock.
_LOOKALIKES = {
    "а": "a", "в": "b", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ү": "y",
    "α": "a", "β": "b", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "ɡ": "g", "ı": "i",
}  # fmt: skip
_LOOK_FROM = "".join(_LOOKALIKES)
_LOOK_TO = "".join(_LOOKALIKES.values())
_HIDDEN_CLASS = (
    "[\\x01-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u00ad\\u034f\\u061c\\u115f\\u1160\\u180e\\u200b\\u200e\\u200f"
    "\\u2028-\\u202e\\u2060-\\u206f\\u3164\\ufe00-\\ufe0d\\ufeff\\uffa0\\ufff9-\\ufffb"
    "\\U000e0000-\\U000e007f\\U000e0100-\\U000e01ef]"
)
_LONELY_JOINER = "(^|[\\x01-\\x7f[:space:]])[\\u200c\\u200d]|[\\u200c\\u200d]($|[\\x01-\\x7f[:space:]])"
_ASCII_PUNCTUATION = "[\\x01-\\x2c\\x2f\\x3a-\\x40\\x5b-\\x5e\\x60\\x7b-\\x7f[:space:]]"
P005_STATEMENTS = [
    f"""CREATE FUNCTION ctx_hidden(value text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
       SELECT value ~ '{_HIDDEN_CLASS}' OR value ~ '{_LONELY_JOINER}'
       $$""",
    f"""CREATE FUNCTION ctx_lookalike(subject text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
       SELECT translate(regexp_replace(normalize(subject, NFD), '[\\u0300-\\u036f]', '', 'g'),
                        '{_LOOK_FROM}', '{_LOOK_TO}')
       $$""",
    f"""CREATE FUNCTION ctx_check_text(value text, what text, most integer) RETURNS void
       LANGUAGE plpgsql AS $$
       BEGIN
         IF value IS NULL THEN
           RETURN;
         END IF;
         IF char_length(value) > most THEN
           RAISE EXCEPTION '% is longer than % characters', what, most {_REFUSED};
         END IF;
         IF btrim(value) = '' THEN
           RAISE EXCEPTION '% is blank', what {_REFUSED};
         END IF;
         IF ctx_hidden(value) THEN
           RAISE EXCEPTION '% holds a hidden or terminal-control character', what {_REFUSED};
         END IF;
       END $$""",
    f"""CREATE FUNCTION ctx_check_subject(subject text) RETURNS void LANGUAGE plpgsql AS $$
       DECLARE
         other text;
       BEGIN
         PERFORM ctx_check_text(subject, 'subject', 200);
         IF subject <> lower(normalize(subject, NFKC)) OR subject ~ '{_ASCII_PUNCTUATION}'
            OR subject !~ '^[^.]+([.][^.]+)*$' OR subject ~ '(^|[.])[-_]*([.]|$)' THEN
           RAISE EXCEPTION 'subject % is not in its normal form (dotted words, lower case)',
             quote_literal(subject) {_REFUSED};
         END IF;
         IF EXISTS (SELECT 1 FROM decision WHERE decision.subject = $1)
            OR EXISTS (SELECT 1 FROM proposal WHERE proposal.subject = $1) THEN
           RETURN;
         END IF;
         SELECT s INTO other FROM (SELECT decision.subject AS s FROM decision
                                   UNION SELECT proposal.subject FROM proposal) known
          WHERE ctx_lookalike(s) = ctx_lookalike($1) LIMIT 1;
         IF other IS NOT NULL THEN
           RAISE EXCEPTION 'subject % looks like the existing subject %', quote_literal(subject),
             quote_literal(other) {_REFUSED};
         END IF;
       END $$""",
    f"""CREATE FUNCTION ctx_check_now(at timestamptz, what text) RETURNS void LANGUAGE plpgsql AS $$
       BEGIN
         IF at IS NULL OR at < now() - interval '10 minutes' OR at > now() + interval '10 minutes' THEN
           RAISE EXCEPTION '% must be the time of writing (within ten minutes of the server clock)',
             what {_REFUSED};
         END IF;
       END $$""",
    # What a person reads before ratifying, in a proposal and in the decision made of it.
    """CREATE FUNCTION ctx_check_ratified(subject text, decision text, rationale text, title text)
       RETURNS void LANGUAGE plpgsql AS $$
       BEGIN
         PERFORM ctx_check_subject(subject);
         PERFORM ctx_check_text(decision, 'decision', 8000);
         PERFORM ctx_check_text(rationale, 'rationale', 32000);
         PERFORM ctx_check_text(title, 'title', 500);
       END $$""",
    """CREATE FUNCTION ctx_proposal_checked() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF ctx_is_owner() THEN
           RETURN NEW;
         END IF;
         IF TG_OP = 'INSERT' THEN
           PERFORM ctx_check_ratified(NEW.subject, NEW.decision, NEW.rationale, NEW.title);
           PERFORM ctx_check_text(NEW.proposer, 'proposer', 200);
           PERFORM ctx_check_text(NEW.session, 'session', 200);
           PERFORM ctx_check_now(NEW.created_at, 'created_at');
         ELSE
           PERFORM ctx_check_text(NEW.resolution_note, 'resolution note', 4000);
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER proposal_checked BEFORE INSERT OR UPDATE ON proposal
       FOR EACH ROW EXECUTE FUNCTION ctx_proposal_checked()""",
    """CREATE FUNCTION ctx_decision_checked() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF ctx_is_owner() THEN
           RETURN NEW;
         END IF;
         PERFORM ctx_check_ratified(NEW.subject, NEW.decision, NEW.rationale, NEW.title);
         PERFORM ctx_check_now(NEW.ratified_at, 'ratified_at');
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER decision_checked BEFORE INSERT ON decision
       FOR EACH ROW EXECUTE FUNCTION ctx_decision_checked()""",
    """CREATE FUNCTION ctx_evidence_checked() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF ctx_is_owner() THEN
           RETURN NEW;
         END IF;
         PERFORM ctx_check_text(NEW.agent, 'agent', 200);
         PERFORM ctx_check_text(NEW.session, 'session', 200);
         PERFORM ctx_check_now(NEW.created_at, 'created_at');
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER evidence_checked BEFORE INSERT ON evidence
       FOR EACH ROW EXECUTE FUNCTION ctx_evidence_checked()""",
    # Entity mentions steer recall's entity ranking. An agent's login adds them only for the
    # evidence it is logging (an evidence row written in the last ten minutes), never for a decision
    # or older evidence; a reviewer's ratification adds its decision's.
    "ALTER TABLE entity_mention ENABLE ROW LEVEL SECURITY",
    "CREATE POLICY entity_mention_read ON entity_mention FOR SELECT TO ctx_agent, ctx_reviewer, ctx_auditor "
    "USING (true)",
    """CREATE POLICY entity_mention_agent_adds ON entity_mention FOR INSERT TO ctx_agent
       WITH CHECK (item LIKE 'ev\\_%' AND EXISTS (
         SELECT 1 FROM evidence e WHERE e.id = item AND e.created_at > now() - interval '10 minutes'))""",
    """CREATE POLICY entity_mention_reviewer_adds ON entity_mention FOR INSERT TO ctx_reviewer
       WITH CHECK (true)""",
    PIN_SEARCH_PATH,
]


# Revision p006: the server's look-alike check uses the facade's whole table, and decisions'
# vectors are a person's to write.
# - ``ctx_lookalike_char`` holds each letter, digit or mark whose look-alike key is not itself
#   (kernel/store/postgres/lookalikes.txt, generated from the facade's TR39 key); ``ctx_lookalike``
#   decomposes a subject, replaces each character by its key and composes again, in place of p005's
#   34-letter stand-in. Only the owner writes the table; verify compares it with the file.
# - A decision's vector decides where it ranks in every agent's recall and injection. An agent's
#   login no longer inserts them (a reviewer's or the owner's process embeds decisions); an agent
#   still embeds evidence.
_LOOKALIKE_FUNCTION = (
    "CREATE OR REPLACE FUNCTION ctx_lookalike(subject text) RETURNS text LANGUAGE sql STABLE AS $$"
    """
       SELECT CASE WHEN subject ~ '^[\x01-\x7f]*$' THEN subject ELSE normalize(coalesce(
         (SELECT string_agg(coalesce(l.target, c.ch), '' ORDER BY c.i)
            FROM regexp_split_to_table(normalize(subject, NFD), '') WITH ORDINALITY AS c (ch, i)
            LEFT JOIN ctx_lookalike_char l ON l.source = c.ch), ''), NFC) END
       $$"""
)


@cache
def p006_statements() -> tuple[str, ...]:
    """Revision p006's statements, made on first use: the table's INSERT is built from 8,096 rows
    of lookalikes.txt (about 20 ms), which only a migration or a verify needs, never a command
    that reads or writes records."""
    return (
        "CREATE TABLE ctx_lookalike_char (source text PRIMARY KEY, target text NOT NULL)",
        lookalikes.insert_statement(),
        "GRANT SELECT ON ctx_lookalike_char TO ctx_agent, ctx_reviewer, ctx_auditor",
        _LOOKALIKE_FUNCTION,
        "REVOKE INSERT ON decision_vector FROM ctx_agent",
        PIN_SEARCH_PATH,
    )


# Revision p007: records are found by the end of their id, the handle a person types
# (``ctx_kernel.kernel.ids.handles``): one index per table on an id's last four characters.
P007_STATEMENTS = [
    "CREATE INDEX ix_evidence_tail ON evidence (substr(id, 26, 4))",
    "CREATE INDEX ix_proposal_tail ON proposal (substr(id, 26, 4))",
    "CREATE INDEX ix_decision_tail ON decision (substr(id, 26, 4))",
]


# Revision p008: what decisions govern in the repository (kernel/facts/links.py) and the snapshots
# taken when a person ratifies or re-confirms one (kernel/facts/stale.py). A proposal's links are
# written by its proposer with the proposal, while it is pending, and never change; a snapshot is
# a person's act: only a reviewer may insert one, bound to its login like a ratification, and no
# row of either table is ever updated or deleted. An agent's audit rows stay limited to its own
# acts (p001), so it cannot log a confirmation either.
# The tables p008 adds, which bump the change counter like p001's (CHANGED_TABLES is p001's own).
P008_CHANGED_TABLES = ("proposal_link", "decision_snapshot")
P008_STATEMENTS = [
    """CREATE TABLE proposal_link (
        proposal_id text NOT NULL REFERENCES proposal (id),
        pattern text NOT NULL,
        PRIMARY KEY (proposal_id, pattern)
    )""",
    *_forbid("proposal_link", "UPDATE OR DELETE", "links of a proposal never change"),
    f"""CREATE FUNCTION ctx_proposal_link_added() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NOT ctx_is_owner() AND NOT EXISTS (
           SELECT 1 FROM proposal p WHERE p.id = NEW.proposal_id AND p.status = 'pending'
             AND p.proposer = session_user::text) THEN
           RAISE EXCEPTION 'login % links only its own pending proposals', session_user {_NOT_ACTOR};
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER proposal_link_added BEFORE INSERT ON proposal_link
       FOR EACH ROW EXECUTE FUNCTION ctx_proposal_link_added()""",
    """CREATE TABLE decision_snapshot (
        decision_id text NOT NULL REFERENCES decision (id),
        taken_at text NOT NULL,
        taken_by text NOT NULL,
        act text NOT NULL CHECK (act IN ('ratified', 'reconfirmed')),
        git_commit text,
        links text NOT NULL DEFAULT '[]',
        review_by text,
        review_every integer CHECK (review_every IS NULL OR review_every > 0),
        PRIMARY KEY (decision_id, taken_at)
    )""",
    *_forbid("decision_snapshot", "UPDATE OR DELETE", "snapshots are append-only"),
    """CREATE FUNCTION ctx_snapshot_acted() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         PERFORM ctx_acts_as(NEW.taken_by, 'confirmer');
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER decision_snapshot_acted BEFORE INSERT ON decision_snapshot
       FOR EACH ROW EXECUTE FUNCTION ctx_snapshot_acted()""",
    *(
        f"""CREATE TRIGGER {table}_changed AFTER INSERT OR UPDATE OR DELETE ON {table}
           FOR EACH STATEMENT EXECUTE FUNCTION ctx_changed()"""
        for table in P008_CHANGED_TABLES
    ),
    "GRANT SELECT ON proposal_link, decision_snapshot TO ctx_agent, ctx_reviewer, ctx_auditor",
    "GRANT INSERT ON proposal_link TO ctx_agent, ctx_reviewer",
    "GRANT INSERT ON decision_snapshot TO ctx_reviewer",
    PIN_SEARCH_PATH,
]


# Tables whose writes bump no change counter: the served log grows with every answer an agent
# reads, and a live reader (the review app) must not redraw for each one.
UNSIGNALLED_TABLES = ("served", "served_fold")

# Revision p009: the served log (what each agent was told) and its signed daily folds, as SQLite's
# m010_served, with what only a server can hold: an entry's agent is the login that writes it (for
# every login but the owner), an agent's login may append entries and never change or delete one,
# and only a reviewer (or the owner) writes a fold and deletes the entries a fold covers.
P009_STATEMENTS = [
    """CREATE TABLE served (
        seq integer PRIMARY KEY,
        at text NOT NULL,
        host text NOT NULL,
        agent text NOT NULL,
        session text,
        operation text NOT NULL,
        request text NOT NULL,
        items text NOT NULL,
        missed integer NOT NULL DEFAULT 0,
        prev_hash text NOT NULL,
        hash text NOT NULL UNIQUE
    )""",
    "CREATE INDEX ix_served_session ON served (session, seq)",
    "CREATE INDEX ix_served_agent ON served (agent, at)",
    """CREATE TABLE served_fold (
        day text PRIMARY KEY,
        first_seq integer NOT NULL,
        last_seq integer NOT NULL,
        entries integer NOT NULL,
        items integer NOT NULL,
        merkle_root text NOT NULL,
        prev_hash text NOT NULL,
        last_hash text NOT NULL,
        folded_at text NOT NULL,
        key_id text NOT NULL,
        signature text NOT NULL
    )""",
    f"""CREATE FUNCTION ctx_served_linked() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         last_seq integer;
         last_hash text;
       BEGIN
         PERFORM pg_advisory_xact_lock('served'::regclass::oid::bigint);
         PERFORM ctx_acts_as(NEW.agent, 'agent');
         SELECT s.seq, s.hash INTO last_seq, last_hash FROM served s ORDER BY s.seq DESC LIMIT 1;
         IF last_seq IS NULL THEN
           SELECT f.last_seq, f.last_hash INTO last_seq, last_hash
             FROM served_fold f ORDER BY f.last_seq DESC LIMIT 1;
         END IF;
         IF NEW.seq IS DISTINCT FROM coalesce(last_seq, 0) + 1
            OR NEW.prev_hash IS DISTINCT FROM coalesce(last_hash, '{GENESIS_HASH}') THEN
           RAISE EXCEPTION 'served entry does not link to the previous entry' {_REFUSED};
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER served_linked BEFORE INSERT ON served
       FOR EACH ROW EXECUTE FUNCTION ctx_served_linked()""",
    f"""CREATE FUNCTION ctx_served_kept() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'UPDATE' THEN
           RAISE EXCEPTION 'the served log is append-only' {_REFUSED};
         END IF;
         IF NOT EXISTS (SELECT 1 FROM served_fold f WHERE OLD.seq BETWEEN f.first_seq AND f.last_seq) THEN
           RAISE EXCEPTION 'a served entry is deleted only once a signed fold covers it' {_REFUSED};
         END IF;
         RETURN OLD;
       END $$""",
    """CREATE TRIGGER served_kept BEFORE UPDATE OR DELETE ON served
       FOR EACH ROW EXECUTE FUNCTION ctx_served_kept()""",
    f"""CREATE FUNCTION ctx_served_fold_kept() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         RAISE EXCEPTION 'served folds are append-only' {_REFUSED};
       END $$""",
    """CREATE TRIGGER served_fold_kept BEFORE UPDATE OR DELETE ON served_fold
       FOR EACH ROW EXECUTE FUNCTION ctx_served_fold_kept()""",
    "GRANT SELECT ON served, served_fold TO ctx_agent, ctx_reviewer, ctx_auditor",
    "GRANT INSERT ON served TO ctx_agent, ctx_reviewer",
    "GRANT INSERT ON served_fold TO ctx_reviewer",
    "GRANT DELETE ON served TO ctx_reviewer",
    PIN_SEARCH_PATH,
]


# Revision p010: a proposal's links are written with it, before the audit row that logs them, as
# SQLite's m011_links_logged. ctx inserts them in the transaction that queues the proposal, ahead of
# its ``proposal.created`` or ``proposal.imported`` row; a link inserted once that row exists (by the
# agent's own login, which p008 lets link its own pending proposals, or by any other) is refused,
# so a ratification never snapshots a link the proposer did not name. The index finds a target's
# audit rows without reading the whole log.
P010_STATEMENTS = [
    "CREATE INDEX ix_audit_target ON audit (target)",
    f"""CREATE FUNCTION ctx_proposal_link_unlogged() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF EXISTS (SELECT 1 FROM audit a WHERE a.target = NEW.proposal_id
                      AND a.action IN ('proposal.created', 'proposal.imported')) THEN
           RAISE EXCEPTION 'a proposal''s links are written with it, never added later' {_REFUSED};
         END IF;
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER proposal_link_before_logged BEFORE INSERT ON proposal_link
       FOR EACH ROW EXECUTE FUNCTION ctx_proposal_link_unlogged()""",
    PIN_SEARCH_PATH,
]


# Revision p011: a proposal may ask a person to re-confirm a current decision (SQLite's
# m012_reconfirm_requests). The request is an ordinary proposal, bound to its proposer's login
# (p004); carrying it out is a reviewer's snapshot and audit row (p008), so no rule is new.
P011_STATEMENTS = [
    "ALTER TABLE proposal ADD COLUMN reconfirms text REFERENCES decision (id)",
]
