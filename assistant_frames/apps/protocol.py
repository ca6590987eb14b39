"""The MCP Apps wire protocol, sans-I/O: constants, ``ui/*`` models, JSON-RPC 2.0 framing.

A view (the app, in its iframe) and its host exchange JSON-RPC 2.0 messages: the
``ui/*`` methods of the MCP Apps extension and the MCP requests a view may proxy to its
server (``tools/call``, ``resources/read``...). Names, shapes and versions follow the
shipped ``@modelcontextprotocol/ext-apps`` 2.0.4 (its ``schema.json``); where the spec
and that SDK differ, the SDK's wire behaviour wins.

:func:`decode` classifies a received dict as a :class:`Request`, :class:`Notification`,
:class:`Response` or :class:`ErrorResponse`, with the params of every method in
:data:`METHODS` validated into their model, and raises a :class:`ProtocolError`
(:class:`InvalidRequest`, :class:`MethodNotFound`, :class:`InvalidParams`) that knows
how to answer itself (:meth:`ProtocolError.to_wire`). The ``encode_*`` functions build
the plain dicts to send. Id correlation belongs to :class:`~assistant_frames.calls.PendingCalls`;
nothing here awaits or touches a transport.

MCP's own types (``Implementation``, ``Tool``, ``CallToolResult``, content blocks...) are
the ``mcp`` SDK's; the extension's constants and resource metadata come from
``mcp.server.apps``.

Not the ``mcp`` SDK's JSON-RPC dispatcher: it owns its read loop and session, while this
module must classify single messages that arrive on a sub-stream shared with the frame
channel (see :mod:`assistant_frames.transports.multiplex`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

import mcp_types as mcp
from mcp.server.apps import (
    APP_MIME_TYPE,
    EXTENSION_ID,
    ResourceCsp,
    ResourcePermissions,
    Visibility,
)
from mcp_types.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from pydantic import BaseModel, ConfigDict, StrictInt, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import to_jsonable_python

from .._text import describe_validation_error
from ..errors import AssistantFramesError
from ..transports.multiplex import jsonrpc as is_jsonrpc

__all__ = [
    "APP_MIME_TYPE",
    "DOWNLOAD_FILE",
    "EXTENSION_ID",
    "HOST_CONTEXT_CHANGED",
    "INITIALIZE",
    "INITIALIZED",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MESSAGE",
    "METHODS",
    "METHOD_NOT_FOUND",
    "OPEN_LINK",
    "PROTOCOL_VERSION",
    "REFUSED",
    "REQUEST_DISPLAY_MODE",
    "REQUEST_TEARDOWN",
    "RESOURCE_TEARDOWN",
    "RESOURCE_URI_META_KEY",
    "SANDBOX_PROXY_READY",
    "SANDBOX_RESOURCE_READY",
    "SIZE_CHANGED",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "TOOL_CANCELLED",
    "TOOL_INPUT",
    "TOOL_INPUT_PARTIAL",
    "TOOL_RESULT",
    "UPDATE_MODEL_CONTEXT",
    "ActionResult",
    "AppCapabilities",
    "ContainerDimensions",
    "ContentModalities",
    "DeviceCapabilities",
    "DisplayMode",
    "DownloadFileParams",
    "DownloadFileResult",
    "Empty",
    "ErrorResponse",
    "HostCapabilities",
    "HostContext",
    "HostCss",
    "HostStyles",
    "InitializeParams",
    "InitializeResult",
    "InvalidParams",
    "InvalidRequest",
    "ListChanged",
    "Message",
    "MessageParams",
    "MessageResult",
    "MethodNotFound",
    "MethodSpec",
    "Notification",
    "OpenLinkParams",
    "OpenLinkResult",
    "ProtocolError",
    "Refused",
    "Request",
    "RequestDisplayModeParams",
    "RequestDisplayModeResult",
    "RequestId",
    "ResourceCsp",
    "ResourcePermissions",
    "Response",
    "SafeAreaInsets",
    "SandboxCapability",
    "SandboxResourceReadyParams",
    "SamplingCapability",
    "SizeChangedParams",
    "Theme",
    "ToolCancelledParams",
    "ToolInfo",
    "ToolInputParams",
    "UpdateModelContextParams",
    "Visibility",
    "decode",
    "encode_error",
    "encode_notification",
    "encode_request",
    "encode_result",
    "is_jsonrpc",
    "model_visible",
    "parse_result",
    "resource_uri",
    "to_wire",
    "visibility",
]

#: The protocol version this library speaks (ext-apps ``LATEST_PROTOCOL_VERSION``).
PROTOCOL_VERSION: Final = "2026-01-26"
#: The versions a host accepts; an initialize asking for another gets the latest.
SUPPORTED_PROTOCOL_VERSIONS: Final = (PROTOCOL_VERSION,)
#: The deprecated flat ``_meta`` key for a tool's UI resource (hosts must check both forms).
RESOURCE_URI_META_KEY: Final = "ui/resourceUri"
#: Implementation-defined JSON-RPC code (``-32000..-32019``) for a request the host refuses,
#: e.g. a view calling a tool that is not visible to apps.
REFUSED: Final = -32000

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

RequestId: TypeAlias = StrictInt | str
DisplayMode: TypeAlias = Literal["inline", "fullscreen", "pip"]
Theme: TypeAlias = Literal["light", "dark"]


# -- models ------------------------------------------------------------------------------------


class _Model(BaseModel):
    """Wire names in camelCase; unknown keys dropped, as the SDK's zod schemas strip them
    (the schema forbids them in what we send, so we never keep them)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore"
    )


