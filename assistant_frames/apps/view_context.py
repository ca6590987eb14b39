"""The model context one view offers through its :class:`~.bridge.AppBridge`, kept current.

The view's own tools, as :class:`~.view_tools.ViewToolAdmission` admits them, join the
context as tools that call the view back; what it last told the model
(``ui/update-model-context``) becomes its ``system`` text. When the view says its tools
changed they are listed again: one listing at a time, and one more after it for the
changes announced meanwhile, so a view flooding list-changed holds one request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

import mcp_types as mcp
from anyio.abc import TaskGroup

from .._logs import log_first_loudly
from ..errors import AssistantFramesError
from ..mcp.tools import tool_from_mcp
from ..registry.context import ModelContext, Subscribers, Unsubscribe
from ..registry.tool import Tool, ToolCallContext
from . import protocol
from .protocol import ProtocolError
from .view_tools import ViewToolAdmission, render_model_context

__all__ = ["ViewContext", "ViewContextOwner"]

logger = logging.getLogger("assistant_frames.apps")

_MAX_REFRESHES = 1000  # listings in a row while the view keeps announcing changes


class ViewContextOwner(Protocol):
    """What a :class:`ViewContext` uses of its bridge: read when used, as it is then."""

    name: str

    async def call_tool(self, name: str, args: Any = None, *, timeout: float | None = None) -> Any:
        """Call the view's tool ``name``."""

    async def refresh_view_tools(self, timeout: float | None = None) -> list[mcp.Tool]:
        """List the view's tools and offer them (through :meth:`ViewContext.offer`)."""


class ViewContext:
    """The model context of the view of ``owner``: its tools and its last update."""

    def __init__(self, owner: ViewContextOwner) -> None:
        self._owner = owner
        self._admission = ViewToolAdmission()
        self._subscribers = Subscribers()
        #: What the view offers, as a ``ModelContext``.
        self.context = ModelContext()
        #: The view's last ``ui/update-model-context`` (``None``: none yet).
        self.model_context: protocol.UpdateModelContextParams | None = None
        #: The view's admitted tools, by name.
        self.tools: dict[str, mcp.Tool] = {}
        self._refreshing = False  # a listing of the view's tools is under way
        self._refresh_again = False  # the view announced a change since it started
        self._listing_failures = 0  # listings of the view's tools that failed

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` whenever the view's tools or model context change."""
        return self._subscribers.add(callback)

    def update(self, update: protocol.UpdateModelContextParams) -> None:
        """The view's ``ui/update-model-context``: it replaces the ``system`` text."""
        self.model_context = update
        self._set_context()

    def offer(self, listed: list[mcp.Tool], max_view_tools: int) -> list[mcp.Tool]:
        """Offer the admitted ones of the view's ``listed`` tools; those are returned."""
        tools = self._admission.admit(listed, self._owner.name, max_view_tools)
        self.tools = {tool.name: tool for tool in tools}
        self._set_context()
        return tools

    def clear(self) -> None:
        """The connection ended: the view's tools and its update leave the context."""
        if self.tools or self.model_context is not None:
            self.tools = {}
            self.context = ModelContext()
            self._subscribers.notify()

    def want_tools(self, group: TaskGroup) -> None:
        """List the view's tools again, in ``group``: one listing at a time, and one more
        after it for changes announced meanwhile (a view flooding list-changed holds one
        request)."""
        self._refresh_again = True
        if not self._refreshing:
            self._refreshing = True
            group.start_soon(self._refresh_loop)

    def _set_context(self) -> None:
        system = render_model_context(self.model_context)
        tools = {name: self._remote_tool(spec) for name, spec in self.tools.items()}
        self.context = ModelContext(system=system, tools=tools)
        self._subscribers.notify()

    def _remote_tool(self, spec: mcp.Tool) -> Tool:
        name = spec.name
        call_tool = self._owner.call_tool

        async def invoke(args: Any, context: ToolCallContext) -> Any:
            return await call_tool(name, args)

        return tool_from_mcp(spec, invoke)

    async def _refresh_loop(self) -> None:
        try:
            for _ in range(_MAX_REFRESHES):  # bounded, though each waits for the view
                if not self._refresh_again:
                    break
                self._refresh_again = False
                await self._refresh_tools()
        finally:
            self._refreshing = False

    async def _refresh_tools(self) -> None:
        try:
            await self._owner.refresh_view_tools()
        except (AssistantFramesError, ProtocolError, TimeoutError) as exc:
            # A warning the first time: a view announcing changes and answering the
            # listings badly would otherwise make one for each of them.
            self._listing_failures += 1
            log_first_loudly(
                logger,
                self._listing_failures == 1,
                "Could not list the tools of the view %s: %s (failures: %d; later ones are"
                " logged at DEBUG)",
                self._owner.name,
                exc,
                self._listing_failures,
            )
