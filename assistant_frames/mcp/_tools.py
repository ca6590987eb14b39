"""MCP ``Tool`` listings as assistant-frames tools, and back.

``MCPFrame`` (an MCP server's tools) and ``AppBridge`` (an MCP Apps view's own tools)
both turn a listed ``mcp_types.Tool`` into a :class:`~assistant_frames.Tool` whose calls
go back to that peer; the apps layer lists a context's tools as typed ``mcp_types.Tool``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types

from ..registry.annotations import ToolAnnotations
from ..registry.context import ModelContext
from ..registry.tool import Tool, ToolCallContext
from ..tool_formats import to_mcp_tools

__all__ = ["annotations_from_mcp", "mcp_tools", "tool_from_mcp"]


def mcp_tools(context: ModelContext) -> list[types.Tool]:
    """The context's tools as typed MCP ``Tool`` listings, as our MCP server lists them.

    Raises ``ValueError`` for a tool whose schema MCP cannot carry (not an object).
    """
    return [types.Tool.model_validate(tool) for tool in to_mcp_tools(context)]


def annotations_from_mcp(spec: types.Tool) -> ToolAnnotations | None:
    """The tool's annotations, with MCP's ``Tool.title`` as their title.

    MCP has a title in both places; the tool's own wins, as in MCP's display order.
    """
    wire = spec.annotations.model_dump(by_alias=True, exclude_none=True) if spec.annotations else {}
    if spec.title:
        wire["title"] = spec.title
    return ToolAnnotations.model_validate(wire) if wire else None


def tool_from_mcp(
    spec: types.Tool, invoke: Callable[[Any, ToolCallContext], Awaitable[Any]]
) -> Tool:
    """An assistant-frames tool described by ``spec`` whose calls run ``invoke(args, context)``."""
    return Tool.from_parts(
        spec.name,
        invoke,
        description=spec.description,
        parameters=spec.input_schema,
        annotations=annotations_from_mcp(spec),
        output_schema=spec.output_schema,
        meta=spec.meta,
    )
