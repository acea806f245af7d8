"""What a record's shape costs on the agents' hot path, in three spellings of the same three records.

(a) frozen stdlib dataclasses (what kernel/records.py uses), (b) pydantic v2 models, (c) msgspec
Structs. For each: the time a fresh process takes to import the library and define Evidence,
Proposal and Decision (median of N processes, minus the interpreter floor), and the time to build
one record and serialise it to JSON (timeit, best of 5). Import times are ``python -X importtime``
cumulative figures. msgspec is optional: without it its
rows are skipped. The real kernel's own figures follow for reference.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import timeit
from pathlib import Path

_FIELDS = {
    "Evidence": [
        ("id", "str"),
        ("text", "str"),
        ("kind", "str"),
        ("agent", "str | None"),
        ("session", "str | None"),
        ("tags", "list[str]"),
        ("content_hash", "str"),
        ("created_at", "str"),
        ("source", "str | None"),
        ("speaker", "str | None"),
        ("occurred_at", "str | None"),
    ],
    "Proposal": [
        ("id", "str"),
        ("subject", "str"),
        ("decision", "str"),
        ("rationale", "str | None"),
        ("proposer", "str"),
        ("session", "str | None"),
        ("created_at", "str"),
        ("status", "str"),
        ("supersedes", "list[str]"),
        ("explicit_supersedes", "list[str]"),
        ("near_duplicate_of", "str | None"),
        ("near_duplicate_score", "float | None"),
        ("resolved_at", "str | None"),
        ("resolved_by", "str | None"),
        ("resolution_note", "str | None"),
        ("decision_id", "str | None"),
        ("evidence", "list[str]"),
        ("source", "str | None"),
        ("adr_number", "int | None"),
        ("title", "str | None"),
        ("deciders", "list[str]"),
    ],
    "Decision": [
        ("id", "str"),
        ("subject", "str"),
        ("decision", "str"),
        ("rationale", "str | None"),
        ("valid_from", "str"),
        ("valid_until", "str | None"),
        ("ratified_by", "str"),
        ("ratified_at", "str"),
        ("proposal_id", "str | None"),
        ("amended", "bool"),
        ("closed_by", "str | None"),
        ("close_reason", "str | None"),
        ("evidence", "list[str]"),
        ("supersedes", "list[str]"),
        ("superseded_by", "list[str]"),
        ("source", "str | None"),
        ("adr_number", "int | None"),
        ("title", "str | None"),
        ("deciders", "list[str]"),
    ],
}

_HEADERS = {
    "dataclass": (
        "import json\nfrom dataclasses import asdict, dataclass\n",
        "@dataclass(frozen=True)\nclass {name}:",
    ),
    "pydantic": (
        "from pydantic import BaseModel, ConfigDict\n",
        "class {name}(BaseModel):\n    model_config = ConfigDict(frozen=True)",
    ),
    "msgspec": ("import msgspec\n", "class {name}(msgspec.Struct, frozen=True):"),
}

# One record built and written as JSON text, as `ctx propose --json` does.
_SERIALISE = {
    "dataclass": "json.dumps(asdict(Proposal(**VALUES)))",
    "pydantic": "Proposal(**VALUES).model_dump_json()",
    "msgspec": "msgspec.json.encode(Proposal(**VALUES))",
}

_VALUES = {
    "id": "pr_01M8A4F8VKXGKYC0TQD2QG6TV5",
    "subject": "auth.tokens",
    "decision": "Use short-lived JWTs signed with Ed25519",
    "rationale": "Rotation without a shared secret",
    "proposer": "agent",
    "session": None,
    "created_at": "2026-11-25T19:53:19.000000Z",
    "status": "pending",
    "supersedes": [],
    "explicit_supersedes": [],
    "near_duplicate_of": None,
    "near_duplicate_score": None,
    "resolved_at": None,
    "resolved_by": None,
    "resolution_note": None,
    "decision_id": None,
    "evidence": ["ev_01M8A4F8VKXGKYC0TQD2QG6TV5"],
    "source": None,
    "adr_number": None,
    "title": None,
    "deciders": [],
}


def module_source(style: str) -> str:
    """A module defining the three records in ``style``."""
    imports, head = _HEADERS[style]
    parts = [imports]
    for name, fields in _FIELDS.items():
        body = "\n".join(f"    {field}: {kind}" for field, kind in fields)
        parts.append(f"\n\n{head.format(name=name)}\n{body}\n")
    return "".join(parts)


def available(style: str) -> bool:
    """True when the library behind ``style`` is installed."""
    if style != "msgspec":
        return True
    try:
        import msgspec  # noqa: F401
    except ImportError:
        return False
    return True


def _import_ms(module: str, folder: Path) -> float:
    """Cumulative import time of ``module`` in a fresh interpreter (``python -X importtime``), in ms."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        cwd=folder,
        check=True,
        capture_output=True,
        text=True,
    )
    line = next(x for x in out.stderr.splitlines() if x.split("|")[-1].strip() == module)
    return int(line.split("|")[1]) / 1000


def main() -> None:
    """Print import and build-and-serialise figures per style."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per import figure")
    parser.add_argument("--number", type=int, default=20_000, help="records per timeit loop")
    args = parser.parse_args()
    styles = [s for s in _HEADERS if available(s)]
    print(f"import: median of {args.runs} fresh processes; build+JSON: best of 5 x {args.number} records")
    print(f"{'style':10s} {'import+define ms':>17s} {'build us':>9s} {'build+JSON us':>14s}")
    with tempfile.TemporaryDirectory() as folder:
        for style in styles:
            Path(folder, f"shapes_{style}.py").write_text(module_source(style), encoding="utf-8")
        for style in styles:
            imported = statistics.median(
                _import_ms(f"shapes_{style}", Path(folder)) for _ in range(args.runs)
            )
            namespace: dict[str, object] = {"VALUES": _VALUES}
            exec(module_source(style), namespace)
            build = min(timeit.repeat("Proposal(**VALUES)", globals=namespace, number=args.number, repeat=5))
            both = min(timeit.repeat(_SERIALISE[style], globals=namespace, number=args.number, repeat=5))
            per = 1e6 / args.number
            print(f"{style:10s} {imported:17.1f} {build * per:9.2f} {both * per:14.2f}")
        for module in ("ctx_kernel.kernel.hosts.cli", "ctx_kernel.kernel.contracts"):
            imported = statistics.median(_import_ms(module, Path(folder)) for _ in range(args.runs))
            print(f"import {module}: {imported:.1f} ms")
    print(textwrap.dedent(_NOTE).strip())


_NOTE = """
    `ctx log` and `ctx propose` import the CLI (and with it the records) in every process; the
    pydantic contracts load only to validate a JSON input document or to write schemas/.
"""


if __name__ == "__main__":
    main()
