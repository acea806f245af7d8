"""SQLModel declarations of ctx's ordinary tables: the one place their columns are declared.

New migrations autogenerate their ordinary-table steps from these classes
(``python -m ctx_kernel.kernel.store.sqlite.migrate draft MESSAGE``); tests check that a migrated store
matches them exactly and that the evidence, proposal, decision and audit tables hold exactly
their records' fields, by which the store reads rows (``kernel/store/rows.py``). FTS5 and vec0
virtual tables, triggers and partial indexes are written as SQL in the migrations. The runtime
store does not import this module: SQLModel costs most of a second to import, and agents call
``ctx log`` / ``ctx propose`` on a hot path.

The same classes declare PostgreSQL's columns: where its type differs from SQLite's, the column
carries a PostgreSQL variant (times as ``timestamptz``, lists as ``jsonb``, flags as ``boolean``,
vectors as pgvector's ``vector``). A test checks a server's tables after every PostgreSQL revision
against them (``kernel/store/postgres/declared.py``, which also lists what PostgreSQL holds beyond
them and drafts a new revision's DDL from them).
"""

from typing import Any

from sqlalchemy import (
    REAL,
    TIMESTAMP,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    Text,
    TextClause,
)
from sqlalchemy import text as sql
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import UserDefinedType
from sqlmodel import Field, SQLModel


class Vector(UserDefinedType[bytes]):
    """pgvector's ``vector``, its dimension given once a model is chosen (postgres/schema.py)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        """The type as DDL names it."""
        return "vector"


def _text(
    *,
    primary_key: bool = False,
    nullable: bool = True,
    unique: bool | None = None,
    server_default: TextClause | None = None,
) -> Column[str]:
    return Column(
        Text,
        primary_key=primary_key,
        nullable=nullable and not primary_key,
        unique=unique,
        server_default=server_default,
    )


# Text ordered by its bytes: SQLite's binary collation, PostgreSQL's "C" (so a key on it answers
# "the newest items with this prefix" in the ids' byte order in both).
_BYTE_ORDERED_TEXT = Text().with_variant(Text(collation="C"), "postgresql")


def _stamp(*, nullable: bool = True) -> Column[str]:
    """ctx's canonical time text (UTC, microseconds, ``Z``); ``timestamptz`` in PostgreSQL."""
    return Column(Text().with_variant(TIMESTAMP(timezone=True), "postgresql"), nullable=nullable)


def _list() -> Column[str]:
    """A list as JSON text, empty by default; ``jsonb`` in PostgreSQL."""
    return Column(Text().with_variant(JSONB(), "postgresql"), nullable=False, server_default=sql("'[]'"))


def _flag() -> Column[int]:
    """0 or 1, 0 by default; ``boolean`` in PostgreSQL (where p001 declares the default ``false``)."""
    return Column(Integer().with_variant(Boolean(), "postgresql"), nullable=False, server_default=sql("0"))


def _vector() -> Column[bytes]:
    """A vector as float32 bytes; pgvector's ``vector`` in PostgreSQL."""
    return Column(LargeBinary().with_variant(Vector(), "postgresql"), nullable=False)


class Meta(SQLModel, table=True):
    """Key/value facts about the store (store id, creation time, embedding model)."""

    __tablename__ = "meta"
    key: str = Field(sa_column=_text(primary_key=True))
    value: str = Field(sa_column=_text(nullable=False))


class Evidence(SQLModel, table=True):
    """A raw, append-only text in the evidence vault."""

    __tablename__ = "evidence"
    # An id's last four characters: finding the records a handle may name (m008).
    __table_args__ = (Index("ix_evidence_tail", sql("substr(id, 26, 4)")),)
    id: str = Field(sa_column=_text(primary_key=True))
    content_hash: str = Field(sa_column=_text(nullable=False, unique=True))
    text: str = Field(sa_column=_text(nullable=False))
    kind: str = Field(sa_column=_text(nullable=False))
    agent: str | None = Field(default=None, sa_column=_text())
    session: str | None = Field(default=None, sa_column=_text())
    tags: str = Field(sa_column=_list())
    created_at: str = Field(sa_column=_stamp(nullable=False))
    source: str | None = Field(default=None, sa_column=_text())
    speaker: str | None = Field(default=None, sa_column=_text())
    occurred_at: str | None = Field(default=None, sa_column=_stamp())


