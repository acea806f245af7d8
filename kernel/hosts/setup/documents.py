"""What ``ctx setup`` adds inside a file, and takes out again, on the parsed document.

JSON is read with ctx's strict reader (a duplicate key is refused, not silently resolved) and
written with :mod:`json`, keeping the file's indentation and its key order; a file whose document
does not change is not rewritten. TOML is checked with :mod:`tomllib` and edited with tomlkit,
which keeps the person's comments, order and layout. Markdown gets one block between two marker
lines. An entry is ctx's when it is exactly what setup writes, naming this ctx in any of the ways
setup would (``ctx``, or its full path): anything else under the same name is the person's,
reported and left as it is, and never removed.
"""

from __future__ import annotations

import copy
import json
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Protocol

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable

from ctx_kernel.kernel.capture.json_input import JSONInputError, read_json
from ctx_kernel.kernel.errors import RefusedError
from ctx_kernel.kernel.hosts.setup.files import MAX_FILE_BYTES

JSONObject = dict[str, Any]


def _refuse(where: str, problem: str) -> RefusedError:
    return RefusedError(f"{where} {problem}: ctx setup changes nothing; fix the file first")


class JSONEntry(Protocol):
    """Something setup puts into a JSON settings file and can take out again."""

    def add(self, document: JSONObject, where: str) -> list[str]:
        """Put the entry in ``document`` unless it is there; notes on what was left alone."""
        ...

    def remove(self, document: JSONObject, where: str) -> list[str]:
        """Take the entry out of ``document`` if it is exactly there; notes on what was left alone."""
        ...


def _member(document: JSONObject, key: str, kind: type, where: str, *, create: bool) -> Any:
    """``document[key]`` checked to be a ``kind`` (created empty when asked), or None."""
    value = document.get(key)
    if value is None and create:
        value = document[key] = kind()
    if value is not None and not isinstance(value, kind):
        raise _refuse(where, f'has "{key}" that is not a JSON {"object" if kind is dict else "array"}')
    return value


@dataclass(frozen=True)
class Hook:
    """A command hook for one event: Claude Code's and Codex's ``hooks.EVENT[].hooks[]``.

    ``forms`` are the handler as setup writes it now, then as it may have written it before (the
    same ctx named another way); only the first is ever added."""

    event: str
    forms: tuple[JSONObject, ...]

    def _groups(self, document: JSONObject, where: str, *, create: bool) -> list[Any] | None:
        hooks = _member(document, "hooks", dict, where, create=create)
        groups = None if hooks is None else _member(hooks, self.event, list, f"{where} hooks", create=create)
        for group in groups or ():
            if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
                raise _refuse(where, f"has a hooks.{self.event} entry that is not a matcher group")
        return groups

    def add(self, document: JSONObject, where: str) -> list[str]:
        groups = self._groups(document, where, create=True)
        assert groups is not None
        handlers = [handler for group in groups for handler in group.get("hooks", [])]
        if any(handler in self.forms for handler in handlers):
            return []
        for handler in handlers:
            if _runs_ctx_hook(handler, self.event):
                return [
                    f"{where}: {self.event} already runs `{handler['command']}`; left as it is, "
                    "and no second ctx hook added"
                ]
        groups.append({"hooks": [dict(self.forms[0])]})
        return []

    def remove(self, document: JSONObject, where: str) -> list[str]:
        groups = self._groups(document, where, create=False)
        if groups is None:
            return []
        removed = False
        for group in list(groups):
            handlers = group.get("hooks", [])
            if any(handler in self.forms for handler in handlers):
                handlers[:] = [handler for handler in handlers if handler not in self.forms]
                removed = True
                if group == {"hooks": []}:  # the group setup added
                    groups.remove(group)
        hooks = document["hooks"]
        if removed and not groups:
            del hooks[self.event]
        if removed and not hooks:
            del document["hooks"]
        return [
            f"{where}: {self.event} runs `{handler['command']}`, which ctx setup did not write; left as it is"
            for group in groups
            for handler in group.get("hooks", [])
            if _runs_ctx_hook(handler, self.event)
        ]


