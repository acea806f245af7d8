"""A cloned repository cannot choose where an agent's truth comes from.

A project's ``.ctx/config.toml`` (or a linked ``.ctx``) may name any server or file. Until the
person on this machine approves it with ``ctx allow``, no command, hook or ``ctx mcp`` connects
there or opens it: a fake PostgreSQL server that records every startup and password message
receives nothing. A changed config needs a new approval; the project's own ``.ctx/ctx.db`` none.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_ctx_process

SECRET = "the-developers-real-password"
SSL_REQUEST, GSS_REQUEST = 80877103, 80877104


class FakeServer:
    """A PostgreSQL server that asks for a cleartext password and records what each client sends."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections: list[dict[str, object]] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with client:
                client.settimeout(5)
                record: dict[str, object] = {"startup": None, "password": None}
                self.connections.append(record)
                with contextlib.suppress(OSError, struct.error):
                    self._talk(client, record)

    @staticmethod
    def _read(client: socket.socket, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = client.recv(size - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        return data

    def _talk(self, client: socket.socket, record: dict[str, object]) -> None:
        while True:
            length, code = struct.unpack("!ii", self._read(client, 8))
            if code in {SSL_REQUEST, GSS_REQUEST}:
                client.sendall(b"N")
                continue
            body = self._read(client, length - 8)
            words = body.split(b"\0")
            record["startup"] = dict(zip(words[0::2], words[1::2], strict=False))
            break
        client.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
        kind = self._read(client, 1)
        (length,) = struct.unpack("!i", self._read(client, 4))
        if kind == b"p":
            record["password"] = self._read(client, length - 4).rstrip(b"\0").decode()

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    server = FakeServer()
    yield server
    server.close()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A cloned repository: a project folder with a committed .ctx/config.toml and a subfolder."""
    root = tmp_path / "cloned"
    (root / ".ctx").mkdir(parents=True)
    (root / "src").mkdir()
    return root


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"CTX_CONFIG_DIR": str(tmp_path / "config"), "PGUSER": "dev", "PGPASSWORD": SECRET, **extra}


def _configure(repo: Path, db: str) -> Path:
    config = repo / ".ctx" / "config.toml"
    config.write_text(f"db = {json.dumps(db)}\n", encoding="utf-8")
    return config


def _one_line_refusal(done, config: Path, shown: str) -> str:  # type: ignore[no-untyped-def]
    err = done.stderr.decode()
    assert done.returncode == 1, (done.returncode, err)
    assert done.stdout == b"" and err.count("\n") == 1 and "Traceback" not in err, err
    assert str(config) in err and shown in err and "ctx allow" in err, err
    return err


def _transcript(tmp_path: Path) -> Path:
    lines = [
        {"type": "user", "message": {"role": "user", "content": "The deploy key lives in vault"}},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Noted"}]},
        },
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_server_named_by_a_cloned_config_is_never_contacted_before_approval(
    repo: Path, tmp_path: Path, fake_server: FakeServer
) -> None:
    shown = f"postgresql://127.0.0.1:{fake_server.port}/teamstore"
    config = _configure(repo, shown)
    env = _env(tmp_path)
    cwd = repo / "src"
    for command in (("inject",), ("log", "a note"), ("queue",), ("recall", "deploy"), ("status",)):
        _one_line_refusal(run_ctx_process(*command, env=env, cwd=cwd), config, shown)
    _one_line_refusal(run_ctx_process("init", env=env, cwd=repo), config, shown)
    start = json.dumps({"hook_event_name": "SessionStart", "cwd": str(cwd)}).encode()
    hook = run_ctx_process("hook", "session-start", env=env, stdin=start, cwd=tmp_path)
    assert hook.returncode == 0 and hook.stdout == b"", hook
    assert "ctx allow" in hook.stderr.decode() and "no decisions injected" in hook.stderr.decode()
    end = json.dumps({"transcript_path": str(_transcript(tmp_path)), "cwd": str(cwd)}).encode()
    hook = run_ctx_process("hook", "session-end", env=env, stdin=end, cwd=tmp_path)
    assert hook.returncode == 0 and "transcript not ingested" in hook.stderr.decode(), hook
    assert fake_server.connections == []

    # The approval is what lets the same command through: the recorder does see a client then.
    approved = run_ctx_process("allow", "--yes", env=env, cwd=cwd)
    assert approved.returncode == 0 and f"approved: commands run in {repo}" in approved.stdout.decode()
    assert shown in approved.stderr.decode() and "connects as dev" in approved.stderr.decode()
    run_ctx_process("inject", env=env, cwd=cwd)
    assert fake_server.connections and fake_server.connections[0]["password"] == SECRET

    # A changed config needs a new approval.
    seen = len(fake_server.connections)
    config.write_text(config.read_text() + "# edited by a later commit\n", encoding="utf-8")
    _one_line_refusal(run_ctx_process("inject", env=env, cwd=cwd), config, shown)
    assert len(fake_server.connections) == seen


def test_mcp_serves_no_store_and_contacts_nothing_before_approval(
    repo: Path, tmp_path: Path, fake_server: FakeServer
) -> None:
    from mcp import StdioServerParameters

    from tests.mcp_support import CTX, Agent, error_text

    shown = f"postgresql://127.0.0.1:{fake_server.port}/teamstore"
    config = _configure(repo, shown)
    params = StdioServerParameters(command=CTX, args=["mcp"], env=_env(tmp_path), cwd=repo / "src")
    with (tmp_path / "mcp.err").open("w") as errlog, Agent(params, errlog) as agent:
        answer = error_text(agent.call("inject_context", {}))
        assert str(config) in answer and "ctx allow" in answer
        assert error_text(agent.call("log_evidence", {"text": "planted"})) == answer
    assert fake_server.connections == []
    assert "ctx allow" in (tmp_path / "mcp.err").read_text()


def test_a_login_or_credentials_in_a_project_config_are_refused(
    repo: Path, tmp_path: Path, fake_server
) -> None:
    for db in (
        f"postgresql://postgres@127.0.0.1:{fake_server.port}/attackerdb",
        f"postgresql://postgres:pw@127.0.0.1:{fake_server.port}/attackerdb",
        f"postgresql://127.0.0.1:{fake_server.port}/attackerdb?user=postgres",
        f"postgresql://127.0.0.1:{fake_server.port}/attackerdb?passfile=/etc/passwd",
    ):
        config = _configure(repo, db)
        for command in (("inject",), ("allow", "--yes")):
            done = run_ctx_process(*command, env=_env(tmp_path), cwd=repo)
            err = done.stderr.decode()
            assert done.returncode == 2 and err.count("\n") == 1, (db, err)
            assert str(config) in err and "may not choose who connects" in err and "pw" not in err
    assert fake_server.connections == []


def test_another_projects_file_named_by_a_config_is_not_opened_before_approval(
    repo: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    assert run_ctx_process("init", env=_env(tmp_path), cwd=victim).returncode == 0
    assert run_ctx_process("log", "victim's private note", env=_env(tmp_path), cwd=victim).returncode == 0
    store = victim / ".ctx" / "ctx.db"
    before = {p.name: p.read_bytes() for p in store.parent.iterdir() if p.is_file()}
    config = _configure(repo, "sqlite:../../victim/.ctx/ctx.db")
    for command in (("inject",), ("log", "planted"), ("recall", "private")):
        _one_line_refusal(run_ctx_process(*command, env=_env(tmp_path), cwd=repo), config, str(store))
    assert {p.name: p.read_bytes() for p in store.parent.iterdir() if p.is_file()} == before

    planted = tmp_path / "elsewhere" / "ctx-planted.db"
    planted.parent.mkdir()
    config = _configure(repo, f"sqlite:{planted}")
    _one_line_refusal(run_ctx_process("init", env=_env(tmp_path), cwd=repo), config, str(planted))
    assert not planted.exists()


def test_a_linked_ctx_folder_is_another_store_and_needs_approval(repo: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    assert run_ctx_process("init", env=_env(tmp_path), cwd=victim).returncode == 0
    (repo / ".ctx").rmdir()
    (repo / ".ctx").symlink_to(victim / ".ctx")
    done = run_ctx_process("log", "planted", env=_env(tmp_path), cwd=repo)
    assert done.returncode == 1 and "ctx allow" in done.stderr.decode(), done
    assert run_ctx_process("allow", "--yes", env=_env(tmp_path), cwd=repo).returncode == 0
    assert run_ctx_process("log", "now approved", env=_env(tmp_path), cwd=repo).returncode == 0


def test_the_projects_own_store_and_explicit_choices_need_no_approval(repo: Path, tmp_path: Path) -> None:
    _configure(repo, "sqlite:ctx.db")  # the default, spelled out
    assert run_ctx_process("init", env=_env(tmp_path), cwd=repo).returncode == 0
    assert run_ctx_process("log", "kept here", env=_env(tmp_path), cwd=repo / "src").returncode == 0
    said = run_ctx_process("allow", env=_env(tmp_path), cwd=repo)
    assert said.returncode == 0 and "nothing to approve" in said.stdout.decode()
    other = tmp_path / "other.db"
    _configure(repo, f"sqlite:{other}")
    # --db and CTX_DB are the person's own choice, made at the command.
    assert run_ctx_process("--db", str(other), "init", env=_env(tmp_path), cwd=repo).returncode == 0
    assert run_ctx_process("log", "x", env=_env(tmp_path, CTX_DB=str(other)), cwd=repo).returncode == 0


def test_approving_needs_a_person_and_can_be_withdrawn(repo: Path, tmp_path: Path) -> None:
    config = _configure(repo, f"sqlite:{tmp_path / 'team.db'}")
    refused = run_ctx_process("allow", env=_env(tmp_path), cwd=repo)
    assert refused.returncode == 2 and "person's act" in refused.stderr.decode()
    assert run_ctx_process("allow", "--yes", env=_env(tmp_path), cwd=repo).returncode == 0
    assert run_ctx_process("init", env=_env(tmp_path), cwd=repo).returncode == 0
    withdrawn = run_ctx_process("allow", "--revoke", env=_env(tmp_path), cwd=repo)
    assert withdrawn.returncode == 0 and "approval withdrawn" in withdrawn.stdout.decode()
    _one_line_refusal(
        run_ctx_process("queue", env=_env(tmp_path), cwd=repo), config, str(tmp_path / "team.db")
    )
