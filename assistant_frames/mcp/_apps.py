"""MCP Apps as ``MCPContextServer`` serves them: stamped tools and ``ui://`` resources.

What the SDK's ``mcp.server.apps`` does for its own servers, for a model context: tools
keep ``_meta.ui`` as declared and gain the legacy flat ``ui/resourceUri`` key that
hosts still read; the context's UI resources are listed and read as
``text/html;profile=mcp-app`` with their ``_meta.ui``. And the other way, for
``MCPFrameHost``: a server's ``ui://`` resources as :class:`UIResource` values.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

import mcp_types as types
from mcp.server.apps import APP_MIME_TYPE
from mcp.shared.exceptions import MCPError

from ..formats.tools import MCPTool
from ..registry.context import ModelContext
from ..registry.ui import ToolUI, UIResource
from ._openai import (
    DIALECTS,
    AppDialect,
    skybridge_contents,
    skybridge_of,
    skybridge_resource,
    stamp_openai,
)

__all__ = [
    "LEGACY_RESOURCE_URI_KEY",
    "declares_ui",
    "list_resources",
    "read_resource",
    "stamp_tools",
    "ui_resource_from_read",
]

LEGACY_RESOURCE_URI_KEY: Final = "ui/resourceUri"
"""The flat ``_meta`` key older hosts read (``apps.protocol.RESOURCE_URI_META_KEY``)."""


def stamp_tools(tools: list[MCPTool], dialects: tuple[AppDialect, ...] = DIALECTS) -> list[MCPTool]:
    """``tools`` with the legacy flat key added to each that declares a UI, and the
    ``dialects``' keys kept or added (in place: ``to_mcp_tools`` copied ``_meta``)."""
    for tool in tools:
        meta: Any = tool.get("_meta")
        ui = ToolUI.from_meta(meta)
        if ui is not None and LEGACY_RESOURCE_URI_KEY not in meta:
            meta[LEGACY_RESOURCE_URI_KEY] = ui.resource_uri
        stamp_openai(tool, openai="openai" in dialects, mcp_apps="mcp-apps" in dialects)
    return tools


def _resource(resource: UIResource) -> dict[str, Any]:
    # The SDK names an unnamed resource by its URI; so do we, so listings compare equal.
    entry: dict[str, Any] = {"name": resource.name or resource.uri, "uri": resource.uri}
    if resource.title is not None:
        entry["title"] = resource.title
    if resource.description is not None:
        entry["description"] = resource.description
    entry["mimeType"] = APP_MIME_TYPE
    ui = resource.ui_meta()
    if ui:
        entry["_meta"] = {"ui": ui}
    return entry


def list_resources(
    context: ModelContext, dialects: tuple[AppDialect, ...] = DIALECTS
) -> dict[str, Any]:
    """A ``resources/list`` result (wire form) of the context's UI resources: each as an
    MCP App and/or as its ``text/html+skybridge`` variant, as ``dialects`` say."""
    listed: list[dict[str, Any]] = []
    for resource in context.ui_resources.values():
        if "mcp-apps" in dialects:
            listed.append(_resource(resource))
        if "openai" in dialects:
            listed.append(skybridge_resource(resource))
    return {"resources": listed}


def read_resource(
    resources: Mapping[str, UIResource], uri: str, dialects: tuple[AppDialect, ...] = DIALECTS
) -> dict[str, Any]:
    """A ``resources/read`` result (wire form); an unknown URI is an invalid-params error."""
    resource = resources.get(uri) if "mcp-apps" in dialects else None
    if resource is None:
        variant = skybridge_of(resources, uri) if "openai" in dialects else None
        if variant is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown resource: {uri}")
        return {"contents": [skybridge_contents(variant)]}
    content: dict[str, Any] = {"uri": uri, "mimeType": APP_MIME_TYPE}
    ui = resource.ui_meta()
    if ui:
        content["_meta"] = {"ui": ui}
    content["text"] = resource.html
    return {"contents": [content]}


def declares_ui(meta: Mapping[str, Any] | None) -> bool:
    """Whether a listed tool's ``_meta`` points at a UI (``_meta.ui`` or the legacy key)."""
    if not meta:
        return False
    legacy = meta.get(LEGACY_RESOURCE_URI_KEY)
    return ToolUI.from_meta(meta) is not None or (
        isinstance(legacy, str) and legacy.startswith("ui://")
    )


def ui_resource_from_read(listed: types.Resource, result: types.ReadResourceResult) -> UIResource:
    """A read ``ui://`` resource as a :class:`UIResource`; ``ValueError`` if it is not one.

    Exactly one content of MIME ``text/html;profile=mcp-app``, text or base64 blob; its
    ``_meta.ui`` wins over the listing's, key by key.
    """
    uri = str(listed.uri)
    contents = [c for c in result.contents if c.mime_type == APP_MIME_TYPE]
    if len(contents) != 1:
        raise ValueError(
            f"{uri} has {len(contents)} contents of MIME {APP_MIME_TYPE!r}, not exactly one"
        )
    content = contents[0]
    if isinstance(content, types.TextResourceContents):
        html = content.text
    else:
        try:
            html = base64.b64decode(content.blob, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise ValueError(f"{uri}: its blob is not base64 UTF-8 HTML ({exc})") from None
    ui = {**_ui_of(listed.meta), **_ui_of(content.meta)}
    return UIResource.from_wire(
        {
            "uri": uri,
            "text": html,
            "name": listed.name,
            "title": listed.title,
            "description": listed.description,
            "_meta": {"ui": ui},
        }
    )


def _ui_of(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    ui = meta.get("ui") if meta else None
    return dict(ui) if isinstance(ui, Mapping) else {}
