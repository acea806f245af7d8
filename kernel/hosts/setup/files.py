"""The project's files as ``ctx setup`` touches them: found inside the repository, read with care,
shown as a diff, written whole.

A cloned repository is someone else's work: its ``.claude/settings.json`` or ``.mcp.json`` may be
a link to a file elsewhere on the machine, a pipe, or megabytes of text. Nothing here runs what a
file says; a link is followed only while it stays inside the repository (and out of ``.git``),
only regular files of a bounded size are read, and a file is replaced whole through a temporary
file beside it, so a write never goes through a link or leaves half a file behind.
"""

from __future__ import annotations

import difflib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from ctx_kernel.kernel.errors import RefusedError

# Agents' settings and instruction files are a few kilobytes; more is not one of them.
MAX_FILE_BYTES = 1_000_000


def project_root(start: Path) -> Path:
    """The top folder of the git repository holding ``start``, else ``start`` itself.

    Found by looking for ``.git`` in ``start`` and its parents: running git in a cloned
    repository could run commands its configuration names."""
    start = Path(os.path.realpath(start))
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


@dataclass(frozen=True)
class ProjectFile:
    """A file of the project by the name the agent reads and the real path ctx reads and writes."""

    name: str  # relative to the project's top folder, as the agent names it: ".claude/settings.json"
    path: Path  # where it really is: the same file, or the one a link inside the repository points at
    shown: str  # how a person is told about it: the name, and where a link leads


def locate(root: Path, name: str) -> ProjectFile:
    """``root / name``, refused when it or a folder above it is a link out of the repository."""
    given = root / name
    real = Path(os.path.realpath(given))
    if real == given:
        return ProjectFile(name, given, name)
    if not real.is_relative_to(root):
        raise RefusedError(
            f"{name} is a link to {real}, outside the repository: ctx setup does not follow it"
        )
    inside = real.relative_to(root)
    if inside.parts and inside.parts[0] == ".git":
        raise RefusedError(f"{name} is a link into .git ({inside}): ctx setup does not follow it")
    if not real.exists():
        raise RefusedError(
            f"{name} is a link to {inside}, which does not exist: ctx setup does not follow it"
        )
    return ProjectFile(name, real, f"{name} (a link to {inside})")


def read(file: ProjectFile) -> str | None:
    """The file's text, or None when there is none; refused unless it is a regular UTF-8 file."""
    try:
        fd = os.open(file.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RefusedError(f"{file.shown} cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise RefusedError(f"{file.shown} is not a regular file: ctx setup leaves it alone")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise RefusedError(f"{file.shown} is larger than {MAX_FILE_BYTES} bytes: ctx setup leaves it alone")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RefusedError(f"{file.shown} is not UTF-8 text: ctx setup leaves it alone") from None


@dataclass(frozen=True)
class FileChange:
    """What one file holds now and what ``ctx setup`` would leave in it (None: no file)."""

    file: ProjectFile
    before: str | None
    after: str | None
    purpose: str  # what the change is for, in a few words

    def headline(self) -> str:
        """The file and what happens to it, in one line."""
        if self.before is None:
            return f"{self.file.shown} (new file): {self.purpose}"
        if self.after is None:
            return f"{self.file.shown} (deleted: nothing else is in it): {self.purpose}"
        return f"{self.file.shown}: {self.purpose}"

    def diff(self) -> str:
        """A unified diff from what is there to what would be written."""
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile="/dev/null" if self.before is None else f"a/{self.file.name}",
            tofile="/dev/null" if self.after is None else f"b/{self.file.name}",
        )
        return "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
        )


def apply(change: FileChange) -> None:
    """Carry one change out, refusing if the file changed since the change was planned."""
    if read(change.file) != change.before:
        raise RefusedError(f"{change.file.shown} changed since it was shown: run ctx setup again")
    path = change.file.path
    if change.after is None:
        path.unlink()
        if change.file.shown == change.file.name:  # not through a link: its own folders
            _remove_empty_folders(path.parent, change.file)
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _replace(path, change.after)
    except OSError as exc:
        raise RefusedError(f"{change.file.shown} could not be written: {exc.strerror or exc}") from None


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to a new file beside ``path`` and rename it over ``path`` (never through a link)."""
    mode = stat.S_IMODE(path.lstat().st_mode) if path.exists() else None
    temporary = path.with_name(f".{path.name}.ctx-{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _remove_empty_folders(folder: Path, file: ProjectFile) -> None:
    """Remove the folders of ``file``'s name (``.claude``, ``.codex``) that deleting it left empty."""
    for _ in Path(file.name).parent.parts:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
