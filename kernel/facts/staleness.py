"""Staleness: which current decisions the code they govern has moved away from since a person
last confirmed them, worked out from the local git checkout.

A decision's newest snapshot holds the commit it was confirmed at and a digest of what each of its
links matched then. One ``git log --name-status -M`` pass from the snapshots' common ancestor to
HEAD finds every commit since then (a long history is read by one git process per core at once,
in slices of its first-parent line); each commit's changed paths are matched against every link at
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

import gc
import hashlib
import itertools
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import IO

from ctx_kernel.kernel.facts import symbols
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


def _command(root: Path, *args: str) -> list[str]:
    """A git command line run in ``root``, paths printed as they are (not quoted)."""
    return ["git", "-C", str(root), "-c", "core.quotepath=off", *args]


def _environment() -> dict[str, str]:
    """git's environment: never a prompt, never an optional lock a user's git would wait on."""
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


def _git(root: Path, *args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
    try:
        done = subprocess.run(
            _command(root, *args),
            input=stdin,
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
            env=_environment(),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitUnavailable(f"git could not be run: {exc}") from None
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitUnavailable(f"git {args[0]} failed: {message[0] if message else done.returncode}")
    return done.stdout


_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 object names


def find_checkout(start: Path) -> Checkout:
    """The git checkout holding ``start``; GitUnavailable when there is no git or no repository."""
    if shutil.which("git") is None:
        raise GitUnavailable("git is not installed: decisions' links are not checked for staleness")
    plain = _plain_checkout(start)
    if plain is not None:
        return plain
    # One process: the root, whether it is shallow, and HEAD's commit (absent before the first commit,
    # when git names the bad revision on stderr and prints the first two lines only).
    args = ("rev-parse", "--show-toplevel", "--is-shallow-repository", "HEAD^{commit}", "--")
    lines = _git(start, *args, check=False).decode("utf-8", "surrogateescape").splitlines()
    if len(lines) < 2:
        raise GitUnavailable(f"{start} is not in a git repository: decisions' links are not checked")
    head = lines[2] if len(lines) > 2 and _COMMIT.fullmatch(lines[2]) else None
    return Checkout(root=Path(lines[0]), head=head, shallow=lines[1] == "true")


# Set, these change where git looks for the repository: git itself is asked then.
_DISCOVERY_ENVIRONMENT = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)


def _plain_checkout(start: Path) -> Checkout | None:
    """The checkout of ``start`` read from the files, without a git process (the first marker of a
    cold inject pays for one otherwise), when the layout is the plain one: a ``.git`` folder owned
    by this user on the same file system, its config not moving the work tree, nothing in the
    environment changing discovery. None when any of that does not hold: git answers then."""
    if not hasattr(os, "getuid") or any(name in os.environ for name in _DISCOVERY_ENVIRONMENT):
        return None
    try:
        device = start.stat().st_dev
        for folder in (start, *start.parents):
            if folder.name == ".git" or folder.stat().st_dev != device:
                return None
            marker = folder / ".git"
            if not os.path.lexists(marker):
                continue
            found = marker.lstat()
            if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
                return None
            if b"worktree" in (marker / "config").read_bytes() or not (marker / "HEAD").is_file():
                return None
            root = Checkout(root=folder, head=None, shallow=(marker / "shallow").exists())
            return replace(root, head=head_of(root))
    except OSError:
        return None
    return None


def head_of(checkout: Checkout) -> str | None:
    """HEAD's commit read from the repository's files (no git process: a warm recall asks this on
    every call); git itself answers when the layout is not the plain one (a worktree, a submodule,
    refs kept in a reftable) or HEAD names a branch with no commit yet."""
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
            # Not found in the files (no commit yet, or refs kept another way): git answers.
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
    folder and all under it) by dictionary lookups of the path's prefixes, globs by their regex,
    tried only on paths under the folder their pattern starts with; each path is matched once."""

    def __init__(self, links: Iterable[str]) -> None:
        self.prefixes: dict[str, set[str]] = {}
        # Globs by the folder their pattern names before its first wildcard ("" for none).
        self.globs: dict[str, list[tuple[re.Pattern[str], str]]] = {}
        self._memo: dict[str, frozenset[str]] = {}
        for link in set(links):
            pattern = split_link(link)[0].rstrip("/")
            plain = pattern[:-3] if pattern.endswith("/**") else pattern
            wildcard = _GLOB_CHARS.search(plain)
            if wildcard:
                folder = plain[: wildcard.start()].rpartition("/")[0]
                self.globs.setdefault(folder, []).append((_glob(pattern), link))
            else:
                self.prefixes.setdefault(plain, set()).add(link)

    def matches(self, path: str) -> frozenset[str]:
        """The links ``path`` falls under."""
        known = self._memo.get(path)
        if known is not None:
            return known
        found: set[str] = set()
        for regex, link in self.globs.get("", ()):
            if regex.match(path):
                found.add(link)
        start = 0
        while True:
            cut = path.find("/", start)
            prefix = path if cut < 0 else path[:cut]
            if prefix in self.prefixes:
                found |= self.prefixes[prefix]
            for regex, link in self.globs.get(prefix, ()):
                if regex.match(path):
                    found.add(link)
            if cut < 0:
                break
            start = cut + 1
        self._memo[path] = frozen = frozenset(found)
        return frozen


