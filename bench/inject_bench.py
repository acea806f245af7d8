"""`ctx inject` and `ctx hook session-start`: what the block costs, and what it delivers.

python bench/inject_bench.py [--adr DIR] [--runs N] [--per-corpus]

Stores, each built once with the real embedding model and cached (``--cache``, default a folder
in the temp folder; ``--rebuild`` builds them again):

- demo: what ``ctx demo`` builds (kernel/demo.py);
- labelled: the labelled recall set (tests/data/recall/recall_set.json), whose questions name
  the decisions that answer them (all current);
- adr: each ADR folder under DIR imported with ``ctx import adr`` (one store per folder). DIR is
  --adr, else $CTX_ADR_DIR, else ../shared/eval/adr next to the repository; where it is absent
  those rows are skipped with a note.

Questions whose answer is a known current decision. The labelled set brings its own. For the demo
and the ADR stores they are made from every current decision by two fixed rules, the same for
every store and never tuned on the results:

- title: ``what did we decide about {T}?``, T the decision's title (ADR title without its
  number), else its subject with ``.``, ``-`` and ``_`` read as spaces; lower case;
- sentence: ``what is our approach to {W}?``, W the first eight words of the decision's first
  sentence that are not in STOPWORDS, after Markdown links are reduced to their text and
  punctuation is dropped; lower case.

For each budget (500, 1,200, 2,000 tokens and unlimited: the largest budget and no character
cap) and each mode it prints the mean tokens and characters of a block and hit@inject, the share
of a question's answering decisions found in the block, averaged over the questions, two ways:
``text``, the decision is listed with its text, and ``named``, listed or named in the block's
index of what did not fit (one ``ctx show HANDLE`` away). Modes: ``hook``, the block with no
query (``ctx hook session-start``, ``ctx inject``: the same block whatever the question), and
``query``, ``ctx inject --query QUESTION``. Then the whole-process wall time of ``ctx inject``,
``ctx hook session-start`` and ``ctx inject --query`` on the demo store, beside the floor of
starting Python (``python -c pass``), with the load average.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import labelled_eval

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.demo import build_demo
from ctx_kernel.kernel.limits import MAX_BUDGET

ROOT = Path(__file__).resolve().parent.parent
LABELLED = ROOT / "tests" / "data" / "recall" / "recall_set.json"
DEFAULT_ADR = ROOT.parent / "shared" / "eval" / "adr"
BUDGETS: tuple[int | None, ...] = (500, 1200, 2000, None)  # None: unlimited
STOPWORDS = frozenset(
    "a an the and or but of to in on at for by with from as is are be been was were will would "
    "shall should can could may might must we us our it its this that these those there their "
    "they them i you he she not no all any each every which who whom what when where why how "
    "into onto over under than then so such also only just more most other same both either "
    "use used using have has had do does did".split()
)
Question = tuple[str, frozenset[str]]  # the question, the ids of the decisions that answer it


def title_question(decision: Any) -> str:
    """The title rule (see the module docstring)."""
    name = decision.title or re.sub(r"[._-]+", " ", decision.subject)
    return f"what did we decide about {name.strip().lower()}?"


def sentence_question(decision: Any) -> str:
    """The sentence rule (see the module docstring)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", decision.decision)
    first = re.split(r"(?<=[.!?])\s|\n", text.strip(), maxsplit=1)[0]
    words = [w for w in re.findall(r"[a-z0-9]+", first.lower()) if w not in STOPWORDS]
    return f"what is our approach to {' '.join(words[:8])}?"


def known_items(ctx: Ctx) -> dict[str, list[Question]]:
    """Both rules' questions, one per current decision."""
    current = ctx.decisions()
    return {
        "title": [(title_question(d), frozenset({d.id})) for d in current],
        "sentence": [(sentence_question(d), frozenset({d.id})) for d in current],
    }


def labelled_questions(ids: dict[str, str]) -> list[Question]:
    """The labelled set's questions that a decision answers."""
    data = json.loads(LABELLED.read_text(encoding="utf-8"))
    return [
        (q["query"], frozenset(ids[key] for key in q["decisions"])) for q in data["queries"] if q["decisions"]
    ]


