"""Signed heads of the audit chain, kept outside the store, so that a rewritten history shows.

Anyone who can write the database can rewrite the whole log and rehash it consistently; nothing in
the store alone then looks wrong. A checkpoint is the chain's last row and hash, signed with the
user's Ed25519 key (the one that signs exports): the same idea as a Certificate Transparency
signed tree head. Every row's hash covers all the rows before it, so a store whose row ``seq`` no
longer has the signed hash has had its history changed, and no one without the private key can
sign a new head. A signed export's manifest names the store's head too, so it is a checkpoint as
well.

Checkpoints are kept in ``checkpoints/`` beside the store file (commit it, or send the files away),
and the latest one in the store's metadata too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctx_kernel.kernel.capture.json_input import JSONInputError, read_json
from ctx_kernel.kernel.chain import canonical_json
from ctx_kernel.kernel.errors import RefusedError, StoreError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

    from ctx_kernel.kernel.audit.signing import KeyInfo

CHECKPOINT_FORMAT = "ctx-audit-checkpoint"
FORMAT_VERSION = 1
META_KEY = "audit_checkpoint"
STORE_COPY = "the store's own copy"
# A checkpoint is under 1 KB and a manifest about 1.5 KB; anything far larger is neither.
MAX_BYTES = 1_000_000


@dataclass(frozen=True)
class SignedHead:
    """A signed claim that the store's audit row ``seq`` has hash ``hash``."""

    source: str
    store_id: str
    seq: int
    hash: str
    signed_at: str
    key_id: str
    message: bytes
    signature: str
    # The served log's head the same signature covers (checkpoints from before it have none).
    served_seq: int | None = None
    served_hash: str | None = None


@dataclass(frozen=True)
class HeadCheck:
    """The chain checked against every signed head found."""

    problems: list[str]
    checked: int
    latest: SignedHead | None
    # Checkpoints of other stores found in the shared folder: said, and left out of the check.
    skipped: tuple[str, ...] = ()


def sign_head(
    key: Ed25519PrivateKey,
    key_info: KeyInfo,
    *,
    store_id: str,
    seq: int,
    head_hash: str,
    signed_at: str,
    served: tuple[int, str] | None = None,
) -> dict[str, Any]:
    """A checkpoint document: the head (and the served log's head) and the key, signed over their
    canonical JSON."""
    from ctx_kernel.kernel.audit import signing  # noqa: PLC0415 - cryptography loads only to sign or verify

    body = {
        "format": CHECKPOINT_FORMAT,
        "format_version": FORMAT_VERSION,
        "store_id": store_id,
        "seq": seq,
        "hash": head_hash,
        "signed_at": signed_at,
        "key": {"algorithm": "ed25519", "key_id": key_info.key_id, "public_key": key_info.public_raw},
    }
    if served is not None and served[0] > 0:
        body["served_seq"], body["served_hash"] = served
    signature = signing.sign(key, canonical_json(body).encode("utf-8"))
    return {"checkpoint": body, "signature": {"algorithm": "ed25519", "value": signature}}


