"""Writers appending audit rows at once, each on its own connection, never fork the chain."""

from __future__ import annotations

import threading

from pg_rows import T0, append_audit, audit_rows

from ctx_kernel.kernel.audit.chain import verify_chain

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
    report = verify_chain(rows)
    assert report.ok, report.problem
