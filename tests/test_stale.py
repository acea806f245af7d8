"""Decisions that notice when they may no longer hold: links proposed and ratified, snapshots of
real git repositories built here, ``ctx stale`` over edits, renames, deletions, merges, rewritten
and shallow histories, submodules and globs, the markers agents see, and re-confirmation as a
person's act."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from ctx_kernel.kernel import Ctx

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


def assert_valid(name: str, document: object) -> None:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(document)]
    assert not errors, errors


class Repo:
    """A git repository made for a test, its commits by named authors at increasing times."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tick = 0
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, author: str = "Ann", cwd: Path | None = None) -> str:
        self.tick += 1
        when = f"2024-05-01T10:{self.tick // 60:02d}:{self.tick % 60:02d}Z"
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": f"{author.lower()}@example.org",
            "GIT_COMMITTER_NAME": author,
            "GIT_COMMITTER_EMAIL": f"{author.lower()}@example.org",
            "GIT_AUTHOR_DATE": when,
            "GIT_COMMITTER_DATE": when,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_ALLOW_PROTOCOL": "file",
        }
        done = subprocess.run(
            ["git", "-c", "protocol.file.allow=always", *args],
            cwd=cwd or self.root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    def write(self, path: str, body: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")

    def commit(self, message: str, *, author: str = "Ann", **files: str) -> str:
        for path, body in files.items():
            self.write(path.replace("__", "/"), body)
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message, author=author)
        return self.git("rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """A repository with a store package and a config file; the working folder is its root."""
    made = Repo(tmp_path / "work")
    made.commit(
        "Start",
        **{
            "kernel__store__base.py": "class Store: ...\n",
            "kernel__cli.py": "main = 1\n",
            "pyproject.toml": "[x]\n",
        },
    )
    monkeypatch.chdir(made.root)
    return made


def _ratified(cli, *links: str, review: tuple[str, ...] = (), subject: str = "store.layout") -> str:
    args = ["propose", "--subject", subject, "--decision", "Keep one store module", "--agent", "claude"]
    for link in links:
        args += ["--link", link]
    proposed = cli(*args, "--json")
    assert proposed.code == 0, proposed.err
    done = cli("ratify", json.loads(proposed.out)["id"], "--yes", "--reviewer", "alice", *review, "--json")
    assert done.code == 0, done.err
    return json.loads(done.out)["decision"]["id"]


def _stale(cli) -> dict:
    result = cli("stale", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert_valid("stale", report)
    return report


def _only(cli) -> dict:
    (item,) = _stale(cli)["stale"]
    return item


def test_an_edit_since_ratification_is_reported_with_its_commits_and_authors(cli, repo, kernel):
    decision = _ratified(cli, "kernel/store/**", "pyproject.toml")
    assert _stale(cli)["stale"] == []
    repo.commit("Edit the store", author="Bo", **{"kernel__store__base.py": "class Store: pass\n"})
    repo.commit("Unrelated", author="Cy", **{"kernel__cli.py": "main = 2\n"})
    repo.commit("Edit again", author="Di", **{"kernel__store__sqlite.py": "x = 1\n"})
    report = _stale(cli)
    assert report["head"] == repo.git("rev-parse", "HEAD") and report["checked"] == 1
    (item,) = report["stale"]
    assert item["decision_id"] == decision and item["reasons"] == ["changed"]
    assert item["commits"] == 2 and item["authors"] == ["Bo", "Di"]
    assert item["paths"] == ["kernel/store/base.py", "kernel/store/sqlite.py"]
    assert item["changed_links"] == ["kernel/store/**"]
    assert item["line"].startswith("may be stale: kernel/store/** changed in 2 commits since it was ratified")
    human = cli("stale")
    assert "kernel/store/** changed in 2 commits" in human.out and "by Bo, Di" in human.out


def test_renames_and_deletions_are_named_and_a_link_matching_nothing_is_stale(cli, repo, kernel):
    _ratified(cli, "pyproject.toml", "kernel/cli.py")
    repo.git("mv", "pyproject.toml", "setup.cfg")
    repo.git("rm", "-q", "kernel/cli.py")
    repo.commit("Move and drop")
    item = _only(cli)
    assert item["renamed"] == ["pyproject.toml -> setup.cfg"] and item["deleted"] == ["kernel/cli.py"]
    assert item["reasons"] == ["changed", "unmatched"]
    assert item["unmatched_links"] == ["kernel/cli.py", "pyproject.toml"]
    assert "matches nothing any more" in item["line"]


def test_glob_links_match_by_pattern_only(cli, repo, kernel):
    _ratified(cli, "kernel/**/*.py", "docs/*.md")
    repo.commit("Docs deep", **{"docs__deep__guide.md": "x\n"})
    assert _stale(cli)["stale"] == [] or _only(cli)["unmatched_links"] == ["docs/*.md"]
    repo.commit("Docs", **{"docs__guide.md": "x\n"})
    repo.commit("Code", **{"kernel__store__base.py": "y\n"})
    item = _only(cli)
    assert item["commits"] == 2 and set(item["changed_links"]) == {"docs/*.md", "kernel/**/*.py"}


def test_a_merge_counts_side_commits_merged_after_the_snapshot_only(cli, repo, kernel):
    repo.git("checkout", "-q", "-b", "side")
    repo.commit("Side edit before", **{"kernel__store__a.py": "a\n"})
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge early side", "side")
    _ratified(cli, "kernel/store/**")
    repo.git("checkout", "-q", "side")
    repo.commit("Side edit after", author="Bo", **{"kernel__store__b.py": "b\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("Main unrelated", **{"README.md": "r\n"})
    assert _stale(cli)["stale"] == []
    repo.git("merge", "-q", "--no-ff", "-m", "Merge side", "side")
    item = _only(cli)
    assert item["commits"] == 1 and item["authors"] == ["Bo"] and item["paths"] == ["kernel/store/b.py"]


def test_history_read_in_slices_at_once_gives_the_answer_one_git_process_gives(
    cli, repo, kernel, store_path, monkeypatch
):
    """A long history is read by several git processes at once (slices of the first-parent line);
    merged side branches, snapshots on a side branch, at a merge and near the root, and a rename
    must come out exactly as one process reads them. The slicing threshold is lowered so a small
    history is sliced."""
    from ctx_kernel.kernel.facts import staleness

    areas = ["kernel/store", "kernel/cli", "docs"]

    def edits(n: int, who: str, prefix: str) -> None:
        for i in range(n):
            area = areas[(i * 7 + len(prefix)) % 3]
            repo.commit(
                f"{prefix} {i}", author=who, **{f"{area}__{prefix}{i % 4}.py".replace("/", "__"): f"{i}\n"}
            )

    edits(4, "Ann", "early")
    _ratified(cli, "kernel/store/**", subject="near.root")
    edits(6, "Bo", "main")
    repo.git("checkout", "-q", "-b", "side")
    edits(5, "Cy", "side")
    _ratified(cli, "kernel/cli/**", "docs/*.py", subject="on.side")
    edits(3, "Cy", "side2")
    repo.git("checkout", "-q", "main")
    edits(4, "Di", "main2")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge side", "side")
    _ratified(cli, "docs/**", "kernel/store/main*.py", subject="at.merge")
    repo.git("mv", "kernel/store/main21.py", "kernel/store/renamed.py")
    repo.commit("Rename", author="Ed")
    edits(7, "Fay", "late")

    started: list[list[str]] = []
    real_start = staleness._start_log

    def counted(checkout, revisions, into):
        started.append(revisions)
        return real_start(checkout, revisions, into)

    monkeypatch.setattr(staleness, "_start_log", counted)
    monkeypatch.setattr(staleness, "_SLICE_FROM", 2)
    answers = {}
    for workers in (1, 2, 3, 4):
        monkeypatch.setattr(staleness, "_slice_count", lambda workers=workers: workers)
        shutil.rmtree(store_path.parent / "stale", ignore_errors=True)
        started.clear()
        answers[workers] = _stale(cli)
        assert len(started) >= workers, (workers, started)
    assert {s["subject"] for s in answers[1]["stale"]} == {"near.root", "on.side", "at.merge"}
    assert any(s["renamed"] for s in answers[1]["stale"])
    for workers in (2, 3, 4):
        assert answers[workers] == answers[1], workers


def test_the_checkout_read_from_its_files_is_the_one_git_finds(repo, tmp_path, monkeypatch):
    """The first marker of a cold inject reads the checkout from the repository's files instead of
    starting git; wherever that is done it must agree with git, and where the layout is not the
    plain one (a worktree, a submodule, a folder git is pointed away from) git is asked."""
    from ctx_kernel.kernel.facts import staleness

    def by_git(folder: Path) -> staleness.Checkout:
        out = repo.git("rev-parse", "--show-toplevel", "--is-shallow-repository", "HEAD", cwd=folder)
        root, shallow, head = out.splitlines()
        return staleness.Checkout(root=Path(root), head=head, shallow=shallow == "true")

    (repo.root / "kernel" / "deep").mkdir()
    repo.git("pack-refs", "--all")  # HEAD's branch now only in packed-refs
    shallow = tmp_path / "shallow"
    repo.git("clone", "-q", "--depth", "1", f"file://{repo.root}", str(shallow))
    for plain in (repo.root, repo.root / "kernel" / "deep", shallow):
        assert staleness._plain_checkout(plain) == by_git(plain)
        assert staleness.find_checkout(plain) == by_git(plain)
    repo.git("checkout", "-q", "--detach")
    assert staleness._plain_checkout(repo.root) == by_git(repo.root)

    worktree = tmp_path / "tree"
    repo.git("worktree", "add", "-q", str(worktree))
    assert staleness._plain_checkout(worktree) is None
    assert staleness.find_checkout(worktree) == by_git(worktree)

    empty = Repo(tmp_path / "empty")
    found = staleness.find_checkout(empty.root)
    assert found.root == empty.root and found.head is None

    monkeypatch.setenv("GIT_DIR", str(shallow / ".git"))
    assert staleness._plain_checkout(repo.root) is None


def test_a_damaged_repository_is_said_once_and_inject_still_works(cli, repo, kernel):
    """git failing half-way through the history (an object missing) must not fail a command: the
    links are not checked, ``ctx stale`` says why, and the agent's inject and recall still answer."""
    _ratified(cli, "kernel/store/**")
    snapshot = repo.git("rev-parse", "HEAD")
    repo.commit("Edit", **{"pyproject.toml": "[y]\n", "kernel__store__base.py": "changed\n"})
    root_tree = repo.git("rev-parse", f"{snapshot}^{{tree}}")
    (repo.root / ".git" / "objects" / root_tree[:2] / root_tree[2:]).unlink()
    stale = cli("stale", "--json")
    assert stale.code == 0, stale.err
    report = json.loads(stale.out)
    assert "git log could not read the history" in report["note"] and report["stale"] == []
    assert "Traceback" not in stale.err
    injected = cli("inject")
    assert (
        injected.code == 0 and "Keep one store module" in injected.out and "may be stale" not in injected.out
    )
    recalled = cli("recall", "store module")
    assert recalled.code == 0 and "Keep one store module" in recalled.out


def test_a_rewritten_history_is_said_and_compared_by_content(cli, repo, kernel, tmp_path):
    repo.commit("Work in progress", **{"kernel__cli.py": "main = 3\n"})
    _ratified(cli, "kernel/store/**", "kernel/cli.py")
    # Force-push style: the snapshot commit is reworded away and collected; its tree stays.
    repo.git("commit", "-q", "--amend", "-m", "Reworded")
    repo.git("reflog", "expire", "--expire=now", "--all")
    repo.git("gc", "-q", "--prune=now")
    report = _stale(cli)
    assert report["stale"] == []  # same content: nothing to say
    repo.commit("Real change", **{"kernel__store__base.py": "class Store: changed\n"})
    item = _only(cli)
    assert item["reasons"] == ["changed"] and item["changed_links"] == ["kernel/store/**"]
    assert "not in this clone (rewritten history)" in item["compared_by_content"]
    assert "rewritten history" in item["line"]


def test_a_shallow_clone_without_the_snapshot_commit_compares_content(
    cli, repo, kernel, tmp_path, monkeypatch
):
    _ratified(cli, "kernel/store/**")
    repo.commit("One", **{"kernel__cli.py": "1\n"})
    repo.commit("Two", **{"kernel__store__base.py": "2\n"})
    shallow = tmp_path / "shallow"
    repo.git("clone", "-q", "--depth", "1", f"file://{repo.root}", str(shallow))
    monkeypatch.chdir(shallow)
    item = _only(cli)
    assert "shallow clone" in item["compared_by_content"] and item["changed_links"] == ["kernel/store/**"]


def test_a_submodule_path_is_stale_when_it_points_at_another_commit(cli, repo, kernel, tmp_path):
    lib = Repo(tmp_path / "lib")
    lib.commit("Lib one", **{"lib.py": "1\n"})
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib.root), "vendor/lib")
    repo.commit("Add lib")
    _ratified(cli, "vendor/lib")
    lib.commit("Lib two", **{"lib.py": "2\n"})
    repo.git("pull", "-q", "origin", "main", cwd=repo.root / "vendor" / "lib")
    repo.commit("Bump lib")
    item = _only(cli)
    assert item["paths"] == ["vendor/lib"] and item["commits"] == 1


