"""The evidence vault's writes and reads: logging text (one record or many) and reading it back."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypedDict, Unpack

from ctx_kernel.kernel import clock, ids, text
from ctx_kernel.kernel.capture.ingest import BatchReport, EvidenceInput, Item, Prepared, prepare, prepare_all
from ctx_kernel.kernel.errors import NotFoundError, UsageError
from ctx_kernel.kernel.language import entities
from ctx_kernel.kernel.limits import EVIDENCE_LOGGED, LOG_BATCH, MAX_LIST_LIMIT
from ctx_kernel.kernel.payloads import EvidenceLogged
from ctx_kernel.kernel.records import ABSENT, Evidence, LogResult
from ctx_kernel.kernel.spec import EVIDENCE_KINDS
from ctx_kernel.kernel.store.base import Store


class LogOptions(TypedDict, total=False):
    """What ``log`` takes besides the text, each optional: what the text is (``kind``, default
    ``note``), who logged it and in which session, its tags, where it came from, who said it and
    when, and whether secrets are redacted first (default True)."""

    kind: str
    agent: str | None
    session: str | None
    tags: Iterable[str]
    source: str | None
    speaker: str | None
    occurred_at: str | None
    redact: bool


class LogManyOptions(TypedDict, total=False):
    """What ``log_many`` takes besides the records, each optional: whether secrets are redacted
    (default True), a report to go on filling (a resumed run's), records per transaction, a
    callback after each batch, where the records come from, and whether to prepare them on
    several processes."""

    redact: bool
    report: BatchReport | None
    batch_size: int
    progress: Callable[[BatchReport], None] | None
    origin: str | None
    parallel: bool


class VaultService:
    """Append-only evidence: every text ctx keeps enters through :meth:`append`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def resolve_id(self, value: str, kind: str | None = None) -> str:
        """The one stored id of ``kind`` that ``value`` names: the id, its start or its handle."""
        return ids.resolve_id(value, kind, self.store.ids_with_prefix, self.store.ids_ending)

    def handles(self, record_ids: Iterable[str]) -> dict[str, str]:
        """Each id's handle: the shortest end of it (four characters or more) no other id ends with."""
        return ids.handles(record_ids, self.store.ids_ending)

    def log(self, body: str, **options: Unpack[LogOptions]) -> LogResult:
        """Append text to the evidence vault; the same text logged again returns its first id.

        Obvious secrets are replaced by typed placeholders first unless ``redact`` is False;
        the result says how many.
        """
        record = EvidenceInput(
            body,
            options.get("kind", "note"),
            options.get("agent"),
            options.get("session"),
            tuple(options.get("tags", ())),
            options.get("source"),
            options.get("speaker"),
            options.get("occurred_at"),
        )
        prepared = prepare(record, redact=options.get("redact", True))
        with self.store.transaction():
            return self.append(prepared)

    def log_many(
        self,
        items: Iterable[Item],
        *,
        redact: bool = True,
        report: BatchReport | None = None,
        batch_size: int = LOG_BATCH,
        progress: Callable[[BatchReport], None] | None = None,
        origin: str | None = None,
        parallel: bool = False,
    ) -> BatchReport:
        """Log many records, ``batch_size`` to a transaction; a bad item is reported and skipped.

        ``report`` is updated only as each batch commits, so when the run is interrupted it
        says exactly what is in the vault; running the same input again adds nothing.
        ``progress`` is called after every commit; ``origin`` names the input in rejections.
        With ``parallel``, a second process checks, redacts and scans the records while this
        one writes (worth its ~0.2 s start for thousands of records).
        """
        report = report if report is not None else BatchReport()
        batch: list[tuple[int, Prepared]] = []
        failed: list[tuple[int, str]] = []

        def commit() -> None:
            added = duplicates = redacted = 0
            with self.store.transaction():
                for _, prepared in batch:
                    result = self.append(prepared)
                    added += not result.duplicate
                    duplicates += result.duplicate
                    redacted += 0 if result.duplicate else result.redacted
            report.added += added
            report.duplicates += duplicates
            report.redacted += redacted
            for line, error in failed:
                report.reject(line, error, origin)
            report.lines = max([report.lines, *(line for line, _ in batch), *(line for line, _ in failed)])
            batch.clear()
            failed.clear()
            if progress is not None:
                progress(report)

        for line, prepared, error in prepare_all(items, redact=redact, parallel=parallel):
            if prepared is None:
                failed.append((line, error or "rejected"))
            else:
                batch.append((line, prepared))
            if len(batch) + len(failed) >= batch_size:
                commit()
        if batch or failed:
            commit()
        return report

    def append(self, prepared: Prepared) -> LogResult:
        """Write one prepared record inside the caller's transaction, or find its twin."""
        existing = self.store.evidence_id_for_hash(prepared.digest)
        if existing is not None:
            return LogResult(existing, duplicate=True, redacted=prepared.redacted)
        evidence = Evidence(
            id=ids.new_id("ev"),
            text=prepared.body,
            kind=prepared.kind,
            agent=prepared.agent,
            session=prepared.session,
            tags=prepared.tags,
            content_hash=prepared.digest,
            created_at=clock.now(),
            source=prepared.source,
            speaker=prepared.speaker,
            occurred_at=prepared.occurred_at,
        )
        self.store.insert_evidence(evidence)
        if not self.store.is_sealed():  # a sealed text's entities would give its words away
            mentions = prepared.mentions if prepared.mentions is not None else entities.extract(prepared.body)
            self.store.add_mentions(evidence.id, mentions)
        details = EvidenceLogged(
            content_hash=prepared.digest,
            kind=prepared.kind,
            agent=prepared.agent,
            session=prepared.session,
            tags=prepared.tags,
            source=prepared.source,
            speaker=prepared.speaker,
            occurred_at=prepared.occurred_at,
            redacted=prepared.redacted or ABSENT,
        )
        # On a server the actor is the login (the database refuses another); the agent is in details.
        actor = self.store.login or prepared.agent or "unknown"
        self.store.append_audit(
            evidence.created_at, actor, EVIDENCE_LOGGED, evidence.id, None, details.to_dict()
        )
        return LogResult(evidence.id, duplicate=False, redacted=prepared.redacted)

    def evidence(self, evidence_id: str) -> Evidence:
        """One evidence text by id."""
        found = self.store.get_evidence(self.resolve_id(evidence_id, "evidence"))
        if found is None:
            raise NotFoundError(f"no evidence {evidence_id}")
        return found

    def recent(
        self, limit: int = 5, *, since: str | None = None, agent: str | None = None, kind: str | None = None
    ) -> list[Evidence]:
        """The newest evidence texts, newest first: those logged at or after ``since`` (a date, its
        start in UTC, or an ISO 8601 time), by ``agent``, of ``kind``, when given."""
        text.check_limit(limit, MAX_LIST_LIMIT)
        if kind is not None and kind not in EVIDENCE_KINDS:
            raise UsageError(f"unknown kind {kind!r}: one of {', '.join(EVIDENCE_KINDS)}")
        moment = clock.parse_when(since, end_of_day=False) if since is not None else None
        return self.store.list_evidence(limit, since=moment, agent=agent, kind=kind)
