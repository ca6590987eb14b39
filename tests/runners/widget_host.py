"""WidgetHost (the AUI_* wire) over memory and over a WebSocket, with the app's MCP
server (in this process) and a SQLite state store that a second host reads back."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
from common import clock_app, report

from assistant_frames import memory_pair
from assistant_frames.mcp import MCPContextServer, MCPFrameHost
from assistant_frames.transports import connect_websocket, websocket_server
from assistant_frames.widgets import SQLiteWidgetStateStore, WidgetHost, WidgetManifest

MANIFEST = WidgetManifest.from_permissions({"callTools": True, "followUpMessages": True})


async def call(widget: Any, call_id: str, method: str, *args: Any) -> Any:
    message = {"type": "AUI_METHOD_CALL", "id": call_id, "method": method, "args": list(args)}
    await widget.send(message)
    with anyio.fail_after(5):
        return await widget.receive()


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "widgets.sqlite3")
        follow_ups: list[Any] = []
        server = MCPContextServer(clock_app(), name="clock")
        async with server.running(), MCPFrameHost(server.server, name="clock") as frame:
            host_end, widget = memory_pair()
            async with WidgetHost(
                host_end,
                "message-42/clock",
                globals={"theme": "dark", "toolInput": {"city": "Oslo"}},
                manifest=MANIFEST,
                store=SQLiteWidgetStateStore(path),
                server=frame,
                on_follow_up=follow_ups.append,
            ) as host:
                await widget.send({"type": "ready"})
                with anyio.fail_after(5):
                    first = await widget.receive()
                report(
                    "globals",
                    [first["type"], first["globals"]["theme"], first["globals"]["toolInput"]],
                )
                answer = await call(widget, "1", "callTool", "refresh", {"city": "Oslo"})
                report("callTool", answer["result"]["structuredContent"])
                report("setWidgetState", await call(widget, "2", "setWidgetState", {"hour": 12}))
                report(
                    "follow up", await call(widget, "3", "sendFollowUpMessage", {"prompt": "More"})
                )
                report("not granted", await call(widget, "4", "requestModal", {"title": "Pay"}))
                await host.update_globals(theme="light")
                with anyio.fail_after(5):
                    report("changed globals", (await widget.receive())["globals"])
        report("follow ups", follow_ups)

        # The same widget instance again, over a WebSocket: its state is back.
        async def serve(transport: Any) -> None:
            async with WidgetHost(
                transport, "message-42/clock", store=SQLiteWidgetStateStore(path)
            ) as host:
                await host.wait_disconnected()

        async with websocket_server(serve) as server, connect_websocket(server.url) as widget:
            await widget.send({"type": "ready"})
            with anyio.fail_after(5):
                report("state after restart", (await widget.receive())["globals"]["widgetState"])
    report("done", True)
