"""The audit signing key: an Ed25519 key pair in the user's config folder, the private half encrypted.

The private key is PKCS#8 PEM encrypted with the user's passphrase (``BestAvailableEncryption``);
the public half sits beside it in clear, so exporting the public key and verifying an export
never ask for the passphrase. Nothing here is hand-rolled: keys, encryption and signatures are
the ``cryptography`` package's.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import RefusedError, StoreError, UsageError

ALGORITHM = "ed25519"
PRIVATE_FILE = "audit-signing-key.pem"
PUBLIC_FILE = "audit-signing-key.pub.pem"
PRIVATE_MODE = 0o600
PUBLIC_MODE = 0o644
FOLDER_MODE = 0o700
# A public key file is a few hundred bytes; anything much larger is not one.
MAX_KEY_FILE_BYTES = 64_000


class KeyFileError(StoreError):
    """A key file that cannot be read as the key it should be."""


@dataclass(frozen=True)
class KeyInfo:
    """A signing key's public identity and where its files are."""

    key_id: str
    public_pem: str
    public_raw: str
    private_path: Path
    public_path: Path


def key_paths() -> tuple[Path, Path]:
    """The private and public key files in the user's config folder."""
    folder = paths.keys_dir()
    return folder / PRIVATE_FILE, folder / PUBLIC_FILE


def key_id(public: Ed25519PublicKey) -> str:
    """The key's id: sha256 of its raw 32-byte public key, in hex."""
    return hashlib.sha256(public_raw_bytes(public)).hexdigest()


def public_raw_bytes(public: Ed25519PublicKey) -> bytes:
    """The 32 raw bytes of a public key."""
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_raw_b64(public: Ed25519PublicKey) -> str:
    """The raw public key in standard base64 (44 characters)."""
    return base64.b64encode(public_raw_bytes(public)).decode("ascii")


def public_pem(public: Ed25519PublicKey) -> str:
    """The public key as SubjectPublicKeyInfo PEM (what ``openssl pkey -pubin`` reads)."""
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def _info(public: Ed25519PublicKey) -> KeyInfo:
    private_path, public_path = key_paths()
    return KeyInfo(key_id(public), public_pem(public), public_raw_b64(public), private_path, public_path)


# A passphrase, or a function that asks for one (called only once the key files have been checked).
Passphrase = str | Callable[[], str]


def _require_passphrase(given: Passphrase) -> bytes:
    passphrase = given() if callable(given) else given
    if not passphrase:
        raise UsageError("the passphrase is empty")
    try:
        return passphrase.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("the passphrase is not valid UTF-8") from None


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write through a temporary file created with ``mode``, then rename over ``path``."""
    temporary = path.with_name(path.name + ".tmp")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, mode)  # the umask may have narrowed it; never widen a private file
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise


def init_key(passphrase: Passphrase, *, force: bool = False) -> KeyInfo:
    """Create the signing key pair; refuses to replace an existing key unless ``force``."""
    private_path, public_path = key_paths()
    if not force and (private_path.exists() or public_path.exists()):
        raise RefusedError(
            f"a signing key already exists in {private_path.parent}: pass --force to replace it "
            "(exports signed with it then verify only with its public key)"
        )
    secret = _require_passphrase(passphrase)
    try:
        private_path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(private_path.parent, FOLDER_MODE)
        if force and public_path.is_file():
            _keep_old_public_key(public_path)
        key = Ed25519PrivateKey.generate()
        encrypted = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(secret),
        )
        _write(private_path, encrypted, PRIVATE_MODE)
        _write(public_path, public_pem(key.public_key()).encode("ascii"), PUBLIC_MODE)
    except OSError as exc:
        raise StoreError(f"cannot write the signing key in {private_path.parent}: {exc}") from exc
    return _info(key.public_key())


def _keep_old_public_key(public_path: Path) -> None:
    """Keep a replaced key's public half (named by its id) so its old exports still verify."""
    with contextlib.suppress(KeyFileError, OSError):
        old = _load_public_file(public_path)
        kept = public_path.with_name(f"audit-signing-key.{key_id(old)[:16]}.pub.pem")
        _write(kept, public_pem(old).encode("ascii"), PUBLIC_MODE)


