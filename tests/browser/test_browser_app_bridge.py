"""MCP Apps in Chromium: a real ext-apps ``App`` in an iframe, a Python host behind the relay.

The page (``http://127.0.0.1:<port>``) runs the shipped parent relay in app mode; the view
(``app-view-page.js``, the real ``@modelcontextprotocol/ext-apps`` 2.0.4 ``App``) is served
from ``http://localhost:<port>``: another origin, as the spec asks of web hosts. The relay
carries the view's JSON-RPC over the WebSocket to the Python side.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as mcp
import pytest

from assistant_frames import ModelContextRegistry
from assistant_frames.apps.bridge_machine import BridgeMachine, Initialized, Send
from assistant_frames.apps.protocol import HostCapabilities, HostContext
from assistant_frames.browser import relay_files
from assistant_frames.transports import WebSocketServer, websocket_server

from browser_support import BrowserPage
from helpers import wait_until
from view_support import (
    HOST_INFO,
    HTML,
    JS,
    PARENT_HTML,
    TOKEN,
    WAIT,
    Weather,
    page_url,
    view_base,
    view_eval,
    view_wait,
    weather_server,
)

pytestmark = pytest.mark.anyio

VIEW_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>view</title></head>
<body><p>view</p><script src="/app-view-page.js"></script></body></html>
"""

# Posts one JSON-RPC request, named by its query string, to its parent.
SENDER_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"></head><body><script>
  const id = new URLSearchParams(location.search).get("id");
  parent.postMessage({ jsonrpc: "2.0", id, method: "ui/message",
                       params: { role: "user", content: [{ type: "text", text: id }] } }, "*");
