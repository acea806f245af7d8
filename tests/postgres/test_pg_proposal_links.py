"""On PostgreSQL a proposal's links are written with it: the agent's own login, which may link its
own pending proposal while queueing it, is refused a link added once the proposal is logged, as is
every other login."""

from __future__ import annotations

import json

import pytest
from psycopg import errors

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.store.postgres import roles


def test_the_agent_login_cannot_add_a_link_to_its_own_logged_proposal(pg, cli) -> None:
    Ctx.init(pg.url(), embedder=None)[0].close()
    agent = pg.url(roles.AGENT)
    queued = cli(
        "--db", agent, "propose", "--subject", "store.layout", "--decision", "One store module",
        "--link", "kernel/store/**", "--json", db=False,
    )  # fmt: skip
    assert queued.code == 0, queued.err
    proposal = json.loads(queued.out)["id"]
    with pg.connect(roles.AGENT, autocommit=True) as login:
        with pytest.raises(errors.IntegrityConstraintViolation, match="never added later"):
            login.execute("INSERT INTO proposal_link VALUES (%s, 'secrets/**')", (proposal,))
        (found,) = login.execute("SELECT count(*) FROM proposal_link WHERE proposal_id = %s", (proposal,))
        assert found == (1,)
    with pg.connect(autocommit=True) as owner, pytest.raises(errors.IntegrityConstraintViolation):
        owner.execute("INSERT INTO proposal_link VALUES (%s, 'secrets/**')", (proposal,))
    assert cli("--db", pg.url(roles.REVIEWER), "audit", "verify", db=False).code == 0
