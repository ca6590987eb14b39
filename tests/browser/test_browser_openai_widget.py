"""A widget written only against ``window.openai`` (Apps SDK style), in headless Chromium.

The widget (``/view.html``, served from ``http://localhost:<port>``: another origin than
the page) loads the shipped ``widget-runtime.js``, which speaks MCP Apps JSON-RPC to its
parent. It runs under two hosts:

* ours: the parent relay in app mode, carrying the JSON-RPC over a WebSocket to a Python
  ``AppBridge`` (with its ``x-assistant-frames/*`` extensions) in front of a real MCP server;
* the real ext-apps 2.0.4 ``AppBridge`` in the page (``openai-host-page.js``), which has
  no extensions: those methods must reject at once, saying the host lacks them.

And the widget's state, kept by a ``WidgetStateKeeper`` in an SQLite file, comes back as
``window.openai.widgetState`` after a re-render and after a host restart.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import mcp_types as mcp
import pytest

from assistant_frames.apps import AppBridge, protocol
from assistant_frames.transports import WebSocketServer, websocket_server
from assistant_frames.widgets import SQLiteWidgetStateStore

from browser_support import BrowserPage
from helpers import wait_until
from view_support import (
    HOST_INFO,
    PARENT_HTML,
    TOKEN,
    WAIT,
    kept_state_host,
    page_url,
    view_base,
    view_eval,
    view_wait,
    weather_server,
    widget_files,
)

pytestmark = pytest.mark.anyio

HTML = "text/html; charset=utf-8"
JS = "text/javascript; charset=utf-8"

# The widget: nothing but window.openai, as the Apps SDK docs write them.
WIDGET_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>pizza widget</title>
<script>
  window.assistantFramesWidget = { appInfo: { name: "pizza-widget", version: "1.0.0" } };
</script>
<script src="/assistant-frames/widget-runtime.js"></script>
<script src="/widget-probe.js"></script>
</head><body><div id="root"></div>
<script>
  const KEYS = ["theme", "locale", "displayMode", "maxHeight", "safeArea", "userAgent", "view",
                "toolInput", "toolOutput", "toolResponseMetadata", "widgetState"];
  const events = [];
  function render() {
    document.getElementById("root").textContent =
      `${window.openai.theme}: ${JSON.stringify(window.openai.toolOutput)}`;
  }
  window.addEventListener("openai:set_globals", (event) => {
    events.push(event.detail.globals);
    render();
  });
  render();
  window.widgetTest = {
    events,
    settle,
    globals: () => JSON.parse(JSON.stringify(Object.fromEntries(KEYS.map((k) => [k, openai[k]])))),
    text: () => document.getElementById("root").textContent,
    file: () => new File(["hello widget"], "note.txt", { type: "text/plain" }),
  };
</script>
</body></html>
"""