</script></body></html>
"""


def files(bundles: dict[str, bytes]) -> dict[str, tuple[bytes, str]]:
    return {
        **relay_files(),
        "/app-view-page.js": (bundles["/app-view-page.js"], JS),
        "/parent.html": (PARENT_HTML, HTML),
        "/view.html": (VIEW_HTML, HTML),
        "/sender.html": (SENDER_HTML, HTML),
    }


# -- relay rules, with a hand-driven BridgeMachine on the Python side ---------------------------


@dataclass
class MachineSide:
    """Each relay connection answered by a ``BridgeMachine`` (handshake only)."""

    server: WebSocketServer
    machines: list[BridgeMachine] = field(default_factory=list)
    received: list[Any] = field(default_factory=list)
    transports: list[Any] = field(default_factory=list)


@asynccontextmanager
async def machine_host(bundles: dict[str, bytes]) -> AsyncIterator[MachineSide]:
    side: MachineSide

    async def accept(transport: Any) -> None:
        machine = BridgeMachine(
            HOST_INFO,
            host_capabilities=HostCapabilities(open_links={}),
            host_context=HostContext(theme="dark", display_mode="inline", locale="fr-FR"),
        )
        side.machines.append(machine)
        side.transports.append(transport)
        async for raw in transport:
            side.received.append(raw)
            event = machine.receive(raw)
            for message in event.messages if isinstance(event, Send | Initialized) else []:
                await transport.send(message)

    async with websocket_server(accept, token=TOKEN, http_files=files(bundles)) as server:
        side = MachineSide(server)
        yield side


VIEW_READY = "window.viewTest && viewTest.state().connected"


async def test_view_on_another_origin_is_sandboxed_and_completes_the_handshake(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with machine_host(bundles) as side:
        origin = view_base(side.server)
        permissions = json.dumps({"clipboardWrite": {}, "camera": {}})
        await page.goto(page_url(side.server, f"{origin}/view.html", permissions=permissions))
        await view_wait(page, origin, VIEW_READY)
        state = await view_eval(page, origin, "viewTest.state()")
        assert state["origin"] == origin
        assert state["hostInfo"] == {"name": "relay-test-host", "version": "1.2.3"}
        assert state["hostCapabilities"] == {"openLinks": {}}
        assert state["hostContext"] == {"theme": "dark", "displayMode": "inline", "locale": "fr-FR"}
        machine = side.machines[0]
        # The view is connected once it has the host's answer; its "initialized"
        # notification reaches Python a moment later.
        await wait_until(lambda: machine.state == "initialized")
        assert machine.app_info is not None
        assert machine.app_info.name == "view-under-test"

        attributes = await page.evaluate(
            """() => ({ sandbox: relay.iframe.getAttribute("sandbox"),
                        allow: relay.iframe.getAttribute("allow"),
                        target: relay.targetOrigin, status: relay.status })"""
        )
        assert attributes == {
            "sandbox": "allow-scripts allow-same-origin",
            "allow": "camera; clipboard-write",  # ext-apps' buildAllowAttribute order
            "target": origin,
            "status": "iframe",
        }
        # The allow attribute is in force in the view: granted features only.
        granted = await view_eval(
            page,
            origin,
            """["camera", "microphone", "geolocation", "clipboard-write"]
                 .filter((f) => document.featurePolicy.allowsFeature(f))""",
        )
        assert granted == ["camera", "clipboard-write"]

        # Host -> view goes through too, to the view's handlers.
        for message in machine.send_tool_input({"city": "Paris"}):
            await side.transports[0].send(message)
        await view_wait(page, origin, "viewTest.state().toolInput.length === 1")
        state = await view_eval(page, origin, "viewTest.state()")
        assert state["toolInput"] == [{"arguments": {"city": "Paris"}}]


async def test_relay_drops_messages_from_other_windows_and_origins(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with machine_host(bundles) as side:
        origin = view_base(side.server)
        await page.goto(page_url(side.server, f"{origin}/view.html"))
        await view_wait(page, origin, VIEW_READY)
        # The page itself; a sibling iframe on the VIEW's origin (right origin, wrong window);
        # the page's origin in a sibling (wrong both).
        await page.evaluate(
            """(origin) => {
              const own = { jsonrpc: "2.0", id: "intruder-page", method: "ui/message" };
              window.postMessage(own, "*");
              for (const [base, id] of [[origin, "intruder-view-origin"],
                                        [location.origin, "intruder-page-origin"]]) {
                const other = document.createElement("iframe");
                other.src = `${base}/sender.html?id=${id}`;
                document.body.appendChild(other);
              }
            }""",
            origin,
        )
        await view_eval(
            page,
            origin,
            """viewTest.post({ channel: "assistant-frames-relay", jsonrpc: "2.0",
                              id: "intruder-relay-channel", method: "ui/message" })""",
        )
        intruders = ["intruder-page", "intruder-view-origin", "intruder-page-origin"]
        await page.wait_for(
            f"{json.dumps([*intruders, 'intruder-relay-channel'])}"
            ".every((id) => seen.some((m) => m.id === id))"
        )
        # A legitimate message from the view, after them.
        await view_eval(page, origin, "viewTest.sendSizeChanged(321, 123)")
        await wait_until(
            lambda: any(m.get("method") == "ui/notifications/size-changed" for m in side.received),
            timeout=WAIT,
        )

        # The bridged iframe navigated to the PAGE's origin: right window, wrong origin.
        await page.evaluate("relay.iframe.src = '/sender.html?id=intruder-navigated'")
        seen = await page.wait_for("seen.find((m) => m.id === 'intruder-navigated' && m.bridged)")
        assert seen["origin"] == f"http://127.0.0.1:{side.server.port}"
        await anyio.sleep(0.3)
        received = json.dumps(side.received)
        assert "size-changed" in received
        assert "intruder" not in received, received


async def test_app_mode_refuses_a_view_on_the_page_origin(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with machine_host(bundles) as side:
        for src in ("/view.html", "data:text/html,<p>view</p>"):
            await page.goto(page_url(side.server, src))
            log = await page.wait_for(
                "relayLog.length && relayLog[relayLog.length - 1].status === 'failed' && relayLog"
            )
            assert log[-1]["status"] == "failed"
            reason = log[-1]["reason"]
            assert ("own origin" in reason) if src.startswith("/") else ("http(s)" in reason)
            assert await page.evaluate("relay.iframe") is None
            assert await page.evaluate("document.documentElement.dataset.relayStatus") == "failed"
            assert any(reason in line for line in page.console if line.startswith("error"))
        await anyio.sleep(0.3)
        assert side.machines == []  # never connected


async def test_a_reconnection_reloads_the_view_which_initializes_again(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with machine_host(bundles) as side:
        origin = view_base(side.server)
        await page.goto(page_url(side.server, f"{origin}/view.html"))
        await view_wait(page, origin, VIEW_READY)
        await side.transports[0].aclose()  # the Python side drops the WebSocket
        await wait_until(lambda: len(side.machines) == 2, timeout=WAIT)
        await wait_until(lambda: side.machines[1].state == "initialized", timeout=WAIT)
        await view_wait(page, origin, VIEW_READY)
        assert side.machines[0].initializations == 1
        assert side.machines[1].initializations == 1


# -- the real ext-apps App <-> the Python AppBridge ---------------------------------------------


@dataclass
class BridgeSide:
    """Each relay connection served by an ``AppBridge`` whose provider joins ``parent``."""

    server: WebSocketServer
    bridges: anyio.abc.ObjectReceiveStream[Any]
    parent: ModelContextRegistry
    messages: list[Any] = field(default_factory=list)
    sizes: list[Any] = field(default_factory=list)
    teardown_requests: list[None] = field(default_factory=list)

    async def next_bridge(self) -> Any:
        with anyio.fail_after(WAIT):
            return await self.bridges.receive()


@asynccontextmanager
async def bridge_host(bundles: dict[str, bytes], weather: Weather) -> AsyncIterator[BridgeSide]:
    # Imported here: the relay tests above need no AppBridge.
    from assistant_frames.apps import AppBridge

    send, receive = anyio.create_memory_object_stream[Any](10)
    done = anyio.Event()
    side: BridgeSide

    async def accept(transport: Any) -> None:
        bridge = AppBridge(
            transport,
            server=weather.frame,
            host_info=HOST_INFO,
            host_context=HostContext(theme="dark", display_mode="inline", locale="fr-FR"),
            name="weather-app",
            timeout=WAIT,
            init_timeout=WAIT,
        )
        bridge.on_message = side.messages.append
        bridge.on_size_changed = side.sizes.append
        bridge.on_request_teardown = lambda: side.teardown_requests.append(None)
        async with bridge:
            await bridge.wait_initialized()
            side.parent.add_provider(bridge)
            await send.send(bridge)
            await done.wait()

    async with (
        send,
        receive,
        websocket_server(accept, token=TOKEN, http_files=files(bundles)) as server,
    ):
        side = BridgeSide(server, receive, ModelContextRegistry())
        try:
            yield side
        finally:
            done.set()


async def open_view(page: BrowserPage, side: BridgeSide) -> tuple[Any, str]:
    origin = view_base(side.server)
    await page.goto(page_url(side.server, f"{origin}/view.html"))
    bridge = await side.next_bridge()
    await view_wait(page, origin, VIEW_READY)
    # The view's "initialized" notification reaches Python just after the view connects.
    await wait_until(lambda: bridge.state == "initialized")
    return bridge, origin


async def test_handshake_and_host_to_view_notifications(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with weather_server() as weather, bridge_host(bundles, weather) as side:
        bridge, origin = await open_view(page, side)
        assert bridge.state == "initialized"
        assert bridge.app_info.name == "view-under-test"
        assert bridge.app_info.version == "0.4.2"
        state = await view_eval(page, origin, "viewTest.state()")
        assert state["hostInfo"] == {"name": "relay-test-host", "version": "1.2.3"}
        assert state["hostContext"] == {"theme": "dark", "displayMode": "inline", "locale": "fr-FR"}
        # Derived from the handlers and the server we gave it.
        assert "serverTools" in state["hostCapabilities"]
        assert "message" in state["hostCapabilities"]

        await bridge.send_tool_input({"city": "Paris"})
        await bridge.send_tool_result(
            mcp.CallToolResult(
                content=[mcp.TextContent(type="text", text="18 C")],
                structured_content={"temperature": 18},
            )
        )
        await bridge.update_host_context(theme="light")
        state = await view_wait(
            page,
            origin,
            """(() => { const s = viewTest.state();
                       return s.toolResult.length && s.contextChanges.length && s; })()""",
        )
        assert state["toolInput"] == [{"arguments": {"city": "Paris"}}]
        [result] = state["toolResult"]
        assert result["content"] == [{"type": "text", "text": "18 C"}]
        assert result["structuredContent"] == {"temperature": 18}
        assert state["contextChanges"] == [{"theme": "light"}]
        assert state["hostContext"]["theme"] == "light"


async def test_view_requests_reach_python_and_the_parent_registry(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with weather_server() as weather, bridge_host(bundles, weather) as side:
        bridge, origin = await open_view(page, side)
        answer = await view_eval(page, origin, "viewTest.sendMessage('Plan a trip to Paris')")
        assert "error" not in answer, answer
        [message] = side.messages
        assert message.role == "user"
        assert message.content[0].text == "Plan a trip to Paris"

        answer = await view_eval(
            page,
            origin,
            """viewTest.updateModelContext(
                 { content: [{ type: "text", text: "The user picked Paris." }] })""",
        )
        assert "error" not in answer, answer
        assert bridge.model_context is not None
        await wait_until(
            lambda: "The user picked Paris." in (side.parent.get_model_context().system or ""),
            timeout=WAIT,
        )

        await view_eval(page, origin, "viewTest.sendSizeChanged(640, 480)")
        await wait_until(lambda: bool(side.sizes), timeout=WAIT)
        assert (side.sizes[0].width, side.sizes[0].height) == (640, 480)


async def test_the_view_tools_are_listed_and_called_from_the_parent_registry(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with weather_server() as weather, bridge_host(bundles, weather) as side:
        bridge, origin = await open_view(page, side)
        tools = await bridge.list_view_tools()
        assert [tool.name for tool in tools] == ["add"]
        assert tools[0].input_schema["properties"]["a"]["type"] == "number"
        await wait_until(lambda: "add" in side.parent.get_model_context().tools, timeout=WAIT)
        with anyio.fail_after(WAIT):
            result = await side.parent.get_model_context().call_tool("add", {"a": 2, "b": 3})
        assert result == {"sum": 5}
        direct = await bridge.call_view_tool("add", {"a": 20, "b": 22})
        assert direct.structured_content == {"sum": 42}
        state = await view_eval(page, origin, "viewTest.state()")
        assert state["toolCalls"] == [
            {"name": "add", "a": 2, "b": 3},
            {"name": "add", "a": 20, "b": 22},
        ]


async def test_view_tool_calls_reach_the_server_only_for_app_visible_tools(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with weather_server() as weather, bridge_host(bundles, weather) as side:
        _bridge, origin = await open_view(page, side)
        answer = await view_eval(
            page, origin, "viewTest.callServerTool('forecast', {city: 'Paris'})"
        )
        assert "error" not in answer, answer
        assert answer["result"]["content"][0]["text"] == "Sunny in Paris"
        refused = await view_eval(page, origin, "viewTest.callServerTool('secret', {})")
        assert refused["error"]["code"] == -32000, refused
        assert weather.calls == ["forecast Paris"]  # the model-only tool never ran


async def test_teardown_is_awaited_and_a_view_may_ask_for_it(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with weather_server() as weather, bridge_host(bundles, weather) as side:
        bridge, origin = await open_view(page, side)
        await view_eval(page, origin, "viewTest.requestTeardown()")
        await wait_until(lambda: bool(side.teardown_requests), timeout=WAIT)
        with anyio.fail_after(WAIT + 1):
            assert await bridge.teardown(timeout=WAIT) is True
        state = await view_eval(page, origin, "viewTest.state()")
        assert len(state["teardown"]) == 1