def _runs_ctx_hook(handler: Any, event: str) -> bool:
    """Whether a hook handler for ``event`` (SessionStart) runs ``ctx hook session-start`` in some
    form (another path, other options)."""
    command = handler.get("command") if isinstance(handler, dict) else None
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    argument = "".join(f"-{c.lower()}" if c.isupper() else c for c in event).lstrip("-")
    for index, word in enumerate(words[:-1]):
        if word == "hook" and words[index + 1] == argument:
            return any(PurePath(w).name == "ctx" or w.startswith("ctx_kernel") for w in words[:index])
    return False


def _server_line(entry: Any) -> str:
    """An MCP server entry as the command line it runs."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return json.dumps(entry, ensure_ascii=False)[:200]
    args = entry.get("args")
    words = [entry["command"], *(args if isinstance(args, list) else [])]
    return shlex.join(str(word) for word in words)


def _same_server(found: Any, forms: tuple[JSONObject, ...]) -> bool:
    """Whether ``found`` is one of ``forms`` (a missing "type" counts as stdio, a missing "env" as empty)."""
    if not isinstance(found, dict):
        return False
    defaults = {"type": "stdio", "env": {}}
    return any({**defaults, **found} == {**defaults, **form} for form in forms)


@dataclass(frozen=True)
class JSONServer:
    """An MCP server in ``mcpServers`` (Claude Code's ``.mcp.json``); ``forms`` as for :class:`Hook`."""

    name: str
    forms: tuple[JSONObject, ...]

    def add(self, document: JSONObject, where: str) -> list[str]:
        servers = _member(document, "mcpServers", dict, where, create=True)
        found = servers.get(self.name)
        if found is None:
            servers[self.name] = dict(self.forms[0])
            return []
        if _same_server(found, self.forms):
            return []
        return [_other_server(where, self.name, found)]

    def remove(self, document: JSONObject, where: str) -> list[str]:
        servers = _member(document, "mcpServers", dict, where, create=False)
        if servers is None or self.name not in servers:
            return []
        if not _same_server(servers[self.name], self.forms):
            return [_other_server(where, self.name, servers[self.name])]
        del servers[self.name]
        if not servers:
            del document["mcpServers"]
        return []


def _other_server(where: str, name: str, found: Any) -> str:
    return (
        f"{where}: the MCP server {name!r} runs `{_server_line(found)}`, which is not what ctx setup "
        "writes; left as it is (check that it is the ctx you mean)"
    )


class Editable(Protocol):
    """What setup puts into one file, and takes out again."""

    def edit(self, text: str | None, where: str, *, remove: bool) -> tuple[str | None, list[str]]:
        """The file's new text (None: no file left) and notes on what was left alone."""
        ...


@dataclass(frozen=True)
class JSONFile:
    """Entries of one JSON settings file (hooks, MCP servers)."""

    entries: tuple[JSONEntry, ...]

    def edit(self, text: str | None, where: str, *, remove: bool) -> tuple[str | None, list[str]]:
        """The file's new text after adding (or removing) the entries, and notes; None: nothing left."""
        document: JSONObject = {} if text is None else _json_object(text, where)
        edited = copy.deepcopy(document)
        notes = [
            note for entry in self.entries for note in (entry.remove if remove else entry.add)(edited, where)
        ]
        if edited == document:
            return text, notes
        if not edited:
            return None, notes
        return json.dumps(edited, indent=_indent(text), ensure_ascii=False) + "\n", notes


def _json_object(text: str, where: str) -> JSONObject:
    try:
        document = read_json(text, max_bytes=MAX_FILE_BYTES)
    except JSONInputError as exc:
        raise _refuse(where, f"is not valid JSON ({exc.message})") from None
    if not isinstance(document, dict):
        raise _refuse(where, "is not a JSON object")
    return document


def _indent(text: str | None) -> int | str:
    """The indentation the file uses (its first indented line's), two spaces for a new file."""
    for line in (text or "").splitlines()[1:]:
        body = line.lstrip(" \t")
        if body and len(body) < len(line):
            margin = line[: len(line) - len(body)]
            return "\t" if margin.startswith("\t") else len(margin)
    return 2


@dataclass(frozen=True)
class TOMLServer:
    """An MCP server as ``[mcp_servers.NAME]`` (Codex's ``config.toml``); ``forms`` as for :class:`Hook`."""

    name: str
    forms: tuple[JSONObject, ...]

    def edit(self, text: str | None, where: str, *, remove: bool) -> tuple[str | None, list[str]]:
        """The file's new text after adding (or removing) the server, and notes; None: nothing left."""
        before = text or ""
        try:
            tomllib.loads(before)
            document = tomlkit.parse(before)
        except (tomllib.TOMLDecodeError, TOMLKitError) as exc:
            raise _refuse(where, f"is not valid TOML ({exc})") from None
        servers = document.get("mcp_servers")
        if servers is not None and not isinstance(servers, dict):  # tables, inline or split, are dicts
            raise _refuse(where, "has mcp_servers that is not a table")
        found = None if servers is None else servers.get(self.name)
        plain = None if found is None else tomlkit.item(found).unwrap()
        if found is not None and not _same_server(plain, self.forms):
            return text, [_other_server(where, self.name, plain)]
        if remove:
            if found is None:
                return text, []
            assert servers is not None
            del servers[self.name]
            if not servers:
                del document["mcp_servers"]
            after = document.as_string().rstrip("\n")
            return (after + "\n" if after else None), []
        if found is not None:
            return text, []
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            document.append("mcp_servers", servers)
        table = tomlkit.inline_table() if isinstance(servers, InlineTable) else tomlkit.table()
        table.update(self.forms[0])
        servers[self.name] = table
        return document.as_string(), []


BLOCK_BEGIN = "<!-- ctx setup: begin -->"
BLOCK_END = "<!-- ctx setup: end -->"


@dataclass(frozen=True)
class InstructionBlock:
    """Lines for an agent's instruction file (CLAUDE.md, AGENTS.md) between two marker lines."""

    body: str

    @property
    def text(self) -> str:
        """The block as written, markers included."""
        return f"{BLOCK_BEGIN}\n{self.body.rstrip()}\n{BLOCK_END}\n"

    def edit(self, text: str | None, where: str, *, remove: bool) -> tuple[str | None, list[str]]:
        """The file's new text with the block added, brought up to date or removed; None: nothing left."""
        lines = (text or "").splitlines(keepends=True)
        bounds = self._bounds(lines, where)
        if remove:
            if bounds is None:
                return text, []
            head, tail = lines[: bounds[0]], lines[bounds[1] + 1 :]
            if head and head[-1].strip() == "" and not tail:  # the blank line setup put before it
                head.pop()
            after = "".join(head + tail)
            edited = "".join(lines[bounds[0] : bounds[1] + 1]) != self.text
            notes = [f"{where}: the ctx block was edited since ctx setup wrote it; it goes as it is now"]
            return (after if after.strip() else None), notes if edited else []
        if bounds is None:
            current = text or ""
            if not current or current.endswith("\n\n"):
                return current + self.text, []
            return current + ("\n" if current.endswith("\n") else "\n\n") + self.text, []
        block = "".join(lines[bounds[0] : bounds[1] + 1])
        if block == self.text:
            return text, []
        return "".join(lines[: bounds[0]]) + self.text + "".join(lines[bounds[1] + 1 :]), []

    @staticmethod
    def _bounds(lines: list[str], where: str) -> tuple[int, int] | None:
        """The indexes of the marker lines, or None when the file has no block."""
        begins = [i for i, line in enumerate(lines) if line.strip() == BLOCK_BEGIN]
        ends = [i for i, line in enumerate(lines) if line.strip() == BLOCK_END]
        if not begins and not ends:
            return None
        if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
            raise _refuse(
                where, f"has the lines {BLOCK_BEGIN} and {BLOCK_END} other than once each, in order"
            )
        return begins[0], ends[0]
