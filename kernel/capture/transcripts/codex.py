"""OpenAI Codex CLI sessions: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl[.zst]``.

Codex may store a rollout compressed with zstd (``.jsonl.zst``); it reads the same here. Three
shapes, all read here, as written by codex-rs (``RolloutLine``/``RolloutItem`` in
``protocol/src/protocol.rs``, ``ResponseItem`` in ``protocol/src/models.rs``, ``TurnItem`` in
``protocol/src/items.rs``):

* current: every line is ``{"timestamp", "type", "payload"}`` with ``type`` one of session_meta
  (``payload.id`` is the session), response_item (a Responses API item: message, reasoning,
  function_call, function_call_output, custom_tool_call[_output], local_shell_call,
  web_search_call), event_msg (UI events that repeat the response items), turn_context and
  compacted (a compaction summary).
* legacy (codex-rs before the envelope, mid-2025): a first line ``{"id", "timestamp",
  "instructions"}``, then bare response items and ``{"record_type": "state"}`` lines, with no
  timestamp per item.
* item-based (newer codex-rs): the same envelope, with turns also recorded as completed turn
  items, ``event_msg`` lines of ``{"type": "item_completed", "item": {"type": "UserMessage" |
  "AgentMessage" | "CommandExecution" | "McpToolCall" | "Plan" | ...}}``. The user's prompt may
  be recorded only this way; a message or tool result recorded both ways is kept once.

Shell output comes wrapped three ways, each unwrapped to its text and exit code: JSON
``{"output", "metadata": {"exit_code"}}``, the freeform header ``Exit code: N / Wall time: ... /
Output:``, and the unified exec header ``Chunk ID: ... / Process exited with code N / Output:``.

Codex records the harness's own context as user messages (``<environment_context>``, AGENTS.md
instructions); the first is dropped as metadata, the others are kept as system turns.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ctx_kernel.kernel.capture.json_input import JSONInputError, read_json
from ctx_kernel.kernel.capture.transcripts.base import (
    Context,
    Format,
    ToolNames,
    Turn,
    as_dict,
    as_dicts,
    as_str,
    json_records,
    normalise_ts,
)
from ctx_kernel.kernel.capture.transcripts.clean import clean_prose, clean_tool, image_placeholder

NAME = "codex"
ENVELOPE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)
_METADATA_PREFIXES = ("<environment_context>",)
_INJECTED_PREFIXES = (
    "# AGENTS.md instructions for ",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "<permissions instructions>",
    "<collaboration_mode>",
    "<skills_instructions>",
)
_ENVELOPE_RE = re.compile(r'"type"\s*:\s*"(session_meta|response_item|event_msg|turn_context)"')
_SESSION_RE = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(\.jsonl)?$")
_DATA_URL_RE = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,")
# The header codex-rs puts before a command's output: "Exit code: N\nWall time: S seconds\n
# [Total output lines: N\n]Output:\n" (format_exec_output_for_model_freeform), or, from unified
# exec, "Chunk ID: ..\nWall time: ..\nProcess exited with code N\n[...]Output:\n".
_EXEC_HEADER_RE = re.compile(
    r"\A(?:Chunk ID: [^\n]*\n)?(?:Exit code: (?P<code>-?\d+)\n)?Wall time: [^\n]*\n"
    r"(?:(?:Process exited with code (?P<exited>-?\d+)|Process running with [^\n]*|"
    r"Total output lines: \d+|Original token count: \d+)\n)*Output:\n?"
)


def sniff(path: Path, head: str) -> bool:
    """Whether the file's first line is a Codex rollout envelope or a legacy rollout header."""
    first = next((line for line in head.splitlines() if line.strip()), "")
    try:
        record = read_json(first)
    except JSONInputError:
        # A session_meta line carries the whole system prompt and can outgrow the head.
        return '"payload"' in first and bool(_ENVELOPE_RE.search(first[:400]))
    if not isinstance(record, dict):
        return False
    if "payload" in record and isinstance(record.get("type"), str):
        return record["type"] in ENVELOPE_TYPES or path.name.startswith("rollout-")
    legacy_header = {"id", "timestamp"} <= record.keys() and "type" not in record
    return legacy_header and ("instructions" in record or path.name.startswith("rollout-"))


