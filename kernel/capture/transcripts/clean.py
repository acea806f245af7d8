"""Raw transcript content made evidence-sized: tool noise trimmed, terminal codes and binary blobs dropped."""

from __future__ import annotations

import re

# A tool's output (a test run, a diff, a file read) is kept to its first three quarters and last
# quarter of this many characters: enough for the command's gist and its verdict at the end,
# little enough that a session of several hundred tool calls stays readable as evidence.
MAX_TOOL_CHARS = 2_000
# What a person or the model wrote is kept far longer, but a pasted 5 MB log still is not.
MAX_TURN_CHARS = 20_000
# A run of base64-like characters this long (about 384 encoded bytes) is data, not prose:
# no word, hash (64 hex digits) or path segment in a transcript comes close.
BLOB_MIN_CHARS = 512
# A text in which more than this share of characters are control or replacement characters is a
# binary file printed to a terminal; a few stray bytes in a short line are damage, not binary.
BINARY_SHARE = 0.1
_BINARY_MIN_BAD = 8
_BINARY_SAMPLE = 65_536

_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_BLOB_RE = re.compile(rf"(?:data:[\w.+-]+/[\w.+-]+;base64,)?[A-Za-z0-9+/=_-]{{{BLOB_MIN_CHARS},}}")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f\ufffd]")
_BLOB_MIN_DISTINCT = 16  # a 600-character rule of dashes or "=" is a separator, not data


def size_label(size: int) -> str:
    """A byte count as whole kilobytes, at least 1, for the placeholders that replace content."""
    return f"{max(1, round(size / 1024))} KB"


def binary_placeholder(size: int) -> str:
    """The text that stands in for omitted binary content of this many bytes."""
    return f"[binary content omitted: {size_label(size)}]"


def image_placeholder(media_type: str | None, encoded_chars: int) -> str:
    """The text that stands in for a base64 image of this many encoded characters."""
    kind = media_type or "image"
    return f"[image omitted: {kind}, {size_label(encoded_chars * 3 // 4)}]"


def trim(text: str, limit: int) -> str:
    """Keep the first three quarters and the last quarter of ``limit`` characters, marking the cut."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    cut = len(text) - limit
    marker = f"[… {cut} character{'' if cut == 1 else 's'} trimmed]"
    return f"{text[:head]}\n{marker}\n{text[len(text) - tail :]}"


def looks_binary(text: str) -> bool:
    """Whether a text holds NUL bytes or is mostly control and undecodable characters."""
    if "\x00" in text:
        return True
    sample = text[:_BINARY_SAMPLE]
    bad = len(_CONTROL_RE.findall(sample))
    return bad >= _BINARY_MIN_BAD and bad > BINARY_SHARE * len(sample)


def scrub_binary(text: str) -> str:
    """Replace a binary text whole, or each base64-like blob inside a text, with a sized placeholder."""
    if looks_binary(text):
        return binary_placeholder(len(text.encode("utf-8", "replace")))

    def replace(match: re.Match[str]) -> str:
        blob = match.group(0)
        return binary_placeholder(len(blob)) if len(set(blob)) >= _BLOB_MIN_DISTINCT else blob

    return _BLOB_RE.sub(replace, text)


def strip_ansi(text: str) -> str:
    """Remove terminal colour and cursor escape sequences."""
    return _ANSI_RE.sub("", text)


def clean_tool(text: str) -> str:
    """A tool call's input or output as evidence: no escapes, no blobs, at most MAX_TOOL_CHARS kept."""
    return trim(scrub_binary(strip_ansi(text)).strip(), MAX_TOOL_CHARS)


def clean_prose(text: str) -> str:
    """What a person or the model wrote: blobs omitted, at most MAX_TURN_CHARS kept."""
    return trim(scrub_binary(text).strip(), MAX_TURN_CHARS)
