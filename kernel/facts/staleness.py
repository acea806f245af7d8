"""Staleness: which current decisions the code they govern has moved away from since a person
last confirmed them, worked out from the local git checkout.

A decision's newest snapshot holds the commit it was confirmed at and a digest of what each of its
links matched then. One ``git log --name-status -M`` pass from the snapshots' common ancestor to
HEAD finds every commit since then; each commit's changed paths are matched against every link at
once, and a commit counts for a decision only when it is not an ancestor of that decision's
snapshot commit (worked out in the same pass: each commit carries the set of snapshot commits it
is an ancestor of, as bits). Never one git process per decision. A snapshot commit the checkout
no longer has (a rebased or force-pushed history, a shallow clone) is said so, and the decision is
compared by its links' digests against HEAD instead. What git answered is cached on disk keyed by
HEAD and the snapshots, so asking again costs a file read and ``git rev-parse``.

Only committed content is compared (HEAD's tree, never the working tree or the index), and git's
own objects are read: a link never reads a file outside the repository, even through a symlink.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from ctx_kernel.kernel.facts.links import split_link
from ctx_kernel.kernel.records import LinkDigest, Snapshot

# Bumped when what the cache holds changes shape.
_CACHE_FORMAT = 1
_GLOB_CHARS = re.compile(r"[*?\[]")
# git must answer within this; a hung credential helper or lock must not hang ctx.
_GIT_TIMEOUT_S = 120


class GitUnavailable(Exception):
    """git cannot answer here: its message says why, once, for a person."""


@dataclass(frozen=True)
class Checkout:
    """The git checkout staleness is worked out from."""

    root: Path
    head: str | None  # None: a repository with no commit yet
    shallow: bool


def _git(root: Path, *args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "-c", "core.quotepath=off", *args],
            input=stdin,
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitUnavailable(f"git could not be run: {exc}") from None
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitUnavailable(f"git {args[0]} failed: {message[0] if message else done.returncode}")
    return done.stdout


def find_checkout(start: Path) -> Checkout:
    """The git checkout holding ``start``; GitUnavailable when there is no git or no repository."""
    if shutil.which("git") is None:
        raise GitUnavailable("git is not installed: decisions' links are not checked for staleness")
    out = _git(start, "rev-parse", "--show-toplevel", "--is-shallow-repository", check=False)
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) < 2:
        raise GitUnavailable(f"{start} is not in a git repository: decisions' links are not checked")
    root = Path(lines[0])
    head = _git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).decode().strip()
    return Checkout(root=root, head=head or None, shallow=lines[1] == "true")


def head_of(checkout: Checkout) -> str | None:
    """HEAD's commit read from the repository's files (no git process: a warm recall asks this on
    every call); git itself answers when the layout is not the plain one (a worktree, a submodule)."""
    git_dir = checkout.root / ".git"
    try:
        if git_dir.is_dir():
            head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
            if not head.startswith("ref: "):
                return head or None
            ref = head[5:]
            loose = git_dir / ref
            if loose.is_file():
                return loose.read_text(encoding="utf-8").strip() or None
            packed = git_dir / "packed-refs"
            if packed.is_file():
                for line in packed.read_text(encoding="utf-8").splitlines():
                    if line.endswith(" " + ref):
                        return line.split(" ", 1)[0]
            return None
    except OSError:
        pass
    answer = _git(checkout.root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    return answer.decode().strip() or None


def tree(checkout: Checkout, commit: str | None = None) -> dict[str, str]:
    """Every path in a commit's tree (HEAD's by default) with its object id, in one git process;
    a submodule's path holds the commit it points at."""
    target = commit or checkout.head
    if target is None:
        return {}
    out = _git(checkout.root, "ls-tree", "-r", "-z", "--full-tree", target)
    paths: dict[str, str] = {}
    for entry in out.split(b"\0"):
        if entry:
            meta, _, path = entry.partition(b"\t")
            paths[path.decode("utf-8", "surrogateescape")] = meta.split()[2].decode()
    return paths


class LinkMatcher:
    """Every link of every decision, matched against a path at once: plain paths (a file, or a
    folder and all under it) by dictionary lookups of the path's prefixes, globs by their regex."""

    def __init__(self, links: Iterable[str]) -> None:
        self.prefixes: dict[str, set[str]] = {}
        self.globs: list[tuple[re.Pattern[str], str]] = []
        for link in set(links):
            pattern = split_link(link)[0].rstrip("/")
            plain = pattern[:-3] if pattern.endswith("/**") else pattern
            if _GLOB_CHARS.search(plain):
                self.globs.append((_glob(pattern), link))
            else:
                self.prefixes.setdefault(plain, set()).add(link)

    def matches(self, path: str) -> set[str]:
        """The links ``path`` falls under."""
        found: set[str] = set()
        start = 0
        while True:
            cut = path.find("/", start)
            prefix = path if cut < 0 else path[:cut]
            if prefix in self.prefixes:
                found |= self.prefixes[prefix]
            if cut < 0:
                break
            start = cut + 1
        for regex, link in self.globs:
            if regex.match(path):
                found.add(link)
        return found


