"""OpenAI Codex CLI sessions: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``.

Two shapes, both read here, as written by codex-rs (``RolloutLine``/``RolloutItem`` in
``protocol/src/protocol.rs``, ``ResponseItem`` in ``protocol/src/models.rs``):

* current: every line is ``{"timestamp", "type", "payload"}`` with ``type`` one of session_meta
  (``payload.id`` is the session), response_item (a Responses API item: message, reasoning,
  function_call, function_call_output, custom_tool_call[_output], local_shell_call,
  web_search_call), event_msg (UI events that repeat the response items), turn_context and
  compacted (a compaction summary).
* legacy (codex-rs before the envelope, mid-2025): a first line ``{"id", "timestamp",
  "instructions"}``, then bare response items and ``{"record_type": "state"}`` lines, with no
  timestamp per item.

Codex records the harness's own context as user messages (``<environment_context>``, AGENTS.md
instructions); the first is dropped as metadata, the others are kept as system turns.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernel.json_input import JSONInputError, read_json
from kernel.transcripts.base import (
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
from kernel.transcripts.clean import clean_prose, clean_tool, image_placeholder

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
_SESSION_RE = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")
_DATA_URL_RE = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,")


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


def parse(ctx: Context) -> Iterator[Turn]:
    """The turns of one Codex rollout file, current or legacy."""
    match = _SESSION_RE.search(ctx.path.stem)
    session = match.group(1) if match else None
    tool_names = ToolNames()
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
        else:
            continue  # event_msg repeats the response items for the UI; turn_context holds settings
        for speaker, text in parts:
            if text:
                yield Turn(speaker, text, session, at, ctx.source(line), NAME)


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
    (codex-rs ``format_exec_output``); MCP tools may return a list of content items.
    """
    if isinstance(value, list):
        pieces = []
        for part in as_dicts(value):
            url = as_str(part.get("image_url"))
            pieces.append(_image(url) if url else clean_tool(as_str(part.get("text"))))
        return "\n".join(piece for piece in pieces if piece), 0
    if isinstance(value, dict):  # an older failure shape: {"content": ..., "success": false}
        return clean_tool(as_str(value.get("content"))), 0 if value.get("success", True) else 1
    text = as_str(value)
    if text.startswith("{") and '"output"' in text[:20]:
        try:
            wrapped = read_json(text)
        except JSONInputError:
            wrapped = None
        if isinstance(wrapped, dict) and isinstance(wrapped.get("output"), str):
            code = as_dict(wrapped.get("metadata")).get("exit_code")
            return clean_tool(wrapped["output"]), code if isinstance(code, int) else 0
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
