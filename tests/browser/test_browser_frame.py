"""A real @assistant-ui/core frame in headless Chromium feeds tools to a Python host.

The page ``/parent.html`` runs the shipped parent relay, which (once its WebSocket to the
Python ``websocket_server`` is open) embeds ``/frame.html``: a JS ``ModelContextRegistry``
registered with ``AssistantFrameProvider.addModelContextProvider``. Every page, the bundle
and the relay come from the same Python server, so the iframe and its parent share one
origin, as the JS frame requires.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from aui_pages import FRAME, TOKEN, frame_files

from assistant_frames import AssistantFrameHost, ToolCallError, ToolCallTimeout, ToolEvent
from assistant_frames.transports import WebSocketServer, websocket_server

from browser_support import AuiBundles, BrowserPage, RecordingTransport

pytestmark = pytest.mark.anyio

WAIT = 10.0

PARENT_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>parent relay</title></head>
<body>
<div id="slot"></div>
<script src="/assistant-frames/parent-relay.js"></script>
<script>
  const config = new URLSearchParams(location.hash.slice(1));
  window.relayLog = [];
  new MutationObserver((records) => {
    for (const record of records)
      for (const node of record.addedNodes)
        if (node.tagName === "IFRAME")
          relayLog.push("iframe-inserted, socket opened before: " + relayLog.includes("open"));
  }).observe(document.body, { childList: true, subtree: true });
  window.relay = AssistantFramesRelay.parent({
    url: `ws://${location.host}/frames/js`,
    token: config.get("token"),
    src: "/frame.html",
    container: "#slot",
    maxAttempts: Number(config.get("max_attempts") || 5),
    initialDelay: Number(config.get("initial_delay") || 100),
    onStatus: (status) => relayLog.push(status),
  });
</script>
</body></html>
"""

# A second, same-origin window that tries to talk to the Python host through the relay.
INTRUDER_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"></head><body><script>
  parent.postMessage({
    channel: "assistant-ui-frame",
    message: { type: "model-context-update",
               context: { system: "intruder", tools: { intruder: { parameters: {} } } } },
  }, "*");
  parent.intruderSent = true;
