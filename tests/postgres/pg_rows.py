"""Rows for the PostgreSQL schema tests, written with plain SQL as a store would write them."""

from __future__ import annotations

import json

import psycopg

from ctx_kernel.kernel import clock
from ctx_kernel.kernel.chain import GENESIS_HASH, row_hash
from ctx_kernel.kernel.store.postgres.schema import AUDIT_LOCK

T0 = "2026-01-01T00:00:00.000000Z"


def at(day: int) -> str:
    """A canonical ctx timestamp ``day`` days into 2026."""
    return f"2026-01-{day:02d}T00:00:00.000000Z"


def evidence(conn: psycopg.Connection, eid: str, text: str = "we chose postgres") -> None:
    conn.execute(
        "INSERT INTO evidence (id, content_hash, text, kind, created_at) VALUES (%s, %s, %s, 'note', %s)",
        (eid, f"hash-of-{eid}", text, clock.now()),
    )


def proposal(
    conn: psycopg.Connection,
    pid: str,
    subject: str = "db.engine",
    status: str = "pending",
    proposer: str | None = None,
) -> None:
    """A proposal; its proposer is the connection's login unless given (the database binds it so)."""
    conn.execute(
        "INSERT INTO proposal (id, subject, decision, proposer, created_at, status) "
        "VALUES (%s, %s, 'use postgres', %s, %s, %s)",
        (pid, subject, proposer or conn.info.user, clock.now(), status),
    )


def decision(
    conn: psycopg.Connection,
    did: str,
    subject: str = "db.engine",
    valid_from: str = T0,
    valid_until: str | None = None,
    proposal_id: str | None = None,
    ratified_by: str | None = None,
) -> None:
    """A decision; ratified by the connection's login unless given (the database binds it so)."""
    conn.execute(
        "INSERT INTO decision (id, subject, decision, valid_from, valid_until, closed_by, ratified_by, "
        "ratified_at, proposal_id) VALUES (%s, %s, 'use postgres', %s, %s, %s, %s, %s, %s)",
        (
            did,
            subject,
            valid_from,
            valid_until,
            valid_until and "superseded",
            ratified_by or conn.info.user,
            clock.now(),  # the database holds a login's writes to its own clock
            proposal_id,
        ),
    )


def link(conn: psycopg.Connection, old_id: str, new_id: str) -> None:
    conn.execute(
        "INSERT INTO supersession (old_id, new_id, created_at) VALUES (%s, %s, %s)", (old_id, new_id, T0)
    )


def append_audit(
    conn: psycopg.Connection, action: str = "evidence.logged", target: str = "ev_1", after: object = None
) -> None:
    """Append the next audit row as a client computing the hash itself does: lock, read the tail, insert."""
    conn.execute(AUDIT_LOCK)
    tail = conn.execute("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    seq, prev = (tail[0] + 1, tail[1]) if tail else (1, GENESIS_HASH)
    row = {
        "seq": seq,
        "at": T0,
        "actor": conn.info.user,
        "action": action,
        "target": target,
        "before": None,
        "after": None if after is None else json.dumps(after, sort_keys=True),
    }
    conn.execute(
        "INSERT INTO audit (seq, at, actor, action, target, before, after, prev_hash, hash) "
        "VALUES (%(seq)s, %(at)s, %(actor)s, %(action)s, %(target)s, %(before)s, %(after)s, "
        "%(prev)s, %(hash)s)",
        {**row, "prev": prev, "hash": row_hash(prev, row)},
    )


def audit_rows(conn: psycopg.Connection) -> list[dict[str, object]]:
    cursor = conn.execute(
        "SELECT seq, at, actor, action, target, before, after, prev_hash, hash FROM audit ORDER BY seq"
    )
    names = [column.name for column in cursor.description or ()]
    return [dict(zip(names, row, strict=True)) for row in cursor]