class _Open(_Model):
    """An object the schema leaves open (``additionalProperties: {}``): extra keys kept."""

    model_config = ConfigDict(extra="allow")


class Empty(_Model):
    """``{}``: a capability flag, or the params of a method that takes none."""


class ListChanged(_Model):
    """``{listChanged?}``: a capability that may announce list changes."""

    list_changed: bool | None = None


class ContentModalities(_Model):
    """Which content block types a host accepts (``McpUiSupportedContentBlockModalities``)."""

    text: Empty | None = None
    image: Empty | None = None
    audio: Empty | None = None
    resource: Empty | None = None
    resource_link: Empty | None = None
    structured_content: Empty | None = None


class SandboxCapability(_Model):
    """The sandbox a host grants views: permissions and CSP domains."""

    permissions: ResourcePermissions | None = None
    csp: ResourceCsp | None = None


class SamplingCapability(_Model):
    """The host forwards ``sampling/createMessage``; ``tools``: with tool use."""

    tools: Empty | None = None


class HostCapabilities(_Model):
    """What a host offers its views (``McpUiHostCapabilities``)."""

    experimental: dict[str, dict[str, Any]] | None = None
    open_links: Empty | None = None
    download_file: Empty | None = None
    server_tools: ListChanged | None = None
    server_resources: ListChanged | None = None
    logging: Empty | None = None
    sandbox: SandboxCapability | None = None
    update_model_context: ContentModalities | None = None
    message: ContentModalities | None = None
    sampling: SamplingCapability | None = None


class AppCapabilities(_Model):
    """What a view offers its host (``McpUiAppCapabilities``): ``tools`` of its own."""

    experimental: dict[str, dict[str, Any]] | None = None
    tools: ListChanged | None = None
    available_display_modes: list[DisplayMode] | None = None


class ToolInfo(_Model):
    """The tool call a view was opened for: its request id and the tool."""

    id: RequestId | None = None
    tool: mcp.Tool


class HostCss(_Model):
    """Host CSS for views: ``fonts`` (``@font-face`` rules or imports)."""

    fonts: str | None = None


class HostStyles(_Model):
    """Theme variables (``--color-background-primary``...) and CSS for views."""

    variables: dict[str, str | None] | None = None
    css: HostCss | None = None


class ContainerDimensions(_Model):
    """The view's container: fixed ``height``/``width`` or ``maxHeight``/``maxWidth``."""

    height: float | None = None
    max_height: float | None = None
    width: float | None = None
    max_width: float | None = None


class DeviceCapabilities(_Model):
    """Input capabilities of the user's device."""

    touch: bool | None = None
    hover: bool | None = None


class SafeAreaInsets(_Model):
    """Insets (pixels) a view should keep clear, e.g. for a notch."""

    top: float
    right: float
    bottom: float
    left: float


class HostContext(_Open):
    """Everything a host tells a view about where it runs (``McpUiHostContext``).

    Open: hosts may add keys. ``ui/notifications/host-context-changed`` carries one with
    only the keys that changed.
    """

    tool_info: ToolInfo | None = None
    theme: Theme | None = None
    styles: HostStyles | None = None
    display_mode: DisplayMode | None = None
    available_display_modes: list[DisplayMode] | None = None
    container_dimensions: ContainerDimensions | None = None
    locale: str | None = None
    time_zone: str | None = None
    user_agent: str | None = None
    platform: Literal["web", "desktop", "mobile"] | None = None
    device_capabilities: DeviceCapabilities | None = None
    safe_area_insets: SafeAreaInsets | None = None


