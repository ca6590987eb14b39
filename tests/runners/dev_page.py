"""``DevPage`` inside a program (the page a person opens, driven over HTTP and its
WebSocket), a federation's ``wait_for_tools``, and ``assistant-frames apps preview
--call``, from this runner."""

from __future__ import annotations

import signal
import sys

import anyio
from common import calculator, first_line, http, launched, report

from assistant_frames import Federation
from assistant_frames.apps import App
from assistant_frames.dev import DevPage
from assistant_frames.transports import connect_websocket


async def main() -> None:
    await dev_page()
    await preview_call()
    report("done", True)


async def dev_page() -> None:
    """A registry in this process and a worker, shown in the dev page; a call from it."""
    async with Federation() as federation, DevPage(federation) as page:
        await page.add("calc", calculator())
        await page.add("worker", launched("worker_frame.py", None, "worker"))
        context = await federation.wait_for_tools("calc_count", "worker_add", timeout=20)
        report("dev tools", sorted(name for name in context.tools if name.endswith("_add")))
        status, body = await http(page.origin + "/")
        report("dev page html", [status, "dev-page.js" in body])
        socket_url = page.origin.replace("http://", "ws://") + "/socket"
        async with connect_websocket(socket_url, token=page.token) as socket:
            with anyio.fail_after(10):
                while True:
                    state = await socket.receive()
                    members = state.get("members", []) if state.get("type") == "state" else []
                    if members and all(m["state"] == "connected" for m in members):
                        break
                report("dev members", sorted(m["name"] for m in members))
                arguments = {"n": 2}
                await socket.send(
                    {"type": "call", "call": "c1", "tool": "calc_count", "arguments": arguments}
                )
                seen: list[str] = []
                while True:
                    message = await socket.receive()
                    if message.get("call") != "c1":
                        continue
                    seen.append(message["type"])
                    if message["type"] in ("result", "error"):
                        break
                report("dev call", [message["type"], message.get("result"), "progress" in seen])


async def preview_call() -> None:
    """``apps preview --call clock --args {...}``: a view connecting later gets the call."""
    command = [sys.executable, "-m", "assistant_frames", "apps", "preview", "--call", "clock"]
    command += ["--args", '{"city": "Lima"}', "--", *launched("mcp_server.py", None, "clock")]
    async with await anyio.open_process(command, stderr=None) as preview:
        try:
            url = await first_line(preview)
            origin, _, token = url.partition("/#token=")
            control_url = origin.replace("http://", "ws://") + "/socket"
            async with connect_websocket(control_url, token=token) as control:
                with anyio.fail_after(10):
                    while True:
                        shown = await control.receive()
                        if shown.get("type") == "started":
                            report("preview --call started", [shown["call"], shown["tool"]])
                        if shown.get("type") == "view" and "socket" in shown:
                            break
            view_url = origin.replace("http://", "ws://") + shown["socket"]
            async with connect_websocket(view_url, token=token) as transport, App(transport) as app:
                result = await app.wait_tool_result(timeout=10)
                report("preview --call view", result.structured_content)
        finally:
            preview.send_signal(signal.SIGTERM)
            with anyio.fail_after(10):
                code = await preview.wait()
    report("preview --call exit", code)
