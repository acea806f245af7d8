"""The human gate in the database: connected as an agent's login, raw SQL cannot ratify."""

from __future__ import annotations

import contextlib
import random
import unicodedata

import psycopg
import pytest
from psycopg import errors, sql

from ctx_kernel.kernel import text
from ctx_kernel.kernel.chain import row_hash
from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.store.postgres import lookalikes, roles

from .pg_rows import T0, decision, evidence, link, proposal

# Refused by a missing privilege (42501) or by a row-level policy (42501 too, another message).
DENIED = errors.InsufficientPrivilege


@pytest.fixture
def seeded(pg):
    """A pending proposal, an evidence row and a current decision, written by the owner."""
    with pg.connect(autocommit=True) as owner:
        evidence(owner, "ev_0")
        proposal(owner, "pr_0")
        decision(owner, "dc_0", subject="cache.policy")
    return pg


def append(conn, action: str, target: str = "pr_0", actor: str | None = None) -> None:
    conn.execute(
        "SELECT ctx_audit_append(%s, %s, %s, %s, NULL, NULL)", (T0, actor or conn.info.user, action, target)
    )


def test_an_agent_logs_proposes_and_withdraws(seeded):
    with seeded.connect(roles.AGENT, autocommit=True) as agent:
        evidence(agent, "ev_1")
        proposal(agent, "pr_1")
        agent.execute("INSERT INTO proposal_evidence VALUES ('pr_1', 'ev_1')")
        append(agent, "evidence.logged", "ev_1")
        append(agent, "proposal.created", "pr_1")
        agent.execute(
            "UPDATE proposal SET status = 'withdrawn', resolved_by = session_user WHERE id = 'pr_1'"
        )
        append(agent, "proposal.withdrawn", "pr_1")
        agent.execute("INSERT INTO entity (name) VALUES ('postgres')")
        assert agent.execute("SELECT count(*) FROM audit").fetchone() == (3,)


def test_an_agent_cannot_ratify_with_raw_sql(seeded):
    with seeded.connect(roles.AGENT, autocommit=True) as agent:
        proposal(agent, "pr_mine")
        with pytest.raises(DENIED, match="row-level security"):
            agent.execute(
                "UPDATE proposal SET status = 'ratified', resolved_by = session_user WHERE id = 'pr_mine'"
            )
        with pytest.raises(DENIED, match="row-level security"):
            agent.execute(
                "UPDATE proposal SET status = 'rejected', resolved_by = session_user WHERE id = 'pr_mine'"
            )
        # Another's proposal is not even there for an agent's update.
        touched = agent.execute(
            "UPDATE proposal SET status = 'ratified', resolved_by = session_user WHERE id = 'pr_0'"
        )
        assert touched.rowcount == 0
        with pytest.raises(DENIED, match="permission denied"):
            agent.execute("UPDATE proposal SET decision_id = 'dc_0' WHERE id = 'pr_0'")
        with pytest.raises(DENIED, match="row-level security"):
            proposal(agent, "pr_2", status="ratified")
        with pytest.raises(DENIED, match="permission denied"):
            decision(agent, "dc_1", subject="db.engine")
        with pytest.raises(DENIED, match="permission denied"):
            agent.execute("UPDATE decision SET valid_until = now(), closed_by = 'retired'")
        with pytest.raises(DENIED, match="permission denied"):
            link(agent, "dc_0", "dc_0")
        for action in ("proposal.ratified", "proposal.rejected", "decision.superseded", "vault.encrypted"):
            with pytest.raises(DENIED, match="row-level security"):
                append(agent, action)
        with pytest.raises(DENIED, match="permission denied"):
            agent.execute("DELETE FROM evidence")
        assert agent.execute("SELECT status FROM proposal WHERE id = 'pr_0'").fetchone() == ("pending",)


