"""Each invariant of the PostgreSQL schema is refused by the server itself, with a clear error."""

from __future__ import annotations

import threading

import psycopg
import pytest
from psycopg import errors

from ctx_kernel.kernel.chain import GENESIS_HASH, verify_chain

from .pg_rows import T0, append_audit, at, audit_rows, decision, evidence, link, proposal

SEALED = b"CTXE\x01ciphertext"


@pytest.fixture
def conn(pg):
    with pg.connect(autocommit=True) as connection:
        yield connection


def refused(match: str, error: type[Exception] = psycopg.IntegrityError):
    return pytest.raises(error, match=match)


def test_evidence_is_append_only(conn):
    evidence(conn, "ev_1")
    with refused("evidence is append-only"):
        conn.execute("UPDATE evidence SET kind = 'other'")
    with refused("evidence is append-only"):
        conn.execute("UPDATE evidence SET text = 'rewritten'")
    with refused("evidence is append-only"):
        conn.execute("DELETE FROM evidence")
    with refused("evidence is append-only"):
        conn.execute("TRUNCATE evidence CASCADE")
    assert conn.execute("SELECT text FROM evidence").fetchone() == ("we chose postgres",)


def test_evidence_may_only_be_sealed_and_sealed_again(conn):
    evidence(conn, "ev_1")
    with refused("evidence is append-only"):
        conn.execute("UPDATE evidence SET text = NULL, sealed = %s, kind = 'other'", (SEALED,))
    with refused("evidence_sealed_magic", errors.CheckViolation):
        conn.execute("UPDATE evidence SET text = NULL, sealed = 'not sealed'::bytea")
    conn.execute("UPDATE evidence SET text = NULL, sealed = %s", (SEALED,))
    conn.execute("UPDATE evidence SET sealed = %s", (SEALED + b"rekeyed",))
    with refused("evidence is append-only"):
        conn.execute("UPDATE evidence SET text = 'plain again', sealed = NULL")
    # The search column follows the plain text only.
    assert conn.execute("SELECT search FROM evidence").fetchone() == ("",)


def test_a_proposal_is_resolved_once_and_never_edited(conn):
    proposal(conn, "pr_1")
    with refused("resolved once"):
        conn.execute("UPDATE proposal SET decision = 'use sqlite'")
    with refused("resolved once"):
        conn.execute("UPDATE proposal SET status = 'pending', resolved_by = 'bob'")
    conn.execute("UPDATE proposal SET status = 'rejected', resolved_by = 'bob', resolved_at = %s", (T0,))
    with refused("resolved once"):
        conn.execute("UPDATE proposal SET status = 'ratified'")
    with refused("proposals are kept for audit"):
        conn.execute("DELETE FROM proposal")
    with refused("proposals are kept for audit"):
        conn.execute("TRUNCATE proposal CASCADE")


def test_a_decision_only_has_its_window_closed_once(conn):
    decision(conn, "dc_1")
    with refused("only has its window closed"):
        conn.execute("UPDATE decision SET decision = 'use sqlite'")
    with refused("only has its window closed"):
        conn.execute("UPDATE decision SET valid_until = %s, closed_by = 'retired'", ("2025-01-01T00:00:00Z",))
    with refused("decision_closed_by", errors.CheckViolation):
        conn.execute("UPDATE decision SET valid_until = %s", (at(2),))
    conn.execute("UPDATE decision SET valid_until = %s, closed_by = 'retired'", (at(2),))
    with refused("only has its window closed"):
        conn.execute("UPDATE decision SET valid_until = %s", (at(3),))
    with refused("decisions are never deleted"):
        conn.execute("DELETE FROM decision")
    with refused("decisions are never deleted"):
        conn.execute("TRUNCATE decision CASCADE")


OVERLAP = "validity windows of one subject must not overlap"


def test_one_current_decision_per_subject(conn):
    decision(conn, "dc_1", valid_from=at(1))
    with refused(OVERLAP):
        decision(conn, "dc_2", valid_from=at(5))
    decision(conn, "dc_3", subject="other.subject", valid_from=at(5))


