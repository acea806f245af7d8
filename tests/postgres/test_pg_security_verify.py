"""`ctx audit verify` sees the security model: an owner's change to what the server enforces is named.

Each tamper is one statement an owner (the administrator, or whoever holds the owner's login) can run
without changing a row; verify, run by any login, names it and exits 1.
"""

from __future__ import annotations

import pytest

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.store.postgres import roles

TAMPERS = {
    "rls-off": ("ALTER TABLE proposal DISABLE ROW LEVEL SECURITY", "row-level security is off on proposal"),
    "policy-true": (
        "DROP POLICY proposal_agent_withdraws ON proposal; "
        "CREATE POLICY proposal_agent_withdraws ON proposal FOR UPDATE TO ctx_agent USING (true)",
        "policy proposal_agent_withdraws on proposal differs",
    ),
    # Restrictive still, but not ctx's rule: any pending proposal, not only the agent's own.
    "policy-narrowed-away": (
        "ALTER POLICY proposal_agent_withdraws ON proposal USING (status = 'pending')",
        "policy proposal_agent_withdraws on proposal differs",
    ),
    "policy-check-changed": (
        "ALTER POLICY audit_agent_appends ON audit WITH CHECK (action LIKE '%.%')",
        "policy audit_agent_appends on audit differs",
    ),
    "lookalike-row": (
        "UPDATE ctx_lookalike_char SET target = 'z' WHERE source = '\u0430'",
        "the look-alike table ctx_lookalike_char differs",
    ),
    "extra-policy": (
        "CREATE POLICY let_in ON proposal FOR UPDATE TO ctx_agent USING (true)",
        "policy let_in on proposal is not one of ctx's",
    ),
    "grant-decision": ("GRANT INSERT, UPDATE ON decision TO ctx_agent", "ctx_agent may INSERT decision"),
    "grant-public": ("GRANT DELETE ON audit TO PUBLIC", "may DELETE audit"),
    "definer": (
        "ALTER FUNCTION ctx_audit_append(text, text, text, text, text, text) SECURITY DEFINER",
        "function ctx_audit_append has its SECURITY DEFINER flag changed",
    ),
    "search-path": (
        "ALTER FUNCTION ctx_acts_as(text, text) RESET search_path",
        "function ctx_acts_as has lost its pinned search_path",
    ),
    "drop-current-index": ("DROP INDEX ux_decision_current", "ux_decision_current"),
    "drop-exclusion": ("ALTER TABLE decision DROP CONSTRAINT decision_no_overlap", "decision_no_overlap"),
    "extra-trigger": (
        "CREATE TRIGGER planted BEFORE INSERT ON proposal FOR EACH ROW EXECUTE FUNCTION ctx_proposal_acted()",
        "trigger planted",
    ),
}


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_an_owners_change_to_the_security_model_is_named_by_verify(pg, cli, name: str) -> None:
    with Ctx.init(pg.url(), embedder=None)[0] as kernel:
        kernel.ratify(kernel.propose("db.engine", "Use PostgreSQL").id, reviewer="postgres")
    assert cli("--db", pg.url(roles.AUDITOR), "audit", "verify", db=False).code == 0
    statement, named = TAMPERS[name]
    with pg.connect(autocommit=True) as owner:
        for part in statement.split("; "):
            owner.execute(part)
    for login in (roles.AUDITOR, None):
        result = cli("--db", pg.url(login), "audit", "verify", db=False)
        assert result.code == 1 and result.err.count("\n") == 1, result
        assert named in result.err, result.err
