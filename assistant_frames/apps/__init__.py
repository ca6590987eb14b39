"""MCP Apps (the ``io.modelcontextprotocol/ui`` extension): tool UIs that talk to their host.

An app is an HTML view that runs in a sandboxed iframe and speaks JSON-RPC 2.0 with its
host: the ``ui/*`` methods of the extension plus proxied MCP requests. :mod:`.protocol`
is its sans-I/O codec; :class:`AppBridge` is the host side of one view and :class:`App`
the view side, in Python; :class:`AppView` is a host's whole view of one app item
(resolving its resource, sandbox, display mode, links, lifecycle) on top of the bridge.
Needs the ``mcp`` extra (it reuses the ``mcp`` SDK's types).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from . import protocol
    from .app import App
    from .bridge import AppBridge
    from .client_server import ClientServer
    from .csp import DEFAULT_CSP, CspError, allow_attribute, build_csp
    from .display import allowed_display_modes, build_host_context, choose_display_mode
    from .errors import AppDisconnected, AppError, AppRequestError, AppTimeout
    from .forwarding import AppServer
    from .links import LinkPolicy
    from .resource import AppResource, AppResourceError, resolve_resource
    from .view import AppView, ViewState

__all__ = [
    "DEFAULT_CSP",
    "App",
    "AppBridge",
    "AppDisconnected",
    "AppError",
    "AppRequestError",
    "AppResource",
    "AppResourceError",
    "AppServer",
    "AppTimeout",
    "AppView",
    "ClientServer",
    "CspError",
    "LinkPolicy",
    "ViewState",
    "allow_attribute",
    "allowed_display_modes",
    "build_csp",
    "build_host_context",
    "choose_display_mode",
    "protocol",
    "resolve_resource",
]

# Imported on first use (PEP 562): the codec without the bridge, a view without the page.
_LAZY = {
    "protocol": "",
    "App": ".app",
    "AppBridge": ".bridge",
    "ClientServer": ".client_server",
    "CspError": ".csp",
    "DEFAULT_CSP": ".csp",
    "allow_attribute": ".csp",
    "build_csp": ".csp",
    "allowed_display_modes": ".display",
    "build_host_context": ".display",
    "choose_display_mode": ".display",
    "AppDisconnected": ".errors",
    "AppError": ".errors",
    "AppRequestError": ".errors",
    "AppTimeout": ".errors",
    "AppServer": ".forwarding",
    "LinkPolicy": ".links",
    "AppResource": ".resource",
    "AppResourceError": ".resource",
    "resolve_resource": ".resource",
    "AppView": ".view",
    "ViewState": ".view",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)
