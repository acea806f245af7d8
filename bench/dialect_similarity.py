"""How much of the two store backends is the same text: each pair of same-named methods compared.

Every method of a class in ``kernel/store/sqlite/*.py`` is paired with the method of the same name
in ``kernel/store/postgres/*.py``, and their source (docstrings included) is compared with
difflib's ratio. A pair at or above ``--threshold`` (0.8) differs by little more than a
placeholder, a collation or a cast: a candidate to write once. A mixin's placeholder for a method
the store defines (a body that only raises) is not a definition. Methods written once in
``kernel/store/shared.py`` are counted beside: they are in neither backend.
"""

from __future__ import annotations

import argparse
import ast
import difflib
from pathlib import Path

STORE = Path(__file__).resolve().parent.parent / "kernel" / "store"


def _is_placeholder(node: ast.FunctionDef) -> bool:
    body = [n for n in node.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    return len(body) == 1 and isinstance(body[0], ast.Raise)


def methods(paths: list[Path]) -> dict[str, str]:
    """The source of each method defined (not only declared) in a class of the modules at ``paths``."""
    found: dict[str, str] = {}
    for path in paths:
        source = path.read_text(encoding="utf-8")
        for cls in ast.walk(ast.parse(source)):
            if isinstance(cls, ast.ClassDef):
                for node in cls.body:
                    if isinstance(node, ast.FunctionDef) and not _is_placeholder(node):
                        found[node.name] = ast.get_source_segment(source, node, padded=True) or ""
    return found


def main() -> None:
    """Print the close pairs (every pair with ``--all``) and how many there are."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--all", action="store_true", help="print every pair, not only the close ones")
    args = parser.parse_args()
    sqlite = methods(sorted((STORE / "sqlite").glob("*.py")))
    postgres = methods(sorted((STORE / "postgres").glob("*.py")))
    shared = methods([STORE / "shared.py"]) if (STORE / "shared.py").exists() else {}
    ratios = sorted(
        (
            (difflib.SequenceMatcher(None, sqlite[name], postgres[name]).ratio(), name)
            for name in sqlite.keys() & postgres.keys()
        ),
        reverse=True,
    )
    close = [(ratio, name) for ratio, name in ratios if ratio >= args.threshold]
    for ratio, name in ratios if args.all else close:
        print(f"{ratio:5.2f}  {name}")
    print(
        f"{len(ratios)} same-named methods in both backends, {len(close)} at least {args.threshold:.0%} alike"
    )
    print(f"{len(shared)} methods written once in kernel/store/shared.py")


if __name__ == "__main__":
    main()