class Proposal(SQLModel, table=True):
    """A decision an agent or person proposed, awaiting (or past) a person's review."""

    __tablename__ = "proposal"
    __table_args__ = (
        Index("ix_proposal_status", "status", "created_at"),
        Index("ix_proposal_subject", "subject"),
        Index("ix_proposal_source", "source"),
        Index("ix_proposal_tail", sql("substr(id, 26, 4)")),
    )
    id: str = Field(sa_column=_text(primary_key=True))
    subject: str = Field(sa_column=_text(nullable=False))
    decision: str = Field(sa_column=_text(nullable=False))
    rationale: str | None = Field(default=None, sa_column=_text())
    proposer: str = Field(sa_column=_text(nullable=False))
    session: str | None = Field(default=None, sa_column=_text())
    created_at: str = Field(sa_column=_stamp(nullable=False))
    supersedes: str = Field(sa_column=_list())
    explicit_supersedes: str = Field(sa_column=_list())
    near_duplicate_of: str | None = Field(default=None, sa_column=Column(Text, ForeignKey("proposal.id")))
    near_duplicate_score: float | None = Field(default=None, sa_column=Column(REAL))
    status: str = Field(
        sa_column=Column(
            Text,
            CheckConstraint("status IN ('pending', 'ratified', 'rejected', 'withdrawn')"),
            nullable=False,
            server_default=sql("'pending'"),
        )
    )
    resolved_at: str | None = Field(default=None, sa_column=_stamp())
    resolved_by: str | None = Field(default=None, sa_column=_text())
    resolution_note: str | None = Field(default=None, sa_column=_text())
    decision_id: str | None = Field(default=None, sa_column=_text())
    source: str | None = Field(default=None, sa_column=_text())
    adr_number: int | None = Field(default=None, sa_column=Column(Integer))
    title: str | None = Field(default=None, sa_column=_text())
    deciders: str = Field(sa_column=_list())
    reconfirms: str | None = Field(default=None, sa_column=_text())


class ProposalEvidence(SQLModel, table=True):
    """Evidence a proposal cites."""

    __tablename__ = "proposal_evidence"
    proposal_id: str = Field(sa_column=Column(Text, ForeignKey("proposal.id"), primary_key=True))
    evidence_id: str = Field(sa_column=Column(Text, ForeignKey("evidence.id"), primary_key=True))


class Decision(SQLModel, table=True):
    """A ratified decision on a subject, valid from ``valid_from`` until ``valid_until``."""

    __tablename__ = "decision"
    __table_args__ = (
        Index("ix_decision_subject", "subject", "valid_from"),
        Index("ix_decision_source", "source"),
        Index("ix_decision_tail", sql("substr(id, 26, 4)")),
        Index(
            "ux_decision_current",
            "subject",
            unique=True,
            sqlite_where=sql("valid_until IS NULL"),
            postgresql_where=sql("valid_until IS NULL"),
        ),
        CheckConstraint("valid_until IS NULL OR valid_until >= valid_from"),
        CheckConstraint("(valid_until IS NULL) = (closed_by IS NULL)"),
    )
    id: str = Field(sa_column=_text(primary_key=True))
    subject: str = Field(sa_column=_text(nullable=False))
    decision: str = Field(sa_column=_text(nullable=False))
    rationale: str | None = Field(default=None, sa_column=_text())
    valid_from: str = Field(sa_column=_stamp(nullable=False))
    valid_until: str | None = Field(default=None, sa_column=_stamp())
    ratified_by: str = Field(sa_column=_text(nullable=False))
    ratified_at: str = Field(sa_column=_stamp(nullable=False))
    proposal_id: str | None = Field(default=None, sa_column=Column(Text, ForeignKey("proposal.id")))
    amended: int = Field(sa_column=_flag())
    closed_by: str | None = Field(
        default=None,
        sa_column=Column(Text, CheckConstraint("closed_by IN ('superseded', 'retired')")),
    )
    close_reason: str | None = Field(default=None, sa_column=_text())
    source: str | None = Field(default=None, sa_column=_text())
    adr_number: int | None = Field(default=None, sa_column=Column(Integer))
    title: str | None = Field(default=None, sa_column=_text())
    deciders: str = Field(sa_column=_list())


