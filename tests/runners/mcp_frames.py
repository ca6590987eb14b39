"""MCPContextServer over stdio (a subprocess under this runner) and Streamable HTTP
(run_http here; under trio, in an asyncio subprocess: uvicorn is asyncio-only), and
MCPFrameHost / connect() to both and to an MCP server object in this process; a Federation
served as an MCP server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from common import (
    RUNNER,
    calculator,
    failure,
    first_line,
    http,
    launched,
    progress_of,
    report,
    wait_until,
)
from mcp.server.mcpserver import MCPServer

from assistant_frames import Federation, ToolCallError, connect
from assistant_frames.mcp import MCPContextServer, MCPFrameHost

TOKEN = "mcp-token"


@asynccontextmanager
async def http_server_process(token: str | None) -> AsyncIterator[str]:
    """An MCP HTTP server in an asyncio subprocess; yields its URL."""
    command = launched("mcp_server.py", "asyncio", "http", *([token] if token else []))
    async with await anyio.open_process(command, stderr=None) as process:
        try:
            yield await first_line(process)
        finally:
            process.terminate()
            with anyio.move_on_after(10):
                await process.wait()


@asynccontextmanager
async def http_server(provider: object, token: str | None) -> AsyncIterator[str]:
    """MCPContextServer.run_http in this process; yields its URL."""
    server = MCPContextServer(provider, name="calc")  # type: ignore[arg-type]
    urls: list[str] = []
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: server.run_http(port=0, token=token, ready=urls.append))
        await wait_until(lambda: bool(urls), "run_http is ready")
        yield urls[0]
        group.cancel_scope.cancel()


async def main() -> None:
    # stdio: a server process under this runner, through connect(mcp=True).
    async with connect(launched("mcp_server.py", None, "stdio"), mcp=True, name="stdio") as frame:
        assert isinstance(frame, MCPFrameHost)
        report("stdio tools", sorted(frame.get_model_context().tools))
        report("stdio add", await frame.call_tool("add", {"a": 2, "b": 5}))
        events: list[object] = []
        result = await frame.call_tool("count", {"n": 2}, on_event=events.append)
        report("stdio count", [result, progress_of(events)])
        try:
            await frame.call_tool("fail", {"why": "on purpose"})
        except ToolCallError as error:
            report("stdio fail", failure(error))

    # Streamable HTTP, with a token.
    if RUNNER == "trio":
        server = MCPContextServer(calculator("mcp"))
        try:
            with anyio.fail_after(5):
                await server.run_http(port=0)
        except Exception as error:
            report("run_http under trio", f"{type(error).__name__}: {error}")
        serving = http_server_process(TOKEN)
    else:
        serving = http_server(calculator("mcp"), TOKEN)
    async with serving as url:
        report("http without token", (await http(url, method="POST", body={}))[0])
        async with connect(url, token=TOKEN, name="http") as frame:
            assert isinstance(frame, MCPFrameHost)
            report("http add", await frame.call_tool("add", {"a": 3, "b": 5}))
            events = []
            result = await frame.call_tool("pause", {"seconds": 0.01}, on_event=events.append)
            report("http pause", [result, progress_of(events)])
            events = []
            result = await frame.call_tool("count", {"n": 2}, on_event=events.append)
            report("http count", [result, progress_of(events)])

    # connect() to an MCP server object in this process (the SDK's MCPServer).
    sdk = MCPServer("sdk")

    @sdk.tool()
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    async with connect(sdk, name="sdk") as frame:
        report("sdk shout", await frame.call_tool("shout", {"text": "hi"}))

    # A Federation of a worker, a registry and an MCP server, served as one MCP server
    # (under trio: the member's server in an asyncio process, and not served).
    async with Federation() as federation:
        await federation.add("worker", launched("worker_frame.py"))
        await federation.add("local", calculator("local"))
        if RUNNER == "trio":
            serving = http_server_process(TOKEN)
        else:
            serving = http_server(calculator("member"), TOKEN)
        async with serving as member:
            await federation.add("mcp", member, token=TOKEN)
            added = await federation.call_tool("mcp_add", {"a": 5, "b": 5})
            report("federation mcp member", added)
            await federation.remove("mcp")
        if RUNNER != "trio":
            async with http_server(federation, None) as url, connect(url, name="fed") as frame:
                tools = frame.get_model_context().tools
                served = [len(tools), "worker_add" in tools, "local_add" in tools]
                report("federation over mcp", served)
                added = await frame.call_tool("worker_add", {"a": 1, "b": 1})
                report("federation over mcp add", added)
    report("done", True)