def test_a_review_date_passed_is_stale_until_reconfirmed(cli, repo, kernel):
    decision = _ratified(cli, review=("--review-by", "2020-01-01"))
    item = _only(cli)
    assert item["reasons"] == ["review_due"] and item["review_due"] == "2020-01-01"
    assert item["line"] == "may be stale: review was due 2020-01-01"
    done = cli("reconfirm", decision, "--yes", "--reviewer", "alice", "--json")
    assert done.code == 0, done.err
    assert_valid("snapshot", json.loads(done.out))
    assert _stale(cli)["stale"] == []
    bad = cli(
        "ratify", "pr_00000000000000000000000000", "--yes", "--reviewer", "a", "--review-every", "often"
    )
    assert bad.code == 2 and "not a number of days" in bad.err and bad.out == ""


def test_reconfirm_takes_a_new_snapshot_and_the_marker_goes_away(cli, repo, kernel):
    decision = _ratified(cli, "kernel/store/**")
    repo.commit("Edit", **{"kernel__store__base.py": "changed\n"})
    shown = cli("inject")
    assert "may be stale: kernel/store/** changed in 1 commit since it was ratified" in shown.out
    recalled = cli("recall", "store module", "--json")
    (hit,) = json.loads(recalled.out)["decisions"]
    assert hit["stale"].startswith("may be stale")
    done = cli("reconfirm", decision, "--yes", "--reviewer", "alice")
    assert done.code == 0 and done.out.strip() == f"re-confirmed {decision}"
    assert _stale(cli)["stale"] == []
    assert "may be stale" not in cli("inject").out
    assert "stale" not in json.loads(cli("recall", "store module", "--json").out)["decisions"][0]
    verified = cli("audit", "verify")
    assert verified.code == 0, verified.err
    acts = [e.action for e in kernel.audit.events()]
    assert acts.count("decision.confirmed") == 2