class DecisionEvidence(SQLModel, table=True):
    """Evidence a decision cites."""

    __tablename__ = "decision_evidence"
    decision_id: str = Field(sa_column=Column(Text, ForeignKey("decision.id"), primary_key=True))
    evidence_id: str = Field(sa_column=Column(Text, ForeignKey("evidence.id"), primary_key=True))


class Supersession(SQLModel, table=True):
    """A link: ``new_id`` supersedes ``old_id`` (many-to-many, possibly across subjects)."""

    __tablename__ = "supersession"
    __table_args__ = (
        Index("ix_supersession_new", "new_id"),
        CheckConstraint("old_id <> new_id"),
    )
    old_id: str = Field(sa_column=Column(Text, ForeignKey("decision.id"), primary_key=True))
    new_id: str = Field(sa_column=Column(Text, ForeignKey("decision.id"), primary_key=True))
    created_at: str = Field(sa_column=_stamp(nullable=False))


class ProposalLink(SQLModel, table=True):
    """A path or glob (relative to the repository root) a proposal says its decision governs (m009)."""

    __tablename__ = "proposal_link"
    proposal_id: str = Field(sa_column=Column(Text, ForeignKey("proposal.id"), primary_key=True))
    pattern: str = Field(sa_column=Column(Text, primary_key=True))


class DecisionSnapshot(SQLModel, table=True):
    """A person's ratification or re-confirmation of a decision: the repository's commit then, each
    link with the digest of what it matched (JSON text), and the review date (m009; append-only)."""

    __tablename__ = "decision_snapshot"
    decision_id: str = Field(sa_column=Column(Text, ForeignKey("decision.id"), primary_key=True))
    # Canonical time text in both backends: it is a key, compared as text with the decision's times.
    taken_at: str = Field(sa_column=Column(Text, primary_key=True))
    taken_by: str = Field(sa_column=_text(nullable=False))
    act: str = Field(
        sa_column=Column(Text, CheckConstraint("act IN ('ratified', 'reconfirmed')"), nullable=False)
    )
    git_commit: str | None = Field(default=None, sa_column=_text())
    links: str = Field(sa_column=_text(nullable=False, server_default=sql("'[]'")))
    review_by: str | None = Field(default=None, sa_column=_text())
    review_every: int | None = Field(
        default=None,
        sa_column=Column(Integer, CheckConstraint("review_every IS NULL OR review_every > 0")),
    )


class Audit(SQLModel, table=True):
    """One hash-chained row of the audit log."""

    __tablename__ = "audit"
    __table_args__ = (Index("ix_audit_target", "target"), {"sqlite_autoincrement": True})
    seq: int | None = Field(
        default=None,
        sa_column=Column(Integer, primary_key=True, autoincrement=True),
    )
    at: str = Field(sa_column=_text(nullable=False))
    actor: str = Field(sa_column=_text(nullable=False))
    action: str = Field(sa_column=_text(nullable=False))
    target: str = Field(sa_column=_text(nullable=False))
    before: str | None = Field(default=None, sa_column=_text())
    after: str | None = Field(default=None, sa_column=_text())
    prev_hash: str = Field(sa_column=_text(nullable=False))
    hash: str = Field(sa_column=_text(nullable=False, unique=True))


