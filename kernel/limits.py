"""Limits and names shared by the kernel's services, its hosts and its contracts, written once.

A leaf: it imports nothing from ctx, so anything may import it (the JSON contracts included)
without pulling in the facade.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

# -- input limits ---------------------------------------------------------------------------
MAX_QUERY_CHARS: Final = 2000
# Bytes of one JSON document read from a file or standard input (`ctx propose --input`).
MAX_JSON_INPUT_BYTES: Final = 200_000
# `ctx inject` token budgets (see recall/inject.py for how tokens are counted).
DEFAULT_BUDGET: Final = 2000
MIN_BUDGET: Final = 200
MAX_BUDGET: Final = 1_000_000
# The block's characters, whatever the budget: Claude Code keeps at most 10,000 characters of a
# SessionStart hook's output in the context (longer output becomes a file path and a preview).
MAX_INJECT_CHARS: Final = 10_000
# Hits per section a recall may ask for, and results a keyword search may return.
MAX_RECALL_K: Final = 100
MAX_SEARCH_LIMIT: Final = 1000
# The most rows `--limit` may ask a listing for (decisions, the queue, a history, evidence).
MAX_LIST_LIMIT: Final = 1_000_000

# -- recall -----------------------------------------------------------------------------------
# A type for the JSON contracts and the tuple for everyone else, from one spelling.
RecallMode = Literal["hybrid", "keyword", "entity", "vector"]
RECALL_MODES: Final[tuple[str, ...]] = get_args(RecallMode)
DEFAULT_MODE: Final = "hybrid"
# The modes that query the embedding model.
VECTOR_MODES: Final = ("hybrid", "vector")
# Reciprocal rank fusion's k: 60 is the constant of Cormack, Clarke and Buettcher (SIGIR 2009).
DEFAULT_RRF_K: Final = 60
MAX_RRF_K: Final = 10_000
# The embedder choice meaning "the configured model" (see recall/embeddings.py resolve).
AUTO: Final = "auto"
# Rows recall embeds before it answers; the rest waits for `ctx reindex` (a bound on latency).
BACKFILL_ON_RECALL: Final = 128

# -- writing ----------------------------------------------------------------------------------
# The names kernel.capture.transcripts.FORMATS registers, here so the CLI can offer them without
# importing the parsers, or the ingest code, on every command (a test keeps the two equal).
TRANSCRIPT_FORMATS: Final = ("claude-code", "codex", "aider")
# Below this many records a worker process costs more to start than it saves.
PARALLEL_FROM: Final = 5_000
# Records per transaction in a bulk log: large enough that commits (an fsync each) are a small
# share of the time, small enough that an interrupted run loses little work.
LOG_BATCH: Final = 500
# Rows per target transaction in `ctx migrate`, for the same reasons.
COPY_BATCH: Final = 500
# Evidence rows sealed per transaction by `ctx encrypt` and `ctx rekey`.
SEAL_BATCH: Final = 500
# token_sort_ratio of "subject decision" against each pending proposal; 82 flags rewordings
# and reorderings of the same sentence but not a different choice on the same subject.
NEAR_DUPLICATE_SCORE: Final = 82.0

# -- store metadata keys ----------------------------------------------------------------------
# The conflict rules the store's recorded contradictions were found with.
META_CONFLICT_RULES: Final = "conflict_rules"
# The store's record of the last full `ctx audit verify` (not audited itself).
META_LAST_VERIFY: Final = "last_verify"
# The model a `ctx reindex` under way embeds with; left by an interrupted one, so the next resumes.
META_REINDEX: Final = "reindex_model"

# -- audit actions: every row of the audit log names one ----------------------------------
EVIDENCE_LOGGED: Final = "evidence.logged"
PROPOSAL_CREATED: Final = "proposal.created"
PROPOSAL_RATIFIED: Final = "proposal.ratified"
PROPOSAL_REJECTED: Final = "proposal.rejected"
PROPOSAL_WITHDRAWN: Final = "proposal.withdrawn"
PROPOSAL_IMPORTED: Final = "proposal.imported"
DECISION_SUPERSEDED: Final = "decision.superseded"
DECISION_RETIRED: Final = "decision.retired"
DECISION_IMPORTED: Final = "decision.imported"
DECISION_CONFIRMED: Final = "decision.confirmed"
VAULT_ENCRYPTED: Final = "vault.encrypted"
VAULT_REKEYED: Final = "vault.rekeyed"

# The kind of event each action records in a signed audit export, and every kind an export
# counts (``other`` for actions an older ctx does not know).
AUDIT_EVENT_TYPES: Final = {
    PROPOSAL_CREATED: "proposal",
    PROPOSAL_RATIFIED: "ratification",
    PROPOSAL_REJECTED: "rejection",
    PROPOSAL_WITHDRAWN: "withdrawal",
    DECISION_SUPERSEDED: "supersession",
    DECISION_RETIRED: "retirement",
    EVIDENCE_LOGGED: "evidence",
    DECISION_IMPORTED: "import",
    # A person's act like a ratification: ratifying with links or a review date, or re-confirming.
    DECISION_CONFIRMED: "ratification",
    PROPOSAL_IMPORTED: "import",
    VAULT_ENCRYPTED: "vault",
    VAULT_REKEYED: "vault",
}
AuditEventType = Literal[
    "proposal",
    "ratification",
    "rejection",
    "withdrawal",
    "supersession",
    "retirement",
    "evidence",
    "import",
    "vault",
    "other",
]
AUDIT_EVENTS: Final[tuple[str, ...]] = get_args(AuditEventType)
