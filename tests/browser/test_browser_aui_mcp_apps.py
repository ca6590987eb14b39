"""A widget written only against ``window.aui`` (the tool-UI plan's API), on the MCP Apps wire.

The widget (``/view.html``, served from ``http://localhost:<port>``: another origin than
the page) loads the shipped ``widget-runtime.js`` with no ``data-wire``, so it speaks MCP
Apps JSON-RPC to its parent, and uses the plan's API only: its nine globals as
properties of ``window.aui``, the ``aui:set_globals`` event and its eight methods. It
runs under two hosts:

* ours: the parent relay in app mode, carrying the JSON-RPC over a WebSocket to a Python
  ``AppBridge`` in front of a real MCP server, whose ``WidgetStateKeeper`` keeps the
  widget's state in an SQLite file: the state comes back after a re-render (a new
  connection, a reloaded iframe, a new bridge) and after a host restart (a new server,
  a new store object on the same file, a fresh page);
* the real ext-apps 2.0.4 ``AppBridge`` in the page (``openai-host-page.js``), which has
  no ``x-assistant-frames/*`` extensions: those methods reject at once, saying so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import mcp_types as mcp
import pytest

from assistant_frames.apps import protocol
from assistant_frames.transports import websocket_server
from assistant_frames.widgets import SQLiteWidgetStateStore

from browser_support import BrowserPage
from helpers import wait_until
from view_support import (
    HTML,
    JS,
    PARENT_HTML,
    TOKEN,
    WAIT,
    kept_state_host,
    page_url,
    view_base,
    view_eval,
    view_wait,
    widget_files,
)

pytestmark = pytest.mark.anyio

# The widget: window.aui only, as the plan writes widgets. No data-wire: MCP Apps.
WIDGET_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>weather widget</title>
<script src="/assistant-frames/widget-runtime.js"></script>
<script src="/widget-probe.js"></script>
</head><body><div id="root"></div>
<script>
  // The plan's globals (AUIGlobals), read as properties of window.aui.
  const KEYS = ["theme", "locale", "displayMode", "maxHeight", "toolInput", "toolOutput",
                "widgetState", "userAgent", "safeArea"];
  const events = [];
  function render() {
    const state = window.aui.widgetState;
    document.getElementById("root").textContent =
      `${window.aui.theme}/${window.aui.displayMode}: ${state ? state.city : "-"}`;
  }
  window.addEventListener("aui:set_globals", (event) => {
    events.push(event.detail.globals);
    render();
  });
  render();
  // ?early=<city>: the widget sets its state as it loads, before the host has answered.
  const early = new URLSearchParams(location.search).get("early");
  if (early) window.aui.setWidgetState({ city: early });
  // The user picks a city: the plan's setWidgetState returns nothing to wait for.
  function pick(city) {
    window.aui.setWidgetState({ ...window.aui.widgetState, city });
  }
  window.widgetTest = {
    events,
    settle,
    pick,
    born: performance.timeOrigin + Math.random(),  // this document, not a reloaded one
    globals: () => JSON.parse(JSON.stringify(Object.fromEntries(KEYS.map((k) => [k, aui[k]])))),
    text: () => document.getElementById("root").textContent,
  };
</script>
</body></html>
"""

HOST_PAGE_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>ext-apps host</title></head>
<body><script src="/openai-host-page.js"></script></body></html>
"""

READY = "window.aui && window.aui.hostInfo !== null"
WIDGET = "message-7/weather"

HOST_CONTEXT = {
    "theme": "dark",
    "displayMode": "inline",
    "locale": "fr-FR",
    "platform": "desktop",
    "deviceCapabilities": {"touch": False, "hover": True},
    "containerDimensions": {"maxHeight": 600},
    "safeAreaInsets": {"top": 10, "right": 0, "bottom": 20, "left": 0},
}

INITIAL_GLOBALS = {
    "theme": "dark",
    "locale": "fr-FR",
    "displayMode": "inline",
    "maxHeight": 600,
    "toolInput": {},
    "toolOutput": None,
    "widgetState": None,
    "userAgent": {"device": {"type": "desktop"}, "capabilities": {"hover": True, "touch": False}},
    "safeArea": {"insets": {"top": 10, "right": 0, "bottom": 20, "left": 0}},
}


def files(bundles: dict[str, bytes]) -> dict[str, tuple[bytes, str]]:
    return {
        **widget_files(),
        "/parent.html": (PARENT_HTML, HTML),
        "/view.html": (WIDGET_HTML, HTML),
        "/ext-apps-host.html": (HOST_PAGE_HTML, HTML),
        "/openai-host-page.js": (bundles["/openai-host-page.js"], JS),
    }


class Log:
    """What the host's handlers were asked, by kind."""

    def __init__(self) -> None:
        self.seen: dict[str, list[Any]] = {}

    def __call__(self, what: str) -> Any:
        """A handler recording its params under ``what``."""
        return self.of(what).append

    def of(self, what: str) -> list[Any]:
        return self.seen.setdefault(what, [])


