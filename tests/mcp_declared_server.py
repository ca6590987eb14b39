"""An MCP server (the official ``mcp`` SDK's low-level server, on stdio) whose tools
declare every descriptive field MCP has, some in ways a proxy could easily blur:

- ``forecast``: a top-level ``title`` and a *different* ``annotations.title``, ``icons``,
  ``_meta``, an ``outputSchema``, and schemas with ``$schema``, ``$defs`` and ``$ref``;
- ``annotated``: a title only in its annotations; ``titled``: one only at the top level;
- ``hintless``: empty annotations (``{}``); ``bare``: a name and an input schema only.

``tests/mcp/test_mcp_passthrough.py`` starts it as a subprocess: ``python mcp_declared_server.py``.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"
SUN = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4="

TOOLS: list[dict[str, Any]] = [
    {
        "name": "forecast",
        "title": "Weather forecast",
        "description": "Tomorrow's weather for a city.",
        "inputSchema": {
            "$schema": DRAFT_2020,
            "type": "object",
            "properties": {"place": {"$ref": "#/$defs/Place"}},
            "required": ["place"],
            "$defs": {
                "Place": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "minLength": 1}},
                    "required": ["city"],
                }
            },
        },
        "outputSchema": {
            "$schema": DRAFT_07,
            "type": "object",
            "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["city", "celsius"],
            "additionalProperties": False,
        },
        "icons": [
            {"src": "https://example.com/sun.png", "mimeType": "image/png", "sizes": ["48x48"]},
            {"src": SUN, "mimeType": "image/svg+xml", "sizes": ["any"], "theme": "dark"},
        ],
        "annotations": {
            "title": "Forecast (from the annotations)",
            "readOnlyHint": True,
            "idempotentHint": True,
            "openWorldHint": True,
        },
        "_meta": {"com.example/cache": "1h", "com.example/limits": {"perMinute": [10, 60]}},
    },
    {
        "name": "annotated",
        "description": "Its title is only in its annotations.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"title": "Only in the annotations", "destructiveHint": True},
    },
    {
        "name": "titled",
        "title": "Only at the top",
        "description": "Its title is only at the top level.",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    },
    {
        "name": "hintless",
        "description": "Empty annotations.",
        "inputSchema": {"type": "object"},
        "annotations": {},
    },
    {"name": "bare", "inputSchema": {"type": "object"}},
]


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in TOOLS])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "forecast":
        city = (params.arguments or {})["place"]["city"]
        result = {"city": city, "celsius": 21.5}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"{city}: 21.5 C")],
            structured_content=result,
        )
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])


async def main() -> None:
    server: Server[Any] = Server("declared", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
