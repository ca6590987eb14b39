"""MCP interop: serve a model context as an MCP server, use MCP servers as frames.

Needs the ``mcp`` extra (``pip install 'assistant-frames[mcp]'``).
"""

from __future__ import annotations

from typing import Any

try:
    import mcp as _mcp  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "assistant_frames.mcp needs the official MCP SDK: pip install 'assistant-frames[mcp]'"
    ) from exc

from .._deprecated import renamed
from ._openai import SKYBRIDGE_MIME_TYPE, AppDialect, skybridge_uri
from .frame import MCPFrameHost
from .http_auth import HTTPAuth
from .server import MCPContextServer

_RENAMED = {"MCPFrame": "MCPFrameHost"}  # 0.2.0; the old name goes in 0.3.0


def __getattr__(name: str) -> Any:
    return renamed(__name__, name, _RENAMED, globals())


__all__ = [
    "SKYBRIDGE_MIME_TYPE",
    "AppDialect",
    "HTTPAuth",
    "MCPContextServer",
    "MCPFrameHost",
    "skybridge_uri",
]
