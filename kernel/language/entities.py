"""Entities named in decisions and evidence: the things an agent's query names loosely.

An entity is an identifier a developer would search for by name: text in backticks,
CamelCase and snake_case names, file paths, package names, dotted subjects and
acronyms. Extraction is regex-only, cheap enough to run inside every write.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ctx_kernel.kernel.text import ASCII_SEPARATORS

MAX_ENTITY_CHARS = 80
# Only the start of a long text is scanned: a 1 MB log would otherwise add thousands of
# entities, and the entity ranker is meant to stay small (distinct names, not rows).
SCAN_CHARS = 20_000
MAX_PER_TEXT = 64

_BACKTICK = re.compile(r"`([^`\n]{2,80})`")
# Possessive quantifiers (nothing they give back could match) and, for acronyms, a first
# character class the engine can scan for: the same matches at half the cost.
_CAMEL = re.compile(r"\b[A-Za-z][a-z0-9]*+[A-Z][A-Za-z0-9]*+\b")
_SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b")
_KEBAB = re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b")
_FILE_EXTENSIONS = (
    "py|pyi|ts|tsx|js|jsx|mjs|json|toml|yaml|yml|ini|cfg|md|rst|txt|sql|sh|rs|go|java|kt|rb|php|"
    "c|h|cc|cpp|hpp|cs|swift|lock|env|conf|tf|proto|graphql|css|scss|html"
)
_PATH = re.compile(rf"(?<![\w/])(?:\.{{0,2}}/)?(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:{_FILE_EXTENSIONS})\b")
_DOTTED = re.compile(r"\b[a-z][a-z0-9_-]*(?:\.[a-z][a-z0-9_-]*)+\b")
_ACRONYM = re.compile(r"[A-Z](?<!\w[A-Z])[A-Z0-9]{1,7}+s?\b")
_PACKAGE = re.compile(
    r"\b(?:pip install|uv add|poetry add|npm install|npm i|pnpm add|yarn add|cargo add|go get)"
    r"\s+(@?[A-Za-z][\w.@/-]*)"
    r"|^\s*(?:from\s+([A-Za-z_][\w.]*)\s+import|import\s+([A-Za-z_][\w.]*))",
    re.MULTILINE,
)
# Cheap scans (a literal first character) that every match of _PATH without a slash, and of
# _DOTTED, must contain.
_FILE_HINT = re.compile(rf"\.(?:{_FILE_EXTENSIONS})\b")
_DOTTED_HINT = re.compile(r"\.[a-z]")
_PACKAGE_HINTS = ("import", "install", " add", "npm i", "go get")
_SEPARATORS = re.compile(r"[\W_]+")
_RUNS = re.compile(rb"  +")
# Words that look like entities by shape but name nothing (sentence-initial acronyms, e.g.).
_NOT_ENTITIES = frozenset(
    {"ok", "id", "ids", "todo", "fixme", "note", "e.g", "i.e", "etc", "vs", "a.m", "p.m"}
)


def normalise(name: str) -> str:
    """The form entities are compared in: lower case, separators as single spaces."""
    return _SEPARATORS.sub(" ", name.lower()).strip()


def normalise_many(names: Sequence[str]) -> list[str]:
    """:func:`normalise` of each name, the ASCII ones at once (a cold recall of a large store
    reads hundreds of thousands: 0.18 s instead of 0.35 s for 224,000, on the GIL the model's
    loading needs at the same time)."""
    plain = [name.isascii() and "\n" not in name for name in names]
    spaced = "\n".join([n for n, ok in zip(names, plain, strict=True) if ok]).encode("ascii").lower()
    # Every ASCII separator (what [\W_] matches) as a space, runs of them as one, none at the ends.
    spaced = _RUNS.sub(b" ", spaced.translate(ASCII_SEPARATORS))
    spaced = spaced.replace(b" \n", b"\n").replace(b"\n ", b"\n").strip(b" ")
    pieces = iter(spaced.decode("ascii").split("\n"))
    return [next(pieces) if ok else normalise(name) for name, ok in zip(names, plain, strict=True)]


def subject_entities(subject: str) -> list[str]:
    """A dotted subject, each of its segments, and the words of multi-word segments."""
    names = dict.fromkeys([subject, *(segment for segment in subject.split(".") if segment)])
    for segment in subject.split("."):
        words = [w for w in re.split(r"[-_]", segment) if len(w) >= 2]
        if len(words) > 1:
            names.update(dict.fromkeys(words))
    return list(names)


def extract(text: str) -> list[str]:
    """Entity names found in ``text``, lower-cased, in first-seen order."""
    sample = text[:SCAN_CHARS]
    found: dict[str, None] = {}

    def add(names: Iterable[str]) -> None:
        for raw in names:
            name = raw.strip().strip(".,;:()[]{}'\"").lower()
            if 2 <= len(name) <= MAX_ENTITY_CHARS and name not in _NOT_ENTITIES and normalise(name):
                found.setdefault(name, None)

    # Each pattern runs only when the character it needs is in the text: the scans are most
    # of what logging evidence costs, and most prose has no backtick, underscore or import.
    if "`" in sample:
        add(_BACKTICK.findall(sample))
    if any(hint in sample for hint in _PACKAGE_HINTS):
        add(name for groups in _PACKAGE.findall(sample) for name in groups if name)
    if "/" in sample or _FILE_HINT.search(sample):
        add(_PATH.findall(sample))
    if _DOTTED_HINT.search(sample):
        add(_DOTTED.findall(sample))
    add(_CAMEL.findall(sample))
    if "_" in sample:
        add(_SNAKE.findall(sample))
    if "-" in sample:
        add(_KEBAB.findall(sample))
    add(a.rstrip("s") if a.endswith("s") and a[:-1].isupper() else a for a in _ACRONYM.findall(sample))
    return list(found)[:MAX_PER_TEXT]


def for_decision(subject: str, decision: str, rationale: str | None) -> list[str]:
    """A decision's entities: its subject, the subject's segments, and names in its text."""
    names = dict.fromkeys(subject_entities(subject))
    names.update(dict.fromkeys(extract(f"{decision}\n{rationale or ''}")))
    return list(names)
