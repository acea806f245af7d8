"""The one reader of JSON that arrives from outside: bounded in size and depth, strict, one-line errors.

Every entry point that parses JSON it did not write (``ctx propose --input``, ``ctx log --jsonl``,
transcripts, the session-end hook payload, audit exports and their manifests, MCP messages the
SDK could not read) goes through :func:`read_json`, so that none of them can be made to raise
``RecursionError`` or to take the last of two equal keys silently.

* Size: ``max_bytes`` bounds one document (one line, for JSON Lines).
* Depth: more than ``max_depth`` nested arrays and objects is refused before parsing; the standard
  parser recurses once per level and gives up with ``RecursionError`` near 1,000.
* Duplicate keys in an object are refused (the standard parser keeps the last one, another
  parser may keep the first, and a signed or validated document must mean one thing).
* ``NaN``, ``Infinity`` and ``-Infinity`` are refused: they are not JSON (RFC 8259).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from typing import IO, Any

from ctx_kernel.kernel.errors import UsageError

# Honest documents (transcript records, tool inputs, proposals) nest a dozen levels at most; the
# standard parser's limit is about 1,000 and pydantic's (the MCP SDK's) about 200.
MAX_DEPTH = 100

_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]++")
_EMPTY_PAIR = re.compile(r"\[\]|\{\}")


class JSONInputError(UsageError):
    """JSON that ctx will not read: malformed, too large, too deep, with a duplicate key, or not UTF-8."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind  # malformed, size, encoding, depth, duplicate-key, constant or number


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JSONInputError(f"duplicate key {_shown(key)} in a JSON object", "duplicate-key")
            seen.add(key)
    return value


def _constant(name: str) -> Any:
    raise JSONInputError(f"{name} is not a JSON value", "constant")


_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant)


def read_json(data: bytes | str, *, max_bytes: int | None = None, max_depth: int = MAX_DEPTH) -> Any:
    """Parse one JSON document, or raise :class:`JSONInputError` with a one-line reason."""
    if max_bytes is not None and _size_over(data, max_bytes):
        raise JSONInputError(f"JSON input is larger than {max_bytes} bytes", "size")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise JSONInputError("JSON input is not valid UTF-8", "encoding") from None
    else:
        text = data
    if _deeper_than(text, max_depth):
        raise JSONInputError(f"JSON nested deeper than {max_depth} levels", "depth")
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}" if "\n" in text.strip() else f"column {exc.colno}"
        raise JSONInputError(f"malformed JSON: {exc.msg} at {where}", "malformed") from None
    except RecursionError:  # unbalanced brackets, which the depth check leaves to the parser
        raise JSONInputError(f"JSON nested deeper than {max_depth} levels", "depth") from None
    except ValueError:  # an integer past Python's digit limit (sys.get_int_max_str_digits)
        limit = sys.get_int_max_str_digits()
        raise JSONInputError(f"JSON holds a number of more than {limit} digits", "number") from None


def _size_over(data: bytes | str, limit: int) -> bool:
    if isinstance(data, bytes) or len(data) > limit:
        return len(data) > limit
    # A character is at most 4 UTF-8 bytes: only a long text needs encoding to be measured.
    return len(data) * 4 > limit and len(data.encode("utf-8", "surrogatepass")) > limit


def _deeper_than(text: str, limit: int) -> bool:
    """Tell whether the arrays and objects in ``text`` nest more than ``limit`` levels."""
    if text.count("[") + text.count("{") <= limit:
        return False  # the common case: too few brackets to nest that deep, whatever strings hold
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    # Each pass removes the innermost pairs, one level: a text empty within ``limit`` passes is
    # shallow enough. A pass that removes nothing means unbalanced brackets: malformed JSON, which
    # the parser reports with its position.
    for _ in range(limit):
        brackets, removed = _EMPTY_PAIR.subn("", brackets)
        if not brackets or not removed:
            return False
    return True


def _shown(key: str) -> str:
    return repr(key if len(key) <= 40 else key[:40] + "…")


def read_lines(stream: IO[bytes], max_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """Each line of a binary stream with its number, or None for a line over ``max_bytes``.

    A line over the limit is skipped a block at a time, so it never sits in memory whole.
    """
    number = 0
    while raw := stream.readline(max_bytes + 1):
        number += 1
        if len(raw) <= max_bytes:
            yield number, raw
            continue
        while raw and not raw.endswith(b"\n"):
            raw = stream.readline(1 << 20)
        yield number, None