def test_windows_of_one_subject_never_overlap(conn):
    decision(conn, "dc_1", valid_from=at(1), valid_until=at(10))
    with refused(OVERLAP):
        decision(conn, "dc_2", valid_from=at(5), valid_until=at(12))
    with refused(OVERLAP):
        decision(conn, "dc_3", valid_from=at(9))
    # Empty windows: inside another one they overlap it, as in SQLite; at its edges they touch it.
    with refused(OVERLAP):
        decision(conn, "dc_4", valid_from=at(5), valid_until=at(5))
    decision(conn, "dc_5", valid_from=at(1), valid_until=at(1))
    decision(conn, "dc_6", valid_from=at(10), valid_until=at(10))
    # Touching windows do not overlap: the first ends the moment the next begins.
    decision(conn, "dc_7", valid_from=at(10))
    with refused(OVERLAP):
        decision(conn, "dc_8", valid_from=at(12), valid_until=at(12))


def _second_writer_at_the_same_moment(pg, first_row: dict, second_row: dict, isolation=None) -> list:
    """Insert ``second_row`` from another connection while ``first_row`` is written, uncommitted."""
    outcome: list = []
    ready = threading.Event()

    def second_writer() -> None:
        with pg.connect() as second:
            if isolation is not None:
                second.isolation_level = isolation
            second.execute("SELECT 1")  # the transaction (and a REPEATABLE READ snapshot) begins
            ready.set()
            try:
                decision(second, **second_row)
                second.commit()
                outcome.append("accepted")
            except psycopg.Error as error:
                outcome.append(error)

    with pg.connect() as first:
        decision(first, **first_row)
        thread = threading.Thread(target=second_writer)
        thread.start()
        ready.wait()
        thread.join(0.3)
        first.commit()
    thread.join()
    return outcome


def test_a_raw_writer_at_the_same_moment_waits_and_its_empty_window_is_refused(pg):
    # The empty window overlaps nothing for the exclusion constraint: only the trigger refuses it,
    # and only because it waits for the first writer's commit before reading.
    outcome = _second_writer_at_the_same_moment(
        pg, {"did": "dc_1", "valid_from": at(1)}, {"did": "dc_2", "valid_from": at(5), "valid_until": at(5)}
    )
    assert len(outcome) == 1 and OVERLAP in str(outcome[0])


@pytest.mark.parametrize(
    ("second", "constraint", "error"),
    [
        ({"valid_from": at(5)}, "ux_decision_current", errors.UniqueViolation),
        ({"valid_from": at(5), "valid_until": at(12)}, "decision_no_overlap", errors.ExclusionViolation),
    ],
)
def test_a_repeatable_read_writer_that_misses_the_first_is_held_by_the_constraints(
    pg, second, constraint, error
):
    # Its snapshot predates the first writer's commit, so the trigger reads no overlap; the unique
    # index and the exclusion constraint see the committed row all the same.
    outcome = _second_writer_at_the_same_moment(
        pg,
        {"did": "dc_1", "valid_from": at(1)},
        {"did": "dc_2", **second},
        isolation=psycopg.IsolationLevel.REPEATABLE_READ,
    )
    assert len(outcome) == 1 and isinstance(outcome[0], error), outcome
    assert constraint in str(outcome[0])
    with pg.connect(autocommit=True) as conn:
        assert conn.execute("SELECT id FROM decision").fetchall() == [("dc_1",)]


def test_supersession_runs_forward_in_time_and_is_permanent(conn):
    decision(conn, "dc_old", subject="a", valid_from=at(5))
    decision(conn, "dc_new", subject="b", valid_from=at(1))
    with refused("cannot start before the decision it supersedes"):
        link(conn, "dc_old", "dc_new")
    link(conn, "dc_new", "dc_old")
    with refused("supersession links are permanent"):
        conn.execute("UPDATE supersession SET created_at = now()")
    with refused("supersession links are permanent"):
        conn.execute("DELETE FROM supersession")
    with refused("supersession links are permanent"):
        conn.execute("TRUNCATE supersession")


