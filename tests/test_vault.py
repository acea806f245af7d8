"""Encryption at rest: `ctx init --encrypt`, `ctx encrypt`, `ctx rekey`, and what a stolen file shows."""

from __future__ import annotations

import os
import random
import stat
import string
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel import sealing as vault
from ctx_kernel.kernel.capture.ingest import EvidenceInput, Item
from ctx_kernel.kernel.errors import RefusedError
from ctx_kernel.kernel.store.sqlite import driver

WORDS = ("quokka", "narwhal", "pangolin")
SHARED = ("wombatine", "dugongish", "kakapoid")  # in every planted text, so in every index segment
# 2,000 rows are enough for plain index terms to survive in pages that other tables reuse.
LARGE = 2_000


def raw_bytes(store: Path) -> bytes:
    """Everything a thief copying the store's files would get."""
    return b"".join(p.read_bytes() for p in store.parent.glob(store.name + "*"))


def plant(kernel: Ctx, rows: int) -> list[bytes]:
    """Log ``rows`` plain evidence texts, each with a made-up word of its own; every planted word."""
    rng = random.Random(rows)
    own = ["".join(rng.choices(string.ascii_lowercase, k=12)) for _ in range(rows)]
    kernel.log_many(
        Item(n, EvidenceInput(text=f"{word} {' '.join(SHARED)} note {n}")) for n, word in enumerate(own)
    )
    return [w.encode() for w in [*own, *SHARED]]


def readable(store: Path, words: list[bytes]) -> list[bytes]:
    """The planted words that the store's db, -wal and -shm files still hold."""
    stolen = raw_bytes(store)
    return [w for w in words if w in stolen]


def stop(done: int, total: int) -> None:
    """A progress callback that interrupts the run after its first committed batch."""
    if done:
        raise KeyboardInterrupt


def key_file(kernel: Ctx) -> Path:
    return vault.key_path(kernel.store.get_meta("store_id") or "")


def sql(store: Path, statement: str, params: tuple = ()) -> list[tuple]:
    conn = driver.connect(store)
    try:
        return conn.execute(statement, params).fetchall()
    finally:
        conn.close()


@pytest.fixture
def sealed(cli, store_path) -> Ctx:
    """A store created with --encrypt, holding a few evidence texts and a decision."""
    result = cli("init", "--encrypt")
    assert result.code == 0, result.err
    assert "back it up" in result.out
    kernel = Ctx.open(store_path)
    for word in WORDS:
        kernel.log(f"the {word} migration plan: move the ledger to postgres")
    kernel.ratify(kernel.propose("db.engine", "Use PostgreSQL 16").id, reviewer="ann")
    yield kernel
    kernel.close()


def test_init_encrypt_writes_a_private_key_and_seals_new_evidence(sealed, store_path):
    path = key_file(sealed)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    sealed.store.scrub()  # fold the WAL into the file
    stolen = raw_bytes(store_path)
    for word in WORDS:
        assert word.encode() not in stolen
    assert b"PostgreSQL 16" in stolen, "decisions stay in clear, by design"
    texts = sql(store_path, "SELECT typeof(text), substr(text, 1, 5) FROM evidence")
    assert texts == [("blob", vault.MAGIC)] * 3


def test_sealed_evidence_reads_searches_and_recalls_as_before(sealed, cli):
    shown = cli("search", "narwhal")
    assert "the [narwhal] migration plan" in shown.out
    hits = sealed.recall("pangolin ledger", mode="keyword").evidence
    assert hits[0].evidence.text == "the pangolin migration plan: move the ledger to postgres"
    assert "[pangolin]" in hits[0].snippet
    assert sealed.recall("quokka", mode="hybrid").evidence[0].evidence.text.startswith("the quokka")
    assert sealed.store.pending_vector_count("evidence") == 0, "sealed text is never embedded"
    assert sealed.audit.verify(state=True).ok


def test_a_missing_or_wrong_key_is_one_clear_line_and_changes_nothing(sealed, cli, store_path, monkeypatch):
    before = sql(store_path, "SELECT count(*) FROM evidence")
    path = key_file(sealed)
    hidden = path.with_name("elsewhere")
    path.rename(hidden)
    missing = cli("search", "quokka")
    assert missing.code == 1
    assert missing.err.startswith("ctx: error: the evidence vault is encrypted and no key was found")
    logged = cli("log", "a new note while the key is away")
    assert logged.code == 1
    assert cli("decisions").code == 0, "decisions do not need the vault key"
    monkeypatch.setenv("CTX_VAULT_KEY", vault.encode_key(vault.new_key()))
    wrong = cli("search", "quokka")
    assert wrong.code == 1
    assert "is not this store's key" in wrong.err
    assert len(wrong.err.strip().splitlines()) == 1
    monkeypatch.setenv("CTX_VAULT_KEY", "not a key")
    garbage = cli("search", "quokka")
    assert garbage.code == 2
    assert "CTX_VAULT_KEY is not a ctx vault key" in garbage.err
    monkeypatch.delenv("CTX_VAULT_KEY")
    hidden.rename(path)
    assert sql(store_path, "SELECT count(*) FROM evidence") == before
    assert "[quokka]" in cli("search", "quokka").out


