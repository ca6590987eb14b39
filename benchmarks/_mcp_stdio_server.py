"""MCP server for ``benchmarks/run.py``: the official SDK's ``MCPServer`` over stdio.

Usage: ``python _mcp_stdio_server.py [asyncio|trio]`` (the event loop to run on).
"""

from __future__ import annotations

import sys

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench", log_level="WARNING")


@server.tool()
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    # What ``server.run("stdio")`` does, on the backend we are told to use.
    anyio.run(server.run_stdio_async, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
