"""Writers appending audit rows at once, each on its own connection, never fork the chain."""

from __future__ import annotations

import itertools
import threading

import psycopg

from ctx_kernel.kernel.chain import GENESIS_HASH, row_hash, verify_chain

from .pg_rows import T0, append_audit, audit_rows

WRITERS = 8
ROWS_EACH = 25


def test_concurrent_writers_never_fork_the_audit_chain(pg):
    start = threading.Barrier(WRITERS)
    failures: list[BaseException] = []

    def write(number: int) -> None:
        try:
            with pg.connect() as conn:
                start.wait()
                for row in range(ROWS_EACH):
                    with conn.transaction():
                        # Half the writers hash in the server, half in Python after taking the lock.
                        if number % 2:
                            append_audit(conn, target=f"ev_{number}_{row}")
                        else:
                            conn.execute(
                                "SELECT ctx_audit_append(%s, 'agent-1', 'evidence.logged', %s, NULL, NULL)",
                                (T0, f"ev_{number}_{row}"),
                            )
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    with pg.connect() as conn:
        rows = audit_rows(conn)
    assert len(rows) == WRITERS * ROWS_EACH
    assert len({row["prev_hash"] for row in rows}) == len(rows)
    writers_in_order = [str(row["target"]).split("_")[1] for row in rows]
    switches = sum(a != b for a, b in itertools.pairwise(writers_in_order))
    assert switches >= WRITERS, "the writers ran one after another, not at once"
    report = verify_chain(rows)
    assert report.ok, report.problem


def test_a_writer_that_read_the_tail_before_another_appended_is_refused(pg):
    def first_row(target: str) -> dict[str, object]:
        row = {"seq": 1, "at": T0, "actor": "a", "action": "evidence.logged", "target": target}
        row |= {"before": None, "after": None}
        return row | {"prev_hash": GENESIS_HASH, "hash": row_hash(GENESIS_HASH, row)}

    insert = (
        "INSERT INTO audit (seq, at, actor, action, target, before, after, prev_hash, hash) VALUES "
        "(%(seq)s, %(at)s, %(actor)s, %(action)s, %(target)s, %(before)s, %(after)s, %(prev_hash)s, %(hash)s)"
    )
    outcome: list[BaseException] = []

    def second_writer() -> None:
        with pg.connect() as second:
            try:
                second.execute(insert, first_row("ev_2"))
            except psycopg.Error as error:
                outcome.append(error)

    with pg.connect() as first:
        first.execute(insert, first_row("ev_1"))
        # The second writer computed its row from the same empty chain; it waits for the lock.
        thread = threading.Thread(target=second_writer)
        thread.start()
        thread.join(0.3)
        first.commit()
    thread.join()
    assert [type(error) for error in outcome] == [psycopg.errors.IntegrityConstraintViolation]
    assert "does not link to the previous row" in str(outcome[0])
