"""`ctx stale` at scale: 1,000 linked decisions in a repository of 50,000 commits.

The repository is synthetic (built once with `git fast-import` and kept in the user cache folder):
DIRS folders of FILES modules, each commit changing one or two of them, a rename every 500th. The
store gets DECISIONS current decisions whose snapshots name commits spread over the whole history
(the oldest near the root, so the pass covers all of it), each with one to three
links: a folder glob, a file, or a pattern glob. Prints the wall time of `ctx stale --json` cold
(no cached pass) and warm (cached by HEAD), in a new process each run, beside the floors measured
in the same run: `python -c pass`, `git rev-parse HEAD`, `git log --name-status -M` of the same
range, and git alone reading that range in the slices ctx reads at once (one per core, at most
four); then what the markers add to a cold `ctx inject` and to a warm recall; and the load average.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ctx_kernel.kernel import Ctx, clock
from ctx_kernel.kernel.facts import staleness
from ctx_kernel.kernel.records import LinkDigest, Snapshot

CTX = str(Path(sys.executable).parent / "ctx")


def _cache_root() -> Path:
    from platformdirs import user_cache_dir

    return Path(os.environ.get("CTX_BENCH_CACHE") or user_cache_dir("ctx-bench", appauthor=False))


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, check=True)
    return done.stdout.decode()


def build_repo(repo: Path, commits: int, dirs: int, files: int, seed: int) -> None:
    """A repository of ``commits`` commits made by one `git fast-import` stream."""
    rng = random.Random(seed)
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    authors = [f"Dev{i} <dev{i}@example.org>" for i in range(25)]
    out: list[bytes] = []
    when = 1_600_000_000
    names = {(d, f): f"pkg{d}/mod{f}.py" for d in range(dirs) for f in range(files)}
    for n in range(1, commits + 1):
        when += rng.randint(60, 3_600)
        who = authors[rng.randrange(len(authors))]
        message = f"change {n}\n".encode()
        out.append(b"commit refs/heads/main\n")
        out.append(f"mark :{n}\ncommitter {who} {when} +0000\ndata {len(message)}\n".encode() + message)
        if n > 1:
            out.append(f"from :{n - 1}\n".encode())
        touched = list(names) if n == 1 else [rng.choice(list(names)) for _ in range(rng.randint(1, 2))]
        for key in touched:
            body = f"# {names[key]} revision {n}\nVALUE = {rng.random()}\n".encode()
            out.append(f"M 100644 inline {names[key]}\ndata {len(body)}\n".encode() + body)
        if n % 500 == 0:
            key = rng.choice(list(names))
            new = f"pkg{key[0]}/moved{n}.py"
            out.append(f"R {names[key]} {new}\n".encode())
            names[key] = new
        out.append(b"\n")
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=b"".join(out), check=True)
    _git(repo, "checkout", "-q", "-f", "main")
    _git(repo, "gc", "-q")


def synthetic_links(dirs: int, files: int) -> Callable[[random.Random], list[str]]:
    """One to three links of the synthetic repository: a folder glob, a file, a pattern glob."""

    def choose(rng: random.Random) -> list[str]:
        d = rng.randrange(dirs)
        links = [f"pkg{d}/**", f"pkg{d}/mod{rng.randrange(files)}.py", f"pkg{rng.randrange(dirs)}/mod1*.py"]
        return rng.sample(links, rng.randint(1, 3))

    return choose


def real_links(repo: Path) -> Callable[[random.Random], list[str]]:
    """One to three links of a real repository, from HEAD's tree: a folder glob, a file, and a
    pattern glob (the folder's files sharing a file's first letter and its extension)."""
    files = _git(repo, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
    by_folder: dict[str, list[str]] = {}
    for path in filter(None, files):
        by_folder.setdefault(path.rpartition("/")[0], []).append(path)
    folders = sorted(f for f, inside in by_folder.items() if f and len(inside) >= 3)

    def choose(rng: random.Random) -> list[str]:
        folder = rng.choice(folders)
        one = rng.choice(by_folder[folder])
        name = one.rpartition("/")[2]
        pattern = f"{folder}/{name[0]}*{Path(name).suffix}"
        return rng.sample([f"{folder}/**", one, pattern], rng.randint(1, 3))

    return choose


def fill_store(
    store: Path, repo: Path, decisions: int, links: Callable[[random.Random], list[str]], seed: int
) -> None:
    """``decisions`` current decisions, each with a snapshot at a commit spread over the history."""
    rng = random.Random(seed)
    history = _git(repo, "rev-list", "--first-parent", "HEAD").split()
    kernel, _ = Ctx.init(store, embedder=None)
    with kernel:
        made = []
        for i in range(decisions):
            proposal = kernel.propose(f"area{i % 40}.topic{i}", f"Decision {i} about module {i * 7}")
            made.append(kernel.ratify(proposal.id, reviewer="bench").decision.id)
        with kernel.store.transaction():
            for i, decision in enumerate(made):
                chosen = links(rng)
                # The first decision's snapshot is near the root: the pass covers the whole history.
                commit = history[-2] if i == 0 else history[rng.randrange(len(history))]
                kernel.store.insert_snapshot(
                    Snapshot(
                        decision_id=decision,
                        taken_at=clock.now(),
                        taken_by="bench",
                        act="reconfirmed",
                        git_commit=commit,
                        links=[LinkDigest(link=x, digest=None, files=0) for x in chosen],
                        review_by=None,
                        review_every=None,
                    )
                )


def _wall(command: list[str], cwd: Path, env: dict[str, str], runs: int, before=None) -> list[float]:
    times = []
    for _ in range(runs):
        if before is not None:
            before()
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - start) * 1000)
    return times


def sliced(repo: Path, store: Path) -> list[list[str]]:
    """The revision ranges ctx's cold pass reads at once here (the slices of the first-parent line)."""
    with Ctx.open(store, embedder=None) as kernel:
        commits = sorted({s.git_commit for s in kernel.store.current_snapshots() if s.git_commit})
    slices, _ = staleness._slices(staleness.find_checkout(repo), commits)
    return slices