def _glob(pattern: str) -> re.Pattern[str]:
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern  # noqa: PLC0415 - globs only

    regex = GitIgnoreSpecPattern("/" + pattern).regex
    assert regex is not None  # a pattern that is not a comment or blank always compiles
    return regex


def digests(paths: dict[str, str], links: Sequence[str]) -> list[LinkDigest]:
    """Each link with the digest of the paths (and their objects) it matches in ``paths``."""
    matcher = LinkMatcher(links)
    matched: dict[str, list[str]] = {link: [] for link in links}
    for path in paths:
        for link in matcher.matches(path):
            matched[link].append(path)
    out = []
    for link in links:
        found = sorted(matched[link])
        digest = None
        if found:
            body = "".join(f"{paths[p]} {p}\n" for p in found)
            digest = hashlib.sha256(body.encode("utf-8", "surrogateescape")).hexdigest()
        out.append(LinkDigest(link=link, digest=digest, files=len(found)))
    return out


@dataclass
class Drift:
    """What git says changed under one decision's links since its snapshot."""

    commits: int = 0
    authors: list[str] = field(default_factory=list)
    last_at: int | None = None  # a unix time
    paths: list[str] = field(default_factory=list)
    renamed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    # The snapshot commit is not in HEAD's history: compared by content instead.
    rewritten: str | None = None
    changed_links: list[str] = field(default_factory=list)

    def to_cache(self) -> dict[str, Any]:
        """The JSON the cache keeps."""
        return self.__dict__.copy()


def _key(snapshot: Snapshot) -> str:
    return f"{snapshot.decision_id}@{snapshot.taken_at}"


def drift(checkout: Checkout, snapshots: Sequence[Snapshot]) -> dict[str, Drift]:
    """What changed under each snapshot's links since it was taken, keyed by ``decision_id@taken_at``
    (only snapshots with links); a handful of git processes, whatever the number of decisions."""
    linked = [s for s in snapshots if s.links]
    out = {_key(s): Drift() for s in linked}
    if not linked or checkout.head is None:
        return out
    head_tree = tree(checkout)
    links_now = {d.link: d for d in digests(head_tree, sorted({x.link for s in linked for x in s.links}))}
    for s in linked:
        out[_key(s)].unmatched = [x.link for x in s.links if links_now[x.link].digest is None]
    commits = sorted({s.git_commit for s in linked if s.git_commit})
    present = _present(checkout, commits)
    missing_reason = "shallow clone" if checkout.shallow else "rewritten history"
    for s in linked:
        if s.git_commit is None or s.git_commit not in present:
            why = (
                "no commit was recorded"
                if s.git_commit is None
                else f"{s.git_commit[:12]} is not in this clone ({missing_reason})"
            )
            _by_content(out[_key(s)], s, links_now, why)
    reachable = [c for c in commits if c in present]
    if not reachable:
        return out
    base = (
        _git(checkout.root, "merge-base", "--octopus", checkout.head, *reachable, check=False)
        .decode()
        .strip()
    )
    args = [
        "log",
        "--topo-order",
        "-z",
        "--format=%x01%H %P%x02%an%x02%ct",
        "--name-status",
        "-M",
        checkout.head,
    ]
    if base:
        args += ["--not", base]
    log = _git(checkout.root, *args)
    seen = _walk(log, linked, out, base, reachable)
    for s in linked:
        if s.git_commit in present and s.git_commit not in seen and s.git_commit != base:
            _by_content(out[_key(s)], s, links_now, f"{s.git_commit[:12]} is not in HEAD's history")
    return out


def _present(checkout: Checkout, commits: Sequence[str]) -> set[str]:
    if not commits:
        return set()
    out = _git(
        checkout.root,
        "cat-file",
        "--batch-check=%(objectname) %(objecttype)",
        stdin="\n".join(commits).encode() + b"\n",
    )
    found = set()
    for line in out.decode().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == "commit":
            found.add(parts[0])
    return found


def _by_content(found: Drift, snapshot: Snapshot, now: dict[str, LinkDigest], why: str) -> None:
    found.rewritten = why
    found.changed_links = [x.link for x in snapshot.links if now[x.link].digest != x.digest]


