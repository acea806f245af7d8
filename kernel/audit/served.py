"""What each agent was served: one hash-chained entry per answer that gave an agent stored content.

An entry names when, through which host, agent and session, a digest of the request, and the ids,
content digests and validity (as the answer gave it) of the decisions and evidence returned. It
is written after the answer is made and never fails it: an entry that cannot be written is
counted, the answer carries one line saying so, and the next entry this process writes records
how many went missing, so ``ctx audit verify`` reports the gap.

The chain is checked by ``ctx audit verify`` and its head is signed by ``ctx audit checkpoint``
(and each signed export). Entries past a retention period are folded into signed daily digests
(a count and a Merkle root of the entries' hashes per day) that keep the chain verifiable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, is_dataclass
from datetime import timedelta
from itertools import groupby
from typing import TYPE_CHECKING, Any, cast

from ctx_kernel.kernel import clock
from ctx_kernel.kernel.chain import GENESIS_HASH, canonical_json, verify_chain
from ctx_kernel.kernel.errors import RefusedError
from ctx_kernel.kernel.records import Decision, Evidence, TimelineEntry, to_json
from ctx_kernel.kernel.reports import LateServing, ServedEntry, ServedItem, ServedReport, ServedValidity
from ctx_kernel.kernel.store.base import Missing, ServedLog, Store
from ctx_kernel.kernel.store.served import FOLD_COLUMNS, SERVED_FIELDS

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from ctx_kernel.kernel.audit.checkpoints import SignedHead
    from ctx_kernel.kernel.audit.signing import Passphrase

# What an entry's item validity is written as, from what the answer said of a decision.
_CLOSED = {"superseded": "superseded", "retired": "retired"}
# Sections of the session-start block whose decisions it gives as in force.
_IN_FORCE_SECTIONS = ("decisions", "conflicts")
NOT_RECORDED = "this answer was not recorded in the served log"


def decision_digest(decision: Decision) -> str:
    """sha256 of a decision's kernel content (id, subject, text, rationale, start): never changes."""
    body = {
        "id": decision.id,
        "subject": decision.subject,
        "decision": decision.decision,
        "rationale": decision.rationale,
        "valid_from": decision.valid_from,
    }
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def request_digest(operation: str, arguments: Any) -> str:
    """sha256 of the request's canonical JSON: the operation and its arguments."""
    args = to_json(arguments) if is_dataclass(arguments) else arguments
    return hashlib.sha256(
        canonical_json({"operation": operation, "arguments": args}).encode("utf-8")
    ).hexdigest()


def _validity(decision: Decision) -> str:
    return "current" if decision.valid_until is None else _CLOSED.get(decision.closed_by or "", "superseded")


@dataclass
class _Found:
    """What a walk over an answer found: whole records, and ids it gave with what it said of them."""

    records: dict[str, tuple[str, str]]
    bare: dict[str, str | None]
    decisions: dict[str, Decision]


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _walk(value: Any, found: _Found, section: str | None = None) -> None:
    # Dispatch on the exact type: the records are final classes, and an answer holds hundreds of
    # values, so this walk is most of an entry's cost on a warm recall.
    kind = type(value)
    if kind in _SCALARS:
        return
    if kind is Decision:
        if value.id not in found.records:
            found.records[value.id] = ("", _validity(value))  # digested once the walk is done
            found.decisions[value.id] = value
    elif kind is Evidence:
        found.records.setdefault(value.id, (value.content_hash, "unratified"))
    elif kind is list or kind is tuple:
        for item in value:
            if type(item) not in _SCALARS:
                _walk(item, found, section)
    elif kind is dict:
        for key in ("id", "other_id"):
            identifier = value.get(key)
            if isinstance(identifier, str) and identifier[:3] in ("dc_", "ev_"):
                found.bare.setdefault(identifier, "current" if section in _IN_FORCE_SECTIONS else None)
    elif kind is TimelineEntry:
        if value.kind in ("decision", "evidence"):
            found.bare.setdefault(value.id, None)
    elif is_dataclass(value):
        _walk_record(vars(value), found, section)  # its fields, without dataclasses.fields() per object


