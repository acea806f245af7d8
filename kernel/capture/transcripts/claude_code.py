"""Claude Code sessions: ``~/.claude/projects/<project>/<session-id>.jsonl``, one JSON record per line.

Records of ``type`` user and assistant carry an Anthropic Messages API ``message`` whose
``content`` is a string or a list of blocks (text, thinking, tool_use, tool_result, image);
tool results come back inside user records. Records of ``type`` system carry a ``content``
string (a compaction boundary, a local command's notice). summary, file-history-snapshot,
queue-operation and progress records are bookkeeping, and so are user records marked
``isMeta`` (the caveat Claude Code adds before local command output). Every record has a
``sessionId``, a ``uuid`` and an ISO 8601 ``timestamp``. There is no published schema; this
follows the shape described by community tools that read these files.
"""

from __future__ import annotations

import json
import re
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

NAME = "claude-code"
RECORD_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation", "progress"}
)
_KEY_RE = re.compile(r'"(sessionId|parentUuid|leafUuid|isSidechain)"\s*:')


def sniff(path: Path, head: str) -> bool:
    """Whether the file's first lines are Claude Code records.

    A session often opens with bookkeeping records (summary, file-history-snapshot) that carry no
    session id; a few lines are read past them to find one.
    """
    typed = False
    for line in [line for line in head.splitlines() if line.strip()][:5]:
        try:
            record = read_json(line)
        except JSONInputError:
            # A line longer than the head (a pasted log) cannot be parsed; its keys can be seen.
            return typed or ("payload" not in line[:200] and bool(_KEY_RE.search(line)))
        if not isinstance(record, dict) or "payload" in record:
            return False
        if "parentUuid" in record or "sessionId" in record:
            return True
        if record.get("type") not in RECORD_TYPES:
            return False
        typed = True
    return typed


def parse(ctx: Context) -> Iterator[Turn]:
    """The turns of one Claude Code session file."""
    tool_names = ToolNames()
    fallback_session = ctx.path.stem
    for line, record in json_records(ctx, NAME):
        kind = record.get("type")
        if kind not in ("user", "assistant", "system") or record.get("isMeta"):
            continue
        session = as_str(record.get("sessionId")) or fallback_session
        at = normalise_ts(record.get("timestamp"))
        if kind == "system":
            parts = [("system", clean_prose(as_str(record.get("content"))))]
        else:
            message = record.get("message")
            if not isinstance(message, dict):
                ctx.report.warn(line, f"skipped: a {kind} record without a message")
                continue
            speaker = "system" if record.get("isCompactSummary") else kind
            parts = list(_blocks(message.get("content"), speaker, tool_names, ctx.options.thinking))
        for speaker, text in _group(parts):
            yield Turn(speaker, text, session, at, ctx.source(line), NAME)


def _blocks(
    content: object, speaker: str, tool_names: ToolNames, thinking: bool
) -> Iterator[tuple[str, str]]:
    """(speaker, text) for each block of a message's content."""
    if isinstance(content, str):
        yield speaker, clean_prose(content)
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            yield speaker, clean_prose(as_str(block.get("text")))
        elif kind == "thinking" and thinking:
            reasoning = clean_prose(as_str(block.get("thinking")))
            if reasoning:
                yield "assistant", f"[thinking] {reasoning}"
        elif kind == "tool_use":
            name = str(block.get("name") or "tool")
            tool_names.add(block.get("id"), name)
            yield "assistant", f"[tool call: {name}] {clean_tool(_compact(block.get('input')))}".rstrip()
        elif kind == "tool_result":
            name = tool_names.get(block.get("tool_use_id"))
            label = "tool error" if block.get("is_error") else "tool result"
            yield "tool", f"[{label}: {name}]\n{_result_text(block.get('content')) or '(no output)'}"
        elif kind == "image":
            yield speaker, _image(block)


def _result_text(content: object) -> str:
    """A tool_result's content (a string, or text and image blocks) as one trimmed text."""
    if not isinstance(content, list):
        return clean_tool(as_str(content))
    pieces = [
        _image(block) if block.get("type") == "image" else as_str(block.get("text"))
        for block in as_dicts(content)
    ]
    return clean_tool("\n".join(piece for piece in pieces if piece))


def _image(block: dict[str, Any]) -> str:
    source = as_dict(block.get("source"))
    return image_placeholder(as_str(source.get("media_type")) or None, len(as_str(source.get("data"))))


def _group(parts: list[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """One text per speaker, in order of first appearance, so a line's source and speaker name one turn."""
    grouped: dict[str, list[str]] = {}
    for speaker, text in parts:
        if text:
            grouped.setdefault(speaker, []).append(text)
    for speaker, texts in grouped.items():
        yield speaker, "\n\n".join(texts)


def _compact(value: object) -> str:
    """A tool call's input as one line of JSON (a bare string stays as it is)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


FORMAT = Format(NAME, "Claude Code session (~/.claude/projects/<project>/<session-id>.jsonl)", sniff, parse)
