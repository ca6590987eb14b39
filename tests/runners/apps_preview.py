"""``assistant-frames apps preview -- SERVER`` driven as a person with a browser uses it
(the dev page over HTTP, its WebSocket, a view's WebSocket as the view's iframe), from
this runner; the app's MCP server runs on stdio under this runner too."""

from __future__ import annotations

import signal
import sys

import anyio
from common import CLOCK_HTML, first_line, http, launched, report

from assistant_frames.apps import App
from assistant_frames.transports import connect_websocket


async def main() -> None:
    await apps_preview()
    report("done", True)


async def apps_preview() -> None:
    """``assistant-frames apps preview -- SERVER``, as a person with a browser uses it."""
    command = [sys.executable, "-m", "assistant_frames", "apps", "preview", "--"]
    command += launched("mcp_server.py", None, "clock")
    async with await anyio.open_process(command, stderr=None) as preview:
        try:
            url = await first_line(preview)
            origin, _, fragment = url.partition("/#token=")
            status, body = await http(origin + "/")
            report("preview page", [status, "<html" in body.lower()])
            control_url = origin.replace("http://", "ws://") + "/socket"
            async with connect_websocket(control_url, token=fragment) as control:
                with anyio.fail_after(10):
                    hello = await control.receive()
                    state = await control.receive()
                    tools = [t["name"] for t in state["tools"]]
                    report("preview hello", [hello["type"], state["type"], tools])
                    await control.send(
                        {
                            "type": "call",
                            "call": "c1",
                            "tool": "clock",
                            "arguments": {"city": "Rome"},
                        }
                    )
                    while True:
                        shown = await control.receive()
                        if shown.get("type") == "view" and "socket" in shown:
                            break
                view_url = origin.replace("http://", "ws://") + shown["socket"]
                async with (
                    connect_websocket(view_url, token=fragment) as transport,
                    App(transport) as app,
                ):
                    result = await app.wait_tool_result(timeout=10)
                    report("preview view", result.structured_content)
                status, html = await http(shown["src"])
                report("preview view html", [status, html == CLOCK_HTML])
        finally:
            preview.send_signal(signal.SIGTERM)
            with anyio.fail_after(10):
                code = await preview.wait()
    report("preview exit", code)