# -- under our AppBridge, through the parent relay ----------------------------------------------


async def test_a_window_aui_widget_runs_under_our_app_bridge_and_its_state_is_kept(
    page: BrowserPage, bundles: dict[str, bytes], tmp_path: Path
) -> None:
    path = tmp_path / "widgets.sqlite3"
    log = Log()
    handlers: dict[str, Any] = {
        "on_message": log("message"),
        "on_open_link": log("link"),
        "on_update_model_context": log("model-context"),
        "on_size_changed": log("size"),
        "on_request_display_mode": lambda params: params.mode,
        "on_request_teardown": lambda: log.of("teardown").append(None),
    }
    modal = {"x-assistant-frames/modal": log("modal")}

    async with kept_state_host(
        files(bundles),
        SQLiteWidgetStateStore(path),
        WIDGET,
        host_context=HOST_CONTEXT,
        extensions=modal,
        **handlers,
    ) as host:
        origin = view_base(host.server)
        await page.goto(page_url(host.server, quote(f"{origin}/view.html", safe="")))
        bridge = await host.next_bridge()
        await view_wait(page, origin, READY)
        assert await view_eval(page, origin, "[aui.wire, typeof aui.callTool]") == [
            "mcp-apps",
            "function",
        ]
        assert bridge.app_info is not None
        assert bridge.app_info.name == "weather widget"  # the runtime's default: the title

        # Every global, from the host context; nothing kept yet for this widget.
        assert await view_eval(page, origin, "widgetTest.globals()") == INITIAL_GLOBALS
        assert await view_eval(page, origin, "widgetTest.text()") == "dark/inline: -"

        # Each change of a global: one aui:set_globals event, with what changed only.
        before = len(await view_eval(page, origin, "widgetTest.events"))
        await bridge.send_tool_input({"city": "Paris"})
        await bridge.send_tool_result(
            mcp.CallToolResult(
                content=[mcp.TextContent(type="text", text="Sunny in Paris")],
                structured_content={"city": "Paris", "sky": "sunny"},
            )
        )
        await bridge.update_host_context(
            theme="light",
            locale="en-GB",
            container_dimensions={"maxHeight": 400},
            safe_area_insets={"top": 0, "right": 0, "bottom": 0, "left": 0},
            platform="mobile",
            device_capabilities={"touch": True, "hover": False},
        )
        await view_wait(page, origin, "aui.theme === 'light'")
        events = (await view_eval(page, origin, "widgetTest.events"))[before:]
        assert events == [
            {"toolInput": {"city": "Paris"}},
            {"toolOutput": {"city": "Paris", "sky": "sunny"}},
            {
                "theme": "light",
                "locale": "en-GB",
                "maxHeight": 400,
                "safeArea": {"insets": {"top": 0, "right": 0, "bottom": 0, "left": 0}},
                "userAgent": {
                    "device": {"type": "mobile"},
                    "capabilities": {"hover": False, "touch": True},
                },
            },
        ]

        async def run(expression: str) -> Any:
            with anyio.fail_after(WAIT):
                return await view_eval(page, origin, f"widgetTest.settle({expression})")

        # The eight methods, each with its outcome on the host.
        called = await run("aui.callTool('forecast', { city: 'Paris' })")
        assert called["result"]["content"] == [{"type": "text", "text": "Sunny in Paris"}]
        refused = await run("aui.callTool('secret', {})")
        assert refused["error"]["code"] == protocol.REFUSED
        assert "window.aui.callTool" in refused["error"]["message"]
        assert host.weather.calls == ["forecast Paris"]  # never the model-only tool

        assert await run("aui.sendFollowUpMessage({ prompt: 'And tomorrow?' })") == {"result": None}
        assert [m.content[0].text for m in log.of("message")] == ["And tomorrow?"]

        assert await run("aui.requestDisplayMode({ mode: 'fullscreen' })") == {
            "result": {"mode": "fullscreen"}
        }
        await view_wait(page, origin, "aui.displayMode === 'fullscreen'")
        assert (await view_eval(page, origin, "widgetTest.events"))[-1] == {
            "displayMode": "fullscreen"
        }

        assert await run("aui.requestModal({ title: 'Radar', params: { zoom: 3 } })") == {
            "result": {}
        }
        assert log.of("modal") == [{"title": "Radar", "params": {"zoom": 3}}]

        assert await run("aui.openExternal({ href: 'https://weather.example/paris' })") == {
            "result": None
        }
        assert [link.url for link in log.of("link")] == ["https://weather.example/paris"]

        # Not a number (the plan's table writes {height}): refused here, not sent as null.
        bad = await run("aui.notifyIntrinsicHeight({ height: 321 })")
        assert bad["error"]["code"] == protocol.INVALID_PARAMS
        assert 'must be a number of pixels, not {"height":321}' in bad["error"]["message"]
        assert await run("aui.notifyIntrinsicHeight(321)") == {"result": None}
        await wait_until(lambda: bool(log.of("size")), timeout=WAIT)
        assert [size.height for size in log.of("size")] == [321]

        # setWidgetState, as the plan calls it: nothing awaited. The widget sees it at
        # once; the model is told; the keeper saves it in the SQLite file.
        await view_eval(page, origin, "widgetTest.pick('Paris')")
        assert await view_eval(page, origin, "aui.widgetState") == {"city": "Paris"}
        assert await view_eval(page, origin, "widgetTest.text()") == "light/fullscreen: Paris"
        await wait_until(lambda: host.states == [{"city": "Paris"}], timeout=WAIT)
        assert await SQLiteWidgetStateStore(path).load(WIDGET) == {"city": "Paris"}
        await wait_until(lambda: bool(log.of("model-context")), timeout=WAIT)
        assert log.of("model-context")[0].structured_content == {"widgetState": {"city": "Paris"}}
        await view_eval(page, origin, "widgetTest.pick('Lyon')")
        await wait_until(lambda: len(host.states) == 2, timeout=WAIT)
        assert host.states[-1] == {"city": "Lyon"}

        assert await run("aui.requestClose()") == {"result": None}
        await wait_until(lambda: log.of("teardown") == [None], timeout=WAIT)

        # A re-render: the connection drops, the relay reconnects and reloads the
        # iframe, a new bridge (a new keeper on the same store) tells it the state.
        born = await view_eval(page, origin, "widgetTest.born")
        await host.drop()
        bridge = await host.next_bridge()
        await view_wait(page, origin, READY)
        assert await view_eval(page, origin, "widgetTest.born") != born
        assert await view_eval(page, origin, "aui.widgetState") == {"city": "Lyon"}
        assert await view_eval(page, origin, "widgetTest.text()") == "dark/inline: Lyon"
        assert bridge.host_context.model_extra == {"widgetState": {"city": "Lyon"}}
        await view_eval(page, origin, "widgetTest.pick('Nantes')")
        await wait_until(lambda: len(host.states) == 3, timeout=WAIT)
        assert host.states[-1] == {"city": "Nantes"}

    # A host restart: a new server and bridge, a new store object on the same file, a
    # fresh page. This host has no ui/message handler and no modal extension.
    log = Log()
    async with kept_state_host(
        files(bundles),
        SQLiteWidgetStateStore(path),
        WIDGET,
        host_context={**HOST_CONTEXT, "theme": "light"},
        on_update_model_context=log("model-context"),
    ) as host:
        origin = view_base(host.server)
        await page.goto(page_url(host.server, quote(f"{origin}/view.html", safe="")))
        await host.next_bridge()
        await view_wait(page, origin, READY)
        assert await view_eval(page, origin, "widgetTest.globals()") == {
            **INITIAL_GLOBALS,
            "theme": "light",
            "widgetState": {"city": "Nantes"},
        }
        assert await view_eval(page, origin, "widgetTest.text()") == "light/inline: Nantes"

        async def run_here(expression: str) -> Any:
            with anyio.fail_after(WAIT):
                return await view_eval(page, origin, f"widgetTest.settle({expression})")

        # What this host lacks rejects at once (the bound stays 30 s) and says so.
        assert await view_eval(page, origin, "aui.timeout") == 30000
        for call, method in [
            ("aui.sendFollowUpMessage({ prompt: 'Hello?' })", "sendFollowUpMessage"),
            ("aui.requestModal({ title: 'Radar' })", "requestModal"),
            ("aui.openExternal({ href: 'https://weather.example' })", "openExternal"),
        ]:
            outcome = await run_here(call)
            assert outcome["error"]["code"] == protocol.METHOD_NOT_FOUND, outcome
            assert (
                f"window.aui.{method} is not supported by this host"
                in (outcome["error"]["message"])
            )
            assert outcome["ms"] < 2000
        # What it has still works, and the state set now is kept in turn.
        called = await run_here("aui.callTool('forecast', { city: 'Nantes' })")
        assert called["result"]["content"] == [{"type": "text", "text": "Sunny in Nantes"}]
        assert host.weather.calls == ["forecast Nantes"]
        await view_eval(page, origin, "widgetTest.pick('Brest')")
        await wait_until(lambda: host.states == [{"city": "Brest"}], timeout=WAIT)
    assert await SQLiteWidgetStateStore(path).load(WIDGET) == {"city": "Brest"}