def _new_store(path: Path) -> Ctx:
    ctx, _ = Ctx.init(path)
    if ctx.embedding().embedder is None:
        ctx.close()
        raise SystemExit(f"no embedding model: {ctx.embedding().reason}")
    return ctx


def _cached(path: Path, build: Callable[[Path], Any], rebuild: bool) -> Any:
    """Build the store at ``path`` once (with whatever ``build`` returns kept beside it as JSON)."""
    extra = path.with_suffix(".json")
    if rebuild or not extra.exists():
        shutil.rmtree(path.parent, ignore_errors=True)
        path.parent.mkdir(parents=True)
        extra.write_text(json.dumps(build(path)), encoding="utf-8")
    return json.loads(extra.read_text(encoding="utf-8"))


def build_labelled(path: Path) -> dict[str, str]:
    """The labelled set in a new store; its keys' record ids."""
    ctx = _new_store(path)
    try:
        ids = labelled_eval.load_set(ctx, LABELLED)
        ctx.reindex()
        return ids
    finally:
        ctx.close()


def build_demo_store(path: Path) -> None:
    """The demo store, as `ctx demo` builds it, embedded."""
    ctx = build_demo(path.parent.parent)
    try:
        ctx.reindex()
    finally:
        ctx.close()


def build_adr(folder: Path) -> Callable[[Path], None]:
    """A builder of the store of one imported ADR folder."""

    def build(path: Path) -> None:
        ctx = _new_store(path)
        try:
            ctx.import_adrs(folder, reviewer="bench")
            ctx.reindex()
        finally:
            ctx.close()

    return build


@dataclass
class Tally:
    """Blocks' sizes and hits for one mode and budget."""

    tokens: list[int] = field(default_factory=list)
    chars: list[int] = field(default_factory=list)
    text: list[float] = field(default_factory=list)
    named: list[float] = field(default_factory=list)

    def add(self, block: dict[str, Any], gold: frozenset[str], count_size: bool = True) -> None:
        """Count one question against one block."""
        if count_size:
            self.tokens.append(block["tokens"])
            self.chars.append(len(block["markdown"]))
        shown = {item["id"] for item in block["decisions"]}
        named = shown | {item["id"] for item in block.get("index", [])}
        self.text.append(len(gold & shown) / len(gold))
        self.named.append(len(gold & named) / len(gold))


def _inject(ctx: Ctx, query: str | None, budget: int | None) -> dict[str, Any]:
    if budget is not None:
        return ctx.inject(query, budget=budget).to_dict()
    # Unlimited: the largest budget and, where the block has a character cap, none.
    uncapped = {"max_chars": None} if "max_chars" in inspect.signature(ctx.inject).parameters else {}
    return ctx.inject(query, budget=MAX_BUDGET, **uncapped).to_dict()


def measure(ctx: Ctx, sets: dict[str, list[Question]]) -> dict[tuple[str, int | None], Tally]:
    """Tallies per (mode, budget): the hook block once, then every question as a query."""
    out: dict[tuple[str, int | None], Tally] = {}
    for budget in BUDGETS:
        block = _inject(ctx, None, budget)
        tally = out.setdefault(("hook", budget), Tally())
        for i, (_, gold) in enumerate(q for questions in sets.values() for q in questions):
            tally.add(block, gold, count_size=i == 0)
        for name, questions in sets.items():
            tally = out.setdefault((f"query/{name}", budget), Tally())
            for question, gold in questions:
                tally.add(_inject(ctx, question, budget), gold)
    return out


def merge(into: dict[tuple[str, int | None], Tally], more: dict[tuple[str, int | None], Tally]) -> None:
    """Pool another store's tallies."""
    for key, tally in more.items():
        pooled = into.setdefault(key, Tally())
        pooled.tokens += tally.tokens
        pooled.chars += tally.chars
        pooled.text += tally.text
        pooled.named += tally.named