class _Echoes:
    """What Codex records twice, as a response item and as a completed turn item: kept once.

    A key seen from one side is remembered until the other side repeats it (then the repeat is
    dropped); only the latest ``keep`` keys per side are remembered.
    """

    def __init__(self, keep: int = 64) -> None:
        self._seen: dict[str, deque[tuple[str, str]]] = {
            "item": deque(maxlen=keep),
            "response": deque(maxlen=keep),
        }

    def first(self, side: str, key: tuple[str, str]) -> bool:
        """Whether ``key`` from ``side`` is new: False when the other side already recorded it."""
        other = self._seen["response" if side == "item" else "item"]
        if key in other:
            other.remove(key)
            return False
        self._seen[side].append(key)
        return True


def parse(ctx: Context) -> Iterator[Turn]:
    """The turns of one Codex rollout file, current, item-based or legacy."""
    match = _SESSION_RE.search(ctx.path.name.removesuffix(".zst"))
    session = match.group(1) if match else None
    tool_names = ToolNames()
    echoes = _Echoes()
    first = True
    for line, record in json_records(ctx, NAME):
        kind = record.get("type")
        payload = record.get("payload")
        if "payload" in record and isinstance(kind, str):  # envelope types grow; unknown ones are skipped
            at = normalise_ts(record.get("timestamp"))
            item = as_dict(payload)
        elif first and "type" not in record and "id" in record:
            kind, item, at = "session_meta", record, None
        elif kind in ITEM_TYPES:
            kind, item, at = "response_item", record, None
        elif "record_type" in record:
            continue
        else:
            ctx.report.warn(line, "skipped: not a Codex rollout record")
            continue
        first = False
        if kind == "session_meta":
            found = item.get("id") or item.get("session_id")
            session = found if isinstance(found, str) else session
            continue
        if kind == "compacted":
            summary = clean_prose(as_str(item.get("message")))
            parts = [("system", f"[compacted] {summary}")] if summary else []
        elif kind == "response_item":
            parts = list(_item(item, tool_names, ctx.options.thinking))
            echo_key = _response_key(item, parts)
            if echo_key is not None and not echoes.first("response", echo_key):
                continue
        elif kind == "event_msg" and item.get("type") == "item_completed":
            turn_item = as_dict(item.get("item"))
            parts = list(_turn_item(turn_item, ctx.options.thinking))
            echo_key = _turn_item_key(turn_item, parts)
            if echo_key is not None and not echoes.first("item", echo_key):
                continue
        else:
            continue  # other event_msg repeat the items for the UI; turn_context holds settings
        for speaker, text in parts:
            if text:
                yield Turn(speaker, text, session, at, ctx.source(line), NAME)


def _response_key(item: dict[str, Any], parts: list[tuple[str, str]]) -> tuple[str, str] | None:
    """What a response item may share with a completed turn item: a message's text, a call's result."""
    kind = item.get("type")
    if kind == "message" and parts:
        return parts[0]
    if kind in ("function_call_output", "custom_tool_call_output", "mcp_tool_call_output"):
        call = as_str(item.get("call_id"))
        return ("result", call) if call else None
    return None


def _turn_item_key(item: dict[str, Any], parts: list[tuple[str, str]]) -> tuple[str, str] | None:
    kind = _item_kind(item)
    if kind in ("usermessage", "agentmessage") and parts:
        return parts[0]
    if kind in ("commandexecution", "mcptoolcall", "dynamictoolcall", "filechange"):
        call = as_str(item.get("call_id")) or as_str(item.get("callId")) or as_str(item.get("id"))
        return ("result", call) if call else None
    return None


def _item_kind(item: dict[str, Any]) -> str:
    """A turn item's type whatever its spelling: UserMessage, userMessage, user_message."""
    return as_str(item.get("type")).replace("_", "").lower()


def _get(item: dict[str, Any], name: str) -> object:
    """A field by its snake_case name, or its camelCase spelling (turn items use both)."""
    if name in item:
        return item[name]
    head, *rest = name.split("_")
    return item.get(head + "".join(word.capitalize() for word in rest))