def test_a_reviewer_ratifies(seeded):
    with seeded.connect(roles.REVIEWER) as reviewer, reviewer.transaction():
        decision(reviewer, "dc_1", subject="db.engine", proposal_id="pr_0")
        reviewer.execute("INSERT INTO decision_evidence VALUES ('dc_1', 'ev_0')")
        reviewer.execute(
            "UPDATE proposal SET status = 'ratified', resolved_by = session_user, resolved_at = %s, "
            "decision_id = 'dc_1' WHERE id = 'pr_0'",
            (T0,),
        )
        append(reviewer, "proposal.ratified")
        reviewer.execute(
            "UPDATE decision SET valid_until = '2026-02-01Z', closed_by = 'superseded' WHERE id = 'dc_0'"
        )
        decision(reviewer, "dc_2", subject="cache.policy", valid_from="2026-02-01T00:00:00.000000Z")
        link(reviewer, "dc_0", "dc_2")
        append(reviewer, "decision.superseded", "dc_0")
    with seeded.connect(roles.AUDITOR) as auditor:
        assert auditor.execute("SELECT status, decision_id FROM proposal WHERE id = 'pr_0'").fetchone() == (
            "ratified",
            "dc_1",
        )


def test_a_reviewer_still_cannot_break_an_invariant(seeded):
    with seeded.connect(roles.REVIEWER, autocommit=True) as reviewer:
        with pytest.raises(DENIED, match="permission denied"):
            reviewer.execute("UPDATE decision SET decision = 'something else'")
        with pytest.raises(DENIED, match="permission denied"):
            reviewer.execute("DELETE FROM audit")
        reviewer.execute(
            "UPDATE proposal SET status = 'rejected', resolved_by = session_user WHERE id = 'pr_0'"
        )
        with pytest.raises(psycopg.IntegrityError, match="resolved once"):
            reviewer.execute("UPDATE proposal SET status = 'ratified' WHERE id = 'pr_0'")
        reviewer.execute("UPDATE decision SET valid_until = '2026-02-01Z', closed_by = 'retired'")
        with pytest.raises(psycopg.IntegrityError, match="closed, once"):
            reviewer.execute("UPDATE decision SET valid_until = '2026-03-01Z'")


def test_an_auditor_only_reads(seeded):
    with seeded.connect(roles.AUDITOR, autocommit=True) as auditor:
        for table in roles.TABLES:
            auditor.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table)))
        with pytest.raises(DENIED):
            evidence(auditor, "ev_1")
        with pytest.raises(DENIED):
            proposal(auditor, "pr_1")
        with pytest.raises(DENIED):
            auditor.execute("UPDATE proposal SET status = 'ratified' WHERE id = 'pr_0'")
        with pytest.raises(DENIED):
            append(auditor, "evidence.logged")
        with pytest.raises(DENIED):
            auditor.execute("INSERT INTO meta VALUES ('k', 'v')")


def test_grants_quote_the_login_name(pg):
    awkward = 'o"brien; DROP TABLE evidence; --'
    with pg.connect(autocommit=True) as owner:
        owner.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(awkward)))
        try:
            for grant, group in (
                (roles.grant_reviewer, roles.REVIEWER),
                (roles.grant_agent, roles.AGENT),
            ):
                for statement in grant(awkward):
                    owner.execute(statement)
                member_of = owner.execute(
                    "SELECT array_agg(g.rolname::text) FROM pg_auth_members m "
                    "JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles r ON r.oid = m.member "
                    "WHERE r.rolname = %s",
                    (awkward,),
                ).fetchone()[0]
                assert member_of == [group]
            assert owner.execute("SELECT to_regclass('evidence')").fetchone() != (None,)
        finally:
            owner.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(awkward)))


def test_a_temporary_table_cannot_stand_in_for_the_audit_chain(seeded):
    with seeded.connect(roles.AGENT, autocommit=True) as agent:
        append(agent, "evidence.logged", "ev_0")
        # A forged chain end in the session's own schema, which unqualified names would find first.
        agent.execute("CREATE TEMP TABLE audit (seq bigint, hash text)")
        agent.execute("INSERT INTO audit VALUES (1, %s)", ("f" * 64,))
        forged = {"seq": 2, "at": T0, "actor": agent.info.user, "action": "evidence.logged", "target": "ev_0"}
        forged |= {"before": None, "after": None}
        with pytest.raises(psycopg.IntegrityError, match="does not link"):
            agent.execute(
                "INSERT INTO public.audit (seq, at, actor, action, target, prev_hash, hash) "
                "VALUES (2, %s, %s, 'evidence.logged', 'ev_0', %s, %s)",
                (T0, agent.info.user, "f" * 64, row_hash("f" * 64, forged)),
            )
        assert agent.execute("SELECT count(*) FROM public.audit").fetchone() == (1,)


