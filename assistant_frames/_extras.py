"""Optional dependencies: a subpackage that needs one says so, with the extra to install."""

from __future__ import annotations

import importlib

__all__ = ["require"]


def require(module: str, message: str) -> None:
    """Import ``module`` (an optional dependency), or raise ``ImportError(message)``, which
    says what to ``pip install``, from the import's own error."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(message) from exc
