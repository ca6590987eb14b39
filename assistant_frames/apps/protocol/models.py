"""The ``ui/*`` params and result models, and the host context, as ext-apps 2.0.4 has them.

Fields are snake_case in Python and camelCase on the wire; open models keep the keys a
newer peer adds.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import mcp_types as mcp
from mcp.server.apps import ResourceCsp, ResourcePermissions
from pydantic import BaseModel, ConfigDict, StrictInt
from pydantic.alias_generators import to_camel

__all__ = [
    "ActionResult",
    "AppCapabilities",
    "ContainerDimensions",
    "ContentModalities",
    "DeviceCapabilities",
    "DisplayMode",
    "DownloadFileParams",
    "DownloadFileResult",
    "Empty",
    "HostCapabilities",
    "HostContext",
    "HostCss",
    "HostStyles",
    "InitializeParams",
    "InitializeResult",
    "ListChanged",
    "MessageParams",
    "MessageResult",
    "OpenLinkParams",
    "OpenLinkResult",
    "RequestDisplayModeParams",
    "RequestDisplayModeResult",
    "RequestId",
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
]

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
