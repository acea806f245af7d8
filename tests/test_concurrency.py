"""Many OS processes writing to one store at once: no write lost, no invariant broken."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import random
import subprocess
import sys
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from conftest import run_ctx_process

from ctx_kernel.kernel import Ctx, NotFoundError, RefusedError
from ctx_kernel.kernel.store.sqlite import driver
from ctx_kernel.kernel.store.writelock import lock_path

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="holds the lock with fcntl")

WRITERS = 8
ROUNDS = 25
SHARED_SUBJECTS = ("auth.tokens", "db", "db.driver")
SHARED_NOTE_EVERY = 5  # every 5th log of every writer is the same text in all writers
WITHDRAW_EVERY = 5  # every 5th proposal is withdrawn by its writer, racing the reviewer
REVIEWER = "alice"


def _dump(out: Path, data: dict) -> None:
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.rename(out)


def _writer(index: int, db: str, out: str, start: object) -> None:
    """25 evidence logs and 25 proposals on its own and on shared subjects; withdraws some."""
    try:
        kernel = Ctx.open(Path(db))
        start.wait(timeout=60)
        logs: list[dict] = []
        proposals: list[dict] = []
        withdrawals: list[dict] = []
        for k in range(ROUNDS):
            time.sleep(random.uniform(0, 0.01))  # agents pause between calls; lets the reviewer in
            if k % SHARED_NOTE_EVERY == 0:
                body = f"shared note {k}: every writer logs exactly this text"
            else:
                body = f"writer {index} note {k}: measured latency {index * 100 + k} ms"
            logged = kernel.log(body, agent=f"writer-{index}", session=f"s{index}")
            logs.append({"body": body, "id": logged.id, "duplicate": logged.duplicate})

            subject = SHARED_SUBJECTS[k % 3] if k % 2 else f"team{index}.topic{k % 3}"
            proposal = kernel.propose(
                subject,
                f"writer {index} option {k} for {subject} ({random.random():.6f})",
                rationale=f"because of note {k}",
                evidence=[logged.id],
                proposer=f"writer-{index}",
            )
            proposals.append({"id": proposal.id, "subject": proposal.subject})
            if k % WITHDRAW_EVERY == WITHDRAW_EVERY - 1:
                try:
                    kernel.withdraw(proposal.id, actor=f"writer-{index}", reason="changed my mind")
                    withdrawals.append({"id": proposal.id, "ok": True})
                except RefusedError:
                    withdrawals.append({"id": proposal.id, "ok": False})
        kernel.close()
        _dump(Path(out), {"logs": logs, "proposals": proposals, "withdrawals": withdrawals})
    except BaseException:
        Path(out).with_suffix(".err").write_text(traceback.format_exc())
        raise


def _reviewer(db: str, out: str, start: object, done: object) -> None:
    """Ratify (sometimes amended) or reject pending proposals until the writers are done."""
    try:
        rng = random.Random(1234)
        kernel = Ctx.open(Path(db))
        start.wait(timeout=60)
        ratified: list[dict] = []
        rejected: list[str] = []
        refused: list[str] = []
        while True:
            finished = done.is_set()
            for proposal in kernel.queue():
                roll = rng.random()
                try:
                    if roll < 0.55:
                        amended = f"{proposal.decision} (amended)" if rng.random() < 0.2 else None
                        # settle nothing: the checks below model each proposal on its own
                        result = kernel.ratify(proposal.id, reviewer=REVIEWER, decision=amended, settle=[])
                        ratified.append(
                            {
                                "proposal": proposal.id,
                                "decision": result.decision.id,
                                "subject": result.decision.subject,
                                "text": result.decision.decision,
                                "amended": amended,
                                "superseded": result.superseded,
                            }
                        )
                    elif roll < 0.85:
                        kernel.reject(proposal.id, reviewer=REVIEWER, reason="not convinced")
                        rejected.append(proposal.id)
                except RefusedError:
                    refused.append(proposal.id)
            if finished:
                break
            time.sleep(0.005)
        kernel.close()
        _dump(Path(out), {"ratified": ratified, "rejected": rejected, "refused": refused})
    except BaseException:
        Path(out).with_suffix(".err").write_text(traceback.format_exc())
        raise


def _check_windows(decisions: list) -> None:
    by_subject: dict[str, list] = defaultdict(list)
    for d in decisions:
        by_subject[d.subject].append(d)
    for subject, rows in by_subject.items():
        assert sum(d.valid_until is None for d in rows) <= 1, f"two current decisions on {subject}"
        rows.sort(key=lambda d: (d.valid_from, d.id))
        for earlier, later in itertools.pairwise(rows):
            assert earlier.valid_until is not None, f"{earlier.id} is open but {later.id} follows it"
            assert earlier.valid_until <= later.valid_from, f"{earlier.id} overlaps {later.id}"
        for d in rows:
            assert d.valid_until is None or d.valid_until >= d.valid_from
            assert (d.valid_until is None) == (d.closed_by is None)


@pytest.mark.slow
def test_concurrent_writers_and_reviewer(tmp_path: Path) -> None:
    db = tmp_path / "shared" / ".ctx" / "ctx.db"
    Ctx.init(db)[0].close()

    mp = multiprocessing.get_context("spawn")
    start = mp.Barrier(WRITERS + 1)
    done = mp.Event()
    writer_out = [tmp_path / f"writer{i}.json" for i in range(WRITERS)]
    reviewer_out = tmp_path / "reviewer.json"
    writers = [
        mp.Process(target=_writer, args=(i, str(db), str(writer_out[i]), start)) for i in range(WRITERS)
    ]
    reviewer = mp.Process(target=_reviewer, args=(str(db), str(reviewer_out), start, done))
    began = time.monotonic()
    for proc in [*writers, reviewer]:
        proc.start()
    try:
        for proc in writers:
            proc.join(timeout=120)
        done.set()
        reviewer.join(timeout=120)
    finally:
        for proc in [*writers, reviewer]:
            if proc.is_alive():
                proc.kill()
                proc.join()
    elapsed = time.monotonic() - began
    errors = [
        p.with_suffix(".err").read_text()
        for p in [*writer_out, reviewer_out]
        if p.with_suffix(".err").exists()
    ]
    assert not errors, "\n".join(errors)
    assert [p.exitcode for p in [*writers, reviewer]] == [0] * (WRITERS + 1)
    assert elapsed < 120

    written = [json.loads(p.read_text()) for p in writer_out]
    review = json.loads(reviewer_out.read_text())

    kernel = Ctx.open(db)
    conn = driver.connect(db, load_vec=False)
    try:
        # -- every write is there -----------------------------------------------------------
        evidence_ids = {r[0] for r in conn.execute("SELECT id FROM evidence")}
        logged = [entry for w in written for entry in w["logs"]]
        assert len(logged) == WRITERS * ROUNDS
        assert {e["id"] for e in logged} == evidence_ids
        ids_by_body: dict[str, set[str]] = defaultdict(set)
        for entry in logged:
            ids_by_body[entry["body"]].add(entry["id"])
        assert all(len(ids) == 1 for ids in ids_by_body.values()), "one text got two evidence ids"
        assert len(evidence_ids) == len(ids_by_body)
        first_logs = Counter(e["body"] for e in logged if not e["duplicate"])
        assert first_logs == Counter(ids_by_body.keys()), "each text is new exactly once"
        for entry in logged[:: max(1, len(logged) // 40)]:
            assert kernel.evidence(entry["id"]).text == entry["body"]

        proposed = {p["id"]: p for w in written for p in w["proposals"]}
        assert len(proposed) == WRITERS * ROUNDS
        proposals = {p.id: p for p in kernel.store.list_proposals(status=None)}
        assert set(proposals) == set(proposed)
        for pid, p in proposed.items():
            assert proposals[pid].subject == p["subject"]

        # -- each proposal left 'pending' at most once, by exactly the actor who won -----------
        ratified = {r["proposal"]: r for r in review["ratified"]}
        rejected = set(review["rejected"])
        withdrawn = {w["id"] for wr in written for w in wr["withdrawals"] if w["ok"]}
        lost_withdrawals = {w["id"] for wr in written for w in wr["withdrawals"] if not w["ok"]}
        assert not (set(ratified) & rejected) and not (set(ratified) & withdrawn)
        assert not (rejected & withdrawn)
        for pid, proposal in proposals.items():
            if pid in ratified:
                assert proposal.status == "ratified" and proposal.decision_id == ratified[pid]["decision"]
                assert proposal.resolved_by == REVIEWER
            elif pid in rejected:
                assert proposal.status == "rejected" and proposal.decision_id is None
            elif pid in withdrawn:
                assert proposal.status == "withdrawn" and proposal.decision_id is None
            else:
                assert proposal.status == "pending" and proposal.resolved_at is None
        # a withdrawal only loses to the reviewer, and the reviewer only to a withdrawal
        assert lost_withdrawals <= set(ratified) | rejected
        assert set(review["refused"]) <= withdrawn

        # -- decisions: one per ratification, invariants on windows and links ----------------
        decisions = {d.id: d for d in kernel.decisions(include_closed=True)}
        assert set(decisions) == {r["decision"] for r in ratified.values()}
        for r in ratified.values():
            d = decisions[r["decision"]]
            assert d.proposal_id == r["proposal"] and d.subject == r["subject"]
            assert d.decision == r["text"] and d.amended == (r["amended"] is not None)
            assert d.ratified_by == REVIEWER
            assert sorted(d.supersedes) == sorted(r["superseded"])
            assert d.evidence == proposals[r["proposal"]].evidence
        _check_windows(list(decisions.values()))
        links = conn.execute("SELECT old_id, new_id FROM supersession").fetchall()
        assert len(links) == sum(len(r["superseded"]) for r in ratified.values())
        for old_id, new_id in links:
            old, new = decisions[old_id], decisions[new_id]
            assert old.subject == new.subject  # no explicit supersedes here: only the subject's own
            assert old.closed_by == "superseded"
            assert old.valid_until == new.valid_from, f"{old_id} closed at a different time than {new_id}"
        for d in decisions.values():
            if d.closed_by == "superseded":
                assert len(d.superseded_by) == 1
            else:
                assert d.closed_by is None and d.superseded_by == []
        # each subject's decisions form one chain whose newest link is the current decision
        by_subject: dict[str, list] = defaultdict(list)
        for d in decisions.values():
            by_subject[d.subject].append(d)
        for subject, rows in by_subject.items():
            rows.sort(key=lambda d: d.valid_from)
            for earlier, later in itertools.pairwise(rows):
                assert earlier.superseded_by == [later.id]
            current = [d for d in kernel.decisions(subject) if d.subject == subject]
            assert current == [rows[-1]]

        # -- audit: one row per state change, chain intact ----------------------------------
        report = kernel.audit.verify()
        assert report.ok, report
        rows = conn.execute("SELECT count(*) FROM audit").fetchone()[0]
        assert report.rows == rows
        state_changes = (
            len(evidence_ids)
            + len(proposals)
            + sum(p.status != "pending" for p in proposals.values())
            + len(links)
        )
        assert rows == state_changes
        claimed = (
            sum(not e["duplicate"] for e in logged)
            + len(proposed)
            + len(withdrawn)
            + len(rejected)
            + sum(1 + len(r["superseded"]) for r in ratified.values())
        )
        assert rows == claimed
        actions = Counter(r[0] for r in conn.execute("SELECT action FROM audit"))
        assert actions == Counter(
            {
                "evidence.logged": len(evidence_ids),
                "proposal.created": len(proposals),
                "proposal.ratified": len(ratified),
                "proposal.rejected": len(rejected),
                "proposal.withdrawn": len(withdrawn),
                "decision.superseded": len(links),
            }
        )
        assert kernel.integrity_check() == "ok"
        # the run really interleaved: the reviewer acted while writers were still proposing
        assert ratified and rejected and withdrawn
        first_ratified = min(d.ratified_at for d in decisions.values())
        assert first_ratified < max(p.created_at for p in proposals.values())
        assert any(len(rows) > 1 for rows in by_subject.values())
    finally:
        conn.close()
        kernel.close()


def _take(path: Path, *, wait: bool) -> int | None:
    """Take the store's writer lock from outside ctx; the descriptor, or None when it is held."""
    import fcntl  # POSIX only

    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