def report(name: str, tallies: dict[tuple[str, int | None], Tally]) -> None:
    """Print one store's (or corpus's) table."""
    print(f"\n{name} (load {os.getloadavg()[0]:.1f})")
    print(f"  {'mode':16} {'budget':>9} {'questions':>9} {'tokens':>7} {'chars':>7} {'max chars':>9} "
          f"{'hit text':>8} {'hit named':>9} {'text/unl.':>9}")  # fmt: skip
    modes = dict.fromkeys(mode for mode, _ in tallies)
    for mode in modes:
        unlimited = statistics.mean(tallies[(mode, None)].text)
        for budget in BUDGETS:
            t = tallies[(mode, budget)]
            text = statistics.mean(t.text)
            ratio = f"{text / unlimited:9.3f}" if unlimited else f"{'-':>9}"
            print(
                f"  {mode:16} {budget or 'unlimited':>9} {len(t.text):9d} {statistics.mean(t.tokens):7.0f} "
                f"{statistics.mean(t.chars):7.0f} {max(t.chars):9d} {text:8.3f} "
                f"{statistics.mean(t.named):9.3f} {ratio}"
            )


def _median_ms(argv: list[str], runs: int, env: dict[str, str], stdin: bytes = b"") -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, env=env, input=stdin, check=True, capture_output=True)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def wall_times(store: Path, runs: int) -> None:
    """Whole-process wall time of the block's commands beside Python's start."""
    ctx = shutil.which("ctx") or str(Path(sys.executable).parent / "ctx")
    env = {**os.environ, "CTX_DB": str(store)}
    hook_input = json.dumps({"cwd": str(store.parent.parent), "hook_event_name": "SessionStart"}).encode()
    print(f"\nwall time, median of {runs} runs, demo store (load {os.getloadavg()[0]:.1f})")
    floor = _median_ms([sys.executable, "-c", "pass"], runs, env)
    print(f"  {'python -c pass (floor)':34} {floor:7.0f} ms")
    for label, argv, stdin in (
        ("ctx inject", [ctx, "inject"], b""),
        ("ctx hook session-start", [ctx, "hook", "session-start"], hook_input),
        ("ctx inject --query", [ctx, "inject", "--query", "how do we refresh tokens"], b""),
    ):
        ms = _median_ms(argv, runs, env, stdin)
        print(f"  {label:34} {ms:7.0f} ms ({ms / floor:.1f}x the floor)")
    print(f"  (load {os.getloadavg()[0]:.1f})")


def main() -> None:
    """Build or reuse the stores and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--adr", type=Path, help="a folder of ADR folders (default: $CTX_ADR_DIR, else ../shared)"
    )
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "ctx-inject-bench")
    parser.add_argument("--rebuild", action="store_true", help="build the cached stores again")
    parser.add_argument("--runs", type=int, default=7, help="wall-time runs per command (0 to skip)")
    parser.add_argument("--per-corpus", action="store_true", help="a table per ADR folder too")
    args = parser.parse_args()
    demo = args.cache / "demo" / ".ctx" / "ctx.db"
    _cached(demo, build_demo_store, args.rebuild)
    with Ctx.open(demo) as ctx:
        report("demo (known-item questions)", measure(ctx, known_items(ctx)))
    labelled = args.cache / "labelled" / "ctx.db"
    ids = _cached(labelled, build_labelled, args.rebuild)
    with Ctx.open(labelled) as ctx:
        report(f"labelled set ({LABELLED.name})", measure(ctx, {"labelled": labelled_questions(ids)}))
    adr = args.adr or Path(os.environ.get("CTX_ADR_DIR") or DEFAULT_ADR)
    folders = sorted(p for p in adr.iterdir() if p.is_dir()) if adr.is_dir() else []
    if not folders:
        print(f"\nADR corpora: skipped (no ADR folders at {adr}; pass --adr DIR or set CTX_ADR_DIR)")
    pooled: dict[tuple[str, int | None], Tally] = {}
    for folder in folders:
        store = args.cache / "adr" / folder.name / "ctx.db"
        _cached(store, build_adr(folder), args.rebuild)
        with Ctx.open(store) as ctx:
            tallies = measure(ctx, known_items(ctx))
        if args.per_corpus:
            report(f"adr {folder.name}", tallies)
        merge(pooled, tallies)
    if folders:
        report(f"ADR corpora, {len(folders)} stores pooled ({adr.name})", pooled)
    if args.runs:
        wall_times(demo, args.runs)


if __name__ == "__main__":
    main()