def _walk_record(attributes: dict[str, Any], found: _Found, section: str | None) -> None:
    items = attributes.get("items")
    if isinstance(items, dict) and "markdown" in attributes:  # the session-start block
        for name, entries in items.items():
            _walk(entries, found, name)
        return  # its index names decisions by subject only: `show` serves them
    identifier = attributes.get("id")
    if isinstance(identifier, str) and identifier.startswith("dc_") and "current" in attributes:
        found.bare.setdefault(identifier, "current" if attributes["current"] else None)
        return  # a decision named beside a hit (superseded, conflicting): its text, not its record
    for item in attributes.values():
        if type(item) not in _SCALARS:
            _walk(item, found, section)


class _Known:
    """What never changes about a decision once seen: its content digest, and its closing once closed."""

    def __init__(self) -> None:
        self.digests: dict[str, str] = {}
        self.closed: dict[str, str] = {}
        self.evidence: dict[str, str] = {}

    def learn(self, decision: Decision) -> None:
        if decision.id not in self.digests:
            self.digests[decision.id] = decision_digest(decision)
        if decision.valid_until is not None:
            self.closed[decision.id] = _validity(decision)


def served_items(store: Store, result: Any, known: _Known | None = None) -> list[ServedItem]:
    """The decisions and evidence an answer gives, in the order it gives them, each with its digest
    and the validity the answer gave it (a decision given as in force is ``current``)."""
    known = known or _Known()
    found = _Found({}, {}, {})
    _walk(result, found)
    for identifier, decision in found.decisions.items():
        known.learn(decision)
        found.records[identifier] = (known.digests[identifier], found.records[identifier][1])
    unknown = [
        i
        for i, claim in found.bare.items()
        if i not in found.records
        and (
            i not in known.evidence
            if i.startswith("ev_")
            else (i not in known.digests if claim else i not in known.closed)
        )
    ]
    for decision in store.decisions_by_ids([i for i in unknown if i.startswith("dc_")]).values():
        known.learn(decision)
    for text in store.evidence_by_ids([i for i in unknown if i.startswith("ev_")]).values():
        known.evidence[text.id] = text.content_hash
    items = []
    for identifier in dict.fromkeys([*found.records, *found.bare]):
        if identifier in found.records:
            digest, validity = found.records[identifier]
        elif identifier in known.digests:
            claim = found.bare[identifier]
            digest, validity = known.digests[identifier], claim or known.closed.get(identifier, "current")
        elif identifier in known.evidence:
            digest, validity = known.evidence[identifier], "unratified"
        else:
            continue
        items.append(ServedItem(identifier, digest, cast("ServedValidity", validity)))
    return items


def _entry(row: Mapping[str, Any]) -> ServedEntry:
    items = [ServedItem(i, d, v) for i, d, v in json.loads(row["items"])]
    return ServedEntry(
        seq=row["seq"],
        at=row["at"],
        host=row["host"],
        agent=row["agent"],
        session=row["session"],
        operation=row["operation"],
        request=row["request"],
        items=items,
        missed=row["missed"],
        hash=row["hash"],
    )


def merkle_root(hashes: Sequence[str]) -> str:
    """The Merkle root of hex hashes: pairs hashed level by level, an odd last one carried up."""
    level = [bytes.fromhex(h) for h in hashes]
    if not level:
        return GENESIS_HASH
    while len(level) > 1:
        paired = [hashlib.sha256(level[i] + level[i + 1]).digest() for i in range(0, len(level) - 1, 2)]
        level = paired + ([level[-1]] if len(level) % 2 else [])
    return level[0].hex()


def fold_message(fold: Mapping[str, Any]) -> bytes:
    """What a fold's signature covers: its fields but the signature, as canonical JSON."""
    return canonical_json({c: fold[c] for c in FOLD_COLUMNS if c != "signature"}).encode("utf-8")


@dataclass(frozen=True)
class ServedCheck:
    """The served log as ``ctx audit verify`` finds it."""

    problems: list[str]
    notes: list[str]
    entries: int
    head: tuple[int, str]


