"""What an MCP Apps view may ask of the app's MCP server, and how the host passes it on.

The view's ``tools/call``, ``tools/list``, ``resources/*`` and ``prompts/list`` go to the
server the app came from (an :class:`AppServer`: an ``MCPFrameHost``, or an ``mcp.Client``
through a :class:`~.client_server.ClientServer`). Visibility is enforced here, before
anything reaches the server: a view may call only the tools whose ``_meta.ui.visibility``
includes ``"app"`` (the ext-apps ``AppBridge`` leaves this to each host), as the server's
:meth:`~AppServer.wait_for_context` has them at that moment.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import mcp_types as mcp

from ..errors import AssistantFramesError, FrameDisconnected
from ..mcp.results import error_result, failure
from ..mcp.tools import mcp_tools
from ..registry.context import ModelContext, Unsubscribe
from ..registry.events import ToolEvent, ToolProgress
from . import protocol
from .bridge_machine import BridgeMachine
from .protocol import ProtocolError, Refused, Request

__all__ = ["FORWARDED", "AppServer", "forward"]


class AppServer(Protocol):
    """The MCP server an app came from, as the bridge uses it (an
    :class:`~assistant_frames.mcp.MCPFrameHost` is one, a
    :class:`~.client_server.ClientServer` another).

    :meth:`wait_for_context` gives the tools that decide what a view may call: it raises
    :class:`~assistant_frames.FrameDisconnected` once the server is gone.
    """

    async def wait_for_context(self, timeout: float | None = None) -> ModelContext:
        """The server's tools (once it has sent them); ``FrameDisconnected`` once gone."""
        ...

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` when the server's tools change."""
        ...

    def subscribe_resources(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` when the server says its resources changed."""
        ...

    def subscribe_prompts(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` when the server says its prompts changed."""
        ...

    async def call_tool_result(
        self,
        name: str,
        args: Any = None,
        *,
        timeout: float | None = None,
        on_event: Callable[[ToolEvent], object] | None = None,
    ) -> mcp.CallToolResult:
        """Call the server's tool ``name``; its ``CallToolResult`` as sent (an
        ``isError`` result is returned, not raised)."""
        ...

    async def read_resource(self, uri: str) -> mcp.ReadResourceResult:
        """Read the resource at ``uri`` (a view's HTML, for one)."""
        ...

    async def list_resources(self) -> list[mcp.Resource]:
        """The server's resources."""
        ...

    async def list_resource_templates(self) -> list[mcp.ResourceTemplate]:
        """The server's resource templates."""
        ...

    async def list_prompts(self) -> list[mcp.Prompt]:
        """The server's prompts."""
        ...


#: The view's requests that go to the app's server.
FORWARDED: Final = frozenset(
    {
        "tools/call",
        "tools/list",
        "resources/read",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
    }
)


async def forward(
    server: AppServer | None, request: Request, send_soon: Callable[[list[dict[str, Any]]], None]
) -> Any:
    """Answer a view's ``request`` (a method in :data:`FORWARDED`) from the app's server.

    Raises a :class:`~.protocol.ProtocolError` that answers the view: ``Refused`` for a
    tool it may not call or a server that is gone, the server's own code otherwise.
    ``send_soon`` sends notifications (a forwarded call's progress) in order.
    """
    if server is None:
        raise protocol.MethodNotFound(
            f"Method not found: {request.method} (this host has no server for the app)"
        )
    method = request.method
    try:
        if method == "tools/call":
            return await _forward_tool_call(server, request, send_soon)
        if method == "tools/list":
            tools = mcp_tools(await server.wait_for_context())
            return mcp.ListToolsResult(tools=[t for t in tools if BridgeMachine.may_call(t)])
        if method == "resources/read":
            return await server.read_resource(request.params.uri)
        if method == "resources/list":
            return mcp.ListResourcesResult(resources=await server.list_resources())
        if method == "resources/templates/list":
            templates = await server.list_resource_templates()
            return mcp.ListResourceTemplatesResult(resource_templates=templates)
        return mcp.ListPromptsResult(prompts=await server.list_prompts())
    except FrameDisconnected as exc:
        raise Refused(f"The app's server is gone: {exc.message}") from None
    except TimeoutError:
        raise Refused(f"The app's server did not answer {method} in time") from None
    except ProtocolError:
        raise
    except Exception as exc:
        code = getattr(exc, "code", None)  # the SDK's MCPError carries the server's code
        if isinstance(code, int) and not isinstance(code, bool):
            raise _ServerError(getattr(exc, "message", None) or str(exc), code) from None
        raise


async def _forward_tool_call(
    server: AppServer, request: Request, send_soon: Callable[[list[dict[str, Any]]], None]
) -> Any:
    params: mcp.CallToolRequestParams = request.params
    name = params.name
    # Asked at each call, not remembered: a tool may have come, gone or changed since.
    tool = (await server.wait_for_context()).tools.get(name)
    if tool is None:
        raise Refused(f'Tool "{name}" is not a tool of the app\'s server')
    if not BridgeMachine.may_call(tool.meta):
        shown = list(protocol.visibility(tool.meta))
        raise Refused(f'Tool "{name}" is not visible to apps (its visibility is {shown})')
    token = _progress_token(request.raw_params)
    on_event = None
    if token is not None:

        def on_event(event: ToolEvent) -> None:
            if isinstance(event, ToolProgress):
                note = {"progressToken": token, "progress": event.progress}
                if event.total is not None:
                    note["total"] = event.total
                if event.message is not None:
                    note["message"] = event.message
                send_soon([protocol.encode_notification("notifications/progress", note)])

    try:
        return await server.call_tool_result(name, params.arguments, on_event=on_event)
    except AssistantFramesError as exc:  # said as our MCP server says it (a gone one too)
        code, message = failure(exc)
        if code is not None:
            raise _ServerError(message, code) from None
        return error_result(message)


class _ServerError(ProtocolError):
    """The server's own JSON-RPC error, passed on to the view with its code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.jsonrpc_code = code


def _progress_token(params: Mapping[str, Any] | None) -> str | int | None:
    meta = params.get("_meta") if params else None
    token = meta.get("progressToken") if isinstance(meta, Mapping) else None
    valid = isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool))
    return token if valid else None
