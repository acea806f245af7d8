"""Encryption at rest for evidence text: AES-256-GCM, keyed search tokens, keys from a file or env.

A sealed evidence text is a BLOB: ``MAGIC | key id (8 bytes) | nonce (12) | ciphertext+tag``, with
the evidence id as associated data, so a ciphertext moved to another row does not decrypt. Rows
name the key that sealed them, which is what makes ``ctx rekey`` resumable: while it runs, some
rows carry the old key's id and some the new one's, and both keys are available.

The full-text index cannot hold the words of a sealed text. It holds keyed tokens instead: each
word (lower-cased, accents folded) becomes ``HMAC-SHA256(index key, word)``, truncated. Equal
words give equal tokens, so BM25 ranking is unchanged, but a token says nothing about its word
without the index key. The index key is random, stored in the store sealed by the vault key
(once per key during a rekey), and survives rekeys, so the index never has to be rebuilt.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
import secrets
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ctx_kernel.kernel.errors import CtxError, UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MAGIC = b"CTXE\x01"
KEY_BYTES = 32
NONCE_BYTES = 12
KEY_ID_BYTES = 8
TOKEN_BYTES = 10  # 80 bits: collisions between distinct words are not a practical concern
INDEX_KEY_AAD = b"ctx index key"
HEADER = len(MAGIC) + KEY_ID_BYTES + NONCE_BYTES
# Meta key set when `ctx encrypt` or `ctx rekey` has sealed every row but not yet rewritten the file.
SCRUB_PENDING = "vault_scrub"

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)  # what FTS5's unicode61 counts as a word
_QUOTED_RE = re.compile(r'"([^"]*)"')


class VaultError(CtxError):
    """The vault key is missing, wrong, or cannot open a row."""

    exit_code = 1


# -- keys -------------------------------------------------------------------------------------


def new_key() -> bytes:
    """A fresh random 256-bit key."""
    return secrets.token_bytes(KEY_BYTES)


def encode_key(key: bytes) -> str:
    """The text form of a key, as written to key files and ``CTX_VAULT_KEY``."""
    return base64.urlsafe_b64encode(key).decode("ascii")


def decode_key(text: str, where: str) -> bytes:
    """A key from its text form, or a one-line error naming where it came from."""
    try:
        key = base64.urlsafe_b64decode(text.strip().encode("ascii"))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise UsageError(f"{where} is not a ctx vault key (base64 of 32 bytes)") from None
    if len(key) != KEY_BYTES:
        raise UsageError(f"{where} is not a ctx vault key (base64 of 32 bytes)")
    return key


def key_id(key: bytes) -> str:
    """A public fingerprint of a key (16 hex digits): which key sealed a row, never the key."""
    return hashlib.sha256(b"ctx vault key id\x00" + key).hexdigest()[: 2 * KEY_ID_BYTES]


def write_key_file(path: Path, key: bytes) -> None:
    """Write a key readable by its owner only (0600, in a 0700 folder), never over another file."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(encode_key(key) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_key_file(path: Path) -> bytes | None:
    """The key in ``path``, None when there is no such file."""
    try:
        raw = path.read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read vault key file {path}: {exc}") from None
    return decode_key(raw, f"vault key file {path}")


# -- sealing ----------------------------------------------------------------------------------


def _aead(key: bytes) -> AESGCM:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: PLC0415 - sealed stores only

    return AESGCM(key)


def seal_with(key: bytes, data: bytes, aad: bytes) -> bytes:
    """``MAGIC | key id | nonce | AES-256-GCM(data)`` bound to ``aad``."""
    nonce = secrets.token_bytes(NONCE_BYTES)
    return MAGIC + bytes.fromhex(key_id(key)) + nonce + _aead(key).encrypt(nonce, data, aad)


def sealed_key_id(blob: bytes) -> str:
    """The id of the key that sealed ``blob``."""
    return blob[len(MAGIC) : len(MAGIC) + KEY_ID_BYTES].hex()


def is_sealed(value: object) -> bool:
    """True for a sealed BLOB (plain evidence text is a str)."""
    return isinstance(value, bytes) and value.startswith(MAGIC)


def open_with(key: bytes, blob: bytes, aad: bytes) -> bytes:
    """Decrypt a sealed BLOB; raises VaultError when it was altered or sealed for another row."""
    from cryptography.exceptions import InvalidTag  # noqa: PLC0415

    nonce = blob[len(MAGIC) + KEY_ID_BYTES : HEADER]
    try:
        return _aead(key).decrypt(nonce, blob[HEADER:], aad)
    except InvalidTag:
        raise VaultError("a sealed row does not decrypt: it was altered or moved") from None


# -- search tokens ----------------------------------------------------------------------------


