"""The MCP Apps methods: their names, versions, and the table of who sends what.

:data:`METHODS` has every method either peer may send (the ``ui/*`` extension and the
MCP methods a view proxies to its server), each with its params and result models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

import mcp_types as mcp
from pydantic import BaseModel

from .models import (
    ActionResult,
    DownloadFileParams,
    Empty,
    HostContext,
    InitializeParams,
    InitializeResult,
    MessageParams,
    OpenLinkParams,
    RequestDisplayModeParams,
    RequestDisplayModeResult,
    SandboxResourceReadyParams,
    SizeChangedParams,
    ToolCancelledParams,
    ToolInputParams,
    UpdateModelContextParams,
    _Open,
)

__all__ = [
    "DOWNLOAD_FILE",
    "HOST_CONTEXT_CHANGED",
    "INITIALIZE",
    "INITIALIZED",
    "MESSAGE",
    "METHODS",
    "OPEN_LINK",
    "PROTOCOL_VERSION",
    "REQUEST_DISPLAY_MODE",
    "REQUEST_TEARDOWN",
    "RESOURCE_TEARDOWN",
    "SANDBOX_PROXY_READY",
    "SANDBOX_RESOURCE_READY",
    "SIZE_CHANGED",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "TOOL_CANCELLED",
    "TOOL_INPUT",
    "TOOL_INPUT_PARTIAL",
    "TOOL_RESULT",
    "UPDATE_MODEL_CONTEXT",
    "MethodSpec",
]

#: The protocol version this library speaks (ext-apps ``LATEST_PROTOCOL_VERSION``).
PROTOCOL_VERSION: Final = "2026-01-26"
#: The versions a host accepts; an initialize asking for another gets the latest.
SUPPORTED_PROTOCOL_VERSIONS: Final = (PROTOCOL_VERSION,)

# -- method names (ext-apps ``*_METHOD`` constants) --------------------------------------------

INITIALIZE: Final = "ui/initialize"
INITIALIZED: Final = "ui/notifications/initialized"
TOOL_INPUT: Final = "ui/notifications/tool-input"
TOOL_INPUT_PARTIAL: Final = "ui/notifications/tool-input-partial"
TOOL_RESULT: Final = "ui/notifications/tool-result"
TOOL_CANCELLED: Final = "ui/notifications/tool-cancelled"
HOST_CONTEXT_CHANGED: Final = "ui/notifications/host-context-changed"
SIZE_CHANGED: Final = "ui/notifications/size-changed"
REQUEST_TEARDOWN: Final = "ui/notifications/request-teardown"
SANDBOX_PROXY_READY: Final = "ui/notifications/sandbox-proxy-ready"
SANDBOX_RESOURCE_READY: Final = "ui/notifications/sandbox-resource-ready"
MESSAGE: Final = "ui/message"
OPEN_LINK: Final = "ui/open-link"
DOWNLOAD_FILE: Final = "ui/download-file"
UPDATE_MODEL_CONTEXT: Final = "ui/update-model-context"
REQUEST_DISPLAY_MODE: Final = "ui/request-display-mode"
RESOURCE_TEARDOWN: Final = "ui/resource-teardown"


class _EmptyResult(_Open):
    """An open, empty result (``ui/resource-teardown``...)."""


# -- the method table --------------------------------------------------------------------------


@dataclass(frozen=True)
class MethodSpec:
    """One method: request or notification, its params and result models, its direction.

    ``params`` ``None``: the method takes no params (any received are ignored).
    ``result`` ``None``: a notification. ``sender`` is who sends it: ``"view"``,
    ``"host"`` or ``"both"``. ``schema`` and ``result_schema`` name the ext-apps
    ``schema.json`` definitions, for the ``ui/*`` methods that have one.
    """

    method: str
    params: type[BaseModel] | None
    result: type[BaseModel] | None
    sender: Literal["view", "host", "both"]
    schema: str | None = None
    result_schema: str | None = None

    @property
    def is_request(self) -> bool:
        """True for a request (it is answered), False for a notification."""
        return self.result is not None


def _specs(*specs: MethodSpec) -> dict[str, MethodSpec]:
    return {spec.method: spec for spec in specs}


#: Every method either peer may send: the ``ui/*`` extension and the MCP methods it proxies.
METHODS: Final[Mapping[str, MethodSpec]] = _specs(
    MethodSpec(
        INITIALIZE,
        InitializeParams,
        InitializeResult,
        "view",
        "McpUiInitializeRequest",
        "McpUiInitializeResult",
    ),
    MethodSpec(INITIALIZED, None, None, "view", "McpUiInitializedNotification"),
    MethodSpec(TOOL_INPUT, ToolInputParams, None, "host", "McpUiToolInputNotification"),
    MethodSpec(
        TOOL_INPUT_PARTIAL, ToolInputParams, None, "host", "McpUiToolInputPartialNotification"
    ),
    MethodSpec(TOOL_RESULT, mcp.CallToolResult, None, "host", "McpUiToolResultNotification"),
    MethodSpec(TOOL_CANCELLED, ToolCancelledParams, None, "host", "McpUiToolCancelledNotification"),
    MethodSpec(
        HOST_CONTEXT_CHANGED, HostContext, None, "host", "McpUiHostContextChangedNotification"
    ),
    MethodSpec(SIZE_CHANGED, SizeChangedParams, None, "view", "McpUiSizeChangedNotification"),
    MethodSpec(REQUEST_TEARDOWN, None, None, "view", "McpUiRequestTeardownNotification"),
    # Unlike initialized and request-teardown, the schema requires its (empty) params.
    MethodSpec(SANDBOX_PROXY_READY, Empty, None, "view", "McpUiSandboxProxyReadyNotification"),
    MethodSpec(
        SANDBOX_RESOURCE_READY,
        SandboxResourceReadyParams,
        None,
        "host",
        "McpUiSandboxResourceReadyNotification",
    ),
    MethodSpec(
        MESSAGE, MessageParams, ActionResult, "view", "McpUiMessageRequest", "McpUiMessageResult"
    ),
    MethodSpec(
        OPEN_LINK,
        OpenLinkParams,
        ActionResult,
        "view",
        "McpUiOpenLinkRequest",
        "McpUiOpenLinkResult",
    ),
    MethodSpec(
        DOWNLOAD_FILE,
        DownloadFileParams,
        ActionResult,
        "view",
        "McpUiDownloadFileRequest",
        "McpUiDownloadFileResult",
    ),
    # No result definition in the schema: the SDK answers with an empty result.
    MethodSpec(
        UPDATE_MODEL_CONTEXT,
        UpdateModelContextParams,
        _EmptyResult,
        "view",
        "McpUiUpdateModelContextRequest",
    ),
    MethodSpec(
        REQUEST_DISPLAY_MODE,
        RequestDisplayModeParams,
        RequestDisplayModeResult,
        "view",
        "McpUiRequestDisplayModeRequest",
        "McpUiRequestDisplayModeResult",
    ),
    MethodSpec(
        RESOURCE_TEARDOWN,
        Empty,
        _EmptyResult,
        "host",
        "McpUiResourceTeardownRequest",
        "McpUiResourceTeardownResult",
    ),
    # MCP methods: the view's proxied requests, and the host asking for the view's tools.
    MethodSpec("tools/call", mcp.CallToolRequestParams, mcp.CallToolResult, "both"),
    MethodSpec("tools/list", mcp.PaginatedRequestParams, mcp.ListToolsResult, "both"),
    MethodSpec("resources/read", mcp.ReadResourceRequestParams, mcp.ReadResourceResult, "view"),
    MethodSpec("resources/list", mcp.PaginatedRequestParams, mcp.ListResourcesResult, "view"),
    MethodSpec(
        "resources/templates/list",
        mcp.PaginatedRequestParams,
        mcp.ListResourceTemplatesResult,
        "view",
    ),
    MethodSpec("prompts/list", mcp.PaginatedRequestParams, mcp.ListPromptsResult, "view"),
    MethodSpec(
        "sampling/createMessage",
        mcp.CreateMessageRequestParams,
        mcp.CreateMessageResultWithTools,  # also single-content results
        "view",
    ),
    MethodSpec("ping", None, mcp.EmptyResult, "both"),
    MethodSpec("notifications/message", mcp.LoggingMessageNotificationParams, None, "view"),
    MethodSpec("notifications/cancelled", mcp.CancelledNotificationParams, None, "both"),
    MethodSpec("notifications/progress", mcp.ProgressNotificationParams, None, "both"),
    MethodSpec("notifications/tools/list_changed", None, None, "both"),
    MethodSpec("notifications/resources/list_changed", None, None, "host"),
    MethodSpec("notifications/prompts/list_changed", None, None, "host"),
)
