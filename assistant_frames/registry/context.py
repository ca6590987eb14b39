"""``ModelContext`` (what a model is offered) and the ``ModelContextProvider`` protocol."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from ..errors import ToolNotFoundError
from .events import ToolEventCallback
from .tool import Tool
from .ui import UIResource

__all__ = ["ModelContext", "ModelContextProvider", "Subscribers", "ToolConflict", "Unsubscribe"]

logger = logging.getLogger("assistant_frames.registry")

Unsubscribe = Callable[[], None]


class Subscribers:
    """The callbacks of a :class:`ModelContextProvider`'s ``subscribe``.

    Synchronous callbacks, called in the order they subscribed; one that raises is
    logged and never stops the others.
    """

    __slots__ = ("_callbacks", "_ids")

    def __init__(self) -> None:
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()

    def add(self, callback: Callable[[], None]) -> Unsubscribe:
        """Subscribe ``callback``; returns the function that unsubscribes it."""
        if not callable(callback):
            raise TypeError(f"subscribe() needs a callable, not {callback!r}")
        key = next(self._ids)
        self._callbacks[key] = callback

        def unsubscribe() -> None:
            self._callbacks.pop(key, None)

        return unsubscribe

    def notify(self) -> None:
        """Call every callback."""
        for callback in tuple(self._callbacks.values()):
            try:
                callback()
            except Exception:
                logger.exception("A model context subscriber raised; it stays subscribed")


_EMPTY: Mapping[str, Tool] = MappingProxyType({})
NO_UI_RESOURCES: Mapping[str, UIResource] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ToolConflict:
    """Two tools of one name at the same priority; ``kept`` won, ``dropped`` lost.

    ``kept_source`` and ``dropped_source`` are the providers (or contexts) that offered
    them, so the report can say which frame collided with which.
    """

    name: str
    priority: int
    kept: Tool
    dropped: Tool
    kept_source: object = None
    dropped_source: object = None


@dataclass(frozen=True, slots=True)
class ModelContext:
    """What a model is offered: instructions (``system``) and tools, plus settings.

    ``ui_resources`` are the ``ui://`` resources (by URI) that the tools' MCP Apps
    views render: for hosts, never for the model. Only ``system``, ``tools`` and
    ``ui_resources`` cross a frame boundary; ``priority`` orders contexts
    when they are merged, and ``call_settings``/``config`` are for the local model call.
    ``conflicts`` lists the same-priority name collisions a merge resolved, and
    ``waiting`` the frames that have not sent their first context yet.
    """

    system: str | None = None
    tools: Mapping[str, Tool] = field(default_factory=lambda: _EMPTY)
    priority: int = 0
    call_settings: Mapping[str, Any] | None = None
    config: Mapping[str, Any] | None = None
    conflicts: tuple[ToolConflict, ...] = ()
    #: Names of frames whose first context has not arrived yet (their tools are missing).
    waiting: tuple[str, ...] = ()
    ui_resources: Mapping[str, UIResource] = field(default_factory=lambda: NO_UI_RESOURCES)

    async def call_tool(
        self,
        name: str,
        args: Any = None,
        *,
        tool_call_id: str | None = None,
        on_event: ToolEventCallback | None = None,
    ) -> Any:
        """Run the tool ``name`` of this context; wherever it lives, the call goes there.

        ``on_event`` receives the call's :class:`~assistant_frames.ToolProgress` and
        :class:`~assistant_frames.ToolLog` events, from wherever the tool runs.

        Raises :class:`~assistant_frames.ToolNotFoundError` for an unknown name and
        :class:`~assistant_frames.ToolCallError` (or a subclass) when the call fails.
        """
        tool = self.tools.get(name)
        if tool is None:
            raise ToolNotFoundError(name, tool_call_id=tool_call_id, waiting=self.waiting)
        return await tool.invoke(args, tool_call_id=tool_call_id, on_event=on_event)

    def enabled_tools(self) -> dict[str, Tool]:
        """The tools that are not disabled, in order."""
        return {name: tool for name, tool in self.tools.items() if not tool.disabled}

    def model_tools(self) -> dict[str, Tool]:
        """The tools a model may be offered: enabled, and not app-only (an MCP Apps tool
        whose ``visibility`` leaves out ``"model"`` is for its view alone)."""
        return {
            name: tool
            for name, tool in self.tools.items()
            if not tool.disabled and (tool.ui is None or "model" in tool.ui.visibility)
        }


@runtime_checkable
class ModelContextProvider(Protocol):
    """Anything that offers a model context and tells when it changes.

    ``get_model_context`` must be cheap and synchronous (cache the result);
    ``subscribe`` registers a no-argument callback called after every change and returns
    a function that unregisters it. Callbacks run synchronously in the changer's thread.
    """

    def get_model_context(self) -> ModelContext:
        """The current context."""
        ...

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback`` after each change until the returned function is called."""
        ...
