"""The package's version, read from its installed metadata (``pyproject.toml`` is the one
place it is written), on first use: ``importlib.metadata`` costs more to import than
most of this package."""

from __future__ import annotations

from functools import cache

__all__ = ["package_version"]


@cache
def package_version() -> str:
    """``assistant-frames``'s installed version (``"0+unknown"`` from a source tree that
    was never installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("assistant-frames")
    except PackageNotFoundError:
        return "0+unknown"