def test_the_key_from_the_environment_opens_the_vault(sealed, cli, monkeypatch):
    path = key_file(sealed)
    monkeypatch.setenv("CTX_VAULT_KEY", path.read_text().strip())
    path.unlink()
    assert "[quokka]" in cli("search", "quokka").out


def test_encrypt_an_existing_plain_store(cli, kernel, store_path, real_model):
    for word in WORDS:
        kernel.log(f"plain `{word}_service` note before encryption")
    kernel.reindex()
    assert kernel.store.item_count("evidence") == 3
    assert sql(store_path, "SELECT count(*) FROM evidence_vector")[0][0] > 0
    result = cli("encrypt")
    assert result.code == 0, result.err
    assert result.out.startswith("3 evidence texts sealed with key ")
    kernel.store.forget_vault()
    stolen = raw_bytes(store_path)
    for word in WORDS:
        assert word.encode() not in stolen, f"{word} is still readable in the store's files"
    assert sql(store_path, "SELECT count(*) FROM evidence_vector")[0][0] == 0
    assert sql(store_path, "SELECT count(*) FROM entity_mention WHERE item LIKE 'ev_%'")[0][0] == 0
    assert "[narwhal]" in cli("search", "narwhal").out
    again = cli("encrypt")
    assert again.code == 1
    assert "already encrypted" in again.err
    assert kernel.audit.verify(state=True).ok
    assert [e.action for e in kernel.audit.events()][-1] == "vault.encrypted"


def test_rekey_seals_every_row_under_a_new_key(sealed, cli, store_path):
    old = key_file(sealed).read_text()
    old_id = sealed.store.get_meta("vault_key_id")
    result = cli("rekey")
    assert result.code == 0, result.err
    new_id = sql(store_path, "SELECT value FROM meta WHERE key = 'vault_key_id'")[0][0]
    assert new_id != old_id
    assert key_file(sealed).read_text() != old
    assert not vault.pending_path(key_file(sealed)).exists()
    ids = {r[0] for r in sql(store_path, "SELECT hex(substr(text, 6, 8)) FROM evidence")}
    assert ids == {new_id.upper()}
    assert "[quokka]" in cli("search", "quokka").out
    with Ctx.open(store_path) as fresh:
        assert fresh.audit.verify(state=True).ok


def test_an_interrupted_rekey_leaves_every_row_readable_and_resumes(cli, kernel, store_path):
    kernel.encrypt()
    from ctx_kernel.kernel.capture.ingest import EvidenceInput, Item

    kernel.log_many(Item(n, EvidenceInput(text=f"row {n} about the walrus")) for n in range(1, 1_201))

    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        kernel.rekey(progress=stop)
    under = dict(sql(store_path, "SELECT hex(substr(text, 6, 8)), count(*) FROM evidence GROUP BY 1"))
    assert sorted(under.values()) == [500, 700], "one batch of 500 was sealed again before the stop"
    with Ctx.open(store_path) as reader:  # old key file and <key file>.new: every row opens
        texts = [reader.evidence(r[0]).text for r in sql(store_path, "SELECT id FROM evidence")]
        assert len(texts) == 1_200 and all("walrus" in t for t in texts)
    pending = vault.pending_path(key_file(kernel))
    assert pending.exists()
    result = cli("rekey")
    assert result.code == 0, result.err
    assert result.out.startswith("700 evidence texts sealed")
    assert not pending.exists()
    assert len({r[0] for r in sql(store_path, "SELECT substr(text, 6, 8) FROM evidence")}) == 1
    with Ctx.open(store_path) as reader:
        assert reader.recall("walrus", mode="keyword").evidence


def test_without_the_new_key_an_interrupted_rekey_names_the_missing_key(kernel, cli, store_path):
    kernel.encrypt()
    kernel.log("a note about the albatross")

    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        kernel.rekey(progress=stop)
    vault.pending_path(key_file(kernel)).unlink()
    result = cli("search", "albatross")
    assert result.code == 1
    assert "which is not on offer: a `ctx rekey` was interrupted" in result.err


def test_tampered_ciphertext_is_detected(sealed, cli, store_path):
    rows = sql(store_path, "SELECT rowid, id, text FROM evidence ORDER BY rowid")
    conn = driver.connect(store_path)
    # Swap two rows' ciphertexts (allowed by the trigger: sealed blobs), as an attacker with SQL could.
    conn.execute("UPDATE evidence SET text = ? WHERE rowid = ?", (rows[1][2], rows[0][0]))
    conn.close()
    result = cli("show", rows[0][1])
    assert result.code == 1
    assert "altered or moved" in result.err


