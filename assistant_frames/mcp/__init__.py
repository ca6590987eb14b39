"""MCP interop: serve a model context as an MCP server, use MCP servers as frames.

Needs the ``mcp`` extra (``pip install 'assistant-frames[mcp]'``).
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "assistant_frames.mcp needs the official MCP SDK: pip install 'assistant-frames[mcp]'"
    ) from exc

from ._openai import SKYBRIDGE_MIME_TYPE, AppDialect, skybridge_uri
from .frame import MCPFrame
from .server import HTTPAuth, MCPContextServer

__all__ = [
    "SKYBRIDGE_MIME_TYPE",
    "AppDialect",
    "HTTPAuth",
    "MCPContextServer",
    "MCPFrame",
    "skybridge_uri",
]
