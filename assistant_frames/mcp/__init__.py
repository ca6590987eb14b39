"""MCP interop: serve a model context as an MCP server, use MCP servers as frames.

Needs the ``mcp`` extra (``pip install 'assistant-frames[mcp]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._deprecated import renamed
from .._extras import require
from .._lazy import lazy_exports

require(
    "mcp",
    "assistant_frames.mcp needs the official MCP SDK: pip install 'assistant-frames[mcp]'",
)

if TYPE_CHECKING:
    from ._openai import SKYBRIDGE_MIME_TYPE, AppDialect, skybridge_uri
    from .frame import MCPFrameHost
    from .http_auth import HTTPAuth
    from .server import MCPContextServer

__all__ = [
    "SKYBRIDGE_MIME_TYPE",
    "AppDialect",
    "HTTPAuth",
    "MCPContextServer",
    "MCPFrameHost",
    "skybridge_uri",
]

# Imported on first use (PEP 562): a host of MCP servers needs no MCP server of its own.
_LAZY = {
    "SKYBRIDGE_MIME_TYPE": "._openai",
    "AppDialect": "._openai",
    "HTTPAuth": ".http_auth",
    "MCPContextServer": ".server",
    "MCPFrameHost": ".frame",
    "skybridge_uri": "._openai",
}

_RENAMED = {"MCPFrame": "MCPFrameHost"}  # 0.2.0; the old name goes in 0.3.0


_load, __dir__ = lazy_exports(__name__, globals(), _LAZY)


def __getattr__(name: str) -> Any:
    if name in _RENAMED:  # the new name's object (imported first), with a DeprecationWarning
        _load(_RENAMED[name])
        return renamed(__name__, name, _RENAMED, globals())
    return _load(name)
