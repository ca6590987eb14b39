"""A package's public names, each imported from its module on first use (PEP 562).

Every package of ours gathers the names of its modules, and ``import assistant_frames``
must not import them all: a worker needs a registry and ``serve_stdio``, not the host
side, the federation or MCP. A package lists its names by module (beside the same names
under ``if TYPE_CHECKING:``, for type checkers and IDEs) and takes its module
``__getattr__`` and ``__dir__`` from :func:`lazy_exports`. This module imports nothing
but ``importlib``: it is loaded by ``import assistant_frames`` itself.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing is not imported: it costs more than this whole module
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, MutableMapping
    from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, namespace: MutableMapping[str, Any], table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` (whose globals are
    ``namespace``): ``table`` maps each lazy name to the module that defines it (relative
    to ``package``, e.g. ``".tool"``, or absolute), or to ``""`` for a submodule of that
    name. A name is imported once, then kept in ``namespace``."""

    def load(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if not module:
            return importlib.import_module(f".{name}", package)
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted({*namespace, *table})

    return load, names