def render(document: Mapping[str, Any]) -> str:
    """The text of a checkpoint (or manifest) file."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def file_name(document: Mapping[str, Any]) -> str:
    """The name a signed head is kept under in the checkpoints folder."""
    if "checkpoint" in document:
        return f"checkpoint-{document['checkpoint']['seq']:08d}.json"
    return f"export-{document['manifest']['store_head_seq']:08d}.manifest.json"


def write(path: Path, document: Mapping[str, Any]) -> None:
    """Write a signed head atomically (a temporary file renamed over ``path``)."""
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(render(document), encoding="utf-8")
        temporary.replace(path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc


def parse(document: Any, source: str) -> SignedHead:
    """A signed head from a checkpoint document or an export manifest; refuses anything else."""
    from pydantic import ValidationError  # noqa: PLC0415 - only to verify

    from ctx_kernel.kernel.contracts import AuditCheckpointOut, AuditManifestOut  # noqa: PLC0415

    try:
        if isinstance(document, dict) and "checkpoint" in document:
            AuditCheckpointOut.model_validate(document, strict=True)
            body = document["checkpoint"]
            seq, head, at = body["seq"], body["hash"], body["signed_at"]
            served = (body.get("served_seq"), body.get("served_hash"))
        else:
            AuditManifestOut.model_validate(document, strict=True)
            body = document["manifest"]
            seq, head, at = body["store_head_seq"], body["store_head_hash"], body["exported_at"]
            section = body.get("served") or {}
            served = (section.get("last_seq"), section.get("last_hash") if section.get("last_seq") else None)
    except ValidationError:
        raise RefusedError(f"{source} is not a ctx audit checkpoint or export manifest") from None
    return SignedHead(
        source=source,
        store_id=body["store_id"],
        seq=seq,
        hash=head,
        signed_at=at,
        key_id=body["key"]["key_id"],
        message=canonical_json(body).encode("utf-8"),
        signature=document["signature"]["value"],
        served_seq=served[0],
        served_hash=served[1],
    )


def load(path: Path) -> SignedHead:
    """The signed head in a checkpoint or manifest file."""
    try:
        raw = path.read_bytes()[: MAX_BYTES + 1]
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        document = read_json(raw, max_bytes=MAX_BYTES)
    except JSONInputError as exc:
        raise RefusedError(
            f"{path} is not a ctx audit checkpoint or export manifest ({exc.message})"
        ) from None
    return parse(document, str(path))


def gather(
    folder: Path,
    stored: str | None,
    named: Iterable[Path],
    store_id: str | None = None,
    hashes: Sequence[str] = (),
) -> tuple[list[SignedHead], list[str], list[str]]:
    """Signed heads from the checkpoints folder, the store's copy and the files named; unreadable
    ones; and the folder's checkpoints of other stores (the folder is committed and shared, so
    another store's file may land in it: it says nothing about this store, so it is skipped).

    A checkpoint naming another store that signs a row of this very chain (``hashes``, row ``seq``
    at ``hashes[seq - 1]``) is this store's, whose id was changed: it is kept, and checked."""
    heads, problems, skipped = [], [], []
    own: SignedHead | None = None
    if stored is not None:
        try:
            own = parse(read_json(stored), STORE_COPY)
        except (JSONInputError, RefusedError):
            problems.append(f"{STORE_COPY} of the latest checkpoint is not a signed head")
    # When the store's own signed head names another store, its id was changed: nothing is skipped,
    # so every checkpoint says so.
    skip_foreign = store_id is not None and (own is None or own.store_id == store_id)
    named = list(named)
    files = [*named, *(sorted(folder.glob("*.json")) if folder.is_dir() else [])]
    for path in dict.fromkeys(files):
        try:
            head = load(path)
        except RefusedError as exc:
            problems.append(exc.message)
            continue
        if skip_foreign and head.store_id != store_id and path not in named and not _signs(head, hashes):
            skipped.append(f"checkpoint {head.source} is for another store ({head.store_id}): skipped")
        else:
            heads.append(head)
    if own is not None:
        heads.append(own)
    return heads, problems, skipped


def _signs(head: SignedHead, hashes: Sequence[str]) -> bool:
    """Whether ``head`` signs a row of the chain whose hashes are ``hashes``."""
    return 0 < head.seq <= len(hashes) and hashes[head.seq - 1] == head.hash


def check_heads(
    heads: Sequence[SignedHead],
    hashes: Sequence[str],
    store_id: str | None,
    trusted: Mapping[str, Ed25519PublicKey],
) -> HeadCheck:
    """Each head must be signed by a trusted key, name this store, and match row ``seq`` of the chain.

    ``hashes`` is the verified chain's hashes in order (row ``seq`` is ``hashes[seq - 1]``).
    """
    from ctx_kernel.kernel.audit import signing  # noqa: PLC0415

    problems: list[str] = []
    checked: list[SignedHead] = []
    # The same signed document found twice (a file and the store's copy) is one checkpoint.
    unique = {h.signature: h for h in reversed(heads)}
    for head in reversed(unique.values()):
        key = trusted.get(head.key_id)
        if key is None:
            problems.append(
                f"checkpoint {head.source} is signed by key {head.key_id[:16]}…, "
                "not one you trust (pass --pubkey with the signer's public key)"
            )
        elif not signing.signature_valid(key, head.signature, head.message):
            problems.append(
                f"checkpoint {head.source}: its signature does not verify (it was edited or forged)"
            )
        elif head.store_id != store_id and _signs(head, hashes):
            problems.append(
                f"checkpoint {head.source} signed row {head.seq} of this store's audit log as store "
                f"{head.store_id}, but the store now calls itself {store_id} (its id was changed)"
            )
        elif head.store_id != store_id:
            problems.append(
                f"checkpoint {head.source} is for store {head.store_id}, not this store ({store_id})"
            )
        elif head.seq > len(hashes):
            problems.append(
                f"the audit log ends at row {len(hashes)}, but checkpoint {head.source} signed "
                f"row {head.seq} on {head.signed_at} (rows were removed or the log was rewritten)"
            )
        elif hashes[head.seq - 1] != head.hash:
            problems.append(
                f"audit row {head.seq} differs from checkpoint {head.source} signed on {head.signed_at} "
                "(the log was rewritten)"
            )
        else:
            checked.append(head)
    latest = max(checked, key=lambda h: (h.seq, h.signed_at), default=None)
    return HeadCheck(problems, len(checked), latest)
