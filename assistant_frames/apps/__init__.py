"""MCP Apps (the ``io.modelcontextprotocol/ui`` extension): tool UIs that talk to their host.

An app is an HTML view that runs in a sandboxed iframe and speaks JSON-RPC 2.0 with its
host: the ``ui/*`` methods of the extension plus proxied MCP requests. :mod:`.protocol`
is its sans-I/O codec; :class:`AppBridge` is the host side of one view and :class:`App`
the view side, in Python. Needs the ``mcp`` extra (it reuses the ``mcp`` SDK's types).
"""

from __future__ import annotations

from . import protocol
from .app import App
from .bridge import AppBridge
from .client_server import ClientServer
from .errors import AppDisconnected, AppError, AppRequestError, AppTimeout
from .forwarding import AppServer

__all__ = [
    "App",
    "AppBridge",
    "AppDisconnected",
    "AppError",
    "AppRequestError",
    "AppServer",
    "AppTimeout",
    "ClientServer",
    "protocol",
]
