"""The human gate as database roles: agents propose, reviewers ratify, auditors read.

``ctx_agent`` may log evidence, open proposals, withdraw a pending one and append the audit rows
of those acts; no privilege or policy lets it set a proposal's status to ratified or rejected,
write a decision, close a window or link a supersession. ``ctx_reviewer`` may do all of that too,
and records the conflicts a ratification finds. ``ctx_auditor`` reads, and writes one thing: the
signed head a checkpoint or a signed export keeps in the store (a reviewer may too; the signature,
not the grant, is what a verifier trusts). The grants are per column where a role may update (a
reviewer closes a window; the triggers of :mod:`.schema` keep that a one-time close), and
row-level security holds what a column grant cannot: which status an agent's insert or update may
leave, which audit actions it may append, and which metadata keys a reviewer or auditor may set.
Only the tables' owner, the administrator, seals evidence, sets the vector dimension, rebuilds
the derived tables (``ctx reindex``) and changes the schema.

:data:`STATEMENTS` are p001's and never change; :data:`P002_STATEMENTS` are what p002 adds.

Group roles are cluster-wide and created only if missing; the grants are per database. People
and agents log in as their own roles, made members of one group by :func:`grant_agent`,
:func:`grant_reviewer` or :func:`grant_auditor`.
"""

from __future__ import annotations

from psycopg import sql

from ctx_kernel.kernel.store.postgres.schema import CHANGED_TABLES, POSTING_KINDS

AGENT = "ctx_agent"
REVIEWER = "ctx_reviewer"
AUDITOR = "ctx_auditor"
GROUPS = (AGENT, REVIEWER, AUDITOR)

# The audit actions of an agent's own acts (see ctx_kernel.kernel.audit.export.EVENT_TYPES).
AGENT_ACTIONS = ("evidence.logged", "proposal.created", "proposal.withdrawn")

# Every ctx table, the ones a write signals to live review (the posting tables are granted apart).
TABLES = CHANGED_TABLES
# What an agent's own acts write: evidence, proposals, their citations and derived recall rows.
AGENT_INSERTS = (
    "evidence",
    "proposal",
    "proposal_evidence",
    "audit",
    "entity",
    "entity_mention",
    "decision_vector",
    "evidence_vector",
)
REVIEWER_INSERTS = (*AGENT_INSERTS, "decision", "decision_evidence", "supersession", "decision_conflict")
RESOLUTION_COLUMNS = "status, resolved_at, resolved_by, resolution_note"
CLOSING_COLUMNS = "valid_until, closed_by, close_reason"

_ALL = ", ".join(GROUPS)
_AGENT_ACTIONS_SQL = ", ".join(f"'{action}'" for action in AGENT_ACTIONS)

STATEMENTS = [
    # CREATE ROLE has no IF NOT EXISTS; another database of the cluster may have made them.
    f"""DO $$ DECLARE
         name text;
       BEGIN
         FOREACH name IN ARRAY ARRAY[{", ".join(f"'{group}'" for group in GROUPS)}] LOOP
           IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = name) THEN
             EXECUTE format('CREATE ROLE %I NOLOGIN', name);
           END IF;
         END LOOP;
       END $$""",
    f"GRANT SELECT ON {', '.join(TABLES)} TO {_ALL}",
    # The change counter every write bumps (through a SECURITY DEFINER trigger); readers poll it.
    f"GRANT SELECT ON ctx_change TO {_ALL}",
    # The full-text postings every keyword search reads; only their SECURITY DEFINER triggers write.
    f"GRANT SELECT ON {', '.join(f'{kind}_posting' for kind in POSTING_KINDS)} TO {_ALL}",
    f"GRANT INSERT ON {', '.join(AGENT_INSERTS)} TO {AGENT}",
    f"GRANT UPDATE ({RESOLUTION_COLUMNS}) ON proposal TO {AGENT}",
    f"GRANT INSERT ON {', '.join(REVIEWER_INSERTS)} TO {REVIEWER}",
    f"GRANT UPDATE ({RESOLUTION_COLUMNS}, decision_id) ON proposal TO {REVIEWER}",
    f"GRANT UPDATE ({CLOSING_COLUMNS}) ON decision TO {REVIEWER}",
    # Functions are executable by PUBLIC by default; appending is for the writing roles only.
    "REVOKE EXECUTE ON FUNCTION ctx_audit_append(text, text, text, text, text, text) FROM PUBLIC",
    f"GRANT EXECUTE ON FUNCTION ctx_audit_append(text, text, text, text, text, text) TO {AGENT}, {REVIEWER}",
    # Row-level security. The owner is exempt (it is the administrator); every group reads all
    # rows, which the audit trigger relies on to find the chain's end.
    "ALTER TABLE proposal ENABLE ROW LEVEL SECURITY",
    f"CREATE POLICY proposal_read ON proposal FOR SELECT TO {_ALL} USING (true)",
    f"""CREATE POLICY proposal_agent_opens ON proposal FOR INSERT TO {AGENT}
        WITH CHECK (status = 'pending' AND resolved_at IS NULL AND resolved_by IS NULL
                    AND resolution_note IS NULL AND decision_id IS NULL)""",
    f"""CREATE POLICY proposal_agent_withdraws ON proposal FOR UPDATE TO {AGENT}
        USING (status = 'pending') WITH CHECK (status = 'withdrawn')""",
    f"CREATE POLICY proposal_reviewer_opens ON proposal FOR INSERT TO {REVIEWER} WITH CHECK (true)",
    f"CREATE POLICY proposal_reviewer_resolves ON proposal FOR UPDATE TO {REVIEWER} USING (true)",
    "ALTER TABLE audit ENABLE ROW LEVEL SECURITY",
    f"CREATE POLICY audit_read ON audit FOR SELECT TO {_ALL} USING (true)",
    f"""CREATE POLICY audit_agent_appends ON audit FOR INSERT TO {AGENT}
        WITH CHECK (action IN ({_AGENT_ACTIONS_SQL}))""",
    f"CREATE POLICY audit_reviewer_appends ON audit FOR INSERT TO {REVIEWER} WITH CHECK (true)",
]


