"""Where the embedding model comes from, and vector recall with the real model (never fake vectors)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from test_json_schemas import assert_valid

from ctx_kernel.kernel import Ctx
from ctx_kernel.kernel.recall import embeddings as embed

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.usefixtures("real_model")
def test_the_model_extra_is_assembled_into_one_folder():
    folder = embed.packaged_model_dir()
    assert folder is not None
    for name in (embed.MODEL_FILE, *embed.TOKENIZER_FILES):
        assert (folder / name).is_file(), name
    resolution = embed.resolve()
    assert resolution.origin == "package"
    assert resolution.embedder is not None and resolution.embedder.dim == 384


@pytest.mark.usefixtures("real_model")
def test_a_local_model_folder_comes_first(tmp_path, monkeypatch):
    source = embed.packaged_model_dir()
    assert source is not None
    local = tmp_path / "model"
    local.mkdir()
    for name in (embed.MODEL_FILE, *embed.TOKENIZER_FILES):
        shutil.copyfile(source / name, local / name)
    monkeypatch.setenv("CTX_MODEL_DIR", str(local))
    resolution = embed.resolve()
    assert resolution.origin == "model_dir" and resolution.embedder is not None


def test_vectors_can_be_switched_off_in_config(tmp_path, monkeypatch):
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "config.toml").write_text("[embedding]\nenabled = false\n", encoding="utf-8")
    resolution = embed.resolve()
    assert resolution.embedder is None and "disabled" in (resolution.reason or "")


def test_without_any_model_recall_says_how_to_get_one(monkeypatch, kernel):
    monkeypatch.setattr(embed, "packaged_model_dir", lambda: None)
    monkeypatch.setenv("CTX_EMBEDDING_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
    kernel.log("the retry helper backs off exponentially")
    found = kernel.recall("retry helper")
    assert found.vectors.state == "off"
    assert "ctx reindex --download" in found.vectors.note and "CTX_MODEL_DIR" in found.vectors.note
    assert found.evidence  # keyword and entity still answer


def test_chunks_split_long_texts_on_breaks():
    text = "\n\n".join(f"paragraph {i} " + "word " * 60 for i in range(40))
    pieces = embed.chunks(text)
    assert 1 < len(pieces) <= embed.MAX_CHUNKS
    assert all(len(p) <= embed.CHUNK_CHARS for p in pieces)
    assert pieces[0].startswith("paragraph 0")
    assert embed.chunks("short") == ["short"]


@pytest.mark.usefixtures("real_model")
def test_a_paraphrase_is_found_by_the_vector_ranker_alone(cli, kernel):
    target = kernel.ratify(
        kernel.propose("auth.sessions", "Keep logged-in users' sessions in PostgreSQL, not in cookies.").id,
        reviewer="ann",
    ).decision
    kernel.ratify(kernel.propose("ci.caching", "Cache pip wheels between CI runs.").id, reviewer="ann")
    kernel.ratify(kernel.propose("frontend.css", "Style components with Tailwind.").id, reviewer="ann")
    # No word of it (nor a short form from kernel/recall/vocabulary.py) is in any decision.
    query = "where is a visitor's identity remembered between page loads?"
    assert kernel.recall(query, mode="keyword").decisions == []
    found = kernel.recall(query, mode="vector")
    assert found.decisions[0].decision.id == target.id
    assert found.vectors.model == embed.DEFAULT_MODEL
    result = cli("recall", query, "--json", "--explain")
    document = json.loads(result.out)
    assert_valid("recall", document)
    assert document["decisions"][0]["scores"]["vector"]["score"] > 0.3


@pytest.mark.usefixtures("real_model")
def test_reindex_reports_what_it_embedded(cli, kernel):
    kernel.log("first note")
    kernel.ratify(kernel.propose("x.y", "Use z").id, reviewer="ann")
    result = cli("reindex", "--json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert_valid("reindex", document)
    assert (document["decisions"], document["evidence"], document["dim"]) == (1, 1, 384)
    plain = cli("reindex")
    assert plain.code == 0 and "embedded 1 decision and 1 evidence text" in plain.out


def test_reindex_without_a_model_is_refused(cli, kernel, monkeypatch):
    monkeypatch.setenv("CTX_VECTORS", "off")
    result = cli("reindex")
    assert result.code == 1 and result.err.startswith("ctx: error: cannot embed")


def test_model_files_must_hold_an_onnx_model(tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("CTX_MODEL_DIR", str(tmp_path / "empty"))
    resolution = embed.resolve()
    assert resolution.embedder is None and "model.onnx" in (resolution.reason or "")
    assert Path(tmp_path / "empty").is_dir()


def test_ctx_open_accepts_no_embedder(store_path):
    ctx, _ = Ctx.init(store_path, embedder=None)
    assert ctx.embedding().embedder is None
    ctx.close()


@pytest.mark.usefixtures("real_model")
def test_warm_loads_the_model_on_another_thread_while_the_store_is_used(kernel):
    """What `ctx mcp` does at startup: the model loads once, whichever thread asks first."""
    import threading

    warming = threading.Thread(target=kernel.warm)
    warming.start()
    kernel.log("We cache rendered pages in Redis for five minutes.")
    found = kernel.recall("where are rendered pages cached?")
    warming.join()
    assert found.vectors.state == "on"
    assert found.evidence[0].scores["vector"] is not None
    assert kernel.embedding() is kernel.embedding()


def test_warm_without_vectors_does_nothing(store_path):
    with Ctx.init(store_path, embedder=None)[0] as kernel:
        kernel.warm()
        assert kernel.embedding().embedder is None


def test_the_packaged_model_files_are_checked_against_their_pinned_digests(cli, real_model, monkeypatch):
    from ctx_kernel.kernel.recall import embeddings as embed

    good = json.loads(cli("doctor", "--json", db=False).out)
    model = next(c for c in good["checks"] if c["name"] == "model")
    assert model["ok"] and "match the pinned sha256" in model["detail"]
    assert "; queries by its int8 copy in " in model["detail"]
    monkeypatch.setitem(embed.PINNED_SHA256, "tokenizer.json", "0" * 64)
    embed._cached.cache_clear()
    bad = json.loads(cli("doctor", "--json", db=False).out)
    model = next(c for c in bad["checks"] if c["name"] == "model")
    assert (
        not model["ok"]
        and "tokenizer.json has sha256" in model["detail"]
        and "not the pinned" in model["detail"]
    )
    assert model["fix"] == (
        f"put the file back: git -C {REPO} checkout -- kernel/recall/minilm_tokenizer/tokenizer.json"
    )
    resolution = embed.resolve()
    assert resolution.embedder is None and "refusing the packaged model" in (resolution.reason or "")
    assert "put it back with `git -C " in (resolution.reason or "")


def test_an_organisations_own_model_folder_is_used_and_reported_as_not_pinned(
    cli, real_model, tmp_path, monkeypatch
):
    import shutil

    from ctx_kernel.kernel.recall import embeddings as embed

    own = tmp_path / "org-model"
    shutil.copytree(embed.packaged_model_dir(), own)
    (own / "config.json").write_text((own / "config.json").read_text() + "\n")
    monkeypatch.setenv("CTX_MODEL_DIR", str(own))
    status = json.loads(cli("doctor", "--json", db=False).out)
    model = next(c for c in status["checks"] if c["name"] == "model")
    assert model["ok"] and "not the pinned files" in model["detail"]


@pytest.fixture
def resolve_in(monkeypatch: pytest.MonkeyPatch):
    """Resolve the model afresh with another cache folder; later tests get the session's again."""

    def resolve(cache: Path) -> embed.FastEmbedder:
        monkeypatch.setenv("CTX_CACHE_DIR", str(cache))
        embed._cached.cache_clear()
        embedder = embed.resolve().embedder
        assert isinstance(embedder, embed.FastEmbedder)
        return embedder

    yield resolve
    embed._cached.cache_clear()


