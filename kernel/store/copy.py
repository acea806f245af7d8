"""Copy a store to another location or backend through the Store interface (``ctx migrate``).

What is copied verbatim: the meta that names the store's history (``store_id``, which signed
checkpoints and audit exports name; ``created_at``; ``audit_checkpoint``, the latest signed head,
so ``ctx audit verify`` on the copy still checks the chain against it), and every row of the
tables in :data:`~ctx_kernel.kernel.store.rows.COPIED_TABLES`: evidence, proposals in every
status, decisions with their windows, citations, supersession links and the audit chain (same
``seq``, ``at``, ``prev_hash`` and ``hash``). Vectors are copied when the target has no
embedding model yet or the source's, so the copy need not be embedded again. What the target
derives itself is rebuilt there: its keyword index, entity mentions and conflicts, its
``conflict_rules`` and ``last_verify`` marks. A sealed (encrypted) store is not copied: its key
and keyed index belong to a file, and a server backend does not seal.

Every batch is one target transaction. Rows are matched by key, so a run that was stopped at any
point (Ctrl-C, a killed process, a dropped connection) is resumed by running it again: rows the
target holds are compared with the source's and skipped, never written twice; one that differs
refuses the copy. The source is read inside one snapshot, so a run copies what was committed when
it started; a source that moved on between two runs only ever adds rows, resolves proposals and
closes windows, and the next run does the same on the target.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import RefusedError, StoreError, UsageError
from ctx_kernel.kernel.limits import COPY_BATCH
from ctx_kernel.kernel.reports import MigrateReport, TableCopy
from ctx_kernel.kernel.store import create_store, display_location, same_location, sqlite_path
from ctx_kernel.kernel.store.base import Store
from ctx_kernel.kernel.store.rows import COPIED, COPIED_TABLES, CopiedTable
from ctx_kernel.kernel.text import plural

IDENTITY_META = ("store_id", "created_at", "audit_checkpoint")
# Written to the target and read back through the source: a target that is the source under
# another name (a link, a second spelling of a server's address) sees it.
_PROBE = "migrate_probe"
# The fields a proposal's resolution sets, and a decision's closing: a faithful copy writes the
# row as it was first written and then makes the same change, which the invariants allow.
_RESOLUTION = ("status", "resolved_at", "resolved_by", "resolution_note", "decision_id")
_CLOSING = ("valid_until", "closed_by", "close_reason")

# (stage, rows done, rows in all or None when not counted); a stage is a table's name, "resolved"
# (proposals resolved once their decisions are there), "vectors" or "index" (the derived data).
Progress = Callable[[str, int, int | None], None]


def open_target(source: Store, location: str, *, follow_dangling: bool = False) -> Store:
    """The store to copy ``source`` into, created when missing; refuses the source itself, and a
    file that is a symbolic link to nothing (unless ``follow_dangling``: it would create a store
    wherever the link points)."""
    if not location.strip():
        raise UsageError("--to names no location")
    if source.is_sealed():
        raise RefusedError(
            "this store is encrypted: ctx migrate copies plain stores only (a server does not seal "
            "evidence); for an encrypted offline copy, back up the SQLite file itself"
        )
    try:
        path: Path | None = sqlite_path(location)
    except UsageError:
        path = None  # a server's URL, or a scheme create_store refuses with its own message
    if path is not None and path.is_dir():
        raise UsageError(f"{path} is a folder: name the store's file")
    if path is not None and path.is_symlink() and not path.exists() and not follow_dangling:
        raise RefusedError(
            f"{path} is a symbolic link to {os.readlink(path)}, which does not exist: ctx migrate "
            "will not create a store where it points (pass --force if that is where it belongs)"
        )
    if same_location(source.location, location):
        raise RefusedError("the target is this store itself: name another file or server")
    try:
        target = create_store(location)
        if path is not None:
            paths.keep_out_of_git(path)  # a copy into a project's .ctx/ is as private as the store
    except OSError as exc:  # a folder that cannot be made, a file in the way of one
        raise StoreError(f"cannot create the target {display_location(location)}: {exc.strerror}") from exc
    try:
        nonce = secrets.token_hex(16)
        with target.transaction():
            target.set_meta(_PROBE, nonce)
        same = source.get_meta(_PROBE) == nonce
        with target.transaction():
            target.delete_meta(_PROBE)
        if same:
            raise RefusedError("the target is this store itself: name another file or server")
    except BaseException:
        target.close()
        raise
    return target


def copy_store(
    source: Store,
    target: Store,
    *,
    derive: Callable[[], None],
    batch_size: int = COPY_BATCH,
    progress: Progress | None = None,
) -> MigrateReport:
    """Copy (or finish copying) ``source`` into ``target``, then ``derive`` the target's derived data."""
    started = time.perf_counter()
    with source.snapshot():
        copier = _Copier(source, target, batch_size, progress or (lambda *_: None))
        resumed = copier.check_target()
        copier.copy_meta()
        written = {spec.name: copier.table(spec) for spec in COPIED_TABLES if spec.name != "audit"}
        resolved = copier.resolutions()
        written["audit"] = copier.table(COPIED["audit"])
        vectors, model = copier.vectors()
        last = source.rows_by_key("audit", [(copier.totals["audit"],)]).get((copier.totals["audit"],))
    copier.say("index", 0, 1)
    derive()
    copier.say("index", 1, 1)
    copier.check_complete()
    return MigrateReport(
        source=display_location(source.location),
        target=copier.target_name,
        store_id=source.get_meta("store_id"),
        tables=[TableCopy(s.name, copier.totals[s.name], written[s.name]) for s in COPIED_TABLES],
        resolved=resolved,
        closed=copier.closed,
        vectors=vectors,
        vector_model=model,
        audit_rows=copier.totals["audit"],
        last_hash=last["hash"] if last else None,
        resumed=resumed,
        seconds=round(time.perf_counter() - started, 3),
    )