class ServedService:
    """Records what agents are served, answers who was told what, checks and folds the log."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._missed = 0
        self._known = _Known()

    def _log(self) -> ServedLog:
        log = self.store.served()
        if isinstance(log, Missing):
            raise RefusedError(log.reason)
        return log

    # -- writing ---------------------------------------------------------------------------

    def record(
        self, *, host: str, agent: str, session: str | None, operation: str, arguments: Any, result: Any
    ) -> str | None:
        """Append the entry for one answer; None when written, else the one line the answer carries.

        Never raises: the answer was made and must reach the agent whatever happens here.
        """
        log = self.store.served()
        if isinstance(log, Missing):
            return None  # a backend without the log has nothing to write, and nothing went missing
        try:
            items = served_items(self.store, result, self._known)
            entry = {
                "at": clock.now(),
                "host": host,
                # On a server the login is who was served: the database refuses any other name.
                "agent": self.store.login or agent,
                "session": session,
                "operation": operation,
                "request": request_digest(operation, arguments),
                "items": json.dumps([[i.id, i.digest, i.validity] for i in items], separators=(",", ":")),
                "missed": self._missed,
            }
            with self.store.transaction():
                log.append_served(entry)
        except Exception as exc:
            self._missed += 1
            reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
            return f"{NOT_RECORDED} ({str(reason).splitlines()[0]})"
        self._missed = 0
        return None

    # -- asking ----------------------------------------------------------------------------

    def report(
        self,
        *,
        session: str | None = None,
        decision: str | None = None,
        at: str | None = None,
        agent: str | None = None,
        after_superseded: bool = False,
    ) -> ServedReport:
        """Entries of a session, naming a decision, or an agent's up to a moment; with
        ``after_superseded``, every decision given as in force after it was superseded."""
        log = self._log()
        until = clock.parse_when(at) if at is not None else None
        rows = log.served_rows(session=session, agent=agent, until=until, item=decision)
        folded = sum(f["entries"] for f in log.served_folds())
        asked = [
            part
            for part in (
                f"session {session}" if session is not None else None,
                f"decision {decision}" if decision is not None else None,
                f"agent {agent}" if agent is not None else None,
                f"up to {until}" if until is not None else None,
            )
            if part
        ]
        entries = [_entry(r) for r in rows]
        late = self._late(entries) if after_superseded else None
        if late is not None:
            asked.append("served as in force after superseded")
            late_seqs = {x.seq for x in late}
            entries = [e for e in entries if e.seq in late_seqs]
        return ServedReport(", ".join(asked) or "every entry", entries, folded, late)

    def _late(self, entries: Sequence[ServedEntry]) -> list[LateServing]:
        given = {i.id for e in entries for i in e.items if i.validity == "current" and i.id.startswith("dc_")}
        closed = {
            d.id: d
            for d in self.store.decisions_by_ids(sorted(given)).values()
            if d.closed_by == "superseded" and d.valid_until is not None
        }
        late = []
        for entry in entries:
            for item in entry.items:
                decision = closed.get(item.id)
                if (
                    item.validity == "current"
                    and decision is not None
                    and entry.at >= (decision.valid_until or "")
                ):
                    late.append(
                        LateServing(
                            entry.seq,
                            entry.at,
                            entry.agent,
                            entry.session,
                            item.id,
                            decision.valid_until or "",
                            list(decision.superseded_by),
                        )
                    )
        return late

    def counts(self, ids: Sequence[str]) -> dict[str, tuple[int, list[str]]]:
        """For each decision id: how many answers served it, and to which sessions (or agents)."""
        log = self.store.served()
        return {} if isinstance(log, Missing) else log.served_counts(ids)

    # -- checking --------------------------------------------------------------------------

    def check(
        self, signed: SignedHead | None = None, trusted: Mapping[str, Ed25519PublicKey] | None = None
    ) -> ServedCheck:
        """The folds (contiguous, signed by a key in ``trusted``, by default your own signing keys),
        the entries' chain after them, and the served head that ``signed`` (the latest trusted
        checkpoint) vouches for."""
        log = self.store.served()
        if isinstance(log, Missing):
            return ServedCheck([], [], 0, (0, GENESIS_HASH))
        folds = log.served_folds()
        rows = log.served_rows()
        problems = _fold_problems(folds, trusted)
        start_seq, start_hash = (
            (folds[-1]["last_seq"], folds[-1]["last_hash"]) if folds else (0, GENESIS_HASH)
        )
        if rows and rows[0]["seq"] != start_seq + 1:
            problems.append(
                f"served entry {rows[0]['seq']} follows served entry {start_seq}: entries were removed"
            )
        report = verify_chain(rows, start_hash, SERVED_FIELDS, "served entry")
        if not report.ok and report.problem:
            problems.append(f"the served log: {report.problem}")
        notes = [
            f"served entry {r['seq']}: {r['missed']} answer(s) served just before it were not recorded"
            for r in rows
            if r["missed"]
        ]
        head = (rows[-1]["seq"], rows[-1]["hash"]) if rows else (start_seq, start_hash)
        if signed is not None and signed.served_seq is not None:
            problems += _against_signed(signed, folds, rows, head)
        return ServedCheck(problems, notes, len(rows), head)

    def hash_at(self, seq: int) -> str | None:
        """The hash of served entry ``seq`` (or of the fold ending there); None when unknown."""
        log = self.store.served()
        if isinstance(log, Missing):
            return None
        for fold in log.served_folds():
            if fold["last_seq"] == seq:
                return str(fold["last_hash"])
        rows = [r for r in log.served_rows() if r["seq"] == seq]
        return str(rows[0]["hash"]) if rows else None

    def head(self) -> tuple[int, str]:
        """``(seq, hash)`` of the served log's last entry; ``(0, genesis)`` when it has none."""
        log = self.store.served()
        return (0, GENESIS_HASH) if isinstance(log, Missing) else log.served_head()

    # -- folding ---------------------------------------------------------------------------

    def fold(self, *, older_than_days: int, passphrase: Passphrase) -> list[dict[str, Any]]:
        """Fold whole days of entries older than ``older_than_days`` into signed daily digests.

        Signed with your audit key: an agent without its passphrase cannot fold, and a fold signed
        by any other key fails ``ctx audit verify``. Refuses when the served log does not verify.
        """
        from ctx_kernel.kernel.audit import signing  # noqa: PLC0415 - cryptography loads only to sign

        key, key_info = signing.unlock(passphrase)
        log = self._log()
        cutoff = clock.format_ts(clock.to_datetime(clock.now()) - timedelta(days=older_than_days))[:10]
        made = []
        with self.store.transaction():
            checked = self.check()
            if checked.problems:
                raise RefusedError(f"not folding: {checked.problems[0]}")
            for day, rows in _days(log.served_rows(until=f"{cutoff}T00:00:00.000000Z")):
                if day >= cutoff:
                    break
                fold = {
                    "day": day,
                    "first_seq": rows[0]["seq"],
                    "last_seq": rows[-1]["seq"],
                    "entries": len(rows),
                    "items": sum(len(json.loads(r["items"])) for r in rows),
                    "merkle_root": merkle_root([r["hash"] for r in rows]),
                    "prev_hash": rows[0]["prev_hash"],
                    "last_hash": rows[-1]["hash"],
                    "folded_at": clock.now(),
                    "key_id": key_info.key_id,
                    "signature": "",
                }
                fold["signature"] = signing.sign(key, fold_message(fold))
                log.fold_served(fold)
                made.append(fold)
        return made