@pytest.mark.usefixtures("real_model")
def test_queries_are_embedded_by_an_int8_copy_and_documents_by_the_model_itself(model_cache):
    import numpy as np

    embedder = embed.resolve().embedder
    assert isinstance(embedder, embed.FastEmbedder)
    assert embedder.query_dir is not None and embedder.query_dir.parent == model_cache / "models"
    record = json.loads((embedder.query_dir / "built.json").read_text(encoding="utf-8"))
    assert record["recipe"] == embed.QUERY_RECIPE
    assert (embedder.query_dir / embed.MODEL_FILE).stat().st_size < 30_000_000  # int8, not float32
    plain = embed.FastEmbedder(embed.DEFAULT_MODEL, embed.packaged_model_dir())
    assert plain.query_dir is None
    texts = ["Keep logged-in users' sessions in PostgreSQL, not in cookies.", "how do we cache pages?"]
    # Stored vectors are the model's own: stores made before the copy need no re-embedding.
    assert embedder.embed_documents(texts) == plain.embed_documents(texts)
    for text in texts:
        copy, model = (np.frombuffer(v, "<f4") for v in (embedder.embed_query(text), plain.embed_query(text)))
        assert not np.array_equal(copy, model)
        assert float(copy @ model) >= embed.QUERY_AGREEMENT


@pytest.mark.usefixtures("real_model")
def test_a_query_copy_altered_after_it_was_built_is_not_used(tmp_path, resolve_in):
    built = embed.resolve().embedder
    assert isinstance(built, embed.FastEmbedder) and built.query_dir is not None
    cache = tmp_path / "cache"
    shutil.copytree(built.query_dir, cache / "models" / built.query_dir.name)
    with (cache / "models" / built.query_dir.name / embed.MODEL_FILE).open("ab") as handle:
        handle.write(b"\0")
    embedder = resolve_in(cache)
    assert embedder.query_dir is None
    # Queries fall back on the model itself.
    assert embedder.embed_query("cache pages") == embedder.embed_documents(["cache pages"])[0]