def _turn_item(item: dict[str, Any], thinking: bool) -> Iterator[tuple[str, str]]:
    """(speaker, text) for one completed turn item (``TurnItem``); at most one pair."""
    kind = _item_kind(item)
    if kind == "usermessage":
        pieces = []
        for part in as_dicts(item.get("content")):
            if part.get("type") in ("image", "input_image"):
                pieces.append(_image(as_str(_get(part, "image_url"))))
            elif part.get("type") == "local_image":
                pieces.append(f"[image: {as_str(part.get('path'))}]")
            else:
                pieces.append(as_str(part.get("text")))
        yield from _message({"role": "user", "content": [{"type": "input_text", "text": p} for p in pieces]})
    elif kind == "agentmessage":
        texts = [as_str(part.get("text")) for part in as_dicts(item.get("content"))]
        text = "\n\n".join(t for t in texts if t).strip()
        if text:
            yield "assistant", clean_prose(text)
    elif kind == "hookprompt":
        texts = [as_str(fragment.get("text")) for fragment in as_dicts(item.get("fragments"))]
        text = "\n\n".join(t for t in texts if t).strip()
        if text:
            yield "system", clean_prose(text)
    elif kind == "plan":
        plan = clean_prose(as_str(item.get("text")))
        if plan:
            yield "assistant", f"[plan] {plan}"
    elif kind == "reasoning" and thinking:
        texts = [
            as_str(t) for t in _as_list(_get(item, "summary_text")) + _as_list(_get(item, "raw_content"))
        ]
        reasoning = clean_prose("\n\n".join(t for t in texts if t))
        if reasoning:
            yield "assistant", f"[thinking] {reasoning}"
    elif kind == "commandexecution":
        yield "tool", _command_result(item)
    elif kind in ("mcptoolcall", "dynamictoolcall"):
        yield "tool", _tool_call_result(item, kind)
    elif kind == "filechange":
        changes = _get(item, "changes")
        files = "\n".join(sorted(changes)) if isinstance(changes, dict) else ""
        failed = as_str(item.get("status")) in ("failed", "declined")
        label = "tool error: apply_patch" if failed else "tool result: apply_patch"
        yield "tool", f"[{label}]\n{clean_tool(files) or '(no files)'}"
    elif kind == "websearch":
        query = as_str(item.get("query")) or as_str(as_dict(item.get("action")).get("query"))
        yield "assistant", f"[tool call: web_search] {clean_tool(query)}".rstrip()
    elif kind == "imagegeneration":
        prompt = as_str(_get(item, "revised_prompt"))
        yield "assistant", f"[image generated] {clean_prose(prompt)}".rstrip()


