"""Build hook: ctx installs one top-level package, ``ctx_kernel``, over the folders kernel/ and tui/.

pyproject.toml maps kernel/, tui/ and schemas/ below ``ctx_kernel/`` in the wheel; this hook adds the
package's ``__init__.py``. An editable install gets the same ``__init__.py`` and a path configuration
file that imports a finder giving ``ctx_kernel`` this source tree as its search path, so
``ctx_kernel.kernel`` is the folder kernel/ itself. hatchling's own dev mode can put folders on
``sys.path`` but not below a package, which would make ``kernel`` and ``tui`` top-level names again.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGE = "ctx_kernel"

PACKAGE_INIT = '"""ctx: a local-first, human-ratified decision kernel for AI coding agents."""\n'

# Runs at every interpreter start in the environment: standard library only, nothing slow.
EDITABLE_FINDER = '''"""Editable install of ctx: the package {package} is the source tree {root!r}."""

import os
import sys
from importlib.util import spec_from_file_location

SOURCE_TREE = {root!r}
PACKAGE_INIT = os.path.join(os.path.dirname(__file__), "{package}", "__init__.py")


class SourceTreeFinder:
    """Finds {package} with the source tree as its search path, ahead of any other {package}."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname != "{package}":
            return None
        return spec_from_file_location(fullname, PACKAGE_INIT, submodule_search_locations=[SOURCE_TREE])


if SourceTreeFinder not in sys.meta_path:
    sys.meta_path.insert(0, SourceTreeFinder)
'''


class CtxPackageHook(BuildHookInterface):
    """Writes ``ctx_kernel/__init__.py`` into wheels, and the source-tree finder into editable wheels."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Write the generated files to a temporary folder and include them in the wheel."""
        if self.target_name != "wheel":
            return
        self._scratch = Path(tempfile.mkdtemp(prefix="ctx-build-"))
        files = {f"{PACKAGE}/__init__.py": PACKAGE_INIT}
        if version == "editable":
            finder = f"_{PACKAGE}_editable"
            root = str(Path(self.root).resolve())
            files[f"{finder}.py"] = EDITABLE_FINDER.format(package=PACKAGE, root=root)
            files[f"{finder}.pth"] = f"import {finder}\n"
        key = "force_include_editable" if version == "editable" else "force_include"
        for distribution_path, text in files.items():
            source = self._scratch / distribution_path.replace("/", "_")
            source.write_text(text, encoding="utf-8")
            build_data[key][str(source)] = distribution_path

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        """Remove the temporary folder."""
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
