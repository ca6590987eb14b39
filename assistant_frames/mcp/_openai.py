"""ChatGPT Apps (the OpenAI Apps SDK) as ``MCPContextServer`` serves them, beside MCP Apps.

One declaration, two dialects: a UI tool's ``_meta`` gains ChatGPT's ``openai/*`` keys at
its top level (``_meta.ui`` allows no others), and each ``ui://`` resource is served a
second time, as ``text/html+skybridge`` with ``openai/widget*`` metadata, under its own
URI (:func:`skybridge_uri`): a host reads one HTML per URI, of the MIME it expects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias

from ..formats.tools import MCPTool
from ..registry.ui import ToolUI, UIResource, check_ui_uri

__all__ = [
    "DIALECTS",
    "SKYBRIDGE_MIME_TYPE",
    "AppDialect",
    "check_dialects",
    "is_skybridge_uri",
    "skybridge_resource",
    "skybridge_uri",
    "stamp_openai",
]

AppDialect: TypeAlias = Literal["mcp-apps", "openai"]
"""Which app metadata a server emits: MCP Apps' ``_meta.ui`` or ChatGPT's ``openai/*``."""

DIALECTS: Final[tuple[AppDialect, ...]] = ("mcp-apps", "openai")
SKYBRIDGE_MIME_TYPE: Final = "text/html+skybridge"
OPENAI_PREFIX: Final = "openai/"
_SKYBRIDGE_PREFIX: Final = "ui://widget/skybridge/"
# MCP Apps' CSP keys and ChatGPT's names for them (baseUriDomains has no counterpart).
_CSP_NAMES: Final = {
    "connectDomains": "connect_domains",
    "resourceDomains": "resource_domains",
    "frameDomains": "frame_domains",
}


def check_dialects(dialects: object) -> tuple[AppDialect, ...]:
    """``dialects`` as a tuple if it names known dialects, each once; else ``ValueError``."""
    if isinstance(dialects, str) or not isinstance(dialects, (list, tuple, set, frozenset)):
        raise ValueError(f"app_dialects must be a sequence of {list(DIALECTS)}, not {dialects!r}")
    values = tuple(dialects)
    if not values or any(v not in DIALECTS for v in values) or len(set(values)) != len(values):
        raise ValueError(
            f"app_dialects must list some of {list(DIALECTS)}, each once, not {values}"
        )
    return values


def skybridge_uri(uri: str) -> str:
    """The URI a ``ui://`` resource is served under as ``text/html+skybridge``.

    ``ui://weather/view`` becomes ``ui://widget/skybridge/weather/view``: under
    ``ui://widget/``, ChatGPT's convention, and apart from the MCP Apps resource.
    """
    return _SKYBRIDGE_PREFIX + check_ui_uri(uri)[len("ui://") :]


def is_skybridge_uri(uri: str) -> bool:
    """Whether ``uri`` is one :func:`skybridge_uri` makes."""
    return uri.startswith(_SKYBRIDGE_PREFIX) and len(uri) > len(_SKYBRIDGE_PREFIX)


def original_uri(uri: str) -> str:
    """The ``ui://`` URI a skybridge URI was made from."""
    return "ui://" + uri[len(_SKYBRIDGE_PREFIX) :]


def stamp_openai(tool: MCPTool, *, openai: bool, mcp_apps: bool) -> MCPTool:
    """``tool`` (its ``_meta`` already copied) with the dialects' keys kept or added.

    A UI tool gains ``openai/outputTemplate`` (the skybridge URI),
    ``openai/visibility`` (``public`` if the model sees it, else ``private``) and
    ``openai/widgetAccessible`` (whether the view may call it); its
    ``openai/toolInvocation/*`` and ``openai/fileParams`` are already there. Without
    ``openai`` every ``openai/*`` key goes; without ``mcp_apps``, ``_meta.ui`` and the
    legacy flat key go.
    """
    meta: Any = tool.get("_meta")
    if not isinstance(meta, dict):
        return tool
    ui = ToolUI.from_meta(meta)
    if not openai:
        for key in [k for k in meta if k.startswith(OPENAI_PREFIX)]:
            del meta[key]
    elif ui is not None:
        meta["openai/outputTemplate"] = skybridge_uri(ui.resource_uri)
        meta["openai/visibility"] = "public" if "model" in ui.visibility else "private"
        meta["openai/widgetAccessible"] = "app" in ui.visibility
    if not mcp_apps and ui is not None:
        meta.pop("ui", None)
        meta.pop("ui/resourceUri", None)
    if not meta:
        del tool["_meta"]
    return tool


def widget_meta(resource: UIResource) -> dict[str, Any]:
    """A resource's ``openai/widget*`` metadata, from the same fields as its ``_meta.ui``.

    The CSP is always given (empty lists when the resource sets none): MCP Apps and
    ChatGPT both read no CSP as no outside domains.
    """
    csp_in = resource.csp or {}
    csp: dict[str, Any] = {"connect_domains": [], "resource_domains": []}
    for ours, theirs in _CSP_NAMES.items():
        if ours in csp_in:
            csp[theirs] = list(csp_in[ours])
    meta: dict[str, Any] = {"openai/widgetCSP": csp}
    if resource.domain is not None:
        meta["openai/widgetDomain"] = resource.domain
    if resource.description is not None:
        meta["openai/widgetDescription"] = resource.description
    if resource.prefers_border is not None:
        meta["openai/widgetPrefersBorder"] = resource.prefers_border
    return meta


def skybridge_resource(resource: UIResource) -> dict[str, Any]:
    """The ``resources/list`` entry (wire form) of a resource's skybridge variant."""
    uri = skybridge_uri(resource.uri)
    entry: dict[str, Any] = {"name": resource.name or uri, "uri": uri}
    if resource.title is not None:
        entry["title"] = resource.title
    if resource.description is not None:
        entry["description"] = resource.description
    entry["mimeType"] = SKYBRIDGE_MIME_TYPE
    entry["_meta"] = widget_meta(resource)
    return entry


def skybridge_contents(resource: UIResource) -> dict[str, Any]:
    """The ``resources/read`` content (wire form) of a resource's skybridge variant."""
    return {
        "uri": skybridge_uri(resource.uri),
        "mimeType": SKYBRIDGE_MIME_TYPE,
        "_meta": widget_meta(resource),
        "text": resource.html,
    }


def skybridge_of(resources: Mapping[str, UIResource], uri: str) -> UIResource | None:
    """The resource whose skybridge variant ``uri`` is, if any."""
    return resources.get(original_uri(uri)) if is_skybridge_uri(uri) else None