def test_reconfirm_is_refused_when_what_was_shown_changed(repo, kernel):
    found = kernel.propose("store.layout", "Keep one store module", links=["kernel/store/**"])
    decision = kernel.ratify(found.id, reviewer="alice").decision.id
    repo.commit("Edit", **{"kernel__store__base.py": "changed\n"})
    plan = kernel.plan_reconfirmation(decision)
    assert plan.stale is not None and plan.stale.commits == 1
    repo.commit("Another edit while the person reads", **{"kernel__store__base.py": "again\n"})
    from ctx_kernel.kernel.errors import StalePlanError

    with pytest.raises(StalePlanError, match="changed since it was shown"):
        kernel.reconfirm(plan, reviewer="alice")
    assert [s.act for s in kernel.store.snapshots_of(decision)] == ["ratified"]
    kernel.reconfirm(kernel.plan_reconfirmation(decision), reviewer="alice")
    assert [s.act for s in kernel.store.snapshots_of(decision)] == ["ratified", "reconfirmed"]


@pytest.mark.parametrize(
    ("link", "says"),
    [
        ("../outside.py", "leaves the repository"),
        ("kernel/../../etc/passwd", "leaves the repository"),
        ("/etc/passwd", "is absolute"),
        ("C:/Windows/x", "is absolute"),
        ("~/.ssh/id_rsa", "is absolute"),
        ("kernel\\store", "backslash"),
        (".git/config", "into .git"),
        ("a\x1bb", "control character"),
        ("a.py#not a symbol", "names no symbol"),
        ("x" * 301, "longer than"),
        ("kernel/a.py,kernel/b.py", "holds a comma"),
    ],
)
def test_a_link_that_escapes_the_repository_is_refused(cli, repo, kernel, link, says):
    result = cli("propose", "--subject", "s.t", "--decision", "d", "--link", link, "--agent", "claude")
    assert result.code == 2 and says in result.err and result.out == ""
    assert "Traceback" not in result.err
    assert kernel.queue() == []