def fold(word: str) -> str:
    """Lower case with accents removed, as unicode61 with remove_diacritics folds a word."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def token(index_key: bytes, word: str) -> str:
    """The keyed token that stands for ``word`` in the index of a sealed vault."""
    digest = hmac.new(index_key, fold(word).encode("utf-8"), hashlib.sha256).digest()[:TOKEN_BYTES]
    return "k" + base64.b32encode(digest).decode("ascii").lower()


def tokens(index_key: bytes, text: str) -> str:
    """The text the index holds for a sealed evidence text: one token per word, in order."""
    return " ".join(token(index_key, w) for w in _WORD_RE.findall(text))


def rewrite_match(index_keys: Iterable[bytes], match: str, *, keep_words: bool = False) -> str:
    """An FTS5 query of quoted words (kernel.store.sqlite.fts.match_string) with each word as its keyed token.

    With several index keys, or ``keep_words`` (while plain rows remain), a word matches any of
    its forms.
    """
    keys = list(index_keys)

    def one(found: re.Match[str]) -> str:
        words = _WORD_RE.findall(found.group(1)) or [found.group(1)]
        forms: list[str] = []
        for word in words:
            variants = [token(k, word) for k in keys] + ([word] if keep_words else [])
            forms.append(variants[0] if len(variants) == 1 else "(" + " OR ".join(variants) + ")")
        return forms[0] if len(forms) == 1 else "(" + " AND ".join(forms) + ")"

    return _QUOTED_RE.sub(one, match)


def snippet(text: str, match: str, words: int = 16) -> str:
    """A window of ``text`` around the first word of ``match``, matches in [brackets] like FTS5's."""
    wanted = {fold(w) for w in _WORD_RE.findall(" ".join(_QUOTED_RE.findall(match)))}
    spans = list(_WORD_RE.finditer(text))
    if not spans:
        return ""
    first = next((i for i, m in enumerate(spans) if fold(m.group()) in wanted), 0)
    start = max(0, first - words // 4)
    window = spans[start : start + words]
    out, position = [], window[0].start()
    for found in window:
        out.append(text[position : found.start()])
        out.append(f"[{found.group()}]" if fold(found.group()) in wanted else found.group())
        position = found.end()
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + words < len(spans) else ""
    return prefix + "".join(out) + suffix


# -- a store's keys ---------------------------------------------------------------------------


def key_path(store_id: str) -> Path:
    """A store's key file: ``CTX_VAULT_KEY_FILE``, else ``vault/<store id>.key`` in the config folder."""
    from ctx_kernel.kernel import paths  # noqa: PLC0415

    chosen = os.environ.get("CTX_VAULT_KEY_FILE")
    return Path(chosen).expanduser() if chosen else paths.config_dir() / "vault" / f"{store_id}.key"


def pending_path(path: Path) -> Path:
    """Where ``ctx rekey`` keeps the new key until every row is sealed with it."""
    return path.with_name(path.name + ".new")


def candidate_keys(store_id: str) -> list[tuple[str, bytes]]:
    """Every key on offer, with where it came from: the environment, the key file, a rekey's new key."""
    found: list[tuple[str, bytes]] = []
    env = os.environ.get("CTX_VAULT_KEY")
    if env:
        found.append(("CTX_VAULT_KEY", decode_key(env, "CTX_VAULT_KEY")))
    path = key_path(store_id)
    for candidate in (path, pending_path(path)):
        key = read_key_file(candidate)
        if key is not None:
            found.append((str(candidate), key))
    return found


class Vault:
    """The keys of one sealed store: open any row, seal new ones, turn words into index tokens."""

    def __init__(self, keys: dict[str, bytes], seal_id: str, index_key: bytes, *, plain_rows: bool) -> None:
        self.keys = keys
        self.seal_id = seal_id
        self.index_key = index_key
        self.plain_rows = plain_rows  # `ctx encrypt` has not finished: some rows are still plain

    @classmethod
    def unlock(cls, meta: dict[str, str], store_id: str, extra: Iterable[tuple[str, bytes]] = ()) -> Vault:
        """The vault of a store whose meta names its key; a clear error when no key on offer fits."""
        current, upcoming = meta["vault_key_id"], meta.get("vault_rekey_to")
        wanted = {current} | ({upcoming} if upcoming else set())
        offered = [*extra, *candidate_keys(store_id)]
        keys = {key_id(key): key for _, key in offered if key_id(key) in wanted}
        if not keys:
            if not offered:
                raise VaultError(
                    "the evidence vault is encrypted and no key was found: set CTX_VAULT_KEY, "
                    f"or put the key file at {key_path(store_id)} (or point CTX_VAULT_KEY_FILE at it)"
                )
            where, key = offered[0]
            raise VaultError(
                f"the vault key from {where} (id {key_id(key)}) is not this store's key (id {current})"
            )
        if upcoming in keys:
            index_key = open_with(
                keys[upcoming], base64.b64decode(meta["vault_index_key_next"]), INDEX_KEY_AAD
            )
            seal_id = upcoming
        else:
            index_key = open_with(keys[current], base64.b64decode(meta["vault_index_key"]), INDEX_KEY_AAD)
            seal_id = current
        return cls(keys, seal_id, index_key, plain_rows=meta.get("vault_encrypting") == "1")

    def seal(self, evidence_id: str, text: str) -> bytes:
        """Encrypt an evidence text for its row."""
        return seal_with(self.keys[self.seal_id], text.encode("utf-8"), evidence_id.encode("ascii"))

    def open(self, evidence_id: str, blob: bytes) -> str:
        """Decrypt an evidence row's text."""
        sealed_by = sealed_key_id(blob)
        key = self.keys.get(sealed_by)
        if key is None:
            raise VaultError(
                f"evidence {evidence_id} is sealed with key {sealed_by}, which is not on offer: "
                "a `ctx rekey` was interrupted; run it again with both keys in place"
            )
        return open_with(key, blob, evidence_id.encode("ascii")).decode("utf-8")

    def index_text(self, text: str) -> str:
        """What the full-text index holds for a sealed text."""
        return tokens(self.index_key, text)

    def match(self, match: str) -> str:
        """An evidence FTS query in the index's terms."""
        return rewrite_match([self.index_key], match, keep_words=self.plain_rows)
