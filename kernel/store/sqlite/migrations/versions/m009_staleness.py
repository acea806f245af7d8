"""m009_staleness: what a decision governs in the repository, and when a person last confirmed it.

Revision ID: m009_staleness
Revises: m008_handles

``proposal_link`` holds the paths and globs a proposal says its decision governs (relative to the
repository root); the proposer writes them with the proposal and they never change.
``decision_snapshot`` holds each time a person ratified or re-confirmed a decision: the repository's
commit then, each link with the digest of what it matched (JSON text), and the review date. The
newest snapshot of a decision is what its staleness is computed against; snapshots are append-only.
"""

from alembic import op

revision = "m009_staleness"
down_revision = "m008_handles"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 9

STATEMENTS = [
    """CREATE TABLE proposal_link (
        proposal_id TEXT NOT NULL REFERENCES proposal (id),
        pattern TEXT NOT NULL,
        PRIMARY KEY (proposal_id, pattern)
    )""",
    """CREATE TRIGGER proposal_link_no_update BEFORE UPDATE ON proposal_link
       BEGIN SELECT RAISE(ABORT, 'a proposal''s links never change'); END""",
    """CREATE TRIGGER proposal_link_no_delete BEFORE DELETE ON proposal_link
       BEGIN SELECT RAISE(ABORT, 'a proposal''s links never change'); END""",
    """CREATE TABLE decision_snapshot (
        decision_id TEXT NOT NULL REFERENCES decision (id),
        taken_at TEXT NOT NULL,
        taken_by TEXT NOT NULL,
        act TEXT NOT NULL CHECK (act IN ('ratified', 'reconfirmed')),
        git_commit TEXT,
        links TEXT NOT NULL DEFAULT '[]',
        review_by TEXT,
        review_every INTEGER CHECK (review_every IS NULL OR review_every > 0),
        PRIMARY KEY (decision_id, taken_at)
    )""",
    """CREATE TRIGGER decision_snapshot_no_update BEFORE UPDATE ON decision_snapshot
       BEGIN SELECT RAISE(ABORT, 'snapshots are append-only'); END""",
    """CREATE TRIGGER decision_snapshot_no_delete BEFORE DELETE ON decision_snapshot
       BEGIN SELECT RAISE(ABORT, 'snapshots are append-only'); END""",
]


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
