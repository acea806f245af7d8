"""A proposal's links are in its audit row and nothing adds one later: the database refuses a link
inserted once the proposal is logged, and ``ctx audit verify`` names one written around the trigger,
for proposals queued with ``ctx propose`` and ADRs imported as pending."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctx_kernel.kernel.store.sqlite import driver

PENDING_ADR = """\
---
status: proposed
date: 2024-02-01
ctx-links: kernel/store/**, ../../etc/passwd, kernel/cli.py
---

# Keep one store module

## Context and Problem Statement

Stores multiply.

## Decision Outcome

Chosen option: one store module per backend.
"""


def _proposed(cli, *links: str) -> str:
    args = [
        "propose",
        "--subject",
        "store.layout",
        "--decision",
        "Keep one store module",
        "--agent",
        "claude",
    ]
    for link in links:
        args += ["--link", link]
    done = cli(*args, "--json")
    assert done.code == 0, done.err
    return json.loads(done.out)["id"]


def _around_ctx(store_path: Path, statement: str, params: tuple, trigger: str) -> None:
    """What someone with the file does: drop the trigger in the way, write, put the trigger back.
    (Through ctx's own SQLite library: a second library in one process breaks the store's locks.)"""
    conn = driver.connect(store_path, load_vec=False)
    try:
        (definition,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (trigger,)).fetchone()
        conn.execute(f"DROP TRIGGER {trigger}")
        assert conn.execute(statement, params).rowcount == 1
        conn.execute(definition)
        conn.commit()
    finally:
        conn.close()


def _logged(store_path: Path, target: str) -> dict:
    conn = driver.connect(store_path, load_vec=False)
    try:
        rows = conn.execute(
            "SELECT action, after FROM audit WHERE target = ? ORDER BY seq", (target,)
        ).fetchall()
    finally:
        conn.close()
    assert rows, f"no audit row for {target}"
    return {"action": rows[0][0], **json.loads(rows[0][1])}


def test_the_database_refuses_a_link_added_to_a_logged_proposal(cli, kernel, store_path):
    proposal = _proposed(cli, "kernel/store/**")
    conn = driver.connect(store_path, load_vec=False)
    try:
        with pytest.raises(driver.dbapi.DatabaseError, match="never added later"):
            conn.execute("INSERT INTO proposal_link VALUES (?, 'kernel/cli.py')", (proposal,))
    finally:
        conn.close()
    assert kernel.store.proposal_links(proposal) == ["kernel/store/**"]


def test_a_link_added_around_ctx_fails_verify(cli, kernel, store_path):
    proposal = _proposed(cli, "kernel/store/**")
    assert _logged(store_path, proposal)["links"] == ["kernel/store/**"]
    assert cli("audit", "verify").code == 0
    _around_ctx(
        store_path,
        "INSERT INTO proposal_link VALUES (?, 'secrets/**')",
        (proposal,),
        "proposal_link_before_logged",
    )
    assert kernel.store.proposal_links(proposal) == ["kernel/store/**", "secrets/**"]
    verified = cli("audit", "verify")
    assert verified.code == 1 and verified.out == ""
    assert f"proposal_link row ({proposal}, secrets/**) is not in the audit log" in verified.err


def test_a_link_removed_around_ctx_fails_verify(cli, kernel, store_path):
    proposal = _proposed(cli, "kernel/store/**", "kernel/cli.py")
    _around_ctx(
        store_path,
        "DELETE FROM proposal_link WHERE proposal_id = ? AND pattern = 'kernel/cli.py'",
        (proposal,),
        "proposal_link_no_delete",
    )
    verified = cli("audit", "verify")
    assert verified.code == 1
    assert f"proposal_link row ({proposal}, kernel/cli.py) is missing from the store" in verified.err


def test_a_proposal_without_links_and_a_row_without_the_field_verify(cli, kernel, store_path):
    proposal = _proposed(cli)
    assert "links" not in _logged(store_path, proposal)
    assert cli("audit", "verify").code == 0


def test_an_adr_imported_as_pending_logs_its_links_and_verifies(cli, kernel, store_path, tmp_path):
    folder = tmp_path / "adrs"
    folder.mkdir()
    (folder / "0001-keep-one-store-module.md").write_text(PENDING_ADR, encoding="utf-8")
    done = cli("import", "adr", str(folder), "--yes", "--reviewer", "carol", "--json")
    assert done.code == 0, done.err
    (proposal,) = json.loads(done.out)["proposals"]
    logged = _logged(store_path, proposal)
    assert logged["action"] == "proposal.imported"
    assert logged["links"] == ["kernel/store/**", "kernel/cli.py"]
    assert cli("audit", "verify").code == 0
    _around_ctx(
        store_path,
        "INSERT INTO proposal_link VALUES (?, 'secrets/**')",
        (proposal,),
        "proposal_link_before_logged",
    )
    verified = cli("audit", "verify")
    assert verified.code == 1
    assert f"proposal_link row ({proposal}, secrets/**) is not in the audit log" in verified.err