async def test_a_state_set_as_the_widget_loads_wins_over_the_one_kept_before(
    page: BrowserPage, bundles: dict[str, bytes], tmp_path: Path
) -> None:
    path = tmp_path / "widgets.sqlite3"
    await SQLiteWidgetStateStore(path).save(WIDGET, {"city": "Lyon"})  # from an earlier render
    async with kept_state_host(
        files(bundles), SQLiteWidgetStateStore(path), WIDGET, host_context=HOST_CONTEXT
    ) as host:
        origin = view_base(host.server)
        src = quote(f"{origin}/view.html?early=Paris", safe="")
        await page.goto(page_url(host.server, src))
        bridge = await host.next_bridge()
        assert bridge.host_context.model_extra == {"widgetState": {"city": "Lyon"}}
        await view_wait(page, origin, READY)
        await wait_until(lambda: host.states == [{"city": "Paris"}], timeout=WAIT)
        # The widget set Paris after the host read Lyon: both sides now hold Paris.
        assert await view_eval(page, origin, "aui.widgetState") == {"city": "Paris"}
        assert await view_eval(page, origin, "widgetTest.text()") == "dark/inline: Paris"
    assert await SQLiteWidgetStateStore(path).load(WIDGET) == {"city": "Paris"}


async def test_a_state_the_host_refuses_to_keep_rejects_set_widget_state(
    page: BrowserPage, bundles: dict[str, bytes], tmp_path: Path
) -> None:
    path = tmp_path / "widgets.sqlite3"
    log = Log()
    async with kept_state_host(
        files(bundles),
        SQLiteWidgetStateStore(path),
        WIDGET,
        host_context=HOST_CONTEXT,
        max_state_bytes=100,
        on_update_model_context=log("model-context"),
    ) as host:
        origin = view_base(host.server)
        await page.goto(page_url(host.server, quote(f"{origin}/view.html", safe="")))
        await host.next_bridge()
        await view_wait(page, origin, READY)

        async def run(expression: str) -> Any:
            with anyio.fail_after(WAIT):
                return await view_eval(page, origin, f"widgetTest.settle({expression})")

        assert await run("aui.setWidgetState({ city: 'Paris' })") == {"result": None}
        # The model was told (the host answers ui/update-model-context), but the host,
        # which keeps states, refused this one: the widget must hear it.
        refused = await run("aui.setWidgetState({ city: 'x'.repeat(200) })")
        assert refused["error"]["code"] == protocol.INVALID_PARAMS, refused
        assert "over the host's limit of 100" in refused["error"]["message"]
        assert refused["error"]["method"] == "x-assistant-frames/widget-state"
        assert len(log.of("model-context")) == 2
        assert host.states == [{"city": "Paris"}]
    assert await SQLiteWidgetStateStore(path).load(WIDGET) == {"city": "Paris"}