class InitializeParams(_Model):
    """view -> host ``ui/initialize``: who the view is and what it can do."""

    protocol_version: str
    app_info: mcp.Implementation
    app_capabilities: AppCapabilities


class InitializeResult(_Open):
    """host -> view: the answer to ``ui/initialize``.

    All four fields are required: the ext-apps ``App`` rejects a result missing any.
    """

    protocol_version: str
    host_info: mcp.Implementation
    host_capabilities: HostCapabilities
    host_context: HostContext


class ToolInputParams(_Model):
    """host -> view ``tool-input`` and ``tool-input-partial``: the tool call's arguments."""

    arguments: dict[str, Any] | None = None


class ToolCancelledParams(_Model):
    """host -> view ``tool-cancelled``: the tool call was cancelled, perhaps saying why."""

    reason: str | None = None


class SizeChangedParams(_Model):
    """view -> host ``size-changed`` (pixels)."""

    width: float | None = None
    height: float | None = None


class SandboxResourceReadyParams(_Model):
    """sandbox proxy <- host ``sandbox-resource-ready``: the view's HTML to load."""

    html: str
    sandbox: str | None = None
    csp: ResourceCsp | None = None
    permissions: ResourcePermissions | None = None


class MessageParams(_Model):
    """view -> host ``ui/message``: a message to add to the conversation, as the user."""

    role: Literal["user"] = "user"
    content: list[mcp.ContentBlock]


class OpenLinkParams(_Model):
    """view -> host ``ui/open-link``: open ``url`` outside the sandbox."""

    url: str


class DownloadFileParams(_Model):
    """view -> host ``ui/download-file``: files to offer the user."""

    contents: list[mcp.EmbeddedResource | mcp.ResourceLink]


class UpdateModelContextParams(_Model):
    """view -> host ``ui/update-model-context``: what the model should know now.

    Each update replaces the previous one. The answer is an empty result.
    """

    content: list[mcp.ContentBlock] | None = None
    structured_content: dict[str, Any] | None = None


class RequestDisplayModeParams(_Model):
    """view -> host ``ui/request-display-mode``."""

    mode: DisplayMode


class RequestDisplayModeResult(_Open):
    """host -> view: the display mode now in effect (maybe not the one asked for)."""

    mode: DisplayMode


class ActionResult(_Open):
    """The answer to ``ui/message``, ``ui/open-link`` and ``ui/download-file``."""

    is_error: bool | None = None


MessageResult = OpenLinkResult = DownloadFileResult = ActionResult


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


# -- messages ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """A received request: answer it with :func:`encode_result` or :func:`encode_error`.

    ``params`` is the validated model of ``METHODS[method].params`` (``None`` for a
    method without params); ``raw_params`` the params as received, for forwarding.
    """

    id: RequestId
    method: str
    params: Any
    raw_params: dict[str, Any] | None


@dataclass(frozen=True)
class Notification:
    """A received notification (never answered); ``params`` as on :class:`Request`."""

    method: str
    params: Any
    raw_params: dict[str, Any] | None


@dataclass(frozen=True)
class Response:
    """A received successful answer to request ``id`` (see :func:`parse_result`)."""

    id: RequestId
    result: dict[str, Any]


@dataclass(frozen=True)
class ErrorResponse:
    """A received error answer to request ``id`` (``None``: the peer could not tell)."""

    id: RequestId | None
    code: int
    message: str
    data: Any = None


Message: TypeAlias = Request | Notification | Response | ErrorResponse


class ProtocolError(AssistantFramesError, ValueError):
    """A received message that cannot be handled, as the JSON-RPC error that answers it.

    ``request_id`` is the id to answer (``None``: a notification, which is never
    answered, or a message whose id could not be read); ``method`` the method, if known.
    """

    #: The JSON-RPC error code this failure is answered with.
    jsonrpc_code: int = INVALID_REQUEST

    def __init__(
        self,
        message: str,
        *,
        request_id: RequestId | None = None,
        method: str | None = None,
        raw: object = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        self.method = method
        #: The message as received.
        self.raw = raw

    @property
    def answerable(self) -> bool:
        """True when the failed message was a request with a usable id."""
        return self.request_id is not None

    def to_wire(self) -> dict[str, Any] | None:
        """The JSON-RPC error response for this failure; ``None`` when there is none to send.

        Without an id nothing is sent: a notification is never answered, and the MCP
        TypeScript SDK's JSON-RPC schema rejects an error response with ``"id": null``.
        """
        if self.request_id is None:
            return None
        return encode_error(self.request_id, self.jsonrpc_code, self.message)


class InvalidRequest(ProtocolError):
    """``-32600``: not a JSON-RPC 2.0 message (bad envelope, id, method or params type)."""

    jsonrpc_code = INVALID_REQUEST


class MethodNotFound(ProtocolError):
    """``-32601``: a method this protocol does not have (or a notification sent as a
    request, or the reverse)."""

    jsonrpc_code = METHOD_NOT_FOUND


class InvalidParams(ProtocolError):
    """``-32602``: the params do not match the method's schema."""

    jsonrpc_code = INVALID_PARAMS