</script></body></html>
"""


@dataclass
class PythonHostSide:
    server: WebSocketServer
    hosts: anyio.abc.ObjectReceiveStream[AssistantFrameHost]
    received: list[Any] = field(default_factory=list)
    connections: int = 0

    @property
    def base(self) -> str:
        return f"http://{self.server.host}:{self.server.port}"

    async def next_host(self) -> AssistantFrameHost:
        with anyio.fail_after(WAIT):
            host = await self.hosts.receive()
            await host.wait_for_context(timeout=WAIT)
        return host


@asynccontextmanager
async def python_host(bundles: dict[str, bytes]) -> AsyncIterator[PythonHostSide]:
    """A Python websocket_server that hosts every frame that dials in, and serves the pages."""
    files = frame_files(bundles, parent_html=PARENT_HTML, intruder_html=INTRUDER_HTML)
    send, receive = anyio.create_memory_object_stream[AssistantFrameHost](10)
    side: PythonHostSide

    async def accept(transport: Any) -> None:
        side.connections += 1
        async with AssistantFrameHost(
            RecordingTransport(transport, side.received), name="js", timeout=WAIT
        ) as host:
            await send.send(host)
            await host.wait_disconnected()

    async with send, receive, websocket_server(accept, token=TOKEN, http_files=files) as server:
        side = PythonHostSide(server, receive)
        yield side


async def open_frame(page: BrowserPage, side: PythonHostSide) -> AssistantFrameHost:
    await page.goto(f"{side.base}/parent.html#token={TOKEN}")
    return await side.next_host()


async def wait_until(host: AssistantFrameHost, predicate: Callable[[], bool]) -> None:
    """Wait (bounded) until ``predicate()`` holds, checking at each change of the host."""
    with anyio.fail_after(WAIT):
        while not predicate():
            changed = anyio.Event()
            unsubscribe = host.subscribe(changed.set)
            try:
                if not predicate():
                    await changed.wait()
            finally:
                unsubscribe()


async def test_js_frame_context_reaches_python_host(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_host(aui_bundles) as side:
        host = await open_frame(page, side)
        context = host.get_model_context()
        assert context.system == "You can add numbers with the add tool."
        assert sorted(context.tools) == ["add", "fail", "slow"]
        add = context.tools["add"]
        assert add.description == "Add two numbers."
        schema = add.parameters
        assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
        assert schema["type"] == "object"
        assert schema["properties"] == {"a": {"type": "number"}, "b": {"type": "number"}}
        assert sorted(schema["required"]) == ["a", "b"]
        assert context.tools["fail"].description == "Always throws."


async def test_js_tool_call_returns_the_js_result(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_host(aui_bundles) as side:
        host = await open_frame(page, side)
        with anyio.fail_after(WAIT):
            assert await host.call_tool("add", {"a": 2, "b": 3}) == 5
            assert await host.call_tool("add", {"a": 0.5, "b": -2}) == -1.5
            # The merged context routes calls the same way.
            assert await host.get_model_context().call_tool("add", {"a": 40, "b": 2}) == 42


async def test_a_js_frame_ignores_the_request_for_events(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_host(aui_bundles) as side:
        host = await open_frame(page, side)
        events: list[ToolEvent] = []
        seen: list[ToolEvent] = []
        host.subscribe_tool_events(seen.append)
        with anyio.fail_after(WAIT):
            assert await host.call_tool("add", {"a": 2, "b": 3}, on_event=events.append) == 5
            result = await host.get_model_context().call_tool(
                "add", {"a": 40, "b": 2}, on_event=events.append
            )
        assert result == 42
        assert events == []  # a JS frame never reports progress
        assert seen == []
        kinds = [m["message"]["type"] for m in side.received if isinstance(m, dict)]
        assert "tool-progress" not in kinds


async def test_throwing_and_unknown_js_tools_raise_tool_call_error(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_host(aui_bundles) as side:
        host = await open_frame(page, side)
        with anyio.fail_after(WAIT):
            with pytest.raises(ToolCallError) as thrown:
                await host.call_tool("fail", {})
            assert thrown.value.message == "boom from iframe"
            assert str(thrown.value).startswith('Tool "fail"')  # what a log line shows
            with pytest.raises(ToolCallError) as unknown:
                await host.call_tool("nope", {})
            assert unknown.value.message == 'Tool "nope" not found'
            assert await host.call_tool("add", {"a": 1, "b": 1}) == 2  # still serving


async def test_js_frame_adding_and_removing_tools_reaches_subscribers(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_host(aui_bundles) as side:
        host = await open_frame(page, side)
        seen: list[list[str]] = []
        host.subscribe(lambda: seen.append(sorted(host.get_model_context().tools)))

        await page.evaluate(f"{FRAME}.addTool('times_ten', 'x*10')")
        await wait_until(host, lambda: "times_ten" in host.get_model_context().tools)
        assert seen[-1] == ["add", "fail", "slow", "times_ten"]
        assert host.get_model_context().tools["times_ten"].description == "x*10"
        with anyio.fail_after(WAIT):
            assert await host.call_tool("times_ten", {"x": 4}) == 40

        await page.evaluate(f"{FRAME}.removeTool('times_ten')")
        await wait_until(host, lambda: "times_ten" not in host.get_model_context().tools)
        assert seen[-1] == ["add", "fail", "slow"]


async def test_python_timeout_cancels_the_js_tool(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_host(aui_bundles) as side:
        host = await open_frame(page, side)
        with anyio.fail_after(WAIT), pytest.raises(ToolCallTimeout):
            await host.call_tool("slow", {}, timeout=0.5, tool_call_id="py-slow-1")
        aborts = await page.wait_for(f"{FRAME}.aborts().length > 0 && {FRAME}.aborts()")
        assert aborts == ["py-slow-1"]
        assert await page.evaluate(f"{FRAME}.started()") == ["py-slow-1"]
        cancels = [
            m["message"] for m in side.received if m.get("message", {}).get("type") == "tool-result"
        ]
        assert cancels == []  # a cancelled JS call sends no result


async def test_parent_relay_ignores_other_windows(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_host(aui_bundles) as side:
        host = await open_frame(page, side)
        # The page itself, and a second same-origin iframe, post frame messages.
        await page.evaluate(
            """() => {
              const context = { system: "intruder", tools: { intruder: { parameters: {} } } };
              window.postMessage({
                channel: "assistant-ui-frame",
                message: { type: "model-context-update", context },
              }, "*");
              window.postMessage({
                channel: "assistant-ui-frame",
                message: { type: "tool-result", id: "intruder", result: 1 },
              }, "*");
              const other = document.createElement("iframe");
              other.src = "/intruder.html";
              document.body.appendChild(other);
            }"""
        )
        await page.wait_for("window.intruderSent === true")
        # Then a legitimate change from the bridged frame, which must arrive after them.
        await page.evaluate(f"{FRAME}.addTool('legit', 'ok')")
        await wait_until(host, lambda: "legit" in host.get_model_context().tools)
        await anyio.sleep(0.2)
        assert "intruder" not in json.dumps(side.received)
        assert "intruder" not in host.get_model_context().tools
        assert host.get_model_context().system == "You can add numbers with the add tool."
        assert side.connections == 1


async def test_parent_relay_with_a_wrong_token_fails_after_bounded_retries(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with python_host(bundles) as side:
        await page.goto(f"{side.base}/parent.html#token=wrong&max_attempts=3&initial_delay=50")
        await page.wait_for("document.documentElement.dataset.relayStatus === 'failed'")
        log = await page.evaluate("window.relayLog")
        assert log.count("connecting") == 3
        assert log[-1] == "failed"
        assert "open" not in log
        assert "iframe" not in log
        assert await page.evaluate("document.querySelectorAll('iframe').length") == 0
        assert side.connections == 0  # the Python handler never ran
        assert side.received == []


async def test_parent_relay_creates_the_iframe_only_after_the_socket_opens(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with python_host(bundles) as side:
        await open_frame(page, side)
        log = await page.evaluate("window.relayLog")
        inserted = [entry for entry in log if entry.startswith("iframe-inserted")]
        assert inserted == ["iframe-inserted, socket opened before: true"]
        assert log.index("connecting") < log.index("open") < log.index("iframe")
        assert log.index("iframe") < log.index(inserted[0])
