"""MCP ``Tool`` listings as assistant-frames tools, and back.

``MCPFrameHost`` (an MCP server's tools) and ``AppBridge`` (an MCP Apps view's own tools)
both turn a listed ``mcp_types.Tool`` into a :class:`~assistant_frames.Tool` whose calls
go back to that peer; the apps layer lists a context's tools as typed ``mcp_types.Tool``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types

from ..formats.tools import to_mcp_tools
from ..registry.annotations import ToolAnnotations
from ..registry.context import ModelContext
from ..registry.tool import Tool, ToolCallContext

__all__ = ["annotations_from_mcp", "icons_from_mcp", "mcp_tools", "tool_from_mcp"]


def mcp_tools(context: ModelContext) -> list[types.Tool]:
    """The context's tools as typed MCP ``Tool`` listings, as our MCP server lists them.

    Raises ``ValueError`` for a tool whose schema MCP cannot carry (not an object).
    """
    return [types.Tool.model_validate(tool) for tool in to_mcp_tools(context)]


def annotations_from_mcp(spec: types.Tool) -> ToolAnnotations | None:
    """The tool's annotations exactly as the server declared them (empty ones too).

    MCP has a title in two places, ``Tool.title`` and ``annotations.title``; each stays
    where the server put it (the tool keeps ``Tool.title`` as its own ``title``).
    """
    if spec.annotations is None:
        return None
    return ToolAnnotations.model_validate(
        spec.annotations.model_dump(by_alias=True, exclude_none=True)
    )


def icons_from_mcp(spec: types.Tool) -> list[dict[str, Any]] | None:
    """The tool's icons in their wire shape, as the server declared them."""
    if spec.icons is None:
        return None
    return [icon.model_dump(mode="json", by_alias=True, exclude_none=True) for icon in spec.icons]


def tool_from_mcp(
    spec: types.Tool, invoke: Callable[[Any, ToolCallContext], Awaitable[Any]]
) -> Tool:
    """An assistant-frames tool described by ``spec`` whose calls run ``invoke(args, context)``.

    What the server declared is kept as declared, so that listing the tool again (by
    :class:`~assistant_frames.mcp.MCPContextServer`) reproduces it field for field:
    ``title``, ``description``, ``inputSchema``, ``outputSchema``, ``annotations``,
    ``icons`` and ``_meta``. (``execution``, the session's task support, is not a
    property of the tool that a proxy can pass on: calls through assistant-frames are
    never tasks.)
    """
    return Tool.from_parts(
        spec.name,
        invoke,
        description=spec.description,
        parameters=spec.input_schema,
        title=spec.title,
        icons=icons_from_mcp(spec),
        annotations=annotations_from_mcp(spec),
        output_schema=spec.output_schema,
        meta=spec.meta,
    )