class Refused(ProtocolError):
    """``-32000``: a well-formed request the host will not serve (e.g. a tool the view
    may not call)."""

    jsonrpc_code = REFUSED


# -- decoding ----------------------------------------------------------------------------------


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def decode(raw: object) -> Message:
    """Classify and validate one received JSON-RPC 2.0 message.

    Raises :class:`InvalidRequest` for anything that is not a JSON-RPC 2.0 object
    (check :func:`is_jsonrpc` first to tell them from other channels' messages),
    :class:`MethodNotFound` for a method not in :data:`METHODS`, and
    :class:`InvalidParams` for params that do not validate.
    """
    if not isinstance(raw, dict) or not is_jsonrpc(raw):
        raise InvalidRequest("Not a JSON-RPC 2.0 message", raw=raw)
    has_id = "id" in raw
    raw_id = raw.get("id")
    request_id = raw_id if _is_id(raw_id) else None
    if "method" not in raw:
        return _decode_response(raw, request_id)
    method = raw["method"]
    if not isinstance(method, str):
        raise InvalidRequest("method must be a string", request_id=request_id, raw=raw)
    if has_id and request_id is None:
        raise InvalidRequest("id must be a string or an integer", method=method, raw=raw)
    params = raw.get("params")
    if params is not None and not isinstance(params, dict):
        raise InvalidRequest(
            "params must be an object", request_id=request_id, method=method, raw=raw
        )
    spec = METHODS.get(method)
    if spec is None or spec.is_request != has_id:
        kind = "request" if has_id else "notification"
        raise MethodNotFound(
            f"Method not found: {method} (as a {kind})",
            request_id=request_id,
            method=method,
            raw=raw,
        )
    parsed = None
    if spec.params is not None:
        try:
            parsed = spec.params.model_validate({} if params is None else params)
        except ValidationError as exc:
            raise InvalidParams(
                f"Invalid params for {method}: {describe_validation_error(exc)}",
                request_id=request_id,
                method=method,
                raw=raw,
            ) from None
    if request_id is not None:
        return Request(request_id, method, parsed, params)
    return Notification(method, parsed, params)


def _decode_response(raw: dict[str, Any], request_id: RequestId | None) -> Message:
    if "result" in raw:
        if request_id is None or "error" in raw:
            raise InvalidRequest("A response needs an id and one of result or error", raw=raw)
        result = raw["result"]
        if not isinstance(result, dict):
            raise InvalidRequest("result must be an object", request_id=request_id, raw=raw)
        return Response(request_id, result)
    error = raw.get("error")
    if not isinstance(error, dict):
        raise InvalidRequest(
            "A message needs a method, a result or an error", request_id=request_id, raw=raw
        )
    if raw.get("id") is not None and request_id is None:
        raise InvalidRequest("id must be a string, an integer or null", raw=raw)
    code, message = error.get("code"), error.get("message")
    if not isinstance(code, int) or isinstance(code, bool) or not isinstance(message, str):
        raise InvalidRequest(
            "error needs an integer code and a string message", request_id=request_id, raw=raw
        )
    return ErrorResponse(request_id, code, message, error.get("data"))


def parse_result(method: str, result: Mapping[str, Any]) -> Any:
    """The typed result of ``method`` (the request a :class:`Response` answers).

    The method comes from the caller's books (:class:`~assistant_frames.calls.PendingCall`
    ``.name``). Raises :class:`InvalidParams` when the result does not validate (the
    peer broke the protocol) and :class:`MethodNotFound` for a method that has no result.
    """
    spec = METHODS.get(method)
    if spec is None or spec.result is None:
        raise MethodNotFound(f"Method not found: {method} (as a request)", method=method)
    try:
        return spec.result.model_validate(result)
    except ValidationError as exc:
        raise InvalidParams(
            f"Invalid result for {method}: {describe_validation_error(exc)}",
            method=method,
            raw=result,
        ) from None