def read_sliced(repo: Path, ranges: list[list[str]], runs: int) -> list[float]:
    """Wall time of git alone reading the slices at once, each into a discarded stream: the floor
    of the cold pass on this machine."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        running = [
            subprocess.Popen(
                ["git", "-C", str(repo), *staleness.LOG_ARGS, *revisions],
                stdout=subprocess.DEVNULL,
            )
            for revisions in ranges
        ]
        for process in running:
            process.wait()
        times.append((time.perf_counter() - start) * 1000)
    return times


def _line(label: str, times: list[float]) -> str:
    return f"  {label:<46} median {statistics.median(times):8.1f} ms   min {min(times):8.1f} ms"


def main() -> None:
    """Build (or reuse) the repository and the store, and print the figures with their floors."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--commits", type=int, default=50_000)
    parser.add_argument("--decisions", type=int, default=1_000)
    parser.add_argument("--dirs", type=int, default=500)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--repo",
        type=Path,
        help="a real repository (a local clone or mirror, such as git's own history) instead of the "
        "synthetic one; it is cloned once into the cache folder with its commit graph written, as "
        "git's own maintenance would, and linked from HEAD's tree",
    )
    args = parser.parse_args()
    if args.repo is not None:
        repo = _cache_root() / f"stale-real-{args.repo.resolve().name}-{args.repo.resolve().parent.name}"
        if not (repo / ".git").is_dir():
            shutil.rmtree(repo, ignore_errors=True)
            subprocess.run(["git", "clone", "-q", "-n", "--local", str(args.repo), str(repo)], check=True)
            _git(repo, "commit-graph", "write", "--reachable")
        links = real_links(repo)
    else:
        repo = _cache_root() / f"stale-repo-{args.commits}-{args.dirs}x{args.files}-{args.seed}"
        if not (repo / ".git").is_dir():
            shutil.rmtree(repo, ignore_errors=True)
            start = time.perf_counter()
            build_repo(repo, args.commits, args.dirs, args.files, args.seed)
            print(f"built {repo} ({args.commits} commits) in {time.perf_counter() - start:.1f} s")
        links = synthetic_links(args.dirs, args.files)
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "ctx.db"
        env = {**os.environ, "CTX_VECTORS": "off", "CTX_CONFIG_DIR": str(Path(folder) / "config")}
        os.environ.update({"CTX_VECTORS": "off", "CTX_CONFIG_DIR": env["CTX_CONFIG_DIR"]})
        start = time.perf_counter()
        fill_store(store, repo, args.decisions, links, args.seed)
        print(f"store with {args.decisions} linked decisions in {time.perf_counter() - start:.1f} s")
        stale_cache = Path(folder) / "stale"

        def drop_cache() -> None:
            shutil.rmtree(stale_cache, ignore_errors=True)

        oldest = _git(repo, "rev-list", "--max-parents=0", "HEAD").split()[0]
        stale_cmd = [CTX, "--db", str(store), "stale", "--json"]
        drop_cache()
        found = subprocess.run(stale_cmd, cwd=repo, env=env, capture_output=True, check=True, text=True)
        import json

        report = json.loads(found.stdout)
        print(
            f"repository: {_git(repo, 'rev-list', '--count', 'HEAD').strip()} commits, "
            f"{len(_git(repo, 'ls-tree', '-r', '--name-only', 'HEAD').split())} files; "
            f"{report['checked']} linked decisions, {len(report['stale'])} stale"
        )
        print("floors:")
        print(_line("python -c pass", _wall([sys.executable, "-c", "pass"], repo, env, args.runs)))
        print(_line("git rev-parse HEAD", _wall(["git", "rev-parse", "HEAD"], repo, env, args.runs)))
        log = ["git", "log", "--name-status", "-M", "-z", "HEAD", "--not", oldest]
        print(_line("git log --name-status -M (same range)", _wall(log, repo, env, args.runs)))
        ranges = sliced(repo, store)
        print(_line(f"git log, ctx's {len(ranges)} slices at once", read_sliced(repo, ranges, args.runs)))
        print("ctx stale --json (a new process each run):")
        print(
            _line(
                "cold (no cached pass; target 2,000 ms)", _wall(stale_cmd, repo, env, args.runs, drop_cache)
            )
        )
        print(_line("warm (cached by HEAD; target 300 ms)", _wall(stale_cmd, repo, env, args.runs)))
        inject = [CTX, "--db", str(store), "inject"]
        with_markers = _wall(inject, repo, env, args.runs)
        outside = Path(folder) / "elsewhere"
        outside.mkdir()
        without = _wall(inject, outside, env, args.runs)
        print("ctx inject, a new process each run (pass cached):")
        print(_line("in the repository (markers)", with_markers))
        print(_line("outside any repository (one note, no markers)", without))
        os.chdir(repo)
        first = []
        for _ in range(args.runs + 2):
            with Ctx.open(store, embedder=None) as kernel:
                start = time.perf_counter()
                kernel.staleness.markers()
                first.append((time.perf_counter() - start) * 1000)
        with Ctx.open(store, embedder=None) as kernel:
            kernel.staleness.markers()
            warm = []
            for _ in range(200):
                start = time.perf_counter()
                kernel.staleness.markers()
                warm.append((time.perf_counter() - start) * 1000)
        print("markers, the pass cached (what they add to an inject or a recall):")
        print(_line("first call in a new process (target 20 ms)", first))
        print(_line("later calls in a warm process", warm))
    load = os.getloadavg()
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
