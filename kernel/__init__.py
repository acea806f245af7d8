"""ctx's core: the evidence vault, the decision kernel and the proposal queue, behind one facade."""

from ctx_kernel.kernel.errors import CtxError, NotFoundError, RefusedError, StoreError, UsageError
from ctx_kernel.kernel.facade import Ctx

__all__ = ["Ctx", "CtxError", "NotFoundError", "RefusedError", "StoreError", "UsageError"]
__version__ = "0.1.0"
