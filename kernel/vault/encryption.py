"""Encryption at rest: sealing every evidence text, changing the key, and finishing either after
an interruption. The sealing code (and with it cryptography) loads only when a store is sealed.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ctx_kernel.kernel import clock
from ctx_kernel.kernel.errors import RefusedError, StoreError
from ctx_kernel.kernel.limits import SEAL_BATCH, VAULT_ENCRYPTED, VAULT_REKEYED
from ctx_kernel.kernel.payloads import VaultKey
from ctx_kernel.kernel.store.base import Sealing, Store, offered


class EncryptionService:
    """Seals the vault's texts with AES-256-GCM and rotates the key, resumably."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _check_backend(self) -> None:
        """Refuse, before anything is read or written, on a backend that cannot keep the vault's promise."""
        offered(self.store.sealing())

    @cached_property
    def _sealing(self) -> Sealing:
        """The store's sealing operations (a backend that has none was refused before)."""
        return offered(self.store.sealing())

    @property
    def encrypted(self) -> bool:
        """True when evidence text is sealed at rest (or being sealed)."""
        return self.store.is_sealed()

    def encrypt(
        self, *, key_file: Path | None = None, progress: Callable[[int, int], None] | None = None
    ) -> SealReport:
        """Seal every evidence text with AES-256-GCM; resumable, and new evidence is sealed from now on.

        The key is ``CTX_VAULT_KEY`` if set, else the key file (``key_file``, ``CTX_VAULT_KEY_FILE``
        or the store's file in the config folder), created 0600 when it does not exist yet.
        Vectors and entity mentions of evidence are dropped: they would give its content away.
        """
        self._check_backend()
        from ctx_kernel.kernel import sealing as vault  # noqa: PLC0415 - cryptography loads for sealed stores only

        store_id = self._store_id()
        if self.store.get_meta("vault_key_id") is not None and self.store.get_meta("vault_encrypting") != "1":
            if self.store.get_meta(vault.SCRUB_PENDING):
                return self._finish_scrub(key_file or vault.key_path(store_id))
            raise RefusedError("the evidence vault is already encrypted (`ctx rekey` changes its key)")
        key, where, created = self._vault_key(store_id, key_file)
        current = self.store.get_meta("vault_key_id")
        if current is not None and current != vault.key_id(key):
            raise vault.VaultError(
                f"the key from {where} is not the key this store's encryption started with"
            )
        self._sealing.offer_key(where, key)
        self._sealing.secure_delete()
        if current is None:
            index_key = vault.new_key()
            with self.store.transaction():
                self.store.set_meta("vault_key_id", vault.key_id(key))
                self.store.set_meta(
                    "vault_index_key", _wrap(vault.seal_with(key, index_key, vault.INDEX_KEY_AAD))
                )
                self.store.set_meta("vault_encrypting", "1")
                sealed_with = VaultKey(key_id=vault.key_id(key))
                self.store.append_audit(
                    clock.now(), _operator(), VAULT_ENCRYPTED, store_id, None, sealed_with.to_dict()
                )
            self._sealing.forget_vault()
        sealer = self.store.vault()
        assert sealer is not None
        total, done = self._sealing.count_evidence_to_seal(None), 0
        while rows := self._sealing.plain_evidence(SEAL_BATCH):
            with self.store.transaction():
                for evidence_id, text in rows:
                    blob = sealer.seal(evidence_id, text)
                    self._sealing.seal_evidence(evidence_id, blob, text, sealer.index_text(text))
            done += len(rows)
            if progress is not None:
                progress(done, total)
        with self.store.transaction():
            self._sealing.forget_evidence_derivatives()
            self.store.set_meta("vault_encrypting", "0")
            self.store.set_meta(vault.SCRUB_PENDING, "1")
        self._sealing.forget_vault()
        self._sealing.scrub()
        return SealReport(sealed=done, key_id=vault.key_id(key), key_source=where, key_created=created)

    def rekey(
        self, *, key_file: Path | None = None, progress: Callable[[int, int], None] | None = None
    ) -> SealReport:
        """Seal every evidence text again under a new key; resumable after any interruption.

        The new key waits in ``<key file>.new`` until every row is sealed with it, then replaces
        the key file; until then each row opens with the old key or the new one.
        """
        self._check_backend()
        from ctx_kernel.kernel import sealing as vault  # noqa: PLC0415

        store_id = self._store_id()
        if self.store.get_meta("vault_key_id") is None:
            raise RefusedError("the evidence vault is not encrypted: run `ctx encrypt` first")
        if self.store.get_meta("vault_encrypting") == "1":
            raise RefusedError("`ctx encrypt` has not finished: run it again first")
        path = key_file or vault.key_path(store_id)
        if key_file is not None:
            current_key = vault.read_key_file(key_file)
            if current_key is not None:
                self._sealing.offer_key(str(key_file), current_key)
        _settle_key_file(path, self.store.get_meta("vault_key_id") or "")
        pending = vault.pending_path(path)
        upcoming = self.store.get_meta("vault_rekey_to")
        if upcoming is None and self.store.get_meta(vault.SCRUB_PENDING):
            return self._finish_scrub(path)  # the last rekey sealed every row; its file rewrite was cut short
        old = self.store.vault()  # unlocks with the current key (and the new one when resuming)
        assert old is not None
        if upcoming is None:
            new = vault.new_key()
            pending.unlink(missing_ok=True)  # a new key from a run that never started sealing
            vault.write_key_file(pending, new)
            with self.store.transaction():
                self.store.set_meta("vault_rekey_to", vault.key_id(new))
                self.store.set_meta(
                    "vault_index_key_next", _wrap(vault.seal_with(new, old.index_key, vault.INDEX_KEY_AAD))
                )
            upcoming = vault.key_id(new)
        else:
            new_read = vault.read_key_file(pending)
            if new_read is None or vault.key_id(new_read) != upcoming:
                raise vault.VaultError(
                    f"an interrupted rekey left rows sealed with key {upcoming}, which is not in {pending}"
                )
            new = new_read
        self._sealing.offer_key(str(pending), new)
        self._sealing.secure_delete()
        sealer = self.store.vault()
        assert sealer is not None and sealer.seal_id == upcoming
        total, done = self._sealing.count_evidence_to_seal(upcoming), 0
        while rows := self._sealing.sealed_evidence_not_under(upcoming, SEAL_BATCH):
            with self.store.transaction():
                for evidence_id, blob in rows:
                    self._sealing.seal_evidence(
                        evidence_id, sealer.seal(evidence_id, sealer.open(evidence_id, blob)), None, None
                    )
            done += len(rows)
            if progress is not None:
                progress(done, total)
        with self.store.transaction():
            previous = self.store.get_meta("vault_key_id")
            self.store.set_meta("vault_key_id", upcoming)
            self.store.set_meta("vault_index_key", self.store.get_meta("vault_index_key_next") or "")
            self.store.delete_meta("vault_rekey_to")
            self.store.delete_meta("vault_index_key_next")
            self.store.set_meta(vault.SCRUB_PENDING, "1")
            self.store.append_audit(
                clock.now(),
                _operator(),
                VAULT_REKEYED,
                store_id,
                VaultKey(key_id=previous).to_dict(),
                VaultKey(key_id=upcoming).to_dict(),
            )
        _settle_key_file(path, upcoming)
        self._sealing.forget_vault()
        self._sealing.scrub()
        return SealReport(sealed=done, key_id=upcoming, key_source=str(path), key_created=True)

    def _finish_scrub(self, key_source: Path) -> SealReport:
        """Rewrite the file after an encrypt or rekey that sealed every row but was cut short there."""
        self._sealing.scrub()
        return SealReport(
            sealed=0,
            key_id=self.store.get_meta("vault_key_id") or "",
            key_source=str(key_source),
            key_created=False,
        )

    def _store_id(self) -> str:
        store_id = self.store.get_meta("store_id")
        if store_id is None:
            raise StoreError("the store has no id: run `ctx init` on it")
        return store_id

    def _vault_key(self, store_id: str, key_file: Path | None) -> tuple[bytes, str, bool]:
        """The key to encrypt with and where it is; a new key file when there is none yet."""
        from ctx_kernel.kernel import sealing as vault  # noqa: PLC0415

        if key_file is None and os.environ.get("CTX_VAULT_KEY"):
            return vault.decode_key(os.environ["CTX_VAULT_KEY"], "CTX_VAULT_KEY"), "CTX_VAULT_KEY", False
        path = key_file or vault.key_path(store_id)
        key = vault.read_key_file(path)
        if key is not None:
            return key, str(path), False
        key = vault.new_key()
        vault.write_key_file(path, key)
        return key, str(path), True


@dataclass(frozen=True)
class SealReport:
    """What ``ctx encrypt`` or ``ctx rekey`` did."""

    sealed: int
    key_id: str
    key_source: str
    key_created: bool


def _wrap(blob: bytes) -> str:
    return base64.b64encode(blob).decode("ascii")


def _operator() -> str:
    import getpass  # noqa: PLC0415

    return f"cli:{getpass.getuser()}"


def _settle_key_file(path: Path, current_id: str) -> None:
    """Finish a rekey's last step if it was cut short: the new key replaces the key file."""
    from ctx_kernel.kernel import sealing as vault  # noqa: PLC0415

    pending = vault.pending_path(path)
    key = vault.read_key_file(pending)
    if key is not None and vault.key_id(key) == current_id:
        os.replace(pending, path)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
