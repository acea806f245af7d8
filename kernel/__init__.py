"""ctx's core: the evidence vault, the decision kernel and the proposal queue, behind one facade."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctx_kernel.kernel.errors import CtxError, NotFoundError, RefusedError, StoreError, UsageError

if TYPE_CHECKING:
    from ctx_kernel.kernel.facade import Ctx

__all__ = ["Ctx", "CtxError", "NotFoundError", "RefusedError", "StoreError", "UsageError"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The facade loads the store and the services: importing any one module of the package (a
    # shell's Tab press imports the CLI's) must not pay for it. `from ctx_kernel.kernel import Ctx`
    # loads it on first use.
    if name == "Ctx":
        from ctx_kernel.kernel.facade import Ctx  # noqa: PLC0415

        return Ctx
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