def test_too_many_links_are_refused_and_input_json_takes_links(cli, repo, kernel):
    many = [a for i in range(51) for a in ("--link", f"f{i}.py")]
    result = cli("propose", "--subject", "s.t", "--decision", "d", *many)
    assert result.code == 2 and "at most 50" in result.err
    document = {"subject": "s.t", "decision": "d", "links": ["./kernel//store/**", "pyproject.toml"]}
    given = cli("propose", "--input", "-", stdin=json.dumps(document).encode())
    assert given.code == 0, given.err
    plan = kernel.plan_ratification(given.out.strip())
    assert plan.links == ["kernel/store/**", "pyproject.toml"]
    assert any(line.startswith("Governs") for line in plan.lines())


def test_a_symlink_out_of_the_repository_is_read_as_git_keeps_it(cli, repo, kernel, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("one\n", encoding="utf-8")
    (repo.root / "conf").mkdir()
    os.symlink(outside, repo.root / "conf" / "secret")
    repo.commit("Link out")
    _ratified(cli, "conf/**")
    outside.write_text("two\n", encoding="utf-8")
    assert _stale(cli)["stale"] == []  # git keeps the link, never what it points at


def test_outside_a_repository_stale_says_so_once_and_the_rest_works(cli, kernel, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    decision = _ratified(cli, "kernel/store/**")
    result = cli("stale")
    assert result.code == 0 and result.err.count("not in a git repository") == 1
    report = _stale(cli)
    assert report["note"] and report["stale"] == [] and report["head"] is None
    assert cli("inject").code == 0 and cli("recall", "store").code == 0
    snapshot = kernel.store.snapshots_of(decision)[0]
    assert snapshot.git_commit is None and [x.digest for x in snapshot.links] == [None]


def test_status_counts_the_stale_decisions(cli, repo, kernel):
    _ratified(cli, "kernel/store/**")
    repo.commit("Edit", **{"kernel__store__base.py": "changed\n"})
    status = json.loads(cli("status", "--json").out)
    assert_valid("status", status)
    assert status["stale_decisions"] == 1
    assert "1 may be stale (ctx stale)" in cli("status").out


def test_snapshots_are_append_only_in_the_database(cli, repo, kernel, store_path):
    import sqlite3

    decision = _ratified(cli, "kernel/store/**")
    conn = sqlite3.connect(store_path)
    try:
        for statement in (
            "UPDATE decision_snapshot SET git_commit = 'x'",
            "DELETE FROM decision_snapshot",
            "DELETE FROM proposal_link",
            "UPDATE proposal_link SET pattern = '../x'",
        ):
            with pytest.raises(sqlite3.DatabaseError, match=r"append-only|never change"):
                conn.execute(statement)
    finally:
        conn.close()
    assert len(kernel.store.snapshots_of(decision)) == 1


def test_a_snapshot_written_around_ctx_fails_verify(cli, repo, kernel, store_path):
    """Someone with the file inserts a re-confirmation to silence a warning, or edits one: the audit
    replay names the snapshot no person's act logged."""
    import sqlite3

    decision = _ratified(cli, "kernel/store/**")
    repo.commit("Edit", **{"kernel__store__base.py": "changed\n"})
    assert _only(cli)["decision_id"] == decision
    assert cli("audit", "verify").code == 0
    head = repo.git("rev-parse", "HEAD")
    conn = sqlite3.connect(store_path)
    (links,) = conn.execute("SELECT links FROM decision_snapshot").fetchone()
    conn.execute(
        "INSERT INTO decision_snapshot VALUES "
        "(?, '2099-01-01T00:00:00.000000Z', 'alice', 'reconfirmed', ?, ?, NULL, NULL)",
        (decision, head, links),
    )
    conn.commit()
    assert _stale(cli)["stale"] == []  # the forged snapshot silences the warning...
    verified = cli("audit", "verify")  # ...and verify names it
    assert verified.code == 1 and f"snapshot of {decision} at 2099-01-01" in verified.err
    assert "is not in the audit log" in verified.err
    # A careful forger restores the triggers afterwards, so the schema check alone cannot tell.
    triggers = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'decision_snapshot'"
    ).fetchall()
    for name, _sql in triggers:
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("DELETE FROM decision_snapshot WHERE taken_at LIKE '2099%'")
    conn.execute("UPDATE decision_snapshot SET git_commit = ?", (head,))
    for _name, sql in triggers:
        conn.execute(sql)
    conn.commit()
    conn.close()
    altered = cli("audit", "verify")
    assert (
        altered.code == 1
        and f"snapshot of {decision}" in altered.err
        and "does not match audit row" in altered.err
    )


def test_the_cache_answers_again_without_git_log(cli, repo, kernel, monkeypatch):
    _ratified(cli, "kernel/store/**")
    repo.commit("Edit", **{"kernel__store__base.py": "changed\n"})
    first = _stale(cli)
    from ctx_kernel.kernel.facts import staleness

    def no_log(*_args, **_kwargs):
        raise AssertionError("the cached answer was not used")

    monkeypatch.setattr(staleness, "drift", no_log)
    assert _stale(cli) == first
    with Ctx.open(kernel.store.location) as again:
        assert again.staleness.report().stale[0].commits == 1


def test_over_mcp_an_agent_proposes_links_sees_markers_and_cannot_reconfirm(
    repo, kernel, store_path, tmp_path
):
    from mcp import StdioServerParameters
    from mcp_support import CTX, Agent, error_text, text_of

    first = kernel.propose("store.layout", "Keep one store module", links=["kernel/store/**"])
    decision = kernel.ratify(first.id, reviewer="alice").decision.id
    repo.commit("Edit", author="Bo", **{"kernel__store__base.py": "changed\n"})
    env = {"CTX_CONFIG_DIR": str(tmp_path / "mcp-config"), "CTX_VECTORS": "off", "PATH": os.environ["PATH"]}
    params = StdioServerParameters(
        command=CTX, args=["mcp", "--db", str(store_path)], env=env, cwd=str(repo.root)
    )
    with (tmp_path / "stderr.txt").open("w", encoding="utf-8") as errlog, Agent(params, errlog) as agent:
        found = agent.call_json("recall", {"query": "store module"})
        assert not found.is_error, found.content
        (hit,) = found.structured_content["decisions"]
        assert hit["stale"].startswith("may be stale: kernel/store/** changed in 1 commit")
        assert "may be stale" in text_of(agent.call("recall", {"query": "store module"}))
        assert "may be stale" in text_of(agent.call("inject_context", {}))
        proposed = agent.call_json(
            "propose_decision",
            {"subject": "store.layout", "decision": "Split the store", "links": ["kernel/store/**"]},
        )
        assert not proposed.is_error, proposed.content
        escaping = agent.call_json(
            "propose_decision", {"subject": "store.other", "decision": "x", "links": ["../../etc/passwd"]}
        )
        assert escaping.is_error and "leaves the repository" in error_text(escaping)
        for name in ("reconfirm", "reconfirm_decision"):
            refused = agent.call(name, {"id": decision})
            assert refused.is_error and "re-confirming" in error_text(refused)
    assert [s.act for s in kernel.store.snapshots_of(decision)] == ["ratified"]
    assert kernel.plan_ratification(proposed.structured_content["id"]).links == ["kernel/store/**"]


STORE_PY = '''import os


class Store:
    """The store."""

    def open(self):
        return 1


def helper():
    return 2
'''


def test_a_symbol_link_follows_its_definition_and_finds_it_when_it_moved(cli, repo, kernel):
    repo.commit("Store module", **{"kernel__store__base.py": STORE_PY})
    _ratified(cli, "kernel/store/base.py#Store.open", "kernel/store/base.py#helper")
    snapshot = kernel.store.current_snapshots()[0]
    assert all(x.digest and x.files == 1 for x in snapshot.links)
    # An edit elsewhere in the file leaves the definitions as they were: nothing to say.
    repo.commit("Imports", **{"kernel__store__base.py": "import sys\n" + STORE_PY})
    assert _stale(cli)["stale"] == []
    repo.commit(
        "Change open", author="Bo", **{"kernel__store__base.py": STORE_PY.replace("return 1", "return 3")}
    )
    item = _only(cli)
    assert item["changed_links"] == ["kernel/store/base.py#Store.open"] and item["commits"] == 0
    assert item["line"] == "may be stale: kernel/store/base.py#Store.open changed since it was ratified"
    # The helper moves to another module: one git grep finds it there.
    moved = STORE_PY.replace("return 1", "return 3").split("\n\ndef helper")[0] + "\n"
    repo.commit(
        "Move helper", **{"kernel__store__base.py": moved, "kernel__util.py": "def helper():\n    return 2\n"}
    )
    item = _only(cli)
    assert (
        item["moved"] == ["kernel/store/base.py#helper -> kernel/util.py"] and item["unmatched_links"] == []
    )
    assert "kernel/store/base.py#helper moved to kernel/util.py" in item["line"]
    repo.commit("Drop helper", **{"kernel__util.py": "\n"})
    item = _only(cli)
    assert item["unmatched_links"] == ["kernel/store/base.py#helper"] and item["moved"] == []


MADR_WITH_LINKS = """\
---
status: {status}
date: 2024-02-01
ctx-links: kernel/store/**, ../../etc/passwd, kernel/cli.py
---

# Keep one store module

## Context and Problem Statement

Stores multiply.

## Decision Outcome

Chosen option: one store module per backend.
"""


def test_an_adr_import_reads_its_links_and_snapshots_the_accepted_ones(cli, repo, kernel, tmp_path):
    folder = tmp_path / "adrs"
    folder.mkdir()
    (folder / "0001-keep-one-store-module.md").write_text(
        MADR_WITH_LINKS.format(status="accepted"), encoding="utf-8"
    )
    (folder / "0002-keep-one-cli.md").write_text(
        MADR_WITH_LINKS.format(status="proposed").replace("one store module", "one cli"), encoding="utf-8"
    )
    done = cli("import", "adr", str(folder), "--yes", "--reviewer", "carol", "--json")
    assert done.code == 0, done.err
    (decision,) = json.loads(done.out)["decisions"]
    (proposal,) = json.loads(done.out)["proposals"]
    (snapshot,) = kernel.store.snapshots_of(decision)
    assert [x.link for x in snapshot.links] == ["kernel/store/**", "kernel/cli.py"]
    assert snapshot.taken_by == "carol" and snapshot.git_commit == repo.git("rev-parse", "HEAD")
    assert kernel.plan_ratification(proposal).links == ["kernel/cli.py", "kernel/store/**"]
    repo.commit("Edit", **{"kernel__cli.py": "main = 9\n"})
    assert _only(cli)["changed_links"] == ["kernel/cli.py"]
    assert cli("audit", "verify").code == 0  # the import's snapshot has its audit row


def test_adr_export_writes_the_links_and_a_fresh_store_imports_them(cli, repo, kernel, tmp_path):
    """A decision's links and a pending proposal's survive ``ctx export adr`` into an adr-tools
    folder (ctx's comment block) and an import elsewhere."""
    decision = _ratified(cli, "kernel/store/**", "kernel/cli.py#main")
    pending = cli(
        "propose",
        "--subject",
        "cli.layout",
        "--decision",
        "One cli module",
        "--agent",
        "claude",
        "--link",
        "kernel/cli.py",
    )
    assert pending.code == 0, pending.err
    folder = tmp_path / "adrs"
    folder.mkdir()
    (folder / "0001-record-architecture-decisions.md").write_text(
        "# 1. Record architecture decisions\n\nDate: 2026-01-01\n\n## Status\n\nAccepted\n\n"
        "## Context\n\nWe need to record decisions.\n\n## Decision\n\nWe will use ADRs.\n\n"
        "## Consequences\n\nSee Nygard.\n",
        encoding="utf-8",
    )
    exported = cli("export", "adr", str(folder))
    assert exported.code == 0, exported.err
    texts = {path.name: path.read_text(encoding="utf-8") for path in folder.glob("0*.md")}
    written = [text for text in texts.values() if decision in text]
    assert len(written) == 1 and 'ctx-links: "kernel/cli.py#main, kernel/store/**"' in written[0]
    assert any("ctx-links: kernel/cli.py" in text and "One cli module" in text for text in texts.values())
    elsewhere = tmp_path / "elsewhere.db"
    assert cli("--db", str(elsewhere), "init", db=False).code == 0
    imported = cli(
        "--db",
        str(elsewhere),
        "import",
        "adr",
        str(folder),
        "--yes",
        "--reviewer",
        "carol",
        "--json",
        db=False,
    )
    assert imported.code == 0, imported.err
    with Ctx.open(elsewhere, embedder=None) as other:
        linked = {
            d.subject: [x.link for x in other.store.snapshots_of(d.id)[-1].links]
            for d in other.store.decisions(include_closed=True)
            if other.store.snapshots_of(d.id)
        }
        assert linked == {"store.layout": ["kernel/cli.py#main", "kernel/store/**"]}
        (proposal,) = [p for p in other.store.list_proposals("pending") if p.subject == "cli.layout"]
        assert other.store.proposal_links(proposal.id) == ["kernel/cli.py"]
