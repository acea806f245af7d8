"""m010_served: what each agent was served, as a hash chain of its own.

Revision ID: m010_served
Revises: m009_staleness

``served`` holds one entry per answer that gave an agent stored content: when, through which
host, agent and session, a digest of the request, and the ids and content digests of the
decisions (with the validity the answer gave them) and evidence it returned, never their texts.
Each entry's hash covers the previous entry's hash and its own fields, like the audit log's.
``served_fold`` holds the signed daily digests that replace entries past the retention period:
an entry is deleted only once a fold covers it, and neither table is ever updated.
"""

from alembic import op

revision = "m010_served"
down_revision = "m009_staleness"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 10

GENESIS = "0" * 64

STATEMENTS = [
    """CREATE TABLE served (
        seq INTEGER NOT NULL,
        at TEXT NOT NULL,
        host TEXT NOT NULL,
        agent TEXT NOT NULL,
        session TEXT,
        operation TEXT NOT NULL,
        request TEXT NOT NULL,
        items TEXT NOT NULL,
        missed INTEGER NOT NULL DEFAULT 0,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL,
        PRIMARY KEY (seq),
        UNIQUE (hash)
    )""",
    "CREATE INDEX ix_served_session ON served (session, seq)",
    "CREATE INDEX ix_served_agent ON served (agent, at)",
    """CREATE TABLE served_fold (
        day TEXT NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        entries INTEGER NOT NULL,
        items INTEGER NOT NULL,
        merkle_root TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        last_hash TEXT NOT NULL,
        folded_at TEXT NOT NULL,
        key_id TEXT NOT NULL,
        signature TEXT NOT NULL,
        PRIMARY KEY (day)
    )""",
    f"""CREATE TRIGGER served_linked BEFORE INSERT ON served
       WHEN NEW.prev_hash IS NOT coalesce(
         (SELECT hash FROM served ORDER BY seq DESC LIMIT 1),
         (SELECT last_hash FROM served_fold ORDER BY last_seq DESC LIMIT 1),
         '{GENESIS}')
       BEGIN SELECT RAISE(ABORT, 'served entry does not link to the previous entry'); END""",
    """CREATE TRIGGER served_no_update BEFORE UPDATE ON served
       BEGIN SELECT RAISE(ABORT, 'the served log is append-only'); END""",
    """CREATE TRIGGER served_delete_folded BEFORE DELETE ON served
       WHEN NOT EXISTS (SELECT 1 FROM served_fold WHERE OLD.seq BETWEEN first_seq AND last_seq)
       BEGIN SELECT RAISE(ABORT, 'a served entry is deleted only once a signed fold covers it'); END""",
    """CREATE TRIGGER served_fold_no_update BEFORE UPDATE ON served_fold
       BEGIN SELECT RAISE(ABORT, 'served folds are append-only'); END""",
    """CREATE TRIGGER served_fold_no_delete BEFORE DELETE ON served_fold
       BEGIN SELECT RAISE(ABORT, 'served folds are append-only'); END""",
]


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
