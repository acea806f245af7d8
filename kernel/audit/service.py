"""The audit trail as a service: verifying the chain and the tables it describes, signed
checkpoints and exports, and the user's signing key. cryptography loads only to sign or check a
signature."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctx_kernel.kernel import clock
from ctx_kernel.kernel.chain import ChainReport, verify_chain
from ctx_kernel.kernel.errors import CtxError, RefusedError, UsageError
from ctx_kernel.kernel.limits import META_LAST_VERIFY
from ctx_kernel.kernel.records import AuditEvent
from ctx_kernel.kernel.store.base import Store

if TYPE_CHECKING:
    from ctx_kernel.kernel.audit.export import ExportResult
    from ctx_kernel.kernel.audit.signing import KeyInfo, Passphrase
    from ctx_kernel.kernel.audit.store_checks import CheckpointResult
    from ctx_kernel.kernel.reports import ExportReport


class AuditService:
    """The store's hash-chained audit log: checked, signed and exported."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def verify(
        self, *, state: bool = False, checkpoints: Sequence[Path] = (), pubkey: Path | None = None
    ) -> ChainReport:
        """Recompute the audit chain; the report names the first bad row.

        With ``state``, also check the chain against every signed checkpoint found (and the files in
        ``checkpoints``, trusting ``pubkey`` or your own keys), the schema against the migrations, and
        replay the log against every table it describes, so an edit beside the log is found too.
        """
        if not state:
            return verify_chain(self.store.audit_rows())
        report = self._verified_log(checkpoints, pubkey)[0]
        self.record_verify(report.ok, report.rows, report.problem)
        return report

    def _verified_log(
        self, checkpoints: Sequence[Path] = (), pubkey: Path | None = None
    ) -> tuple[ChainReport, list[dict[str, Any]]]:
        """The whole log and its report: the chain, signed heads, schema and tables (one snapshot)."""
        from ctx_kernel.kernel.audit.store_checks import verify_store  # noqa: PLC0415

        with self.store.snapshot():
            rows = list(self.store.audit_rows())
            report = verify_chain(rows)
            if report.ok:
                report = verify_store(self.store, rows, report, checkpoints=checkpoints, pubkey=pubkey)
        return report, rows

    def checkpoint(self, *, passphrase: Passphrase, out: Path | None = None) -> CheckpointResult:
        """Sign the audit chain's head with your key and keep it beside the store (and at ``out``).

        Refuses when the store does not verify: a checkpoint vouches for the history it signs.
        """
        from ctx_kernel.kernel.audit import signing  # noqa: PLC0415 - cryptography loads only here
        from ctx_kernel.kernel.audit import store_checks as audit_store  # noqa: PLC0415

        key, key_info = signing.unlock(passphrase)
        report, rows = self._verified_log()
        if not report.ok:
            raise RefusedError(f"not signing: the store's audit log does not verify: {report.problem}")
        return audit_store.sign_checkpoint(self.store, rows, key, key_info, signed_at=clock.now(), out=out)

    def export(
        self,
        out: Path,
        *,
        passphrase: Passphrase,
        since: str | None = None,
        until: str | None = None,
        fmt: str = "jsonl",
        served: bool = False,
    ) -> ExportResult:
        """Write a signed export of the audit log (``out`` and ``out.manifest.json``), or of a time range;
        with ``served``, the served log's entries in that range too (``out.served.jsonl``).

        ``passphrase`` unlocks the signing key: the text, or a function that asks for it (called only
        once the key is found). Refuses when the store's chain is broken or its tables disagree with
        the log: an export vouches for what it holds.
        """
        from ctx_kernel.kernel.audit import export as audit_export  # noqa: PLC0415
        from ctx_kernel.kernel.audit import signing  # noqa: PLC0415 - cryptography loads only here
        from ctx_kernel.kernel.store.sqlite.migrate import HEAD_VERSION  # noqa: PLC0415

        if fmt not in audit_export.RECORD_FORMATS:
            raise UsageError(f"unknown format {fmt!r}: use one of {', '.join(audit_export.RECORD_FORMATS)}")
        start = clock.parse_when(since, end_of_day=False) if since is not None else None
        end = clock.parse_when(until) if until is not None else None
        if start is not None and end is not None and start > end:
            raise UsageError(f"--since {since} is after --until {until}")
        key, key_info = signing.unlock(passphrase)
        report, rows = self._verified_log()
        if not report.ok:
            raise RefusedError(f"not exporting: the store's audit log does not verify: {report.problem}")
        selected = audit_export.select_range(rows, start, end)
        if not selected:
            where = " in that range" if start or end else ""
            raise RefusedError(f"no audit events{where}: nothing to export")
        facts = audit_export.StoreFacts(
            store_id=self.store.get_meta("store_id") or "unknown",
            schema_version=HEAD_VERSION,  # opening a store upgrades it to this version
            head_seq=rows[-1]["seq"],
            head_hash=report.last_hash,
        )
        from ctx_kernel.kernel.audit.store_checks import keep_signed_head  # noqa: PLC0415

        entries = self._served_range(start, end) if served else None

        # A signed export is a checkpoint too: its head is kept in the store first, in the
        # transaction the files are written in, so a login that may not keep it writes no file.
        with self.store.transaction():
            return audit_export.write_export(
                selected,
                out,
                fmt=fmt,
                since=start,
                until=end,
                exported_at=clock.now(),
                store=facts,
                key=key,
                key_info=key_info,
                before_writing=lambda document: keep_signed_head(self.store, document),
                served=entries,
            )

    def _served_range(self, start: str | None, end: str | None) -> tuple[list[dict[str, Any]], str]:
        """The served log's entries in the range (verified: verify already passed) and the hash the
        first one links to."""
        from ctx_kernel.kernel.audit import export as audit_export  # noqa: PLC0415
        from ctx_kernel.kernel.store.base import offered  # noqa: PLC0415

        log = offered(self.store.served())
        rows = audit_export.select_range(log.served_rows(), start, end)
        anchor = rows[0]["prev_hash"] if rows else log.served_head()[1]
        return [dict(r) for r in rows], anchor

    @staticmethod
    def verify_export(
        path: Path, *, pubkey: Path | None = None, manifest: Path | None = None
    ) -> ExportReport:
        """Check an export file against its signed manifest and a trusted public key; needs no store.

        ``pubkey`` is the exporter's public key (PEM); without it the local signing key is trusted.
        """
        from ctx_kernel.kernel.audit import signing  # noqa: PLC0415
        from ctx_kernel.kernel.audit import verify_export as audit_verify  # noqa: PLC0415

        if pubkey is not None:
            trusted, _ = signing.load_public_key(pubkey)
            source = f"--pubkey {pubkey}"
        else:
            if not signing.has_key():
                raise UsageError("no key to trust: pass --pubkey with the exporter's public key (PEM)")
            info = signing.local_key()
            trusted = signing.parse_public_key(info.public_pem.encode("ascii"), str(info.public_path))
            source = f"local key {info.public_path}"
        return audit_verify.verify_export(
            path, manifest_path=manifest, trusted=trusted, trusted_source=source
        )

    @staticmethod
    def create_signing_key(passphrase: Passphrase, *, force: bool = False) -> KeyInfo:
        """Create the user's audit signing key (private half encrypted with ``passphrase``)."""
        from ctx_kernel.kernel.audit import signing  # noqa: PLC0415

        return signing.init_key(passphrase, force=force)

    @staticmethod
    def signing_key() -> KeyInfo:
        """The user's audit signing key's public half; refuses when there is none."""
        from ctx_kernel.kernel.audit import signing  # noqa: PLC0415

        return signing.local_key()

    def events(self) -> list[AuditEvent]:
        """The whole audit log, oldest first."""
        return [AuditEvent(**row) for row in self.store.audit_rows()]

    def record_verify(self, ok: bool, rows: int, problem: str | None) -> None:
        """Remember a full verify's outcome for `ctx status` (best effort: a read-only store skips it)."""
        value = json.dumps({"at": clock.now(), "ok": ok, "rows": rows, "problem": problem})
        try:
            with self.store.transaction():
                self.store.set_meta(META_LAST_VERIFY, value)
        except CtxError:
            pass