def _key(spec: CopiedTable, row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[c] for c in spec.key)


def _without(row: dict[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    return {**row, **dict.fromkeys(fields)}


def _as_queued(proposal: dict[str, Any]) -> dict[str, Any]:
    """A proposal as it was queued: pending, before its resolution (which may name a later decision)."""
    return {**_without(proposal, _RESOLUTION), "status": "pending"}


class _Copier:
    """One run of a copy: the source's snapshot counts, and what this run wrote."""

    def __init__(self, source: Store, target: Store, batch_size: int, say: Progress) -> None:
        self.source = source
        self.target = target
        self.batch = batch_size
        self.say = say
        self.target_name = display_location(target.location)
        # Counted inside the source's snapshot, like every row the copy reads.
        self.totals = {spec.name: source.count_rows(spec.name) for spec in COPIED_TABLES}
        self.closed = 0

    def _refuse(self, why: str) -> RefusedError:
        return RefusedError(f"{self.target_name} {why}: copy into an empty location")

    def check_target(self) -> bool:
        """Refuse a target holding another store or rows the source lacks; True when resuming."""
        if self.target.is_sealed():  # its rows would be sealed by ctx, never restored as they are
            raise self._refuse("is encrypted")
        held = {spec.name: self.target.count_rows(spec.name) for spec in COPIED_TABLES}
        if not any(held.values()):
            return False
        if self.target.get_meta("store_id") != self.source.get_meta("store_id"):
            raise self._refuse(f"holds another store (id {self.target.get_meta('store_id')})")
        for name, count in held.items():
            if count > self.totals[name]:
                raise self._refuse(
                    f"holds {plural(count - self.totals[name], f'{name} row')} this store does not"
                )
        if seq := held["audit"]:
            # Each hash covers every row before it: equal hashes at the target's last row mean its
            # whole chain is the start of the source's.
            mine = self.source.rows_by_key("audit", [(seq,)]).get((seq,))
            theirs = self.target.rows_by_key("audit", [(seq,)]).get((seq,))
            if mine is None or theirs is None or mine["hash"] != theirs["hash"]:
                raise self._refuse(f"holds another audit history (row {seq} differs)")
        return True

    def copy_meta(self) -> None:
        """Write the meta that names the store's history."""
        with self.target.transaction():
            for key in IDENTITY_META:
                value = self.source.get_meta(key)
                if value is not None:
                    self.target.set_meta(key, value)

    def _batches(self, spec: CopiedTable) -> Iterator[list[dict[str, Any]]]:
        after: tuple[Any, ...] | None = None
        while rows := self.source.export_rows(spec.name, after, self.batch):
            after = tuple(rows[-1][c] for c in spec.cursor)
            yield rows

    def table(self, spec: CopiedTable) -> int:
        """Copy one table batch by batch; returns how many rows were written."""
        total, done, written = self.totals[spec.name], 0, 0
        self.say(spec.name, 0, total)
        for rows in self._batches(spec):
            with self.target.transaction():
                written += self._restore(spec, rows)
            done += len(rows)
            self.say(spec.name, done, total)
        return written

    def _restore(self, spec: CopiedTable, rows: list[dict[str, Any]]) -> int:
        held = self.target.rows_by_key(spec.name, [_key(spec, r) for r in rows])
        missing = []
        for row in rows:
            have = held.get(_key(spec, row))
            if have is None:
                missing.append(_as_queued(row) if spec.name == "proposal" else row)
            elif have != row:
                self._reconcile(spec, row, have)
        if spec.name == "proposal":
            missing = self._referents_first(missing)
        if missing:
            self.target.restore_rows(spec.name, missing)
        return len(missing)

    def _reconcile(self, spec: CopiedTable, row: dict[str, Any], have: dict[str, Any]) -> None:
        """A row the target holds in another state: the one the source had earlier, or refused."""
        if spec.name == "proposal" and have == _as_queued(row):
            return  # resolved after the decisions are copied
        if spec.name == "decision" and have["valid_until"] is None and have == _without(row, _CLOSING):
            # The source closed this window since an earlier run stopped.
            self.target.close_decision(row["id"], row["valid_until"], row["closed_by"], row["close_reason"])
            self.closed += 1
            return
        key = ", ".join(str(v) for v in _key(spec, row))
        raise self._refuse(f"holds a {spec.name} row ({key}) that differs from this store's")

    def _referents_first(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Proposals ordered so that each near-duplicate's original is written before it."""
        by_id = {r["id"]: r for r in rows}
        ordered: list[dict[str, Any]] = []
        placed: set[str] = set()

        def place(row: dict[str, Any]) -> None:
            if row["id"] in placed:
                return
            placed.add(row["id"])
            original = row["near_duplicate_of"]
            if original is not None and original not in placed:
                if original in by_id:
                    place(by_id[original])
                elif not self.target.rows_by_key("proposal", [(original,)]):
                    # Queued in the same instant but later in the order: written now, and found
                    # there when its own batch comes.
                    found = self.source.rows_by_key("proposal", [(original,)]).get((original,))
                    if found is not None:
                        place(_as_queued(found))
            ordered.append(row)

        for row in rows:
            place(row)
        return ordered

    def resolutions(self) -> int:
        """Resolve the target's proposals that the source resolved, now that their decisions are there."""
        spec = COPIED["proposal"]
        total, done, resolved = self.totals["proposal"], 0, 0
        self.say("resolved", 0, total)
        for rows in self._batches(spec):
            settled = [r for r in rows if r["status"] != "pending"]
            with self.target.transaction():
                held = self.target.rows_by_key(spec.name, [_key(spec, r) for r in settled])
                for row in settled:
                    have = held.get(_key(spec, row))
                    if have == row:
                        continue
                    if have is None or have != _as_queued(row):
                        raise self._refuse(
                            f"holds a proposal row ({row['id']}) that differs from this store's"
                        )
                    self.target.resolve_proposal(
                        row["id"],
                        row["status"],
                        row["resolved_at"],
                        row["resolved_by"],
                        row["resolution_note"],
                        row["decision_id"],
                    )
                    resolved += 1
            done += len(rows)
            self.say("resolved", done, total)
        return resolved

    def vectors(self) -> tuple[int, str | None]:
        """Copy the vectors when the target embeds with the source's model; else it embeds them itself."""
        model, dim = self.source.get_meta("vector_model"), self.source.get_meta("vector_dim")
        if model is None or dim is None or not self.source.vector_tables_exist():
            return 0, None
        with self.target.transaction():
            theirs = self.target.get_meta("vector_model")
            if theirs is None:
                self.target.set_meta("vector_model", model)
                self.target.set_meta("vector_dim", dim)
            elif theirs != model or self.target.get_meta("vector_dim") != dim:
                return 0, None
            if not self.target.vector_tables_exist():
                self.target.create_vector_tables(int(dim))
        copied = 0
        self.say("vectors", 0, None)
        for kind in ("decision", "evidence"):
            after: tuple[str, int] | None = None
            while rows := self.source.export_vectors(kind, after, self.batch):
                after = (rows[-1][0], rows[-1][1])
                with self.target.transaction():
                    copied += self.target.insert_vectors(kind, rows)
                self.say("vectors", copied, None)
        return copied, model

    def check_complete(self) -> None:
        """The target holds exactly the source's rows (none besides them)."""
        for spec in COPIED_TABLES:
            count = self.target.count_rows(spec.name)
            if count != self.totals[spec.name]:
                raise self._refuse(
                    f"holds {plural(count, f'{spec.name} row')} where this store has {self.totals[spec.name]}"
                )