@pytest.mark.usefixtures("real_model")
def test_without_onnx_queries_use_the_model_and_recall_still_has_vectors(
    kernel, tmp_path, monkeypatch, resolve_in
):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "onnx" else find_spec(name, *a)
    )
    embedder = resolve_in(tmp_path / "cache")
    assert embedder.query_dir is None
    assert list((tmp_path / "cache" / "models").glob("query-*")) == []
    kernel.log("We cache rendered pages in Redis for five minutes.")
    found = kernel.recall("where are rendered pages cached?", mode="vector")
    assert found.vectors.state == "on" and found.evidence


@pytest.mark.usefixtures("real_model")
def test_two_processes_building_the_query_copy_at_once_both_use_it(tmp_path):
    import subprocess
    import sys

    cache = tmp_path / "cache"
    # Builds cut short long ago are cleared; one under way (recent) is left alone.
    old, recent = cache / "models" / ".building-old", cache / "models" / ".building-recent"
    for folder in (old, recent):
        (folder / "model").mkdir(parents=True)
    os.utime(old, (0, 0))
    script = (
        "from ctx_kernel.kernel.recall import embeddings as e; "
        "r = e.resolve(); print(r.embedder.query_dir); print(r.embedder.embed_query('x')[:4].hex())"
    )
    env = {**os.environ, "CTX_CACHE_DIR": str(cache)}
    runs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [run.communicate(timeout=120)[0].split() for run in runs]
    assert all(run.returncode == 0 for run in runs)
    assert outs[0] == outs[1] and outs[0][0] != "None"
    assert Path(outs[0][0]).parent == cache / "models"
    assert [p.name for p in (cache / "models").iterdir() if p.name.startswith(".")] == [recent.name]


@pytest.mark.usefixtures("real_model")
def test_a_failed_query_copy_build_is_recorded_and_not_tried_by_every_process(
    tmp_path, monkeypatch, resolve_in
):
    agreement, builder = embed.QUERY_AGREEMENT, embed._build_query_model
    monkeypatch.setattr(embed, "QUERY_AGREEMENT", 1.5)  # no copy can agree this well
    embedder = resolve_in(tmp_path / "cache")
    assert embedder.query_dir is None
    (marker,) = (tmp_path / "cache" / "models").glob("query-*.failed")
    assert "strays from the model" in marker.read_text(encoding="utf-8")
    assert [p.name for p in (tmp_path / "cache" / "models").iterdir() if p.name.startswith(".")] == []

    def build(*_):
        raise AssertionError("built again")

    monkeypatch.setattr(embed, "_build_query_model", build)
    assert resolve_in(tmp_path / "cache").query_dir is None
    monkeypatch.setattr(embed, "QUERY_AGREEMENT", agreement)
    monkeypatch.setattr(embed, "_build_query_model", builder)
    marker.unlink()  # deleting the marker builds the copy again
    assert resolve_in(tmp_path / "cache").query_dir is not None


@pytest.mark.usefixtures("real_model")
def test_a_model_folder_with_other_tokenizer_files_gets_a_query_copy_of_its_own(tmp_path):
    import subprocess
    import sys

    packaged = embed.resolve().embedder
    assert isinstance(packaged, embed.FastEmbedder) and packaged.query_dir is not None
    own = tmp_path / "org-model"
    shutil.copytree(embed.packaged_model_dir(), own)
    (own / "tokenizer_config.json").write_text((own / "tokenizer_config.json").read_text() + "\n")
    # In a process of its own: pytest gives the root logger handlers of its own.
    script = (
        "import logging; from ctx_kernel.kernel.recall import embeddings as e; "
        "print(e.resolve().embedder.query_dir); print(len(logging.root.handlers))"
    )
    env = {**os.environ, "CTX_CACHE_DIR": str(tmp_path / "cache"), "CTX_MODEL_DIR": str(own)}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    folder, handlers = run.stdout.split()
    assert folder != "None" and Path(folder).name != packaged.query_dir.name
    assert (Path(folder) / "tokenizer_config.json").read_text() == (own / "tokenizer_config.json").read_text()
    # The quantiser's advice was not printed, and no handler was left on the root logger by it.
    assert handlers == "0" and "pre-processing" not in run.stderr


@pytest.mark.usefixtures("real_model")
def test_documents_embedded_together_keep_their_order_and_their_vectors():
    import numpy as np

    embedder = embed.resolve().embedder
    assert embedder is not None
    texts = [
        "a long note about retry budgets, exponential backoff and the timeouts of the billing queue " * 6,
        "kafka",
        "session tokens are refreshed by the auth service",
        "",
        "deploys go out behind a feature flag",
    ]
    together = embedder.embed_documents(texts)
    alone = [embedder.embed_documents([text])[0] for text in texts]
    for batched, single in zip(together, alone, strict=True):
        # Padding to a batch's longest text changes the float sums a little, never the meaning.
        a, b = (np.frombuffer(v, dtype="<f4") for v in (batched, single))
        assert float(a @ b) > 0.999