def test_a_reviewer_or_auditor_sets_only_the_signed_head_and_last_verify(seeded):
    for group in (roles.REVIEWER, roles.AUDITOR):
        with seeded.connect(group, autocommit=True) as login:
            for key in roles.SIGNER_META_KEYS:
                login.execute(
                    "INSERT INTO meta (key, value) VALUES (%s, %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, group),
                )
            for key in ("store_id", "vector_model", "conflict_rules", "vault_key_id"):
                with pytest.raises(DENIED, match="row-level security"):
                    login.execute(
                        "INSERT INTO meta (key, value) VALUES (%s, 'forged') "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        (key,),
                    )
            with pytest.raises(DENIED):
                login.execute("UPDATE meta SET key = 'store_id' WHERE key = 'last_verify'")
            with pytest.raises(DENIED, match="permission denied"):
                login.execute("DELETE FROM meta")
    with (
        seeded.connect(roles.AGENT, autocommit=True) as agent,
        pytest.raises(DENIED, match="permission denied"),
    ):
        agent.execute("INSERT INTO meta (key, value) VALUES ('last_verify', 'forged')")
    with seeded.connect(autocommit=True) as owner:
        rows = dict(owner.execute("SELECT key, value FROM meta").fetchall())
    assert {key: rows.get(key) for key in roles.SIGNER_META_KEYS} == dict.fromkeys(
        roles.SIGNER_META_KEYS, roles.AUDITOR
    )
    assert "forged" not in rows.values()


def test_a_reviewer_updates_a_conflicts_text_but_never_deletes_one(seeded):
    with seeded.connect(autocommit=True) as owner:
        decision(owner, "dc_1", subject="infra.stores")
        owner.execute("INSERT INTO decision_conflict VALUES ('dc_0', 'dc_1', 'redis', 'a', 'b')")
    with seeded.connect(roles.REVIEWER, autocommit=True) as reviewer:
        reviewer.execute(
            "INSERT INTO decision_conflict VALUES ('dc_0', 'dc_1', 'redis', 'c', 'd') "
            "ON CONFLICT (decision_id, other_id) DO UPDATE SET clause = excluded.clause"
        )
        for statement in (
            "DELETE FROM decision_conflict",
            "UPDATE decision_conflict SET other_id = 'dc_0'",
            "TRUNCATE decision_conflict",
        ):
            with pytest.raises(DENIED):
                reviewer.execute(statement)
    for group in (roles.AGENT, roles.AUDITOR):
        with seeded.connect(group, autocommit=True) as login, pytest.raises(DENIED):
            login.execute("UPDATE decision_conflict SET clause = 'x'")
    with seeded.connect(autocommit=True) as owner:
        assert owner.execute("SELECT clause FROM decision_conflict").fetchall() == [("c",)]


def test_every_act_is_bound_to_the_login_by_the_database(seeded):
    """An agent or a reviewer login cannot write another's name as proposer, resolver, ratifier or actor."""
    reviewer_login = seeded.cluster.logins[roles.REVIEWER][0]
    with seeded.connect(roles.AGENT, autocommit=True) as agent:
        for forged in (
            lambda: proposal(agent, "pr_forged", proposer=reviewer_login),
            lambda: proposal(agent, "pr_forged", proposer="alice"),
            lambda: append(agent, "evidence.logged", "ev_0", actor=reviewer_login),
            lambda: agent.execute(
                "INSERT INTO evidence (id, content_hash, text, kind, agent, created_at) "
                "VALUES ('ev_x', 'h-x', 'x', 'note', %s, now())",
                (reviewer_login,),
            ),
        ):
            with pytest.raises(DENIED, match="acts as itself"):
                forged()
        # A label that is no login's (a transcript's format name) is kept as the text's source.
        agent.execute(
            "INSERT INTO evidence (id, content_hash, text, kind, agent, created_at) "
            "VALUES ('ev_y', 'h-y', 'y', 'note', 'claude-code', now())"
        )
        proposal(agent, "pr_mine")
        with pytest.raises(DENIED, match="acts as itself"):
            agent.execute(
                "UPDATE proposal SET status = 'withdrawn', resolved_by = 'alice' WHERE id = 'pr_mine'"
            )
    with seeded.connect(roles.REVIEWER, autocommit=True) as reviewer:
        with pytest.raises(DENIED, match="acts as itself"):
            decision(reviewer, "dc_forged", subject="db.other", ratified_by="bob")
        with pytest.raises(DENIED, match="acts as itself"):
            reviewer.execute("UPDATE proposal SET status = 'rejected', resolved_by = 'bob' WHERE id = 'pr_0'")
        with pytest.raises(DENIED, match="acts as itself"):
            append(reviewer, "proposal.rejected", actor="bob")
    with seeded.connect(autocommit=True) as owner:
        assert owner.execute("SELECT status FROM proposal WHERE id = 'pr_0'").fetchone() == ("pending",)