class Served(SQLModel, table=True):
    """One entry of the served log: an answer that gave an agent stored content (hash-chained)."""

    __tablename__ = "served"
    __table_args__ = (
        Index("ix_served_session", "session", "seq"),
        Index("ix_served_agent", "agent", "at"),
    )
    seq: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    at: str = Field(sa_column=_text(nullable=False))
    host: str = Field(sa_column=_text(nullable=False))
    agent: str = Field(sa_column=_text(nullable=False))
    session: str | None = Field(default=None, sa_column=_text())
    operation: str = Field(sa_column=_text(nullable=False))
    request: str = Field(sa_column=_text(nullable=False))
    items: str = Field(sa_column=_text(nullable=False))
    missed: int = Field(default=0, sa_column=Column(Integer, nullable=False, server_default=sql("0")))
    prev_hash: str = Field(sa_column=_text(nullable=False))
    hash: str = Field(sa_column=_text(nullable=False, unique=True))


class ServedFold(SQLModel, table=True):
    """A signed daily digest of served entries past the retention period (count and Merkle root)."""

    __tablename__ = "served_fold"
    day: str = Field(sa_column=_text(primary_key=True))
    first_seq: int = Field(sa_column=Column(Integer, nullable=False))
    last_seq: int = Field(sa_column=Column(Integer, nullable=False))
    entries: int = Field(sa_column=Column(Integer, nullable=False))
    items: int = Field(sa_column=Column(Integer, nullable=False))
    merkle_root: str = Field(sa_column=_text(nullable=False))
    prev_hash: str = Field(sa_column=_text(nullable=False))
    last_hash: str = Field(sa_column=_text(nullable=False))
    folded_at: str = Field(sa_column=_text(nullable=False))
    key_id: str = Field(sa_column=_text(nullable=False))
    signature: str = Field(sa_column=_text(nullable=False))


class Entity(SQLModel, table=True):
    """A distinct name mentioned by decisions or evidence (derived, for the entity ranker)."""

    __tablename__ = "entity"
    id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    name: str = Field(sa_column=_text(nullable=False, unique=True))


class EntityMention(SQLModel, table=True):
    """Which record mentions which entity."""

    __tablename__ = "entity_mention"
    __table_args__ = (Index("ix_entity_mention_item", "item"), {"sqlite_with_rowid": False})
    entity_id: int = Field(sa_column=Column(Integer, ForeignKey("entity.id"), primary_key=True))
    item: str = Field(sa_column=Column(_BYTE_ORDERED_TEXT, primary_key=True))


class DecisionConflict(SQLModel, table=True):
    """Two decisions that take opposite stances on a term (derived; one row per direction)."""

    __tablename__ = "decision_conflict"
    __table_args__ = {"sqlite_with_rowid": False}
    decision_id: str = Field(sa_column=Column(Text, ForeignKey("decision.id"), primary_key=True))
    other_id: str = Field(sa_column=Column(Text, ForeignKey("decision.id"), primary_key=True))
    term: str = Field(sa_column=_text(nullable=False))
    clause: str = Field(sa_column=_text(nullable=False))
    other_clause: str = Field(sa_column=_text(nullable=False))


class DecisionVector(SQLModel, table=True):
    """The exact (float32) embedding of one chunk of a decision, for rescoring KNN candidates."""

    __tablename__ = "decision_vector"
    __table_args__ = (Index("ix_decision_vector_owner", "owner_rowid"),)
    chunk_id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    owner_rowid: int = Field(sa_column=Column(Integer, nullable=False))
    emb: bytes = Field(sa_column=_vector())


class EvidenceVector(SQLModel, table=True):
    """The exact (float32) embedding of one chunk of an evidence text."""

    __tablename__ = "evidence_vector"
    __table_args__ = (Index("ix_evidence_vector_owner", "owner_rowid"),)
    chunk_id: int | None = Field(default=None, sa_column=Column(Integer, primary_key=True))
    owner_rowid: int = Field(sa_column=Column(Integer, nullable=False))
    emb: bytes = Field(sa_column=_vector())


metadata = SQLModel.metadata


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Alembic filter: compare only tables the models declare (FTS5/vec0 tables are SQL-managed)."""
    if type_ == "table":
        return name in metadata.tables
    return True
