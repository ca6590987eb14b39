"""Every public name has a docstring: each class and function a public package exports
(its ``__all__``), and each public method and property of those classes. The API
reference (``mkdocs build --strict``, ``mkdocs.yml``) is generated from them."""

from __future__ import annotations

import importlib
import inspect
import warnings

import pytest

PUBLIC = "registry frames transports federation mcp apps widgets nats formats testing dev"
PACKAGES = ["assistant_frames", *(f"assistant_frames.{name}" for name in PUBLIC.split())]


def undocumented(package: str) -> list[str]:
    module = importlib.import_module(package)
    missing = []
    for name in module.__all__:
        with warnings.catch_warnings():  # a deprecated alias warns when fetched
            warnings.simplefilter("ignore", DeprecationWarning)
            obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if not inspect.getdoc(obj):
            missing.append(name)
        if not inspect.isclass(obj):
            continue
        for attribute, value in vars(obj).items():
            if attribute.startswith("_"):
                continue
            function = value.fget if isinstance(value, property) else value
            if isinstance(function, staticmethod | classmethod):
                function = function.__func__
            if inspect.isfunction(function) and not inspect.getdoc(getattr(obj, attribute)):
                missing.append(f"{name}.{attribute}")
    return missing


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_has_a_docstring(package: str) -> None:
    assert undocumented(package) == []


def test_the_check_finds_a_missing_docstring() -> None:
    """The check can fail: a class with an undocumented method is reported."""
    import types

    module = types.ModuleType("assistant_frames_fake")

    class Documented:
        """Here."""

        def method(self) -> None:
            pass

    module.__all__ = ["Documented"]  # type: ignore[attr-defined]
    module.Documented = Documented  # type: ignore[attr-defined]
    import sys

    sys.modules["assistant_frames_fake"] = module
    try:
        assert undocumented("assistant_frames_fake") == ["Documented.method"]
    finally:
        del sys.modules["assistant_frames_fake"]