def _load_public_file(path: Path) -> Ed25519PublicKey:
    try:
        data = path.read_bytes()[:MAX_KEY_FILE_BYTES]
    except OSError as exc:
        raise KeyFileError(f"cannot read public key {path}: {exc.strerror or exc}") from exc
    return parse_public_key(data, str(path))


def parse_public_key(data: bytes, source: str) -> Ed25519PublicKey:
    """An Ed25519 public key from PEM, or from the raw key in base64 (``ctx keys export-public --raw``)."""
    stripped = data.strip()
    if stripped.startswith(b"-----BEGIN"):
        try:
            public = serialization.load_pem_public_key(stripped)
        except (ValueError, UnsupportedAlgorithm) as exc:
            raise KeyFileError(f"{source} is not a readable PEM public key") from exc
        if not isinstance(public, Ed25519PublicKey):
            raise KeyFileError(f"{source} is not an Ed25519 public key")
        return public
    try:
        raw = base64.b64decode(stripped, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise KeyFileError(f"{source} is neither a PEM public key nor a base64 raw Ed25519 key")
    return Ed25519PublicKey.from_public_bytes(raw)


def has_key() -> bool:
    """Whether the signing key exists."""
    private_path, public_path = key_paths()
    return private_path.is_file() and public_path.is_file()


def _require_key() -> tuple[Path, Path]:
    private_path, public_path = key_paths()
    if not private_path.is_file() or not public_path.is_file():
        raise RefusedError(f"no signing key in {private_path.parent}: run `ctx keys init` first")
    return private_path, public_path


def local_key() -> KeyInfo:
    """The local signing key's public half (no passphrase needed)."""
    _private_path, public_path = _require_key()
    return _info(_load_public_file(public_path))


def load_public_key(path: Path) -> tuple[Ed25519PublicKey, str]:
    """A public key a reviewer trusts, from a PEM (or base64 raw) file, with its id."""
    if not path.is_file():
        raise UsageError(f"no public key file {path}")
    public = _load_public_file(path)
    return public, key_id(public)


def trusted_public_keys() -> dict[str, Ed25519PublicKey]:
    """Your signing key's public half and those of the keys it replaced, by key id."""
    folder = paths.keys_dir()
    found: dict[str, Ed25519PublicKey] = {}
    if not folder.is_dir():
        return found
    for path in sorted(folder.glob("audit-signing-key*.pub.pem")):
        with contextlib.suppress(KeyFileError):
            public = _load_public_file(path)
            found[key_id(public)] = public
    return found


def unlock(passphrase: Passphrase) -> tuple[Ed25519PrivateKey, KeyInfo]:
    """Decrypt the private key with the passphrase; refuses a wrong one."""
    private_path, public_path = _require_key()
    secret = _require_passphrase(passphrase)
    try:
        data = private_path.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"cannot read the signing key {private_path}: {exc.strerror or exc}") from exc
    try:
        key = serialization.load_pem_private_key(data, password=secret)
    except TypeError as exc:  # the file is not encrypted: someone replaced it
        message = f"the signing key {private_path} is not encrypted: run `ctx keys init --force`"
        raise KeyFileError(message) from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        if "password" in str(exc).lower() or "decrypt" in str(exc).lower():
            raise RefusedError(f"wrong passphrase for the signing key {private_path}") from None
        raise KeyFileError(f"cannot read the signing key {private_path}: it is damaged") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"the signing key {private_path} is not an Ed25519 key")
    info = local_key()
    if key_id(key.public_key()) != info.key_id:
        raise KeyFileError(f"{private_path} and {public_path} are not halves of the same key")
    return key, info


def sign(key: Ed25519PrivateKey, message: bytes) -> str:
    """An Ed25519 signature of ``message``, in standard base64."""
    return base64.b64encode(key.sign(message)).decode("ascii")


def signature_valid(public: Ed25519PublicKey, signature_b64: str, message: bytes) -> bool:
    """Whether ``signature_b64`` is this key's signature of ``message``."""
    try:
        signature = base64.b64decode(signature_b64, validate=True)
    except (binascii.Error, ValueError):
        return False
    try:
        public.verify(signature, message)
    except InvalidSignature:
        return False
    return True