def _as_list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _command_result(item: dict[str, Any]) -> str:
    """A command a turn ran, as one tool turn: the command line, its exit code and its output."""
    command = _command(_get(item, "command"))
    output = as_str(_get(item, "aggregated_output")) or as_str(_get(item, "formatted_output"))
    if not output:
        output = "\n".join(t for t in (as_str(item.get("stdout")), as_str(item.get("stderr"))) if t)
    text, header_code = _output(output)
    code = _get(item, "exit_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else header_code
    status = as_str(item.get("status")).lower()
    if status == "declined":
        label = "tool error: shell, declined"
    else:
        label = f"tool error: shell, exit code {code}" if code else "tool result: shell"
    return f"[{label}] {clean_tool(command)}\n{text or '(no output)'}"


def _tool_call_result(item: dict[str, Any], kind: str) -> str:
    """An MCP or dynamic tool call completed in a turn, with its result or error."""
    name = as_str(item.get("tool")) or "tool"
    if kind == "mcptoolcall" and as_str(item.get("server")):
        name = f"{item['server']}.{name}"
    result = as_dict(item.get("result"))
    error = as_str(as_dict(item.get("error")).get("message")) or as_str(item.get("error"))
    content = result.get("content") if result else _get(item, "content_items")
    text, _ = _output(content if isinstance(content, list) else as_str(content))
    failed = bool(error) or _get(result, "is_error") is True or item.get("success") is False
    label = f"tool error: {name}" if failed else f"tool result: {name}"
    return f"[{label}]\n{clean_tool(error) or text or '(no output)'}"


def _item(item: dict[str, Any], tool_names: ToolNames, thinking: bool) -> Iterator[tuple[str, str]]:
    """(speaker, text) for one Responses API item; at most one pair, so a line names one turn."""
    kind = item.get("type")
    if kind == "message":
        yield from _message(item)
    elif kind == "reasoning" and thinking:
        texts = [
            as_str(part.get("text")) for part in as_dicts(item.get("summary")) + as_dicts(item.get("content"))
        ]
        reasoning = clean_prose("\n\n".join(text for text in texts if text))
        if reasoning:
            yield "assistant", f"[thinking] {reasoning}"
    elif kind in ("function_call", "custom_tool_call"):
        name = as_str(item.get("name")) or "tool"
        tool_names.add(item.get("call_id"), name)
        arguments = (
            _arguments(item.get("arguments")) if kind == "function_call" else as_str(item.get("input"))
        )
        yield "assistant", f"[tool call: {name}] {clean_tool(arguments)}".rstrip()
    elif kind == "local_shell_call":
        action = as_dict(item.get("action"))
        tool_names.add(item.get("call_id"), "shell")
        yield "assistant", f"[tool call: shell] {clean_tool(_command(action.get('command')))}".rstrip()
    elif kind == "web_search_call":
        action = as_dict(item.get("action"))
        yield "assistant", f"[tool call: web_search] {clean_tool(as_str(action.get('query')))}".rstrip()
    elif kind in ("function_call_output", "custom_tool_call_output"):
        name = tool_names.get(item.get("call_id"))
        output, exit_code = _output(item.get("output"))
        label = f"tool result: {name}" if not exit_code else f"tool error: {name}, exit code {exit_code}"
        yield "tool", f"[{label}]\n{output or '(no output)'}"


def _message(item: dict[str, Any]) -> Iterator[tuple[str, str]]:
    role = as_str(item.get("role"))
    pieces = []
    for part in as_dicts(item.get("content")):
        if part.get("type") == "input_image":
            pieces.append(_image(as_str(part.get("image_url"))))
        else:
            pieces.append(as_str(part.get("text")))
    text = "\n\n".join(piece for piece in pieces if piece).strip()
    if not text or text.startswith(_METADATA_PREFIXES):
        return
    if role in ("developer", "system") or (role == "user" and text.startswith(_INJECTED_PREFIXES)):
        yield "system", clean_prose(text)
    elif role in ("user", "assistant"):
        yield role, clean_prose(text)


def _output(value: object) -> tuple[str, int]:
    """A tool output's text and exit code (0 when none is recorded).

    Shell calls wrap their output as JSON ``{"output": ..., "metadata": {"exit_code": ...}}``
    (codex-rs ``format_exec_output``) or put a header before it (``Exit code: N`` or ``Process
    exited with code N``, then ``Output:``); MCP tools may return a list of content items.
    """
    if isinstance(value, list):
        pieces = []
        for part in as_dicts(value):
            url = as_str(part.get("image_url"))
            pieces.append(_image(url) if url else clean_tool(as_str(part.get("text"))))
        return "\n".join(piece for piece in pieces if piece), 0
    if isinstance(value, dict):  # a failure: {"content": ..., "success": false} or {"isError": true}
        failed = value.get("success") is False or value.get("isError") is True
        return clean_tool(as_str(value.get("content"))), 1 if failed else 0
    text = as_str(value)
    if text.startswith("{") and '"output"' in text[:20]:
        try:
            wrapped = read_json(text)
        except JSONInputError:
            wrapped = None
        if isinstance(wrapped, dict) and isinstance(wrapped.get("output"), str):
            code = as_dict(wrapped.get("metadata")).get("exit_code")
            return clean_tool(wrapped["output"]), code if isinstance(code, int) else 0
    header = _EXEC_HEADER_RE.match(text)
    if header is not None:
        code = header.group("code") or header.group("exited") or "0"
        return clean_tool(text[header.end() :]), int(code)
    return clean_tool(text), 0


def _arguments(raw: object) -> str:
    """A function call's JSON arguments, shown as the command line when the tool runs one."""
    text = as_str(raw)
    try:
        value = read_json(text)
    except JSONInputError:
        return text
    if isinstance(value, dict) and "command" in value:
        return _command(value["command"])
    if isinstance(value, dict) and isinstance(cmd := value.get("cmd"), str):  # exec_command (unified exec)
        return cmd
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _command(command: object) -> str:
    """An argv as a command line; the script alone when the argv is a shell running one."""
    if not isinstance(command, list):
        return as_str(command)
    words = [as_str(word) for word in command]
    if len(words) == 3 and words[1] in ("-lc", "-c"):  # ["bash", "-lc", "<script>"]
        return words[2]
    return shlex.join(words)


def _image(url: str) -> str:
    match = _DATA_URL_RE.match(url)
    if match:
        return image_placeholder(match.group(1), len(url) - match.end())
    return f"[image: {url}]" if url else ""


FORMAT = Format(NAME, "OpenAI Codex CLI rollout (~/.codex/sessions/**/rollout-*.jsonl)", sniff, parse)
