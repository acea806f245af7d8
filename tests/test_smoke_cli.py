"""The README's walk-through, end to end through the CLI."""

from __future__ import annotations

import json


def test_walkthrough(cli, store_path):
    assert cli("init").code == 0
    assert store_path.is_file()
    logged = cli("log", "We agreed on JWT with refresh rotation.", "--agent", "claude")
    assert logged.code == 0
    evidence_id = logged.out.strip()
    assert evidence_id.startswith("ev_")
    proposed = cli(
        "propose",
        "--subject",
        "auth.tokens",
        "--decision",
        "Use JWT with refresh rotation",
        "--evidence",
        evidence_id,
    )
    assert proposed.code == 0, proposed.err
    proposal_id = proposed.out.strip()
    ratified = cli("ratify", proposal_id, "--yes", "--reviewer", "alice")
    assert ratified.code == 0, ratified.err
    first = ratified.out.strip()
    second = cli("propose", "--subject", "auth.tokens", "--decision", "Use opaque session ids").out.strip()
    cli("ratify", second, "--yes", "--reviewer", "alice")
    history = json.loads(cli("history", "auth.tokens", "--json").out)
    assert [d["current"] for d in history["decisions"]] == [False, True]
    assert history["decisions"][0]["id"] == first
    assert history["decisions"][1]["supersedes"] == [first]
    verify = cli("audit", "verify")
    assert verify.code == 0 and "audit chain ok" in verify.out
