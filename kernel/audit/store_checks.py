"""Everything ``ctx audit verify`` checks in a store, beyond the chain itself, and signing its head.

In order: the chain against every signed head found (a rewritten history), the schema against the
migrations (a dropped trigger or index), then the tables against the replayed log (a row changed,
added or removed beside the log). The first problem is the report's; all of them are listed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.audit import checkpoints as audit_checkpoint
from ctx_kernel.kernel.audit.replay import replay_state
from ctx_kernel.kernel.audit.schema import schema_problems
from ctx_kernel.kernel.audit.served import ServedService
from ctx_kernel.kernel.chain import ChainReport
from ctx_kernel.kernel.errors import RefusedError
from ctx_kernel.kernel.store.base import Store

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

    from ctx_kernel.kernel.audit.signing import KeyInfo

NO_CHECKPOINT = (
    "no signed checkpoint: a rewrite of the whole log cannot be detected from the store alone "
    "(run `ctx audit checkpoint` and keep the file somewhere else)"
)


@dataclass(frozen=True)
class CheckpointResult:
    """What ``ctx audit checkpoint`` signed and where it was written."""

    document: dict[str, Any]
    paths: list[Path]

    def to_dict(self) -> dict[str, Any]:
        """The checkpoint document (``schemas/audit-checkpoint.schema.json``)."""
        return self.document


def _trusted(pubkey: Path | None) -> dict[str, Ed25519PublicKey]:
    from ctx_kernel.kernel.audit import signing  # noqa: PLC0415 - cryptography loads only when there is a head to check

    if pubkey is not None:
        public, key_id = signing.load_public_key(pubkey)
        return {key_id: public}
    return signing.trusted_public_keys()


def check_signed_heads(
    store: Store, rows: Sequence[Mapping[str, Any]], named: Sequence[Path], pubkey: Path | None
) -> audit_checkpoint.HeadCheck:
    """The verified chain ``rows`` against every checkpoint and export manifest found or named."""
    trusted = _trusted(pubkey) if pubkey is not None else None  # a bad key file is refused even unused
    folder = paths.checkpoints_dir(store.location)
    store_id = store.get_meta("store_id")
    stored = store.get_meta(audit_checkpoint.META_KEY)
    hashes = [r["hash"] for r in rows]
    heads, problems, skipped = audit_checkpoint.gather(folder, stored, named, store_id, hashes)
    if not heads:
        return audit_checkpoint.HeadCheck(problems, 0, None, tuple(skipped))
    result = audit_checkpoint.check_heads(heads, hashes, store_id, trusted or _trusted(None))
    return replace(result, problems=problems + result.problems, skipped=tuple(skipped))


def verify_store(
    store: Store,
    rows: Sequence[Mapping[str, Any]],
    chain: ChainReport,
    *,
    checkpoints: Sequence[Path] = (),
    pubkey: Path | None = None,
) -> ChainReport:
    """Check a store whose chain ``rows`` verified: signed heads, schema, then tables; first problem first."""
    heads = check_signed_heads(store, rows, checkpoints, pubkey)
    problems: list[tuple[int | None, str]] = [(None, p) for p in heads.problems]
    problems += [(None, p) for p in schema_problems(store)]
    state = replay_state(store, rows)
    ordered = sorted(state.problems, key=lambda p: (p.seq is None, p.seq or 0))
    problems += [(p.seq, f"the tables differ from the audit log: {p.problem}") for p in ordered]
    # After the rows: a changed row also leaves its keyword index behind, and the row says more.
    problems += [(None, problem) for problem in store.keyword_index_problems()]
    served = ServedService(store).check(heads.latest, _trusted(pubkey) if pubkey is not None else None)
    problems += [(None, problem) for problem in served.problems]
    notes = [*heads.skipped, *state.notes, *served.notes]
    if heads.latest is None:
        notes.insert(0, NO_CHECKPOINT)
    return replace(
        chain,
        ok=not problems,
        first_bad_seq=problems[0][0] if problems else None,
        problem=problems[0][1] if problems else None,
        problems=tuple(p for _, p in problems),
        checkpoints=heads.checked,
        checkpoint_seq=heads.latest.seq if heads.latest else None,
        notes=tuple(notes),
        served_entries=served.entries,
    )


def sign_checkpoint(
    store: Store,
    rows: Sequence[Mapping[str, Any]],
    key: Ed25519PrivateKey,
    key_info: KeyInfo,
    *,
    signed_at: str,
    out: Path | None = None,
) -> CheckpointResult:
    """Sign the head of a verified chain; keep it beside the store, in the store, and at ``out``."""
    if not rows:
        raise RefusedError("the audit log is empty: there is no head to sign")
    document = audit_checkpoint.sign_head(
        key,
        key_info,
        store_id=store.get_meta("store_id") or "unknown",
        seq=rows[-1]["seq"],
        head_hash=rows[-1]["hash"],
        signed_at=signed_at,
        served=ServedService(store).head(),
    )
    return CheckpointResult(document, keep_signed_head(store, document, out))


def keep_signed_head(store: Store, document: Mapping[str, Any], out: Path | None = None) -> list[Path]:
    """Keep a checkpoint or an export's manifest as the latest signed head: a file, and the store's copy."""
    folder = paths.checkpoints_dir(store.location)
    written = [folder / audit_checkpoint.file_name(document)]
    if out is not None:
        written.append(out)
    # The store's copy first: where the login may not keep it, no file is written either.
    with store.transaction():
        store.set_meta(audit_checkpoint.META_KEY, json.dumps(document, sort_keys=True))
        for path in written:
            audit_checkpoint.write(path, document)
    return written
