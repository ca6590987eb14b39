"""How an MCP server's tools and ``ui://`` resources become an
:class:`~assistant_frames.mcp.MCPFrameHost`'s context (:func:`server_context`).

Each listed tool becomes a :class:`~assistant_frames.Tool` whose calls go back through
the frame host; a frame host that opts in also offers one ``read_resource`` tool listing
the server's resources; the ``ui://`` app resources of tools with MCP Apps UIs are read
once each, until the server says its resources changed. A listing that changed nothing
is no news to the frame host's subscribers (:func:`same_context`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.server.apps import APP_MIME_TYPE
from mcp.shared.exceptions import MCPError

from ..registry.context import ModelContext
from ..registry.tool import Tool, ToolCallContext
from ..registry.ui import UIResource
from ._apps import declares_ui, ui_resource_from_read
from ._resources import READ_RESOURCE, read_resource_tool
from .client import list_all
from .listings import ServerListings
from .tools import tool_from_mcp

__all__ = ["same_context", "server_context"]

logger = logging.getLogger("assistant_frames.mcp")

#: The frame host's ``call_tool(name, args, *, on_event=None)``.
_CallTool = Callable[..., Awaitable[Any]]
#: The frame host's ``read_resource(uri)``.
_ReadResource = Callable[[str], Awaitable[types.ReadResourceResult]]


async def server_context(
    name: str,
    client: Client,
    listings: ServerListings,
    *,
    call_tool: _CallTool,
    read: _ReadResource,
    offer_resources: bool,
    ui_cache: dict[str, UIResource],
) -> ModelContext:
    """The context of the server of the frame host ``name``: its instructions, its tools
    (called through ``call_tool``), the ``read_resource`` tool if ``offer_resources``,
    and its tools' ``ui://`` resources (read through ``read``, kept in ``ui_cache``)."""
    tools: list[types.Tool] = []
    if client.server_capabilities.tools is not None:
        tools = await list_all(client, "tools")
    reader = await _resource_tool(client, listings, read) if offer_resources else None
    has_ui = any(declares_ui(tool.meta) for tool in tools)
    ui_resources = (
        await _read_ui_resources(name, client, listings, read, ui_cache) if has_ui else {}
    )
    offered = {tool.name: _server_tool(tool, call_tool) for tool in tools}
    if reader is not None and READ_RESOURCE not in offered:  # the server's own wins
        offered[READ_RESOURCE] = reader
    return ModelContext(
        system=client.instructions or None, tools=offered, ui_resources=ui_resources
    )


def _server_tool(spec: types.Tool, call_tool: _CallTool) -> Tool:
    """The server's tool ``spec`` as one of ours, called through ``call_tool``."""
    name = spec.name

    async def invoke(args: Any, context: ToolCallContext) -> Any:
        if context.wants_events:  # the server's progress becomes the caller's
            return await call_tool(name, args, on_event=context.send_event)
        return await call_tool(name, args)

    return tool_from_mcp(spec, invoke)


async def _resource_tool(
    client: Client, listings: ServerListings, read: _ReadResource
) -> Tool | None:
    """The ``read_resource`` tool listing the server's resources (``None``: it has none)."""
    if client.server_capabilities.resources is None:
        return None
    listings.forget("resources", "resource_templates")  # this runs because they changed
    resources = await listings.listing("resources")
    templates = await listings.listing("resource_templates")
    return read_resource_tool(resources, templates, read)


async def _read_ui_resources(
    name: str,
    client: Client,
    listings: ServerListings,
    read: _ReadResource,
    cache: dict[str, UIResource],
) -> dict[str, UIResource]:
    """The ``ui://`` app resources of the server of the frame host ``name``, read once
    each (``cache``, by URI, until they change).

    One that cannot be read or is not an app (wrong MIME, two contents...) is
    logged and left out: its tool stays usable, only without a view.
    """
    if client.server_capabilities.resources is None:
        return {}
    found: dict[str, UIResource] = {}
    for listed in await listings.listing("resources"):
        uri = str(listed.uri)
        if not uri.startswith("ui://") or listed.mime_type not in (None, APP_MIME_TYPE):
            continue
        resource = cache.get(uri)
        if resource is None:
            try:
                resource = ui_resource_from_read(listed, await read(uri))
            except (MCPError, TimeoutError, ValueError) as exc:
                logger.warning("MCP frame %s: UI resource %s left out: %s", name, uri, exc)
                continue
            cache[uri] = resource
        found[uri] = resource
    return found


def same_context(a: ModelContext, b: ModelContext) -> bool:
    """Whether ``a`` offers what ``b`` does (the tools compared by what they declare)."""
    if a.system != b.system or a.tools.keys() != b.tools.keys():
        return False
    if a.ui_resources != b.ui_resources:
        return False
    return all(_same_tool(tool, b.tools[name]) for name, tool in a.tools.items())


def _same_tool(a: Tool, b: Tool) -> bool:
    return (
        a.description == b.description
        and a.title == b.title
        and a.icons == b.icons
        and a.parameters == b.parameters
        and a.annotations == b.annotations
        and a.output_schema == b.output_schema
        and a.meta == b.meta
    )
