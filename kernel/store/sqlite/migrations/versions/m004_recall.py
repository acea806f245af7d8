"""m004_recall: the entity index, conflicts and the exact vectors behind recall.

Revision ID: m004_recall
Revises: m003_sources

Both are derived from evidence and decisions, which stay untouched: entities are
re-extracted here for rows written before this migration; vectors are filled in
later by ``ctx reindex`` or by recall itself. The vec0 KNN tables depend on the
embedding model's dimension, so the store creates them when it first embeds.
"""

from alembic import op
from sqlalchemy import text

from ctx_kernel.kernel.language import entities

revision = "m004_recall"
down_revision = "m003_sources"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 4

STATEMENTS = [
    """CREATE TABLE entity (
         id INTEGER NOT NULL PRIMARY KEY,
         name TEXT NOT NULL UNIQUE
       )""",
    # item is a record id (ev_… or dc_…); mentions are never rewritten.
    """CREATE TABLE entity_mention (
         entity_id INTEGER NOT NULL REFERENCES entity (id),
         item TEXT NOT NULL,
         PRIMARY KEY (entity_id, item)
       ) WITHOUT ROWID""",
    "CREATE INDEX ix_entity_mention_item ON entity_mention (item)",
    # Opposite stances between decisions, found when the later one was ratified (one row per
    # direction); recall shows a pair when both hold at the moment asked about.
    """CREATE TABLE decision_conflict (
         decision_id TEXT NOT NULL REFERENCES decision (id),
         other_id TEXT NOT NULL REFERENCES decision (id),
         term TEXT NOT NULL,
         clause TEXT NOT NULL,
         other_clause TEXT NOT NULL,
         PRIMARY KEY (decision_id, other_id)
       ) WITHOUT ROWID""",
    # One row per embedded chunk: chunk_id = owner rowid * 16 + chunk number, so the KNN
    # table's rowids map back to owners without a join; emb is float32, normalised.
    """CREATE TABLE decision_vector (
         chunk_id INTEGER NOT NULL PRIMARY KEY,
         owner_rowid INTEGER NOT NULL,
         emb BLOB NOT NULL
       )""",
    "CREATE INDEX ix_decision_vector_owner ON decision_vector (owner_rowid)",
    """CREATE TABLE evidence_vector (
         chunk_id INTEGER NOT NULL PRIMARY KEY,
         owner_rowid INTEGER NOT NULL,
         emb BLOB NOT NULL
       )""",
    "CREATE INDEX ix_evidence_vector_owner ON evidence_vector (owner_rowid)",
]


def _index_existing() -> None:
    bind = op.get_bind()
    rows = [
        (row[0], entities.for_decision(row[1], row[2], row[3]))
        for row in bind.execute(text("SELECT id, subject, decision, rationale FROM decision"))
    ]
    rows += [
        (row[0], entities.extract(row[1])) for row in bind.execute(text("SELECT id, text FROM evidence"))
    ]
    for item, names in rows:
        for name in names:
            bind.execute(text("INSERT OR IGNORE INTO entity (name) VALUES (:n)"), {"n": name})
            bind.execute(
                text(
                    "INSERT OR IGNORE INTO entity_mention (entity_id, item) "
                    "SELECT id, :item FROM entity WHERE name = :n"
                ),
                {"n": name, "item": item},
            )


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)
    _index_existing()
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