def test_the_store_refuses_turning_sealed_text_back_or_editing_other_columns(sealed, store_path):
    conn = driver.connect(store_path)
    with pytest.raises(driver.dbapi.IntegrityError, match="append-only"):
        conn.execute("UPDATE evidence SET text = 'plain again' WHERE rowid = 1")
    blob = conn.execute("SELECT text FROM evidence WHERE rowid = 1").fetchone()[0]
    with pytest.raises(driver.dbapi.IntegrityError, match="append-only"):
        conn.execute("UPDATE evidence SET text = ?, kind = 'log' WHERE rowid = 1", (blob,))
    conn.close()


def test_rekey_and_encrypt_refuse_in_the_wrong_state(kernel, cli):
    with pytest.raises(RefusedError, match="not encrypted"):
        kernel.rekey()
    assert cli("rekey").code == 1
    assert cli("init", "--key-file", "k.key").code == 2


def test_a_given_key_file_is_used_and_kept(cli, store_path, tmp_path, monkeypatch):
    path = tmp_path / "keys" / "project.key"
    result = cli("init", "--encrypt", "--key-file", str(path))
    assert result.code == 0, result.err
    assert path.exists() and stat.S_IMODE(path.stat().st_mode) == 0o600
    written = path.read_text()
    monkeypatch.setenv("CTX_VAULT_KEY_FILE", str(path))
    assert cli("log", "a note about the kakapo").code == 0
    assert "[kakapo]" in cli("search", "kakapo").out
    assert path.read_text() == written
    assert not (Path(os.environ["CTX_CONFIG_DIR"]) / "vault").exists(), "no second key was made"


@pytest.mark.slow
@pytest.mark.parametrize("rows", [52, LARGE])
def test_encrypt_leaves_no_planted_word_in_the_store_files(cli, kernel, store_path, rows):
    words = plant(kernel, rows)
    assert readable(store_path, words) == words
    result = cli("encrypt")
    assert result.code == 0, result.err
    assert readable(store_path, words) == []
    assert "[wombatine]" in cli("search", "wombatine").out
    assert kernel.integrity_check() == "ok"


def test_an_interrupted_encrypt_resumes_and_leaves_no_planted_word(cli, kernel, store_path):
    words = plant(kernel, LARGE)
    with pytest.raises(KeyboardInterrupt):
        kernel.encrypt(progress=stop)
    assert sql(store_path, "SELECT count(*) FROM evidence WHERE typeof(text) = 'text'")[0][0] == LARGE - 500
    result = cli("encrypt")
    assert result.code == 0, result.err
    assert result.out.startswith(f"{LARGE - 500} evidence texts sealed")
    assert readable(store_path, words) == []
    assert "[dugongish]" in cli("search", "dugongish").out


@pytest.mark.slow
@pytest.mark.parametrize("interrupted", [False, True], ids=["completed", "interrupted"])
def test_rekey_leaves_nothing_the_old_key_opens(cli, kernel, store_path, interrupted):
    words = plant(kernel, LARGE)
    assert cli("encrypt").code == 0
    old_id = bytes.fromhex(kernel.store.get_meta("vault_key_id") or "")
    old_index_key = (kernel.store.get_meta("vault_index_key") or "").encode()
    assert vault.MAGIC + old_id in raw_bytes(store_path)
    if interrupted:
        with pytest.raises(KeyboardInterrupt):
            kernel.rekey(progress=stop)
    result = cli("rekey")
    assert result.code == 0, result.err
    stolen = raw_bytes(store_path)
    assert vault.MAGIC + old_id not in stolen, "a text sealed with the old key is still in the files"
    assert old_index_key not in stolen, "the index key sealed with the old key is still in the files"
    assert readable(store_path, words) == []
    assert "[kakapoid]" in cli("search", "kakapoid").out


def test_a_file_rewrite_cut_short_is_finished_by_running_encrypt_again(cli, kernel, store_path):
    """Killed while it waits to overwrite the old pages (a reader holds them): the next run finishes."""
    words = plant(kernel, 52)
    reader = driver.connect(store_path, load_vec=False)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM evidence").fetchone()  # pins the plain pages
    ctx = Path(sys.executable).parent / "ctx"
    run = subprocess.Popen([str(ctx), "--db", str(store_path), "encrypt"], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while sql(store_path, "SELECT value FROM meta WHERE key = ?", (vault.SCRUB_PENDING,)) != [("1",)]:
            assert run.poll() is None, run.stderr.read() if run.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.2)
    finally:
        run.kill()
        run.wait()
        reader.execute("COMMIT")
        reader.close()
    assert readable(store_path, words), "the old pages were still there when the run was cut short"
    result = cli("encrypt")
    assert result.code == 0, result.err
    assert result.out.startswith("0 evidence texts sealed")
    assert readable(store_path, words) == []
    assert sql(store_path, "SELECT count(*) FROM meta WHERE key = ?", (vault.SCRUB_PENDING,)) == [(0,)]
