"""A connected ``mcp.Client`` as the app's server of an :class:`~.bridge.AppBridge`.

A host that already holds an entered ``mcp.Client`` for the app's server passes it as
``AppBridge(transport, server=client)``; the bridge wraps it in a :class:`ClientServer`.

The tools that decide what a view may call are listed afresh for each decision (each
``tools/call`` and ``tools/list`` of the view), never remembered: a bare ``Client`` tells
nobody of list changes (its ``message_handler`` is fixed when it is made, and on
2026-07-28 connections changes come only on a ``listen()`` stream its holder may never
open), and a remembered list would let a tool through whose visibility has since become
model-only, or refuse a new one. The listing bypasses the SDK's response cache for
reading (``cache_mode="refresh"``: fetched, then stored for the client's other users),
since the cache serves what the server allowed to be cached, for as long as it allowed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from ..errors import FrameDisconnected, ToolCallError, ToolCallTimeout
from ..mcp.client import Listing, check_arguments, list_all, progress_callback
from ..mcp.results import from_call_result
from ..mcp.tools import tool_from_mcp
from ..registry.context import ModelContext, Subscribers, Unsubscribe
from ..registry.events import ToolEventCallback, deliver_event
from ..registry.tool import Tool, ToolCallContext

if TYPE_CHECKING:
    from .forwarding import AppServer

__all__ = ["ClientServer", "as_app_server"]


def as_app_server(server: AppServer | Client | None) -> AppServer | None:
    """``server`` as the hosts of views use it: an entered ``mcp.Client`` is wrapped in a
    :class:`ClientServer`; an ``MCPFrameHost`` (or any ``AppServer``) is used as it is."""
    return ClientServer(server) if isinstance(server, Client) else server


_T = TypeVar("_T")
# What a transport that broke under the client raises, besides the SDK's CONNECTION_CLOSED.
_BROKEN = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)


class ClientServer:
    """An entered ``mcp.Client`` as an :class:`~.forwarding.AppServer`.

    The client stays its holder's: this neither enters nor closes it. Once it is closed
    (or its connection broke) every request raises
    :class:`~assistant_frames.FrameDisconnected`, which the bridge answers the view with
    as refused. ``timeout`` bounds each request (``None``: only the client's own
    ``read_timeout_seconds``); ``name`` names the server in errors.

    A bare client's notifications reach only the ``message_handler`` it was made with:
    to tell views that the server's lists changed, make the ``ClientServer`` yourself,
    pass it as the bridge's ``server`` and call :meth:`tools_changed` (and
    :meth:`resources_changed`, :meth:`prompts_changed`) from there. What a view may call
    does not depend on it: tools are listed afresh for each decision.
    """

    def __init__(self, client: Client, *, timeout: float | None = 30.0, name: str | None = None):
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive or None, not {timeout!r}")
        self.client = client
        self.timeout = timeout
        #: The server's name in errors (default: the name it gave when connecting).
        self.name = name or _server_name(client)
        self._tool_subscribers = Subscribers()
        self._resource_subscribers = Subscribers()
        self._prompt_subscribers = Subscribers()

    # -- tools ---------------------------------------------------------------------------

    async def wait_for_context(self, timeout: float | None = None) -> ModelContext:
        """The server's tools as it lists them now (every page), with its instructions.

        Raises :class:`FrameDisconnected` when the client is closed, ``TimeoutError``
        after ``timeout`` seconds (default: this server's) and the SDK's ``MCPError``
        when the server refuses.
        """
        client = self._connected()
        specs: list[types.Tool] = []
        if client.server_capabilities.tools is not None:
            specs = await self._request(
                "tools/list", lambda: list_all(client, "tools", cache_mode="refresh"), timeout
            )
        tools = {spec.name: self._tool(spec) for spec in specs}
        return ModelContext(system=client.instructions or None, tools=tools)

    async def call_tool_result(
        self,
        name: str,
        args: Any = None,
        *,
        timeout: float | None = None,
        on_event: ToolEventCallback | None = None,
    ) -> types.CallToolResult:
        """Call the server's tool ``name`` and return its ``CallToolResult`` as sent.

        ``on_event`` receives the server's progress reports as
        :class:`~assistant_frames.ToolProgress`; cancelling the caller cancels the call
        on the server. Raises the SDK's ``MCPError`` (with the server's code) for a
        JSON-RPC error, :class:`ToolCallTimeout` after ``timeout`` seconds (default:
        this server's), :class:`ToolCallError` for a result the SDK finds invalid and
        :class:`FrameDisconnected` when the client is or gets closed.
        """
        client = self._connected(name)
        check_arguments(name, args)
        progress = None
        if on_event is not None:
            progress = progress_callback(None, name, lambda event: deliver_event(on_event, event))
        limit = self.timeout if timeout is None else timeout

        async def call() -> types.CallToolResult:
            return await client.call_tool(name, args, progress_callback=progress)

        try:
            return await self._request(f"tools/call {name}", call, limit, name)
        except TimeoutError:
            raise ToolCallTimeout(name, limit or 0.0) from None
        except (RuntimeError, ValidationError) as exc:
            self._connected(name)  # closed under the call: say so
            # Otherwise the SDK found the result malformed, or not of the outputSchema.
            raise ToolCallError(
                f'The {self._what} sent an invalid result for tool "{name}": {exc}',
                tool_name=name,
            ) from exc

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` on each :meth:`tools_changed`."""
        return self._tool_subscribers.add(callback)

    def tools_changed(self) -> None:
        """Say that the server's tools changed (the bridge tells its view)."""
        self._tool_subscribers.notify()

    # -- resources and prompts ----------------------------------------------------------

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """Read the resource at ``uri``; errors as :meth:`wait_for_context`."""
        client = self._connected()
        return await self._request(f"resources/read {uri}", lambda: client.read_resource(uri))

    async def list_resources(self) -> list[types.Resource]:
        """The server's resources (every page; none if it offers no resources)."""
        return await self._list("resources")

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        """The server's resource templates (every page)."""
        return await self._list("resource_templates")

    async def list_prompts(self) -> list[types.Prompt]:
        """The server's prompts (every page; none if it offers no prompts)."""
        return await self._list("prompts")

    def subscribe_resources(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` on each :meth:`resources_changed`."""
        return self._resource_subscribers.add(callback)

    def resources_changed(self) -> None:
        """Say that the server's resources (or templates) changed."""
        self._resource_subscribers.notify()

    def subscribe_prompts(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` on each :meth:`prompts_changed`."""
        return self._prompt_subscribers.add(callback)

    def prompts_changed(self) -> None:
        """Say that the server's prompts changed."""
        self._prompt_subscribers.notify()

    # -- the client ----------------------------------------------------------------------

    async def _list(self, kind: Listing) -> list[Any]:
        client = self._connected()
        capabilities = client.server_capabilities
        if (capabilities.prompts if kind == "prompts" else capabilities.resources) is None:
            return []  # the server has none: nothing to ask
        # Through the SDK's cache as its holder configured it: unlike tools, nothing the
        # bridge enforces depends on these lists.
        return await self._request(
            kind.replace("_", " "), lambda: list_all(client, kind, cache_mode="use")
        )

    def _connected(self, tool_name: str | None = None) -> Client:
        try:
            _ = self.client.session  # raises once the client's block has ended
        except RuntimeError:
            raise FrameDisconnected(
                f"The mcp.Client of the {self._what} is closed",
                tool_name=tool_name,
            ) from None
        return self.client

    async def _request(
        self,
        what: str,
        send: Callable[[], Awaitable[_T]],
        timeout: float | None = None,
        tool_name: str | None = None,
    ) -> _T:
        """``send()`` bounded by ``timeout`` (default: this server's); a connection that
        is gone is a :class:`FrameDisconnected`."""
        limit = self.timeout if timeout is None else timeout
        try:
            with anyio.fail_after(limit):
                return await send()
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                raise self._gone(exc.message, tool_name) from None
            raise
        except _BROKEN as exc:
            raise self._gone(str(exc) or type(exc).__name__, tool_name) from None
        except TimeoutError:
            raise TimeoutError(f"The {self._what}: {what} timed out after {limit:g} s") from None

    @property
    def _what(self) -> str:
        return f'MCP server "{self.name}"' if self.name else "app's MCP server"

    def _gone(self, reason: str, tool_name: str | None) -> FrameDisconnected:
        return FrameDisconnected(f"The {self._what} went away: {reason}", tool_name=tool_name)

    def _tool(self, spec: types.Tool) -> Tool:
        name = spec.name

        async def invoke(args: Any, context: ToolCallContext) -> Any:
            on_event = context.send_event if context.wants_events else None
            return from_call_result(
                await self.call_tool_result(name, args, on_event=on_event), name
            )

        return tool_from_mcp(spec, invoke)

    def __repr__(self) -> str:
        return f"ClientServer({self.name!r})"


def _server_name(client: Client) -> str:
    try:
        info = client.server_info
    except RuntimeError:  # not entered (yet, or any more): every request will say so
        info = None
    return info.name if info is not None else ""
