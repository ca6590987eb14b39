"""Former public names, kept for one minor release with a ``DeprecationWarning``.

A package that renamed a public name looks its former names up here from its module
``__getattr__`` (called only for names the module does not have): the old name keeps
working, says what replaces it, and goes in the release after next (``CHANGELOG.md``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

__all__ = ["moved", "renamed"]


def renamed(
    module: str, name: str, renames: Mapping[str, str], namespace: Mapping[str, Any]
) -> Any:
    """The object ``name`` was renamed to in ``module`` (warning that ``name`` is
    deprecated), or ``AttributeError`` as for any missing attribute."""
    new = renames.get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(
        f"{module}.{name} is deprecated and goes in the next minor release; use {module}.{new}",
        DeprecationWarning,
        stacklevel=3,
    )
    return namespace[new]


def moved(module: str, new: str, names: list[str]) -> list[str]:
    """Warn that importing ``module`` is deprecated (its names moved to ``new``, whose
    ``__all__`` is ``names``) and return ``names``: the old module's ``__all__``."""
    warnings.warn(
        f"{module} is deprecated; import from {new} (or assistant_frames) instead",
        DeprecationWarning,
        stacklevel=3,
    )
    return list(names)