HOST_PAGE_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>ext-apps host</title></head>
<body><script src="/openai-host-page.js"></script></body></html>
"""

READY = "window.openai && window.openai.hostInfo !== null"

HOST_CONTEXT = {
    "theme": "dark",
    "displayMode": "inline",
    "locale": "fr-FR",
    "platform": "desktop",
    "deviceCapabilities": {"touch": False, "hover": True},
    "containerDimensions": {"maxHeight": 600},
    "safeAreaInsets": {"top": 10, "right": 0, "bottom": 20, "left": 0},
    # Open keys of the host context: what the host kept for this widget, and its view.
    "widgetState": {"count": 2},
    "view": {"mode": "inline", "params": None},
}


def files(bundles: dict[str, bytes]) -> dict[str, tuple[bytes, str]]:
    return {
        **widget_files(),
        "/parent.html": (PARENT_HTML, HTML),
        "/view.html": (WIDGET_HTML, HTML),
        "/openai-host.html": (HOST_PAGE_HTML, HTML),
        "/openai-host-page.js": (bundles["/openai-host-page.js"], JS),
    }


# -- under our AppBridge, through the parent relay ----------------------------------------------


@dataclass
class OurHost:
    server: WebSocketServer
    bridges: anyio.abc.ObjectReceiveStream[AppBridge]
    log: dict[str, list[Any]] = field(default_factory=dict)
    release: anyio.Event = field(default_factory=anyio.Event)

    def seen(self, what: str) -> list[Any]:
        return self.log.setdefault(what, [])

    async def next_bridge(self) -> AppBridge:
        with anyio.fail_after(WAIT):
            return await self.bridges.receive()


@asynccontextmanager
async def our_host(bundles: dict[str, bytes]) -> AsyncIterator[OurHost]:
    send, receive = anyio.create_memory_object_stream[AppBridge](10)
    done = anyio.Event()
    host: OurHost

    async def stuck(params: dict[str, Any]) -> None:
        host.seen("select-files").append(params)
        await host.release.wait()  # never answers while the test runs: the widget times out

    def upload(params: dict[str, Any]) -> dict[str, Any]:
        host.seen("upload").append({**params, "data": base64.b64decode(params["data"])})
        return {"fileId": "file-1"}

    extensions = {
        "x-assistant-frames/widget-state": lambda params: host.seen("widget-state").append(params),
        "x-assistant-frames/modal": lambda params: host.seen("modal").append(params),
        "x-assistant-frames/upload-file": upload,
        "x-assistant-frames/select-files": stuck,
        "x-assistant-frames/file-download-url": lambda p: {
            "downloadUrl": f"https://files.example/{p['fileId']}"
        },
        "x-assistant-frames/open-in-app-url": lambda params: host.seen("open-in-app").append(
            params
        ),
    }

    async def accept(transport: Any) -> None:
        def record(what: str) -> Any:
            return host.seen(what).append

        bridge = AppBridge(
            transport,
            server=weather.frame,
            host_info=HOST_INFO,
            host_context=HOST_CONTEXT,
            timeout=WAIT,
            init_timeout=WAIT,
            on_message=record("message"),
            on_open_link=record("link"),
            on_update_model_context=record("model-context"),
            on_size_changed=record("size"),
            on_request_display_mode=lambda params: params.mode,
            on_request_teardown=lambda: host.seen("teardown").append(None),
            extensions=extensions,
        )
        async with bridge:
            await bridge.wait_initialized()
            await send.send(bridge)
            await done.wait()
            host.release.set()

    async with (
        weather_server() as weather,
        send,
        receive,
        websocket_server(accept, token=TOKEN, http_files=files(bundles)) as server,
    ):
        host = OurHost(server, receive)
        host.log["weather"] = weather.calls
        try:
            yield host
        finally:
            done.set()


async def test_a_window_openai_widget_runs_under_our_app_bridge(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with our_host(bundles) as host:
        origin = view_base(host.server)
        await page.goto(page_url(host.server, quote(f"{origin}/view.html", safe="")))
        bridge = await host.next_bridge()
        await view_wait(page, origin, READY)
        assert bridge.app_info is not None
        assert bridge.app_info.name == "pizza-widget"

        # The globals, from the host context.
        assert await view_eval(page, origin, "widgetTest.globals()") == {
            "theme": "dark",
            "locale": "fr-FR",
            "displayMode": "inline",
            "maxHeight": 600,
            "safeArea": {"insets": {"top": 10, "right": 0, "bottom": 20, "left": 0}},
            "userAgent": {
                "device": {"type": "desktop"},
                "capabilities": {"hover": True, "touch": False},
            },
            "view": {"mode": "inline", "params": None},
            "toolInput": {},
            "toolOutput": None,
            "toolResponseMetadata": None,
            "widgetState": {"count": 2},
        }

        # Tool input and result become globals, each change an openai:set_globals event.
        before = len(await view_eval(page, origin, "widgetTest.events"))
        await bridge.send_tool_input({"size": "large"})
        await bridge.send_tool_result(
            mcp.CallToolResult(
                content=[mcp.TextContent(type="text", text="1 pizza")],
                structured_content={"pizzas": ["margherita"]},
                _meta={"order": 7},
            )
        )
        await bridge.update_host_context(theme="light")
        await view_wait(page, origin, "openai.theme === 'light'")
        events = (await view_eval(page, origin, "widgetTest.events"))[before:]
        assert events == [
            {"toolInput": {"size": "large"}},
            {"toolOutput": {"pizzas": ["margherita"]}, "toolResponseMetadata": {"order": 7}},
            {"theme": "light"},
        ]
        assert (
            await view_eval(page, origin, "widgetTest.text()") == 'light: {"pizzas":["margherita"]}'
        )

        async def run(expression: str) -> Any:
            return await view_eval(page, origin, f"widgetTest.settle({expression})")

        # Methods with an MCP Apps request.
        called = await run("openai.callTool('forecast', { city: 'Paris' })")
        assert called["result"]["content"] == [{"type": "text", "text": "Sunny in Paris"}]
        refused = await run("openai.callTool('secret', {})")
        assert refused["error"]["code"] == protocol.REFUSED
        assert "window.openai.callTool" in refused["error"]["message"]
        assert host.log["weather"] == ["forecast Paris"]  # never the model-only tool

        assert await run(
            "openai.sendFollowUpMessage({ prompt: 'Two more', scrollToBottom: true })"
        ) == {"result": None}
        [message] = host.seen("message")
        assert message.content[0].text == "Two more"

        assert await run("openai.requestDisplayMode({ mode: 'fullscreen' })") == {
            "result": {"mode": "fullscreen"}
        }
        await view_wait(page, origin, "openai.displayMode === 'fullscreen'")

        assert await run("openai.openExternal({ href: 'https://pizza.example/menu' })") == {
            "result": None
        }
        assert [link.url for link in host.seen("link")] == ["https://pizza.example/menu"]

        assert await run("openai.notifyIntrinsicHeight(321)") == {"result": None}
        await wait_until(lambda: bool(host.seen("size")), timeout=WAIT)
        assert host.seen("size")[0].height == 321

        # Widget state: the model sees it (ui/update-model-context), the host keeps it.
        assert await run("openai.setWidgetState({ count: 3 })") == {"result": None}
        assert await view_eval(page, origin, "openai.widgetState") == {"count": 3}
        assert host.seen("widget-state") == [{"state": {"count": 3}}]
        assert host.seen("model-context")[0].structured_content == {"widgetState": {"count": 3}}

        # Methods over the x-assistant-frames extension family.
        modal = "openai.requestModal({ title: 'Toppings', params: { step: 2 } })"
        assert await run(modal) == {"result": {}}
        assert host.seen("modal") == [{"title": "Toppings", "params": {"step": 2}}]
        assert await run("openai.uploadFile(widgetTest.file())") == {"result": {"fileId": "file-1"}}
        assert host.seen("upload") == [
            {"name": "note.txt", "mimeType": "text/plain", "data": b"hello widget"}
        ]
        assert await run("openai.getFileDownloadUrl({ fileId: 'file-1' })") == {
            "result": {"downloadUrl": "https://files.example/file-1"}
        }
        assert await run("openai.setOpenInAppUrl({ href: 'https://pizza.example/o/7' })") == {
            "result": None
        }
        assert host.seen("open-in-app") == [{"href": "https://pizza.example/o/7"}]

        # A host that never answers: the call rejects at the (here short) bound.
        await view_eval(page, origin, "openai.timeout = 300")
        with anyio.fail_after(WAIT):
            late = await run("openai.selectFiles({ multiple: true })")
        assert late["error"]["code"] == "timeout"
        assert "within 300 ms" in late["error"]["message"]
        assert 250 <= late["ms"] < 5000
        assert host.seen("select-files") == [{"multiple": True}]

        # Last: the widget asks to close.
        assert await run("openai.requestClose()") == {"result": None}
        await wait_until(lambda: host.seen("teardown") == [None], timeout=WAIT)


# -- under the real ext-apps AppBridge ----------------------------------------------------------


async def test_a_window_openai_widget_runs_under_the_ext_apps_app_bridge(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async def nobody(transport: Any) -> None:  # no WebSocket here: the page is the host
        await transport.aclose()

    async with websocket_server(nobody, token=TOKEN, http_files=files(bundles)) as server:
        origin = view_base(server)
        src = quote(f"{origin}/view.html", safe="")
        await page.goto(f"http://127.0.0.1:{server.port}/openai-host.html#src={src}")
        await view_wait(page, origin, READY)
        await page.wait_for("hostTest.log.initialized === 1")
        assert await view_eval(page, origin, "openai.hostInfo") == {
            "name": "ext-apps-host",
            "version": "2.0.4-test",
        }
        assert await view_eval(page, origin, "widgetTest.globals()") == {
            "theme": "dark",
            "locale": "de-DE",
            "displayMode": "inline",
            "maxHeight": 480,
            "safeArea": {"insets": {"top": 1, "bottom": 2, "left": 3, "right": 4}},
            "userAgent": {
                "device": {"type": "mobile"},
                "capabilities": {"hover": False, "touch": True},
            },
            "view": {"mode": "inline", "params": None},  # defaults: this host sends neither
            "toolInput": {},
            "toolOutput": None,
            "toolResponseMetadata": None,
            "widgetState": None,
        }

        await page.evaluate("hostTest.sendToolInput({ size: 'small' })")
        await page.evaluate(
            """hostTest.sendToolResult({ content: [{ type: "text", text: "ok" }],
                 structuredContent: { pizzas: [] }, _meta: { order: 8 } })"""
        )
        await page.evaluate("hostTest.setHostContext({ theme: 'light', locale: 'de-DE' })")
        await view_wait(page, origin, "openai.theme === 'light'")
        events = await view_eval(page, origin, "widgetTest.events")
        assert events[-3:] == [
            {"toolInput": {"size": "small"}},
            {"toolOutput": {"pizzas": []}, "toolResponseMetadata": {"order": 8}},
            {"theme": "light"},
        ]

        async def run(expression: str) -> Any:
            with anyio.fail_after(WAIT):
                return await view_eval(page, origin, f"widgetTest.settle({expression})")

        # Junk from the host window is ignored; the widget goes on working.
        await page.evaluate(
            """() => { const w = document.querySelector("iframe").contentWindow;
                 for (const junk of ["junk", null, { jsonrpc: "2.0" }, { jsonrpc: "2.0", id: 1 },
                                     { jsonrpc: "2.0", method: "ui/notifications/tool-result",
                                       params: 5 }])
                   w.postMessage(junk, "*"); }"""
        )
        called = await run("openai.callTool('order', { size: 'small' })")
        assert called["result"]["structuredContent"] == {"echoed": {"size": "small"}}
        # (The junk, posted earlier by the same window, was read before that answer.)
        assert await view_eval(page, origin, "openai.toolOutput") == {"pizzas": []}
        assert await run("openai.sendFollowUpMessage({ prompt: 'More' })") == {"result": None}
        assert await run("openai.requestDisplayMode({ mode: 'pip' })") == {
            "result": {"mode": "pip"}
        }
        assert await run("openai.openExternal({ href: 'https://pizza.example' })") == {
            "result": None
        }
        assert await run("openai.notifyIntrinsicHeight(200)") == {"result": None}
        # The model sees the state; this host keeps none (-32601 there), which is fine.
        assert await run("openai.setWidgetState({ count: 1 })") == {"result": None}
        assert await run("openai.requestClose()") == {"result": None}
        await page.wait_for("hostTest.log.teardownRequests === 1 && hostTest.log.sizes.length")
        log = await page.evaluate("hostTest.log")
        assert log["toolCalls"] == [{"name": "order", "arguments": {"size": "small"}}]
        assert log["messages"] == [{"role": "user", "content": [{"type": "text", "text": "More"}]}]
        assert log["displayModes"] == [{"mode": "pip"}]
        assert log["links"] == [{"url": "https://pizza.example"}]
        assert log["sizes"][0]["height"] == 200
        assert log["modelContext"] == [{"structuredContent": {"widgetState": {"count": 1}}}]
        assert log["errors"] == []

        # What this host lacks rejects at once, and says so (the bound stays 30 s).
        assert await view_eval(page, origin, "openai.timeout") == 30000
        for call, api in [
            ("openai.requestModal({ title: 'x' })", "requestModal"),
            ("openai.uploadFile(widgetTest.file())", "uploadFile"),
            ("openai.selectFiles()", "selectFiles"),
            ("openai.getFileDownloadUrl({ fileId: 'f' })", "getFileDownloadUrl"),
            ("openai.setOpenInAppUrl({ href: 'https://pizza.example' })", "setOpenInAppUrl"),
        ]:
            outcome = await run(call)
            assert outcome["error"]["code"] == protocol.METHOD_NOT_FOUND, outcome
            assert (
                f"window.openai.{api} is not supported by this host" in outcome["error"]["message"]
            )
            assert outcome["error"]["method"].startswith("x-assistant-frames/")
            assert outcome["ms"] < 2000


# -- widget state kept by a WidgetStateKeeper, across a re-render and a host restart -----------


async def test_window_openai_widget_state_is_kept_across_a_re_render_and_a_host_restart(
    page: BrowserPage, bundles: dict[str, bytes], tmp_path: Path
) -> None:
    path = tmp_path / "widgets.sqlite3"
    widget = "message-3/pizza"
    context = {key: value for key, value in HOST_CONTEXT.items() if key != "widgetState"}

    async def run(origin: str, expression: str) -> Any:
        with anyio.fail_after(WAIT):
            return await view_eval(page, origin, f"widgetTest.settle({expression})")

    async with kept_state_host(
        files(bundles), SQLiteWidgetStateStore(path), widget, host_context=context
    ) as host:
        origin = view_base(host.server)
        await page.goto(page_url(host.server, quote(f"{origin}/view.html", safe="")))
        await host.next_bridge()
        await view_wait(page, origin, READY)
        assert await view_eval(page, origin, "openai.widgetState") is None  # nothing kept yet
        assert await run(origin, "openai.setWidgetState({ count: 3 })") == {"result": None}
        assert host.states == [{"count": 3}]  # saved before the call resolved

        # A re-render: the relay reconnects and reloads the iframe; a new bridge, a new
        # keeper on the same store, and the widget reads the state it set.
        document = await view_eval(page, origin, "performance.timeOrigin")
        await host.drop()
        await host.next_bridge()
        await view_wait(page, origin, READY)
        assert await view_eval(page, origin, "performance.timeOrigin") != document
        assert await view_eval(page, origin, "openai.widgetState") == {"count": 3}
        assert await run(origin, "openai.setWidgetState({ count: 4, size: 'large' })") == {
            "result": None
        }
        assert host.states == [{"count": 3}, {"count": 4, "size": "large"}]

    # A host restart: a new server, a new store object on the same file, a fresh page.
    async with kept_state_host(
        files(bundles), SQLiteWidgetStateStore(path), widget, host_context=context
    ) as host:
        origin = view_base(host.server)
        await page.goto(page_url(host.server, quote(f"{origin}/view.html", safe="")))
        await host.next_bridge()
        await view_wait(page, origin, READY)
        assert await view_eval(page, origin, "openai.widgetState") == {"count": 4, "size": "large"}
        assert await view_eval(page, origin, "widgetTest.globals().widgetState") == {
            "count": 4,
            "size": "large",
        }
        assert await run(origin, "openai.setWidgetState(null)") == {"result": None}
        assert host.states == [None]
    assert await SQLiteWidgetStateStore(path).load(widget) is None