@pytest.mark.slow
@posix_only
def test_writers_queue_on_the_lock_file_and_readers_do_not(kernel, store_path):
    kernel.log("a first note about the heron")
    held = _take(lock_path(store_path), wait=True)
    assert held is not None
    ctx = Path(sys.executable).parent / "ctx"
    writer = subprocess.Popen([str(ctx), "--db", str(store_path), "log", "a queued note"])
    try:
        reader = run_ctx_process("--db", str(store_path), "search", "heron")
        assert reader.returncode == 0, reader.stderr
        assert b"[heron]" in reader.stdout
        time.sleep(3)  # ample time to start and write, were it not waiting in line
        assert writer.poll() is None, "the writer did not wait for the lock"
        assert kernel.store.item_count("evidence") == 1
    finally:
        os.close(held)  # closing the descriptor releases the lock: the writer goes in
        assert writer.wait(timeout=60) == 0
    assert kernel.store.item_count("evidence") == 2


@posix_only
def test_the_writer_lock_is_released_on_every_exit_path(kernel, store_path):
    kernel.log("committed")
    with pytest.raises(NotFoundError):
        kernel.propose("db.engine", "Use SQLite", evidence=["ev_01HZZZZZZZZZZZZZZZZZZZZZZZ"])
    with pytest.raises(KeyboardInterrupt), kernel.store.transaction():
        raise KeyboardInterrupt
    free = _take(lock_path(store_path), wait=False)
    assert free is not None, "a writer kept the lock after its transaction ended"
    os.close(free)
    assert kernel.propose("db.engine", "Use SQLite").status == "pending"


def test_where_no_lock_file_can_be_made_writers_fall_back_to_the_busy_handler(tmp_path):
    db = tmp_path / "shared" / ".ctx" / "ctx.db"
    Ctx.init(db)[0].close()
    lock_path(db).unlink(missing_ok=True)
    lock_path(db).mkdir()  # a folder where the lock file would be: it cannot be opened for writing
    with Ctx.open(db) as first, Ctx.open(db) as second:
        first.log("written without the lock file")
        proposal = second.propose("db.engine", "Use SQLite")
        assert first.ratify(proposal.id, reviewer="ann").decision.decision == "Use SQLite"
    assert lock_path(db).is_dir()
