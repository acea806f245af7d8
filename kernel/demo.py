"""A demo store with realistic decisions, evidence and pending proposals."""

from __future__ import annotations

from pathlib import Path

from ctx_kernel.kernel.errors import RefusedError, UsageError
from ctx_kernel.kernel.facade import Ctx
from ctx_kernel.kernel.paths import STORE_DIR, STORE_FILE

EVIDENCE = [
    (
        "conversation",
        "claude",
        "User: sessions keep expiring mid-upload. Assistant: the access "
        "token lives 15 minutes and we never refresh it; a refresh token with rotation fixes this.",
    ),
    (
        "log",
        "ci",
        "2026-10-02 14:03:11 ERROR auth.middleware: JWT signature verification failed "
        "for kid=2024-07 (key rotated, token still cached by the mobile client)",
    ),
    (
        "note",
        "alice",
        "Security review: long-lived JWTs cannot be revoked before expiry. We need "
        "server-side revocation for admin accounts; opaque session ids in Redis give us that.",
    ),
    (
        "conversation",
        "codex",
        "We benchmarked psycopg3 against asyncpg on the ingest path: asyncpg "
        "was 1.8x faster for COPY, but psycopg3 keeps us on one driver for sync and async code.",
    ),
    (
        "doc",
        "bob",
        "ADR draft: all public HTTP APIs return RFC 9457 problem+json errors; clients "
        "parse `type` and `title`, never the message text.",
    ),
    (
        "note",
        "alice",
        "Frontend builds take 4 minutes with webpack; Vite's dev server starts in "
        "under a second on the same repo.",
    ),
    (
        "log",
        "ci",
        "pytest -n 4: 12 flaky failures in tests/integration/test_payments.py, all "
        "timeouts against the shared staging database",
    ),
]

# (proposer, subject, decision, rationale, cited evidence indexes)
# (proposer, subject, decision, rationale, indexes of the evidence it cites)
Story = tuple[str, str, str, str | None, list[int]]

HISTORY: list[Story] = [
    (
        "claude",
        "auth.tokens",
        "Use stateless JWT access tokens (15 min) with no refresh tokens.",
        "Simplest thing that works for the first release.",
        [1],
    ),
    (
        "claude",
        "auth.tokens",
        "Use JWT access tokens with refresh-token rotation; refresh tokens "
        "are single use and revoked on reuse.",
        "Sessions expired mid-upload; rotation bounds the damage of a stolen refresh token.",
        [0],
    ),
    (
        "codex",
        "db.driver",
        "Use psycopg 3 for all PostgreSQL access, sync and async.",
        "One driver for both code paths; asyncpg's speed is not needed outside ingest.",
        [3],
    ),
    (
        "bob",
        "api.errors",
        "Return RFC 9457 problem+json bodies for every 4xx and 5xx response.",
        "Clients need a machine-readable error type.",
        [4],
    ),
    (
        "alice",
        "frontend.build",
        "Use Vite for the frontend dev server and production build.",
        "Webpack builds take minutes; Vite starts in under a second.",
        [5],
    ),
    (
        "codex",
        "testing.integration",
        "Never run integration tests against the shared staging "
        "database; each run gets a disposable PostgreSQL container.",
        "Shared staging caused flaky timeouts.",
        [6],
    ),
    (
        "claude",
        "db.ingest",
        "Use asyncpg for the bulk ingest path.",
        "COPY is 1.8x faster with asyncpg.",
        [3],
    ),
]

PENDING: list[Story] = [
    (
        "claude",
        "auth.tokens",
        "Replace JWTs with opaque session ids stored in Redis so admin sessions can be revoked immediately.",
        "Security review asked for revocation.",
        [2],
    ),
    (
        "codex",
        "db.driver",
        "Avoid psycopg; use asyncpg everywhere, including the sync admin scripts.",
        "asyncpg is faster.",
        [3],
    ),
    (
        "gemini",
        "testing.integration",
        "Run integration tests against the shared staging database to save CI minutes.",
        None,
        [],
    ),
    (
        "claude",
        "auth.tokens",
        "Replace JWT with opaque session ids kept in Redis so that admin sessions can be revoked at once.",
        None,
        [2],
    ),
    (
        "gemini",
        "frontend.storybook",
        "Avoid Vite for the Storybook build; keep webpack there because the legacy addons need it.",
        "Two addons have no Vite builder yet.",
        [5],
    ),
]


def holds_demo(folder: Path) -> bool:
    """Whether the project folder ``folder`` holds a store, and it is a demo store."""
    store = folder / STORE_DIR / STORE_FILE
    if not store.exists():
        return False
    with Ctx.open(store, embedder=None) as existing:
        return existing.store.get_meta("demo") == "1"


def build_demo(folder: Path, reviewer: str = "alice", *, replace: bool = False) -> Ctx:
    """Build the demo store under ``folder`` and return it open; a demo store already there is
    built again from scratch only with ``replace`` (what was done in it is lost), and any other
    store is never touched."""
    store = folder / STORE_DIR / STORE_FILE
    if store.exists():
        if not holds_demo(folder):
            raise UsageError(f"{store} exists and is not a demo store; choose another --path")
        if not replace:
            raise RefusedError(
                f"{folder} already holds the demo store, and what was done in it: pass --force to build it "
                f"again from scratch, or reopen it with: cd {folder} && ctx review"
            )
        for suffix in ("", "-wal", "-shm"):
            Path(f"{store}{suffix}").unlink(missing_ok=True)
    ctx, _ = Ctx.init(store)
    with ctx.store.transaction():
        ctx.store.set_meta("demo", "1")
    ids = [ctx.log(body, kind=kind, agent=agent, session="demo-session").id for kind, agent, body in EVIDENCE]
    for proposer, subject, decision, rationale, cites in HISTORY:
        proposal = ctx.propose(
            subject,
            decision,
            rationale=rationale,
            evidence=[ids[i] for i in cites],
            proposer=proposer,
        )
        ctx.ratify(proposal.id, reviewer=reviewer)
    rejected = ctx.propose(
        "frontend.build", "Stay on webpack 4.", proposer="gemini", rationale="Nothing to migrate."
    )
    ctx.reject(rejected.id, reviewer=reviewer, reason="Contradicts the measured build times.")
    for proposer, subject, decision, rationale, cites in PENDING:
        ctx.propose(
            subject,
            decision,
            rationale=rationale,
            evidence=[ids[i] for i in cites],
            proposer=proposer,
        )
    return ctx