# -- under the real ext-apps AppBridge ----------------------------------------------------------


async def test_a_window_aui_widget_runs_under_the_ext_apps_app_bridge(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async def nobody(transport: Any) -> None:  # no WebSocket here: the page is the host
        await transport.aclose()

    async with websocket_server(nobody, token=TOKEN, http_files=files(bundles)) as server:
        origin = view_base(server)
        src = quote(f"{origin}/view.html", safe="")
        await page.goto(f"http://127.0.0.1:{server.port}/ext-apps-host.html#src={src}")
        await view_wait(page, origin, READY)
        await page.wait_for("hostTest.log.initialized === 1")
        assert await view_eval(page, origin, "aui.hostInfo") == {
            "name": "ext-apps-host",
            "version": "2.0.4-test",
        }
        assert await view_eval(page, origin, "widgetTest.globals()") == {
            "theme": "dark",
            "locale": "de-DE",
            "displayMode": "inline",
            "maxHeight": 480,
            "toolInput": {},
            "toolOutput": None,
            "widgetState": None,
            "userAgent": {
                "device": {"type": "mobile"},
                "capabilities": {"hover": False, "touch": True},
            },
            "safeArea": {"insets": {"top": 1, "bottom": 2, "left": 3, "right": 4}},
        }

        await page.evaluate("hostTest.sendToolInput({ city: 'Berlin' })")
        await page.evaluate(
            """hostTest.sendToolResult({ content: [{ type: "text", text: "ok" }],
                 structuredContent: { city: "Berlin" } })"""
        )
        await page.evaluate("hostTest.setHostContext({ theme: 'light', locale: 'de-DE' })")
        await view_wait(page, origin, "aui.theme === 'light'")
        events = await view_eval(page, origin, "widgetTest.events")
        assert events[-3:] == [
            {"toolInput": {"city": "Berlin"}},
            {"toolOutput": {"city": "Berlin"}},
            {"theme": "light"},
        ]

        async def run(expression: str) -> Any:
            with anyio.fail_after(WAIT):
                return await view_eval(page, origin, f"widgetTest.settle({expression})")

        called = await run("aui.callTool('forecast', { city: 'Berlin' })")
        assert called["result"]["structuredContent"] == {"echoed": {"city": "Berlin"}}
        assert await run("aui.sendFollowUpMessage({ prompt: 'Und morgen?' })") == {"result": None}
        assert await run("aui.requestDisplayMode({ mode: 'pip' })") == {"result": {"mode": "pip"}}
        assert await run("aui.openExternal({ href: 'https://wetter.example' })") == {"result": None}
        assert await run("aui.notifyIntrinsicHeight(200)") == {"result": None}
        # The model is told the state; this host keeps none (-32601 there), which is fine.
        await view_eval(page, origin, "widgetTest.pick('Berlin')")
        assert await view_eval(page, origin, "aui.widgetState") == {"city": "Berlin"}
        assert await run("aui.requestClose()") == {"result": None}
        await page.wait_for(
            "hostTest.log.teardownRequests === 1 && hostTest.log.sizes.length"
            " && hostTest.log.modelContext.length"
        )
        log = await page.evaluate("hostTest.log")
        assert log["toolCalls"] == [{"name": "forecast", "arguments": {"city": "Berlin"}}]
        assert log["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": "Und morgen?"}]}
        ]
        assert log["displayModes"] == [{"mode": "pip"}]
        assert log["links"] == [{"url": "https://wetter.example"}]
        assert log["sizes"][0]["height"] == 200
        assert log["modelContext"] == [{"structuredContent": {"widgetState": {"city": "Berlin"}}}]
        assert log["errors"] == []

        # The x-assistant-frames methods: this host lacks them; each rejects at once.
        assert await view_eval(page, origin, "aui.timeout") == 30000
        for call, method in [
            ("aui.requestModal({ title: 'Radar' })", "requestModal"),
            ("aui.selectFiles()", "selectFiles"),
            ("aui.getFileDownloadUrl({ fileId: 'f' })", "getFileDownloadUrl"),
            ("aui.setOpenInAppUrl({ href: 'https://wetter.example' })", "setOpenInAppUrl"),
        ]:
            outcome = await run(call)
            assert outcome["error"]["code"] == protocol.METHOD_NOT_FOUND, outcome
            assert (
                f"window.aui.{method} is not supported by this host"
                in (outcome["error"]["message"])
            )
            assert outcome["error"]["method"].startswith("x-assistant-frames/")
            assert outcome["ms"] < 2000
