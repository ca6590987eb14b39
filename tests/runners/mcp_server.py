"""An MCP server for common.calculator(): ``stdio`` serves it on stdin/stdout
(run_stdio), ``http [TOKEN]`` over Streamable HTTP (run_http on a free port, its URL
printed once it listens); ``clock`` serves common.clock_app() on stdio."""

from __future__ import annotations

import sys

from common import calculator, clock_app

from assistant_frames.mcp import MCPContextServer


async def main() -> None:
    if sys.argv[1] == "clock":
        await MCPContextServer(clock_app(), name="clock").run_stdio()
        return
    server = MCPContextServer(calculator("mcp"), name="calc")
    if sys.argv[1] == "stdio":
        await server.run_stdio()
    else:
        token = sys.argv[2] if len(sys.argv) > 2 else None
        await server.run_http(port=0, token=token, ready=lambda url: print(url, flush=True))
