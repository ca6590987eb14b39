"""Loading the frame to serve from ``MODULE:OBJECT``."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from ..frames import AssistantFrameProvider
from ..registry import ModelContextProvider
from .common import CommandError, usage_error

__all__ = ["load_frame", "load_frame_async"]


def load_frame(spec: str) -> AssistantFrameProvider:
    """Import ``MODULE:OBJECT`` and return it as a frame to serve.

    ``OBJECT`` (a dotted path inside the module) is an :class:`AssistantFrameProvider`,
    any :class:`ModelContextProvider` (a registry...), which is then wrapped in one, or
    a zero-argument callable returning one of those. The current directory is put on
    ``sys.path`` first, as ``python -m`` does. Raises :class:`CommandError` (a usage
    error) when the object cannot be loaded; an async factory needs ``serve``, which
    awaits it.
    """
    made = _resolve(spec)
    if inspect.isawaitable(made):
        with contextlib.suppress(Exception):
            made.close()  # type: ignore[attr-defined]
        raise usage_error(f"{spec} is an async factory; it needs a running event loop")
    return _as_frame(spec, made)


async def load_frame_async(spec: str) -> AssistantFrameProvider:
    """Like :func:`load_frame`, awaiting an async factory."""
    made = _resolve(spec)
    if inspect.isawaitable(made):
        try:
            made = await made
        except Exception as exc:
            raise usage_error(f"{spec}() failed: {type(exc).__name__}: {exc}") from None
    return _as_frame(spec, made)


def _resolve(spec: str) -> Any:
    """The object ``spec`` names, or what it returns when it is a factory."""
    obj = _import_object(spec)
    if _is_frame_like(obj):
        return obj
    if not callable(obj):
        raise _not_a_frame(spec, obj)
    return _call_factory(spec, obj)


def _import_object(spec: str) -> Any:
    module_name, sep, path = spec.partition(":")
    if not sep or not module_name or not path:
        raise usage_error(f"expected MODULE:OBJECT, e.g. myapp.tools:registry, not {spec!r}")
    if module_name.endswith(".py") or os.sep in module_name:
        raise usage_error(
            f"expected a module name, not a file: write {spec!r} as "
            f"{_module_from_path(module_name)}:{path} and run from its directory"
        )
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        # Python code printing at import time must not reach a --stdio channel.
        with contextlib.redirect_stdout(sys.stderr):
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            raise usage_error(
                f"cannot import {spec}: no module named {exc.name!r} "
                f"(looked in {cwd} and the installed packages)"
            ) from None
        raise usage_error(f"cannot import {spec}: {exc}") from None
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise usage_error(
            f"cannot import {spec}: importing {module_name!r} raised {what}"
        ) from None
    obj: Any = module
    for part in path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise usage_error(
                f"cannot load {spec}: module {module_name!r} has no attribute {path!r}"
            ) from None
    return obj


def _module_from_path(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _is_frame_like(obj: Any) -> bool:
    if isinstance(obj, type):
        return False  # a class is a factory, even though it has the provider methods
    return isinstance(obj, (AssistantFrameProvider, ModelContextProvider))


def _call_factory(spec: str, factory: Callable[[], Any]) -> Any:
    try:
        return factory()
    except TypeError as exc:
        if _needs_arguments(factory):
            raise usage_error(f"{spec} is callable but needs arguments: {exc}") from None
        raise usage_error(f"{spec}() failed: TypeError: {exc}") from None
    except Exception as exc:
        raise usage_error(f"{spec}() failed: {type(exc).__name__}: {exc}") from None


def _needs_arguments(factory: Callable[..., Any]) -> bool:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return False
    try:
        signature.bind()
    except TypeError:
        return True
    return False


def _as_frame(spec: str, obj: Any) -> AssistantFrameProvider:
    if isinstance(obj, AssistantFrameProvider):
        return obj
    if _is_frame_like(obj):
        return AssistantFrameProvider(obj)
    raise _not_a_frame(spec, obj)


def _not_a_frame(spec: str, obj: Any) -> CommandError:
    return usage_error(
        f"{spec} is a {type(obj).__name__}, not a ModelContextRegistry, ModelContextProvider "
        "or AssistantFrameProvider (or a zero-argument callable returning one)"
    )
