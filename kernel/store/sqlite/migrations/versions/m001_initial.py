"""m001_initial: evidence vault, proposal queue, decision kernel, supersession links, audit chain.

Revision ID: m001_initial
Revises:
"""

from alembic import op

revision = "m001_initial"
down_revision = None
branch_labels = None
depends_on = None
SCHEMA_VERSION = 1

STATEMENTS = [
    """CREATE TABLE meta (
        key TEXT NOT NULL PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    # Evidence vault: append-only, deduplicated by the sha256 of its text.
    """CREATE TABLE evidence (
        id TEXT NOT NULL PRIMARY KEY,
        content_hash TEXT NOT NULL UNIQUE,
        text TEXT NOT NULL,
        kind TEXT NOT NULL,
        agent TEXT,
        session TEXT,
        tags TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL
    )""",
    """CREATE TRIGGER evidence_no_update BEFORE UPDATE ON evidence
       BEGIN SELECT RAISE(ABORT, 'evidence is append-only'); END""",
    """CREATE TRIGGER evidence_no_delete BEFORE DELETE ON evidence
       BEGIN SELECT RAISE(ABORT, 'evidence is append-only'); END""",
    # Proposal queue: only the status and resolution fields change, once, from pending.
    """CREATE TABLE proposal (
        id TEXT NOT NULL PRIMARY KEY,
        subject TEXT NOT NULL,
        decision TEXT NOT NULL,
        rationale TEXT,
        proposer TEXT NOT NULL,
        session TEXT,
        created_at TEXT NOT NULL,
        supersedes TEXT NOT NULL DEFAULT '[]',
        explicit_supersedes TEXT NOT NULL DEFAULT '[]',
        near_duplicate_of TEXT REFERENCES proposal (id),
        near_duplicate_score REAL,
        status TEXT NOT NULL DEFAULT 'pending'
            CHECK (status IN ('pending', 'ratified', 'rejected', 'withdrawn')),
        resolved_at TEXT,
        resolved_by TEXT,
        resolution_note TEXT,
        decision_id TEXT
    )""",
    "CREATE INDEX ix_proposal_status ON proposal (status, created_at)",
    "CREATE INDEX ix_proposal_subject ON proposal (subject)",
    """CREATE TRIGGER proposal_resolve_once BEFORE UPDATE ON proposal
       WHEN OLD.status <> 'pending' OR NEW.status = 'pending'
         OR NEW.id IS NOT OLD.id OR NEW.subject IS NOT OLD.subject
         OR NEW.decision IS NOT OLD.decision OR NEW.rationale IS NOT OLD.rationale
         OR NEW.proposer IS NOT OLD.proposer OR NEW.session IS NOT OLD.session
         OR NEW.created_at IS NOT OLD.created_at OR NEW.supersedes IS NOT OLD.supersedes
         OR NEW.explicit_supersedes IS NOT OLD.explicit_supersedes
         OR NEW.near_duplicate_of IS NOT OLD.near_duplicate_of
         OR NEW.near_duplicate_score IS NOT OLD.near_duplicate_score
       BEGIN SELECT RAISE(ABORT, 'a proposal is resolved once, from pending, and never edited'); END""",
    """CREATE TRIGGER proposal_no_delete BEFORE DELETE ON proposal
       BEGIN SELECT RAISE(ABORT, 'proposals are kept for audit'); END""",
    """CREATE TABLE proposal_evidence (
        proposal_id TEXT NOT NULL REFERENCES proposal (id),
        evidence_id TEXT NOT NULL REFERENCES evidence (id),
        PRIMARY KEY (proposal_id, evidence_id)
    )""",
    # Decision kernel: a row's window closes once; nothing else ever changes.
    """CREATE TABLE decision (
        id TEXT NOT NULL PRIMARY KEY,
        subject TEXT NOT NULL,
        decision TEXT NOT NULL,
        rationale TEXT,
        valid_from TEXT NOT NULL,
        valid_until TEXT,
        ratified_by TEXT NOT NULL,
        ratified_at TEXT NOT NULL,
        proposal_id TEXT REFERENCES proposal (id),
        amended INTEGER NOT NULL DEFAULT 0,
        closed_by TEXT CHECK (closed_by IN ('superseded', 'retired')),
        close_reason TEXT,
        CHECK (valid_until IS NULL OR valid_until >= valid_from),
        CHECK ((valid_until IS NULL) = (closed_by IS NULL))
    )""",
    # At most one current decision per subject.
    "CREATE UNIQUE INDEX ux_decision_current ON decision (subject) WHERE valid_until IS NULL",
    "CREATE INDEX ix_decision_subject ON decision (subject, valid_from)",
    """CREATE TRIGGER decision_no_overlap BEFORE INSERT ON decision
       WHEN EXISTS (
         SELECT 1 FROM decision d WHERE d.subject = NEW.subject
           AND (d.valid_until IS NULL OR d.valid_until > NEW.valid_from)
           AND (NEW.valid_until IS NULL OR NEW.valid_until > d.valid_from))
       BEGIN SELECT RAISE(ABORT, 'validity windows of one subject must not overlap'); END""",
    """CREATE TRIGGER decision_close_once BEFORE UPDATE ON decision
       WHEN OLD.valid_until IS NOT NULL OR NEW.valid_until IS NULL
         OR NEW.valid_until < OLD.valid_from
         OR NEW.id IS NOT OLD.id OR NEW.subject IS NOT OLD.subject
         OR NEW.decision IS NOT OLD.decision OR NEW.rationale IS NOT OLD.rationale
         OR NEW.valid_from IS NOT OLD.valid_from OR NEW.ratified_by IS NOT OLD.ratified_by
         OR NEW.ratified_at IS NOT OLD.ratified_at OR NEW.proposal_id IS NOT OLD.proposal_id
         OR NEW.amended IS NOT OLD.amended
       BEGIN SELECT RAISE(ABORT, 'a decision only has its window closed, once'); END""",
    """CREATE TRIGGER decision_no_delete BEFORE DELETE ON decision
       BEGIN SELECT RAISE(ABORT, 'decisions are never deleted'); END""",
    """CREATE TABLE decision_evidence (
        decision_id TEXT NOT NULL REFERENCES decision (id),
        evidence_id TEXT NOT NULL REFERENCES evidence (id),
        PRIMARY KEY (decision_id, evidence_id)
    )""",
    # Supersession links: many-to-many, across subjects; a successor never predates what it replaces.
    """CREATE TABLE supersession (
        old_id TEXT NOT NULL REFERENCES decision (id),
        new_id TEXT NOT NULL REFERENCES decision (id),
        created_at TEXT NOT NULL,
        PRIMARY KEY (old_id, new_id),
        CHECK (old_id <> new_id)
    )""",
    "CREATE INDEX ix_supersession_new ON supersession (new_id)",
    """CREATE TRIGGER supersession_forward_in_time BEFORE INSERT ON supersession
       WHEN (SELECT valid_from FROM decision WHERE id = NEW.new_id)
          < (SELECT valid_from FROM decision WHERE id = NEW.old_id)
       BEGIN SELECT RAISE(ABORT, 'a successor cannot start before the decision it supersedes'); END""",
    """CREATE TRIGGER supersession_no_update BEFORE UPDATE ON supersession
       BEGIN SELECT RAISE(ABORT, 'supersession links are permanent'); END""",
    """CREATE TRIGGER supersession_no_delete BEFORE DELETE ON supersession
       BEGIN SELECT RAISE(ABORT, 'supersession links are permanent'); END""",
    # Audit log: a hash chain; each row must link to the row before it.
    """CREATE TABLE audit (
        seq INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        before TEXT,
        after TEXT,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE
    )""",
    """CREATE TRIGGER audit_linked BEFORE INSERT ON audit
       WHEN NEW.prev_hash IS NOT coalesce(
         (SELECT hash FROM audit ORDER BY seq DESC LIMIT 1),
         '0000000000000000000000000000000000000000000000000000000000000000')
       BEGIN SELECT RAISE(ABORT, 'audit row does not link to the previous row'); END""",
    """CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
       BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END""",
    """CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
       BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END""",
]


def upgrade() -> None:
    for statement in STATEMENTS:
        op.execute(statement)
    op.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