def _walk(
    log: bytes, linked: Sequence[Snapshot], out: dict[str, Drift], base: str, reachable: Sequence[str]
) -> set[str]:
    """Read the log once, newest first; returns the commits it held."""
    bit = {c: 1 << i for i, c in enumerate(reachable)}
    matcher = LinkMatcher(x.link for s in linked for x in s.links)
    holders: dict[str, list[Snapshot]] = {}
    for s in linked:
        for x in s.links:
            holders.setdefault(x.link, []).append(s)
    # Per commit: the snapshot commits it is an ancestor of (or is), pushed from children to parents.
    above: dict[str, int] = {}
    seen: set[str] = set()
    authors: dict[str, set[str]] = {}
    for chunk in log.split(b"\x01")[1:]:
        header, _, rest = chunk.partition(b"\0")
        ids, author_raw, when_raw = header.split(b"\x02")
        commit, *parents = ids.decode().split()
        seen.add(commit)
        mask = above.pop(commit, 0) | bit.get(commit, 0)
        for parent in parents:
            above[parent] = above.get(parent, 0) | mask
        touched = _touched(rest.lstrip(b"\n").split(b"\0"), matcher)
        if not touched:
            continue
        author = author_raw.decode("utf-8", "replace")
        when = int(when_raw)
        counted: set[str] = set()
        for link, changes in touched.items():
            for s in holders[link]:
                key = _key(s)
                if out[key].rewritten is not None or s.git_commit is None or mask & bit.get(s.git_commit, 0):
                    continue  # compared by content, or this commit is in the snapshot's own history
                # A decision with several links touched by one commit counts that commit once.
                _count(out[key], link, changes, when, first=key not in counted)
                counted.add(key)
                authors.setdefault(key, set()).add(author)
    for key, names in authors.items():
        out[key].authors = sorted(names)
    return seen


def _touched(tokens: list[bytes], matcher: LinkMatcher) -> dict[str, list[str]]:
    """The links one commit's ``--name-status -z`` entries touch, each with its changes."""
    touched: dict[str, list[str]] = {}
    i = 0
    while i < len(tokens) and tokens[i]:
        status = tokens[i].decode()
        if status[0] in "RC":
            old, new = (t.decode("utf-8", "surrogateescape") for t in tokens[i + 1 : i + 3])
            i += 3
            for link in matcher.matches(old) | matcher.matches(new):
                touched.setdefault(link, []).append(f"R {old} -> {new}")
        else:
            path = tokens[i + 1].decode("utf-8", "surrogateescape")
            i += 2
            for link in matcher.matches(path):
                touched.setdefault(link, []).append(f"{status[0]} {path}")
    return touched


def _count(found: Drift, link: str, changes: list[str], when: int, *, first: bool) -> None:
    found.commits += first
    found.last_at = when if found.last_at is None else max(found.last_at, when)
    for change in changes:
        kind, _, what = change.partition(" ")
        target = {"R": found.renamed, "D": found.deleted}.get(kind, found.paths)
        if what not in target:
            target.append(what)
    if link not in found.changed_links:
        found.changed_links.append(link)


def due(snapshot: Snapshot, today: date) -> str | None:
    """The review date a snapshot has passed by ``today`` (YYYY-MM-DD), or None."""
    dates = []
    if snapshot.review_by:
        dates.append(date.fromisoformat(snapshot.review_by))
    if snapshot.review_every:
        taken = datetime.fromisoformat(snapshot.taken_at.replace("Z", "+00:00")).astimezone(UTC).date()
        dates.append(taken + timedelta(days=snapshot.review_every))
    passed = [d for d in dates if d < today]
    return min(passed).isoformat() if passed else None


def fingerprint(head: str | None, snapshots: Sequence[Snapshot]) -> str:
    """What a cached answer is valid for: HEAD and every snapshot's commit and links."""
    body = json.dumps(
        [_CACHE_FORMAT, head, [[_key(s), s.git_commit, [x.to_dict() for x in s.links]] for s in snapshots]],
        separators=(",", ":"),
    )
    return hashlib.sha256(body.encode()).hexdigest()


def cached_drift(checkout: Checkout, snapshots: Sequence[Snapshot], cache: Path | None) -> dict[str, Drift]:
    """:func:`drift`, read from ``cache`` when it holds the answer for this HEAD and these snapshots,
    and written there when not (a cache that cannot be written is skipped, never an error)."""
    key = fingerprint(checkout.head, snapshots)
    if cache is not None:
        try:
            held = json.loads(cache.read_text(encoding="utf-8"))
            if held.get("key") == key:
                return {k: Drift(**v) for k, v in held["drift"].items()}
        except (OSError, ValueError, TypeError, KeyError):
            pass
    found = drift(checkout, snapshots)
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            scratch = cache.with_suffix(f".{os.getpid()}.tmp")
            scratch.write_text(
                json.dumps({"key": key, "drift": {k: v.to_cache() for k, v in found.items()}}),
                encoding="utf-8",
            )
            scratch.replace(cache)
        except OSError:
            pass
    return found
