"""An MCP server's resources as one model tool, for frames that opt in.

MCP resources are application-controlled: a host reads them when it chooses. A host that
wants the model to choose instead can give it one ``read_resource`` tool whose
description lists what there is to read (resources by URI, templates by URI template).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import mcp_types as types

from ..registry.tool import Tool, ToolCallContext

__all__ = ["READ_RESOURCE", "read_resource_tool", "resource_value"]

READ_RESOURCE = "read_resource"
_LISTED = 50  # resources named in the description; a long catalogue is cut, with a count
_PARAMETERS = {
    "type": "object",
    "properties": {"uri": {"type": "string", "description": "The URI of the resource to read."}},
    "required": ["uri"],
    "additionalProperties": False,
}


def read_resource_tool(
    resources: Sequence[types.Resource],
    templates: Sequence[types.ResourceTemplate],
    read: Callable[[str], Awaitable[types.ReadResourceResult]],
) -> Tool:
    """The ``read_resource`` tool for a server offering ``resources`` and ``templates``."""

    async def invoke(args: Any, context: ToolCallContext) -> Any:
        return resource_value(await read(args["uri"]))

    return Tool.from_parts(
        READ_RESOURCE,
        invoke,
        description=_description(resources, templates),
        parameters=_PARAMETERS,
    )


def _description(
    resources: Sequence[types.Resource], templates: Sequence[types.ResourceTemplate]
) -> str:
    lines = ["Read one of this server's resources by its URI."]
    if resources:
        lines.append("Resources:")
        lines += [_line(r.uri, r.title or r.name, r.description) for r in resources[:_LISTED]]
        if len(resources) > _LISTED:
            lines.append(f"- ... and {len(resources) - _LISTED} more")
    if templates:
        lines.append("URI templates (fill in the {placeholders}):")
        lines += [_line(t.uri_template, t.title or t.name, t.description) for t in templates]
    if not resources and not templates:
        lines.append("It lists none at the moment.")
    return "\n".join(lines)


def _line(uri: str, name: str, description: str | None) -> str:
    about = f": {description.strip()}" if description and description.strip() else ""
    return f"- {uri} ({name}){about}"


def resource_value(result: types.ReadResourceResult) -> Any:
    """A read resource as a tool result: one text's string, else the contents' JSON."""
    contents = result.contents
    if len(contents) == 1 and isinstance(contents[0], types.TextResourceContents):
        return contents[0].text
    return [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in contents]