def test_an_agent_withdraws_only_its_own_proposals(seeded):
    """A second agent's login, or any agent's, cannot withdraw another's (a reviewer's included)."""
    other = f"agent_two_{seeded.name[-6:]}"
    with seeded.connect(autocommit=True) as owner:
        owner.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'pw-two'").format(sql.Identifier(other)))
        for statement in roles.grant_agent(other):
            owner.execute(statement)
    try:
        with seeded.connect(roles.REVIEWER, autocommit=True) as reviewer:
            proposal(reviewer, "pr_reviewers")
        with seeded.connect(roles.AGENT, autocommit=True) as agent:
            proposal(agent, "pr_agents")
        with psycopg.connect(seeded.uri(), user=other, password="pw-two", autocommit=True) as second:
            for pid in ("pr_reviewers", "pr_agents", "pr_0"):
                done = second.execute(
                    "UPDATE proposal SET status = 'withdrawn', resolved_by = session_user WHERE id = %s",
                    (pid,),
                )
                assert done.rowcount == 0
        with seeded.connect(roles.AGENT, autocommit=True) as agent:
            done = agent.execute(
                "UPDATE proposal SET status = 'withdrawn', resolved_by = session_user WHERE id = 'pr_agents'"
            )
            assert done.rowcount == 1
        with seeded.connect(autocommit=True) as owner:
            statuses = dict(owner.execute("SELECT id, status FROM proposal").fetchall())
        assert statuses == {"pr_0": "pending", "pr_reviewers": "pending", "pr_agents": "withdrawn"}
    finally:
        with seeded.connect(autocommit=True) as owner:
            owner.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(other)))
            owner.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(other)))


def _raw_proposal(
    conn, pid: str, subject: str, text: str = "use postgres", created_at: str | None = None
) -> None:
    conn.execute(
        "INSERT INTO proposal (id, subject, decision, proposer, created_at) "
        "VALUES (%s, %s, %s, session_user, coalesce(%s::timestamptz, now()))",
        (pid, subject, text, created_at),
    )


def test_the_input_rules_hold_in_the_database_for_raw_sql(seeded):
    """What the facade refuses, an agent's or a reviewer's raw SQL cannot queue or ratify either."""
    with seeded.connect(autocommit=True) as owner:
        proposal(owner, "pr_mfa", subject="auth.mfa")
    refused = {
        "auth.mf\u0430": "looks like the existing subject",  # Cyrillic a
        "auth.mf\u00e1": "looks like the existing subject",  # an accent
        "auth.mfa\u0301": "normal form",  # the same accent, not composed (NFKC composes it)
        "Auth.MFA": "normal form",
        "auth mfa": "normal form",
        "auth..mfa": "normal form",
        "auth.\u202emfa": "hidden",
        "x" * 201: "longer than 200",
    }
    with seeded.connect(roles.AGENT, autocommit=True) as agent:
        for n, (subject, why) in enumerate(refused.items()):
            with pytest.raises(psycopg.IntegrityError, match=why):
                _raw_proposal(agent, f"pr_bad_{n}", subject)
        for n, text in enumerate(("use\x1b[2J postgres", "use \u202eserg", "line\rover", "   ")):
            with pytest.raises(psycopg.IntegrityError, match=r"hidden|blank"):
                _raw_proposal(agent, f"pr_text_{n}", "db.engine", text)
        with pytest.raises(psycopg.IntegrityError, match="time of writing"):
            _raw_proposal(agent, "pr_old", "db.engine", created_at="2020-01-01T00:00:00Z")
        # What the facade accepts, raw SQL may write too: a new subject in another script, a join.
        _raw_proposal(agent, "pr_ok_1", "сервис.кэш", "Используем Redis")
        _raw_proposal(agent, "pr_ok_2", "db.engine", "Use PostgreSQL 18 \U0001f468\u200d\U0001f4bb")
    with (
        seeded.connect(roles.REVIEWER, autocommit=True) as reviewer,
        pytest.raises(psycopg.IntegrityError, match="hidden"),
    ):
        reviewer.execute(
            "INSERT INTO decision (id, subject, decision, valid_from, ratified_by, ratified_at) "
            "VALUES ('dc_bad', 'db.other', E'use \\u202e this', now(), session_user, now())"
        )
    with seeded.connect(autocommit=True) as owner:
        ids = {r[0] for r in owner.execute("SELECT id FROM proposal").fetchall()}
    assert ids == {"pr_0", "pr_mfa", "pr_ok_1", "pr_ok_2"}


