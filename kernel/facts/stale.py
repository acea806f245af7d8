"""The staleness of current decisions as a service: the snapshot a person's act records, the
report ``ctx stale`` prints, and the one-line markers inject, recall and the MCP tools add.

The git work is :mod:`ctx_kernel.kernel.facts.staleness`; this module reads the snapshots from
the store, adds review dates, and keeps a process's answer while HEAD and the store stay the same
(a warm recall re-reads neither git nor the cache file).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.facts import staleness
from ctx_kernel.kernel.facts.staleness import Checkout, Drift, GitUnavailable
from ctx_kernel.kernel.recall.results import Recall
from ctx_kernel.kernel.records import Decision, LinkDigest, Snapshot, SnapshotAct
from ctx_kernel.kernel.reports import StaleDecision, StaleReport, StoreStatus
from ctx_kernel.kernel.store.base import Store
from ctx_kernel.kernel.text import plural


def _ago(seconds: float) -> str:
    days = int(seconds // 86_400)
    if days >= 2:
        return f"{days} days ago"
    hours = int(seconds // 3_600)
    if hours >= 2:
        return f"{hours} hours ago"
    return "just now" if seconds < 120 else f"{int(seconds // 60)} minutes ago"


def _stamp(unix: int) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def marker_line(reasons: Sequence[str], drift: Drift, review_due: str | None, now: float) -> str:
    """The one line shown beside a stale decision (inject, recall, MCP)."""
    parts = []
    if "changed" in reasons and drift.changed_links:
        links = drift.changed_links
        where = ", ".join(links[:3]) + (" ..." if len(links) > 3 else "")
        if drift.rewritten:
            parts.append(f"{where} changed since it was ratified ({drift.rewritten})")
        elif not drift.commits:
            parts.append(f"{where} changed since it was ratified")
        else:
            last = "" if drift.last_at is None else f", last {_ago(max(now - drift.last_at, 0))}"
            parts.append(f"{where} changed in {plural(drift.commits, 'commit')} since it was ratified{last}")
    for move in drift.moved[:3]:
        link, _, where = move.partition(" -> ")
        parts.append(f"{link} moved to {where}")
    if "unmatched" in reasons:
        parts.append(f"{', '.join(drift.unmatched[:3])} matches nothing any more")
    if review_due:
        parts.append(f"review was due {review_due}")
    return "may be stale: " + "; ".join(parts)


def _reasons(snapshot: Snapshot, drift: Drift | None, today: date) -> tuple[list[str], str | None]:
    """Why a decision may be stale (none: it holds as far as ctx can tell), and the review date passed."""
    reasons: list[str] = []
    if drift is not None and (drift.commits or drift.changed_links or drift.moved):
        reasons.append("changed")
    if drift is not None and drift.unmatched:
        reasons.append("unmatched")
    review_due = staleness.due(snapshot, today)
    if review_due:
        reasons.append("review_due")
    return reasons, review_due


class StaleFacts:
    """Snapshots at a person's acts, and which current decisions may no longer hold."""

    def __init__(self, store: Store, location: str) -> None:
        self.store = store
        self.location = location
        self._checkouts: dict[Path, Checkout | str] = {}
        self._kept: tuple[object, ...] | None = None
        self._report: StaleReport | None = None
        # What markers() last answered, and the store's data version then (None: forgotten); its
        # own snapshots do not change data_version, so taking one forgets them.
        self._marked: tuple[tuple[object, ...], dict[str, str]] | None = None

    def checkout(self, start: Path | None = None) -> Checkout | str:
        """The git checkout of ``start`` (the working folder), or the note saying why there is none."""
        folder = (start or Path.cwd()).resolve()
        known = self._checkouts.get(folder)
        if isinstance(known, Checkout):
            try:
                return replace(known, head=staleness.head_of(known))
            except GitUnavailable as exc:
                return str(exc)
        if known is not None:
            return known
        try:
            found: Checkout | str = staleness.find_checkout(folder)
        except GitUnavailable as exc:
            found = str(exc)
        self._checkouts[folder] = found
        return found

    def snapshot(
        self,
        decision_id: str,
        links: Sequence[str],
        *,
        at: str,
        by: str,
        act: SnapshotAct,
        review_by: str | None,
        review_every: int | None,
        checkout: Checkout | str | None,
    ) -> Snapshot:
        """The snapshot a ratification or re-confirmation records: HEAD and what each link matches."""
        self._marked = None
        commit = None
        digests = [LinkDigest(link=link, digest=None, files=0) for link in links]
        if isinstance(checkout, Checkout) and checkout.head is not None:
            commit = checkout.head
            if links:
                digests = staleness.digests(staleness.tree(checkout), list(links), checkout)
        return Snapshot(
            decision_id=decision_id,
            taken_at=at,
            taken_by=by,
            act=act,
            git_commit=commit,
            links=digests,
            review_by=review_by,
            review_every=review_every,
        )

    def report(
        self,
        start: Path | None = None,
        *,
        today: date | None = None,
        snapshots: Sequence[Snapshot] | None = None,
    ) -> StaleReport:
        """Every current decision with links or a review date that may no longer hold (``snapshots``:
        the current ones, when the caller has read them already)."""
        snapshots = self.store.current_snapshots() if snapshots is None else snapshots
        today = today or datetime.now(UTC).date()
        found = self.checkout(start) if any(s.links for s in snapshots) else None
        key: tuple[object, ...] = (today, tuple((s.decision_id, s.taken_at) for s in snapshots))
        if isinstance(found, Checkout):
            key += (found.root, found.head)
        if self._report is not None and self._kept == key:
            return self._report
        drift: dict[str, Drift] = {}
        if isinstance(found, Checkout):
            answered = self._drift(found, snapshots, details=True)
            if isinstance(answered, str):
                found = answered
            else:
                drift = answered
        decisions = self.store.decisions_by_ids([s.decision_id for s in snapshots])
        now = datetime.now(UTC).timestamp()
        stale = []
        for s in snapshots:
            item = self._item(s, decisions[s.decision_id], drift.get(staleness.snapshot_key(s)), today, now)
            if item is not None:
                stale.append(item)
        report = StaleReport(
            repository=str(found.root) if isinstance(found, Checkout) else None,
            head=found.head if isinstance(found, Checkout) else None,
            note=found if isinstance(found, str) else None,
            checked=len(snapshots),
            stale=stale,
        )
        self._kept, self._report = key, report
        return report

    def markers(self, start: Path | None = None) -> dict[str, str]:
        """The marker line of each current decision that may be stale. Git is not asked when no
        current decision has a snapshot, and a warm process answers again from memory while the
        store, HEAD and the day are the same (a file read and a pragma, no query)."""
        version = self.store.data_version()
        known = self._checkouts.get((start or Path.cwd()).resolve())
        try:
            head = staleness.head_of(known) if isinstance(known, Checkout) else None
        except GitUnavailable:
            head = None
        key = (version, head, datetime.now(UTC).date())
        if self._marked is not None and self._marked[0] == key:
            return self._marked[1]
        found: dict[str, str] = {}
        snapshots = self.store.current_snapshots()
        if snapshots:
            # Only the lines: no decision is read and no report record is built (a cold inject).
            checkout = self.checkout(start) if any(s.links for s in snapshots) else None
            drift: dict[str, Drift] = {}
            if isinstance(checkout, Checkout):
                answered = self._drift(checkout, snapshots, details=False)
                drift = answered if isinstance(answered, dict) else {}
                key = (version, checkout.head, key[2])
            now = datetime.now(UTC).timestamp()
            for snapshot in snapshots:
                shift = drift.get(staleness.snapshot_key(snapshot))
                reasons, due = _reasons(snapshot, shift, key[2])
                if reasons:
                    found[snapshot.decision_id] = marker_line(reasons, shift or Drift(), due, now)
        self._marked = (key, found)
        return found

    def marked(self, found: Recall) -> Recall:
        """A recall's answer with the marker line under each current decision that may be stale."""
        markers = self.markers() if found.decisions else {}
        if not markers:
            return found
        hits = [
            replace(h, stale=markers.get(h.decision.id) if h.decision.current else None)
            for h in found.decisions
        ]
        return replace(found, decisions=hits)

    def counted(self, status: StoreStatus) -> StoreStatus:
        """``ctx status`` with the number of current decisions that may be stale (git is asked only
        when a current decision has a snapshot)."""
        snapshots = self.store.current_snapshots()
        if not snapshots:
            return status
        return replace(status, stale_decisions=len(self.report(snapshots=snapshots).stale))

    def _drift(
        self, checkout: Checkout, snapshots: Sequence[Snapshot], *, details: bool
    ) -> dict[str, Drift] | str:
        """What changed under the snapshots' links, or why git could not say (a damaged repository,
        git killed or hung): the links are not checked then, and nothing else fails."""
        try:
            return staleness.cached_drift(checkout, snapshots, self._cache(checkout), details=details)
        except GitUnavailable as exc:
            return f"{exc}: decisions' links are not checked"

    def _cache(self, checkout: Checkout) -> Path:
        root = hashlib.sha256(str(checkout.root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        return paths.stale_cache_dir(self.location) / f"{root}.json"

    def _item(
        self, s: Snapshot, decision: Decision, drift: Drift | None, today: date, now: float
    ) -> StaleDecision | None:
        reasons, review_due = _reasons(s, drift, today)
        if not reasons:
            return None
        d = drift or Drift()
        return StaleDecision(
            decision_id=decision.id,
            subject=decision.subject,
            decision=decision.decision,
            confirmed_at=s.taken_at,
            confirmed_by=s.taken_by,
            snapshot_commit=s.git_commit,
            reasons=reasons,  # type: ignore[arg-type]
            commits=d.commits,
            authors=d.authors,
            last_change_at=_stamp(d.last_at) if d.last_at is not None else None,
            files_changed=len(set(d.paths) | set(d.renamed) | set(d.deleted)),
            paths=d.paths,
            renamed=d.renamed,
            deleted=d.deleted,
            changed_links=d.changed_links,
            links=[x.link for x in s.links],
            unmatched_links=d.unmatched,
            moved=d.moved,
            review_due=review_due,
            compared_by_content=d.rewritten,
            line=marker_line(reasons, d, review_due, now),
        )