def _days(rows: Iterable[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """The entries (in order) grouped by the day they were written."""
    for day, group in groupby(rows, key=lambda row: str(row["at"])[:10]):
        yield day, list(group)


def _against_signed(
    signed: SignedHead,
    folds: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    head: tuple[int, str],
) -> list[str]:
    """The served entry a checkpoint signed must still be there (or end a fold) with its hash."""
    seq = signed.served_seq or 0
    if seq > head[0]:
        return [
            f"the served log ends at entry {head[0]}, but checkpoint {signed.source} signed entry {seq} "
            "(entries were removed or the log was rewritten)"
        ]
    known = {r["seq"]: r["hash"] for r in rows} | {f["last_seq"]: f["last_hash"] for f in folds}
    if seq in known and known[seq] != signed.served_hash:
        return [f"served entry {seq} differs from checkpoint {signed.source} (the served log was rewritten)"]
    return []


def _fold_problems(
    folds: Sequence[Mapping[str, Any]], trusted: Mapping[str, Ed25519PublicKey] | None
) -> list[str]:
    if not folds:
        return []
    from ctx_kernel.kernel.audit import signing  # noqa: PLC0415 - only where there are folds

    trusted = trusted if trusted is not None else signing.trusted_public_keys()
    problems = []
    prev_seq, prev_hash = 0, GENESIS_HASH
    for fold in folds:
        name = f"served fold {fold['day']}"
        if fold["first_seq"] != prev_seq + 1 or fold["prev_hash"] != prev_hash:
            problems.append(f"{name} does not follow the entries before it")
        key = trusted.get(fold["key_id"])
        if key is None:
            problems.append(f"{name} is signed by key {str(fold['key_id'])[:16]}…, not one you trust")
        elif not signing.signature_valid(key, fold["signature"], fold_message(fold)):
            problems.append(f"{name}: its signature does not verify (it was edited or forged)")
        prev_seq, prev_hash = fold["last_seq"], fold["last_hash"]
    return problems
