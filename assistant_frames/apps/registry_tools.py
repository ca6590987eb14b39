"""A registry's tools, as an :class:`~assistant_frames.apps.App` offers them to its host.

The host lists them (``tools/list``) and calls them (``tools/call``) as it would an MCP
server's, and hears them said as assistant-frames' MCP server says them: the same tool
definitions, results and failures (the error table).
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as mcp

from ..errors import AssistantFramesError
from ..mcp.results import error_result, failure, tool_result
from ..mcp.tools import mcp_tools
from ..registry.context import ModelContext, ModelContextProvider
from . import protocol

__all__ = ["call_registry_tool", "list_registry_tools"]

logger = logging.getLogger("assistant_frames.apps")


def list_registry_tools(registry: ModelContextProvider) -> mcp.ListToolsResult:
    """The ``tools/list`` answer: the registry's enabled tools, each that MCP can carry."""
    tools: list[mcp.Tool] = []
    for name, tool in registry.get_model_context().enabled_tools().items():
        try:
            tools.extend(mcp_tools(ModelContext(tools={name: tool})))
        except (TypeError, ValueError) as exc:  # a schema MCP cannot carry
            logger.warning("Tool %r is not offered to the host: %s", name, exc)
    return mcp.ListToolsResult(tools=tools)


async def call_registry_tool(
    registry: ModelContextProvider, params: mcp.CallToolRequestParams
) -> mcp.CallToolResult:
    """The ``tools/call`` answer: the result, or a failure as the error table says MCP says
    it (:class:`~.protocol.InvalidParams` for one said as a JSON-RPC error)."""
    name = params.name
    tool = registry.get_model_context().tools.get(name)
    if tool is None or tool.disabled:
        raise protocol.InvalidParams(f'Tool "{name}" not found', method="tools/call")
    try:
        value = await tool.invoke(params.arguments or {})
    except Exception as exc:  # as the error table says MCP says it
        if not isinstance(exc, AssistantFramesError):
            logger.debug("Tool %r raised", name, exc_info=True)
        code, message = failure(exc)
        if code is not None:
            raise protocol.InvalidParams(message, method="tools/call") from None
        return mcp.CallToolResult.model_validate(error_result(message))
    return _tool_result(value)


def _tool_result(value: Any) -> mcp.CallToolResult:
    return mcp.CallToolResult.model_validate(tool_result(value, modern=False))