def _glob(pattern: str) -> re.Pattern[str]:
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern  # noqa: PLC0415 - globs only

    regex = GitIgnoreSpecPattern("/" + pattern).regex
    assert regex is not None  # a pattern that is not a comment or blank always compiles
    return regex


def blobs(checkout: Checkout, ids: Iterable[str]) -> dict[str, str]:
    """The text of each of these objects, read by one ``git cat-file --batch``."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    out = _git(checkout.root, "cat-file", "--batch", stdin="\n".join(wanted).encode() + b"\n")
    texts: dict[str, str] = {}
    at = 0
    for object_id in wanted:
        header_end = out.index(b"\n", at)
        parts = out[at:header_end].split()
        at = header_end + 1
        if len(parts) == 3:
            size = int(parts[2])
            texts[object_id] = out[at : at + size].decode("utf-8", "surrogateescape")
            at += size + 1
    return texts


def digests(
    paths: dict[str, str],
    links: Sequence[str],
    checkout: Checkout | None = None,
    matcher: LinkMatcher | None = None,
) -> list[LinkDigest]:
    """Each link with the digest of the paths (and their objects) it matches in ``paths``; a symbol
    link (``path#Name``) with the digest of that definition in the file (read from ``checkout``).
    ``matcher``: one already made for (at least) these links, whose memory of paths is reused."""
    plain = [link for link in links if split_link(link)[1] is None]
    matcher = matcher or LinkMatcher(plain)
    matched: dict[str, list[str]] = {link: [] for link in plain}
    for path in paths:
        for link in matcher.matches(path):
            matched.setdefault(link, []).append(path)
    named = [split_link(link) for link in links if split_link(link)[1] is not None]
    texts = {} if checkout is None else blobs(checkout, [paths[p] for p, _ in named if p in paths])
    out = []
    for link in links:
        path, symbol = split_link(link)
        if symbol is not None:
            text = texts.get(paths.get(path, ""))
            digest = None if text is None else symbols.digest(text, symbol)
            out.append(LinkDigest(link=link, digest=digest, files=int(digest is not None)))
            continue
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
    # Symbol links whose definition is now in another file, as "path#Name -> other/path".
    moved: list[str] = field(default_factory=list)


def snapshot_key(snapshot: Snapshot) -> str:
    """How a snapshot's drift is keyed: ``decision_id@taken_at``."""
    return f"{snapshot.decision_id}@{snapshot.taken_at}"


def drift(checkout: Checkout, snapshots: Sequence[Snapshot]) -> dict[str, Drift]:
    """What changed under each snapshot's links since it was taken, keyed by ``decision_id@taken_at``
    (only snapshots with links); a handful of git processes, whatever the number of decisions."""
    linked = [s for s in snapshots if s.links]
    out = {snapshot_key(s): Drift() for s in linked}
    if not linked or checkout.head is None:
        return out
    commits = sorted({s.git_commit for s in linked if s.git_commit})
    present = _present(checkout, commits)
    reachable = [c for c in commits if c in present]
    # git reads history while the links are matched against HEAD's tree.
    history = _History(checkout, reachable) if reachable else None
    try:
        head_tree = tree(checkout)
        every = sorted({x.link for s in linked for x in s.links})
        # One matcher for HEAD's tree and the history: most paths are in both.
        matcher = LinkMatcher(link for link in every if split_link(link)[1] is None)
        links_now = {d.link: d for d in digests(head_tree, every, checkout, matcher)}
        moved = _moved(checkout, head_tree, [link for link in every if links_now[link].digest is None])
        for s in linked:
            found = out[snapshot_key(s)]
            found.unmatched = [
                x.link for x in s.links if links_now[x.link].digest is None and x.link not in moved
            ]
            found.moved = [f"{x.link} -> {moved[x.link]}" for x in s.links if x.link in moved]
            found.changed_links = [
                x.link
                for x in s.links
                if split_link(x.link)[1] is not None and links_now[x.link].digest not in (None, x.digest)
            ]
        missing_reason = "shallow clone" if checkout.shallow else "rewritten history"
        for s in linked:
            if s.git_commit is None or s.git_commit not in present:
                why = (
                    "no commit was recorded"
                    if s.git_commit is None
                    else f"{s.git_commit[:12]} is not in this clone ({missing_reason})"
                )
                _by_content(out[snapshot_key(s)], s, links_now, why)
        if history is None:
            return out
        with _collector_paused():
            seen = _walk(history, linked, out, reachable, matcher)
    finally:
        if history is not None:
            history.close()
    for s in linked:
        if s.git_commit in present and s.git_commit not in seen:
            _by_content(out[snapshot_key(s)], s, links_now, f"{s.git_commit[:12]} is not in HEAD's history")
    return out


def _moved(checkout: Checkout, paths: dict[str, str], lost: Sequence[str]) -> dict[str, str]:
    """Where each symbol link that its file no longer defines is defined now: one ``git grep``
    over HEAD for them all, then the candidates' texts checked."""
    wanted = [(link, *split_link(link)) for link in lost if split_link(link)[1] is not None]
    if not wanted or checkout.head is None:
        return {}
    args = ["grep", "-l", "-E", "--full-name"]
    for _, _, symbol in wanted:
        args += ["-e", symbols.grep_pattern(symbol or "")]
    listed = _git(checkout.root, *args, checkout.head, "--", check=False).decode("utf-8", "surrogateescape")
    candidates = [line.split(":", 1)[1] for line in listed.splitlines() if ":" in line]
    texts = blobs(checkout, [paths[p] for p in candidates if p in paths])
    found: dict[str, str] = {}
    for link, _, symbol in wanted:
        for path in candidates:
            text = texts.get(paths.get(path, ""))
            if text is not None and symbols.definition(text, symbol or "") is not None:
                found[link] = path
                break
    return found


class _History:
    """HEAD's history, children before parents, one commit's ``--name-status -z`` text at a time;
    git starts reading when this is made, and :meth:`close` stops it. A long history is read by
    several git processes at once, one per slice of HEAD's first-parent line down to the oldest
    snapshot commit on it (each slice is what its top reaches and the next slice's top does not,
    so in order they are still children before parents): the first slice is read as git writes it,
    the others are kept in temporary files meanwhile, and what lies under the oldest snapshot is
    asked for only if it is reached."""

    def __init__(self, checkout: Checkout, snapshot_commits: Sequence[str]) -> None:
        self.checkout = checkout
        slices, self.rest = _slices(checkout, snapshot_commits)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.files: list[IO[bytes]] = []
        try:
            self.processes.append(_start_log(checkout, slices[0], None))
            for revisions in slices[1:]:
                self.files.append(tempfile.TemporaryFile())  # noqa: SIM115 - closed by close()
                self.processes.append(_start_log(checkout, revisions, self.files[-1]))
        except GitUnavailable:
            self.close()
            raise

    def __iter__(self) -> Iterator[str]:
        yield from _read(self.processes[0])
        for process, kept in zip(self.processes[1:], self.files, strict=True):
            _finished(process)
            kept.seek(0)
            yield from _commits(kept)
        if self.rest is not None:
            self.processes.append(_start_log(self.checkout, self.rest, None))
            yield from _read(self.processes[-1])

    def close(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait()
            if process.stdout is not None:
                process.stdout.close()
        for kept in self.files:
            kept.close()


def _read(process: subprocess.Popen[bytes]) -> Iterator[str]:
    assert process.stdout is not None
    yield from _commits(process.stdout)
    _finished(process)


# Below this many first-parent commits from HEAD to the oldest snapshot, one git process reads it.
_SLICE_FROM = 4_000


def _slices(checkout: Checkout, snapshot_commits: Sequence[str]) -> tuple[list[list[str]], list[str] | None]:
    """The revision ranges :class:`_History` reads at once, newest first, and the one it reads after them
    if it gets there (everything under the oldest snapshot commit on the first-parent line). The
    slices' tops are first-parent commits about as many commits apart in date order, so each
    slice holds about as many commits however much was merged where."""
    head = checkout.head or "HEAD"
    count = _slice_count()
    if count < 2:
        return [[head]], None
    # The first-parent line and every commit by date, asked of two git processes at once.
    with tempfile.TemporaryFile() as kept:
        line_process = _start(checkout, ["rev-list", "--first-parent", head])
        dated_process = _start(checkout, ["rev-list", head], kept)
        try:
            line = _output(line_process).decode().split()
            where = {commit: n for n, commit in enumerate(line)}
            deepest = max((where[c] for c in snapshot_commits if c in where), default=len(line) - 1)
            if deepest < _SLICE_FROM:
                return [[head]], None
            _output(dated_process)
            kept.seek(0)
            dated = kept.read().decode().split()
        finally:
            for process in (line_process, dated_process):
                process.kill()
                process.wait()
    under = line[deepest + 1] if deepest + 1 < len(line) else None
    # A first-parent commit's place in date order is about how many commits are above it.
    place = {commit: n for n, commit in enumerate(dated)}
    above = place[under] if under else len(dated)
    tops = [head]
    for k in range(1, count):
        wanted = above * k // count
        # The first first-parent commit at or below that place, under the previous top.
        start = where[tops[-1]] + 1
        top = next((c for c in line[start : deepest + 1] if place[c] >= wanted), None)
        if top is None:
            break
        tops.append(top)
    slices = [[top, "--not", below] for top, below in itertools.pairwise(tops)]
    slices.append([tops[-1], "--not", under] if under else [tops[-1]])
    return slices, [under] if under else None


def _output(process: subprocess.Popen[bytes]) -> bytes:
    """What one git process wrote to its pipe (nothing if it wrote to a file), once it has finished
    well."""
    try:
        out, _ = process.communicate(timeout=_GIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise GitUnavailable("git did not answer in time") from None
    if process.returncode != 0:
        raise GitUnavailable(f"git rev-list failed (exit status {process.returncode})")
    return out or b""


def _slice_count() -> int:
    """How many git processes read a long history at once: two per core ctx may use (slices of
    equal commits still differ in cost, and more of them even that out), at most eight."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return 1 if cores < 2 else min(2 * cores, 8)


# What one slice's git is asked: each commit as \x01 id \x02 parents \x02 author \x02 time, then
# its changed paths with their status, renames found.
LOG_ARGS = ("log", "--topo-order", "-z", "--format=%x01%H%x02%P%x02%an%x02%ct", "--name-status", "-M")


def _start_log(checkout: Checkout, revisions: list[str], into: IO[bytes] | None) -> subprocess.Popen[bytes]:
    return _start(checkout, [*LOG_ARGS, *revisions], into)


def _start(checkout: Checkout, args: Sequence[str], into: IO[bytes] | None = None) -> subprocess.Popen[bytes]:
    """One git process started in the checkout, writing into ``into`` (a pipe when None)."""
    try:
        return subprocess.Popen(
            _command(checkout.root, *args),
            stdout=into if into is not None else subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_environment(),
        )
    except OSError as exc:
        raise GitUnavailable(f"git could not be run: {exc}") from None


def _finished(process: subprocess.Popen[bytes]) -> None:
    """Wait for one slice's git; a slice it could not read would leave commits out, so it fails."""
    try:
        code = process.wait(timeout=_GIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise GitUnavailable("git log did not answer in time") from None
    if code != 0:
        raise GitUnavailable(f"git log could not read the history (exit status {code}; git fsck says why)")


def _commits(stream: IO[bytes]) -> Iterator[str]:
    """One commit's text at a time from a ``git log`` stream (each starts with \\x01)."""
    left = ""
    while block := stream.read(1 << 20):
        commits = (left + block.decode("utf-8", "surrogateescape")).split("\x01")
        left = commits.pop()
        yield from (c for c in commits if c)
    if left:
        yield left


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


# What one commit did to one link: (kind, what) pairs, kind M (added or modified), R or D.
_Changes = tuple[tuple[str, str], ...]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector paused: reading a long history makes hundreds of thousands of small
    containers, none of them in a cycle, and collecting while they pile up costs a fifth of the read."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _walk(
    log: Iterable[str],
    linked: Sequence[Snapshot],
    out: dict[str, Drift],
    reachable: Sequence[str],
    matcher: LinkMatcher,
) -> set[str]:
    """Read the log, newest first, keeping each commit that touches a link; then count, per
    decision, those not in its snapshot's history. Stops reading once every snapshot commit has
    been seen and every commit left is in the history of them all. Returns the snapshot commits
    read."""
    bit = {c: 1 << i for i, c in enumerate(reachable)}
    everyone = (1 << len(reachable)) - 1
    # Per commit yet to be read: the snapshot commits it is an ancestor of, pushed from children.
    above: dict[str, int] = {}
    partial = 0  # how many of those are not in every snapshot's history
    found_bits = 0
    authors: list[str] = []
    whens: list[int] = []
    # Per link: (the commit's ancestry bits, its number, what it did to the link), newest first.
    by_link: dict[str, list[tuple[int, int, _Changes]]] = {}
    for chunk in log:
        header, _, rest = chunk.partition("\0")
        commit, parents, author, when = header.split("\x02")
        held = above.pop(commit, None)
        if held is None:
            mask = 0
        else:
            mask = held
            partial -= held != everyone
        own = bit.get(commit)
        if own is not None:
            found_bits |= own
            mask |= own
        for parent in parents.split():
            before = above.get(parent)
            if before is None:
                above[parent] = mask
                partial += mask != everyone
            elif before != everyone:
                above[parent] = after = before | mask
                partial -= after == everyone
        if mask != everyone:
            touched = _touched(rest.lstrip("\n").split("\0"), matcher)
            if touched:
                number = len(authors)
                authors.append(author)
                whens.append(int(when))
                for link, changes in touched.items():
                    by_link.setdefault(link, []).append((mask, number, tuple(changes)))
        if found_bits == everyone and partial == 0:
            break
    for s in linked:
        found = out[snapshot_key(s)]
        if found.rewritten is None and s.git_commit is not None:
            numbers = _count(found, s, bit.get(s.git_commit, 0), by_link)
            found.authors = sorted({authors[n] for n in numbers})
            found.last_at = max((whens[n] for n in numbers), default=None)
    return {c for c, b in bit.items() if b & found_bits}


def _count(
    found: Drift, snapshot: Snapshot, own: int, by_link: dict[str, list[tuple[int, int, _Changes]]]
) -> set[int]:
    """Fill ``found`` with the commits touching ``snapshot``'s links that are not in its history
    (``own``: its commit's bit; a commit that is an ancestor of it carries that bit); returns
    their numbers. Paths are listed sorted."""
    numbers: set[int] = set()
    changes: set[tuple[str, str]] = set()
    for x in snapshot.links:
        kept = [row for row in by_link.get(x.link, ()) if not row[0] & own]
        if kept:
            found.changed_links.append(x.link)
            numbers.update([row[1] for row in kept])
            changes.update(*[row[2] for row in kept])
    found.commits = len(numbers)
    found.paths, found.renamed, found.deleted = (sorted(w for k, w in changes if k == kind) for kind in "MRD")
    return numbers


def _touched(tokens: list[str], matcher: LinkMatcher) -> dict[str, list[tuple[str, str]]]:
    """The links one commit's ``--name-status -z`` entries touch, each with its changes."""
    touched: dict[str, list[tuple[str, str]]] = {}
    i = 0
    while i < len(tokens) and tokens[i]:
        status = tokens[i][0]
        if status in "RC":
            old, new = tokens[i + 1], tokens[i + 2]
            i += 3
            for link in matcher.matches(old) | matcher.matches(new):
                touched.setdefault(link, []).append(("R", f"{old} -> {new}"))
        else:
            path = tokens[i + 1]
            i += 2
            for link in matcher.matches(path):
                touched.setdefault(link, []).append(("D" if status == "D" else "M", path))
    return touched


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
        [
            _CACHE_FORMAT,
            head,
            [[snapshot_key(s), s.git_commit, [(x.link, x.digest) for x in s.links]] for s in snapshots],
        ],
        separators=(",", ":"),
    )
    return hashlib.sha256(body.encode()).hexdigest()


# What a marker line needs of a Drift; the rest (the paths and authors) is kept in a second file.
_SUMMARY = ("commits", "last_at", "unmatched", "rewritten", "changed_links", "moved")


def cached_drift(
    checkout: Checkout, snapshots: Sequence[Snapshot], cache: Path | None, *, details: bool = True
) -> dict[str, Drift]:
    """:func:`drift`, read from ``cache`` when it holds the answer for this HEAD and these snapshots,
    and written there when not (a cache that cannot be written is skipped, never an error). Without
    ``details`` the paths and authors are left empty: the markers do not say them, and reading them
    would be most of a cold inject's cost."""
    key = fingerprint(checkout.head, snapshots)
    if cache is not None:
        try:
            held = json.loads(cache.read_text(encoding="utf-8"))
            if held.get("key") == key:
                found = {k: Drift(**dict(zip(_SUMMARY, v, strict=True))) for k, v in held["drift"].items()}
                if details:
                    more = json.loads(_details(cache).read_text(encoding="utf-8"))
                    if more.get("key") != key:
                        raise ValueError("the details are of another pass")
                    for k, (authors, paths, renamed, deleted) in more["drift"].items():
                        found[k].authors, found[k].paths = authors, paths
                        found[k].renamed, found[k].deleted = renamed, deleted
                return found
        except (OSError, ValueError, TypeError, KeyError):
            pass
    found = drift(checkout, snapshots)
    if cache is not None:
        summary = {k: [getattr(v, name) for name in _SUMMARY] for k, v in found.items()}
        rest = {k: [v.authors, v.paths, v.renamed, v.deleted] for k, v in found.items()}
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            for target, body in ((_details(cache), rest), (cache, summary)):
                scratch = target.with_suffix(f".{os.getpid()}.tmp")
                scratch.write_text(json.dumps({"key": key, "drift": body}), encoding="utf-8")
                scratch.replace(target)
        except OSError:
            pass
    return found


def _details(cache: Path) -> Path:
    return cache.with_name(cache.stem + ".details.json")