# The metadata a reviewer or auditor may write: the latest signed head (a checkpoint's or a signed
# export's, ctx_kernel.kernel.audit.checkpoints.META_KEY) and the last full verify's outcome
# (ctx_kernel.kernel.limits.META_LAST_VERIFY). Every other key (the store's id, the vector model,
# the conflict rules) stays the owner's.
SIGNER_META_KEYS = ("audit_checkpoint", "last_verify")
_SIGNER_KEYS_SQL = ", ".join(f"'{key}'" for key in SIGNER_META_KEYS)
_SIGNERS = f"{REVIEWER}, {AUDITOR}"

# p002: what a reviewer's and an auditor's whole job needs beyond p001.
P002_STATEMENTS = [
    # A ratification records its conflicts with an upsert (INSERT ... ON CONFLICT DO UPDATE, as
    # SQLite's INSERT OR REPLACE), which needs UPDATE on the columns it sets; without it every
    # ratification that contradicted a current decision was refused. Deleting stays the owner's.
    f"GRANT UPDATE (term, clause, other_clause) ON decision_conflict TO {REVIEWER}",
    # `ctx audit checkpoint` and `ctx audit export` keep the signed head in meta; `ctx audit verify`
    # records its outcome there. Row-level security keeps those two keys the only ones they set.
    f"GRANT INSERT, UPDATE (value) ON meta TO {_SIGNERS}",
    "ALTER TABLE meta ENABLE ROW LEVEL SECURITY",
    f"CREATE POLICY meta_read ON meta FOR SELECT TO {_ALL} USING (true)",
    f"""CREATE POLICY meta_signer_inserts ON meta FOR INSERT TO {_SIGNERS}
        WITH CHECK (key IN ({_SIGNER_KEYS_SQL}))""",
    f"""CREATE POLICY meta_signer_updates ON meta FOR UPDATE TO {_SIGNERS}
        USING (key IN ({_SIGNER_KEYS_SQL})) WITH CHECK (key IN ({_SIGNER_KEYS_SQL}))""",
]

# What each group's members may do, in words, for messages (doctor, a refusal).
JOBS = {
    AGENT: "logs evidence, proposes, withdraws and reads",
    REVIEWER: "ratifies, rejects and retires besides",
    AUDITOR: "reads, verifies and signs checkpoints and exports",
}


def _member_of(group: str, login: str) -> list[sql.Composed]:
    """Make ``login`` a member of ``group`` and of no other ctx group."""
    role = sql.Identifier(login)
    return [
        sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), role),
        *(
            sql.SQL("REVOKE {} FROM {}").format(sql.Identifier(other), role)
            for other in GROUPS
            if other != group
        ),
    ]


def grant_agent(login: str) -> list[sql.Composed]:
    """SQL that makes the existing login role ``login`` an agent: it proposes, never ratifies."""
    return _member_of(AGENT, login)


def grant_reviewer(login: str) -> list[sql.Composed]:
    """SQL that makes the existing login role ``login`` a reviewer: it ratifies and rejects."""
    return _member_of(REVIEWER, login)


def grant_auditor(login: str) -> list[sql.Composed]:
    """SQL that makes the existing login role ``login`` an auditor: it reads everything, writes nothing."""
    return _member_of(AUDITOR, login)