def test_supersession_chains_are_acyclic(conn):
    # One start for all three: time alone cannot then rule a loop out.
    for name in "abc":
        decision(conn, f"dc_{name}", subject=name, valid_from=at(1))
    with refused("supersession_not_itself", errors.CheckViolation):
        link(conn, "dc_a", "dc_a")
    link(conn, "dc_a", "dc_b")
    link(conn, "dc_b", "dc_c")
    with refused("cannot loop back on itself"):
        link(conn, "dc_b", "dc_a")
    with refused("cannot loop back on itself"):
        link(conn, "dc_c", "dc_a")
    link(conn, "dc_a", "dc_c")  # a shortcut along the chain is no loop


def test_an_audit_row_must_link_to_the_one_before(conn):
    with conn.transaction():
        append_audit(conn)
    with refused("does not link to the previous row"):
        conn.execute(
            "INSERT INTO audit (seq, at, actor, action, target, prev_hash, hash) "
            "VALUES (2, %s, 'a', 'evidence.logged', 'ev_2', %s, %s)",
            (T0, GENESIS_HASH, "1" * 64),
        )
    tail = conn.execute("SELECT hash FROM audit").fetchone()[0]
    with refused("does not link to the previous row"):
        conn.execute(
            "INSERT INTO audit (seq, at, actor, action, target, prev_hash, hash) "
            "VALUES (3, %s, 'a', 'evidence.logged', 'ev_2', %s, %s)",
            (T0, tail, "1" * 64),
        )
    with refused("hash does not match its content"):
        conn.execute(
            "INSERT INTO audit (seq, at, actor, action, target, prev_hash, hash) "
            "VALUES (2, %s, 'a', 'evidence.logged', 'ev_2', %s, %s)",
            (T0, tail, "1" * 64),
        )


def test_the_audit_log_is_append_only(conn):
    conn.execute("SELECT ctx_audit_append(%s, 'agent-1', 'evidence.logged', 'ev_1', NULL, NULL)", (T0,))
    with refused("the audit log is append-only"):
        conn.execute("UPDATE audit SET actor = 'someone else'")
    with refused("the audit log is append-only"):
        conn.execute("DELETE FROM audit")
    with refused("the audit log is append-only"):
        conn.execute("TRUNCATE audit")


def test_the_server_hashes_audit_rows_as_ctx_does(conn):
    awkward = 'quote " backslash \\ newline \n tab \t bell \x07 del \x7f é 漢字 🙂 \u2028'
    conn.execute(
        "SELECT ctx_audit_append(%s, %s, 'proposal.created', %s, NULL, %s)",
        (T0, awkward, awkward, '{"status": "pending", "text": "' + awkward.replace("\n", "\\n") + '"}'),
    )
    with conn.transaction():
        append_audit(conn, action="proposal.withdrawn", after={"reason": awkward})
    conn.execute("SELECT ctx_audit_append(%s, 'bob', 'proposal.rejected', 'pr_1', %s, NULL)", (T0, "{}"))
    report = verify_chain(audit_rows(conn))
    assert report.ok, report.problem
    assert report.rows == 3


def test_two_links_written_at_once_cannot_close_a_loop(pg):
    with pg.connect(autocommit=True) as owner:
        for name in "ab":
            decision(owner, f"dc_{name}", subject=name, valid_from=at(1))
    outcome: list[BaseException] = []

    def second_writer() -> None:
        with pg.connect() as second:
            try:
                link(second, "dc_b", "dc_a")
            except psycopg.Error as error:
                outcome.append(error)

    with pg.connect() as first:
        link(first, "dc_a", "dc_b")
        # Uncommitted, the first link is invisible to the second writer, which waits for the lock.
        thread = threading.Thread(target=second_writer)
        thread.start()
        thread.join(0.3)
        first.commit()
    thread.join()
    assert len(outcome) == 1
    assert "cannot loop back on itself" in str(outcome[0])