# -- encoding ----------------------------------------------------------------------------------


def to_wire(value: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    """A model's wire form (camelCase, unset optional fields left out); mappings as is."""
    if isinstance(value, BaseModel):
        try:
            return value.model_dump(mode="json", by_alias=True, exclude_none=True)
        except UnicodeEncodeError:
            # pydantic-core's JSON mode refuses an object key holding a lone surrogate,
            # which a peer's JSON may carry (as a \ud800 escape) in any open object: the
            # Python mode keeps it, and each value is made JSON-able on its own.
            return _jsonable(value.model_dump(by_alias=True, exclude_none=True))  # type: ignore[no-any-return]
    return dict(value)


def _jsonable(value: Any) -> Any:
    """``value`` (a Python-mode dump) in JSON form, its object keys as they are."""
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return to_jsonable_python(value, inf_nan_mode="null")


def encode_request(
    request_id: RequestId, method: str, params: BaseModel | Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A JSON-RPC request; ``params`` left out when ``None``."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = to_wire(params)
    return message


def encode_notification(
    method: str, params: BaseModel | Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A JSON-RPC notification; ``params`` left out when ``None``."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = to_wire(params)
    return message


def encode_result(request_id: RequestId, result: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": to_wire(result)}


def encode_error(
    request_id: RequestId, code: int, message: str, data: Any = None
) -> dict[str, Any]:
    """A JSON-RPC error response; ``data`` left out when ``None``.

    No ``"id": null`` form: the MCP TypeScript SDK rejects it (see :meth:`ProtocolError.to_wire`).
    """
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


# -- tool metadata -----------------------------------------------------------------------------

_DEFAULT_VISIBILITY: Final[tuple[Visibility, ...]] = ("model", "app")


def _ui_meta(meta: Mapping[str, Any] | None) -> Mapping[str, Any]:
    ui = meta.get("ui") if meta else None
    return ui if isinstance(ui, Mapping) else {}


def visibility(meta: Mapping[str, Any] | None) -> tuple[Visibility, ...]:
    """Who may see a tool, from its ``_meta``: ``_meta.ui.visibility``, default both.

    Unknown strings in the list are dropped (a later spec may add audiences). A
    malformed value (not a list, or a list with something other than strings) fails
    closed: the tool is model-only, never callable by a view, and the declaration is
    logged once at WARNING.
    """
    value = _ui_meta(meta).get("visibility")
    if value is None:
        return _DEFAULT_VISIBILITY
    if not isinstance(value, list) or not all(isinstance(entry, str) for entry in value):
        _report_malformed_visibility(value)
        return _MALFORMED_VISIBILITY
    seen: list[Visibility] = []
    for entry in value:
        if entry == "model" and "model" not in seen:
            seen.append("model")
        elif entry == "app" and "app" not in seen:
            seen.append("app")
    return tuple(seen)


_MALFORMED_VISIBILITY: Final[tuple[Visibility, ...]] = ("model",)
_reported_visibilities: set[str] = set()  # each malformed value logged once (bounded)


def _report_malformed_visibility(value: object) -> None:
    shown = repr(value)[:200]
    if shown not in _reported_visibilities and len(_reported_visibilities) < 256:
        _reported_visibilities.add(shown)
        logging.getLogger("assistant_frames.apps").warning(
            "A tool declares _meta.ui.visibility %s, which is not a list of strings: "
            "the tool is model-only (no view may call it)",
            shown,
        )


def model_visible(tools: Iterable[mcp.Tool]) -> list[mcp.Tool]:
    """The tools of a server's listing that a model may be offered: those whose
    visibility includes ``"model"`` (the default); app-only tools are left out."""
    return [tool for tool in tools if "model" in visibility(tool.meta)]


def resource_uri(meta: Mapping[str, Any] | None) -> str | None:
    """A tool's ``ui://`` resource, from ``_meta.ui.resourceUri`` or the legacy flat key."""
    uri = _ui_meta(meta).get("resourceUri")
    if uri is None and meta:
        uri = meta.get(RESOURCE_URI_META_KEY)
    return uri if isinstance(uri, str) and uri.startswith("ui://") else None