def test_the_server_refuses_look_alikes_from_the_facades_whole_table(seeded):
    """Letters p005's 34-letter stand-in did not know: Latin alpha, Armenian o, small capitals."""
    with seeded.connect(autocommit=True) as owner:
        proposal(owner, "pr_mfa", subject="auth.mfa")
    with seeded.connect(roles.AGENT, autocommit=True) as agent:
        for n, subject in enumerate(("auth.mf\u0251", "cache.p\u0585licy", "auth.mf\u1d00", "auth.m\u0192a")):
            assert text.lookalike_key(subject) in ("auth.mfa", "cache.policy")
            with pytest.raises(psycopg.IntegrityError, match="looks like the existing subject"):
                _raw_proposal(agent, f"pr_alike_{n}", subject)


def test_the_servers_look_alike_key_is_the_facades(pg):
    """Subjects drawn from every script's letters and marks: the server keys each as the facade does."""
    rng = random.Random(7)
    pool = [c for c, _ in lookalikes.shipped()[1]]
    pool += [chr(code) for code in range(0x80, 0x3000) if unicodedata.category(chr(code))[0] in "LNM"]
    subjects = set()
    while len(subjects) < 3000:
        drawn = "".join(rng.choice(pool) for _ in range(rng.randint(1, 6)))
        with contextlib.suppress(UsageError):
            subject = text.normalise_subject("x." + drawn)
            if not subject.isascii():
                subjects.add(subject)
    ordered = sorted(subjects)
    with pg.connect(roles.AGENT, autocommit=True) as agent:
        keys = agent.execute("SELECT ctx_lookalike(s) FROM unnest(%s::text[]) s", (ordered,)).fetchall()
    differ = [(s, k[0], text.lookalike_key(s)) for s, k in zip(ordered, keys, strict=True)]
    assert [d for d in differ if d[1] != d[2]] == []


def test_an_agent_cannot_write_a_decisions_vector(seeded):
    """Where a decision ranks in every agent's recall is a person's to set, not an agent's."""
    with seeded.connect(roles.AGENT, autocommit=True) as agent, pytest.raises(DENIED):
        agent.execute(
            "INSERT INTO decision_vector (chunk_id, owner_rowid, emb) "
            "SELECT rowid * 16, rowid, '[1,0,0]' FROM decision WHERE id = 'dc_0'"
        )


def test_an_agent_adds_entity_mentions_only_for_the_evidence_it_is_logging(seeded):
    """Mentions steer recall's ranking: an agent cannot point them at a decision or older evidence."""
    with seeded.connect(autocommit=True) as owner:
        owner.execute(
            "INSERT INTO evidence (id, content_hash, text, kind, created_at) "
            "VALUES ('ev_old', 'h-old', 'an old note', 'note', '2026-01-01T00:00:00Z')"
        )
        owner.execute("INSERT INTO entity (name) VALUES ('postgres')")
    with seeded.connect(roles.AGENT, autocommit=True) as agent:
        for item in ("dc_0", "ev_old"):
            with pytest.raises(DENIED, match="row-level security"):
                agent.execute(
                    "INSERT INTO entity_mention (entity_id, item) "
                    "SELECT id, %s FROM entity WHERE name = 'postgres'",
                    (item,),
                )
        evidence(agent, "ev_new")
        agent.execute(
            "INSERT INTO entity_mention (entity_id, item) "
            "SELECT id, 'ev_new' FROM entity WHERE name = 'postgres'"
        )
        assert agent.execute("SELECT item FROM entity_mention ORDER BY item").fetchall() == [("ev_new",)]
