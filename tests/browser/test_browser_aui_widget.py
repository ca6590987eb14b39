"""A widget written only against ``window.aui`` on the plan's ``AUI_*`` wire, in headless Chromium.

The widget (``/view.html``, served from ``http://localhost:<port>``: another origin than
the page) loads the shipped ``widget-runtime.js`` with ``data-wire="aui"``. The page
(``/parent.html`` on ``http://127.0.0.1:<port>``) runs the parent relay with
``app: true, wire: "aui"``, which carries the widget's messages over a WebSocket to a
Python ``WidgetHost`` per connection, in front of a real MCP server and a real SQLite
state store.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest

from assistant_frames.browser import inline_script
from assistant_frames.transports import WebSocketServer, websocket_server
from assistant_frames.widgets import SQLiteWidgetStateStore, WidgetHost, WidgetManifest

from browser_support import BrowserPage
from helpers import wait_until
from view_support import (
    TOKEN,
    WAIT,
    page_url,
    view_base,
    view_eval,
    view_wait,
    weather_server,
    widget_files,
)

pytestmark = pytest.mark.anyio

HTML = "text/html; charset=utf-8"
WIDGET_ID = "pizza-widget-1"

# The relay page: the widget on another origin, its AUI_* messages relayed to Python.
PARENT_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>aui host page</title></head>
<body>
<script src="/assistant-frames/parent-relay.js"></script>
<script>
  const config = new URLSearchParams(location.hash.slice(1));
  window.calls = [];  // the widget's AUI_METHOD_CALLs as this page sees them
  window.addEventListener("message", (event) => {
    if (relay.iframe && event.source === relay.iframe.contentWindow
        && event.data && event.data.type === "AUI_METHOD_CALL") calls.push(event.data);
  });
  window.relay = AssistantFramesRelay.parent({
    url: `ws://${location.host}/widgets/pizza`,
    token: config.get("token"),
    app: true,
    wire: "aui",
    src: config.get("src"),
    initialDelay: 100,
  });
  // Posts each message to the widget from ANOTHER window of this page (not its parent).
  window.postFromAnotherWindow = (messages) => {
    const other = document.body.appendChild(document.createElement("iframe"));
    const post = other.contentWindow.Function("target", "m", "target.postMessage(m, '*')");
    for (const m of messages) post(relay.iframe.contentWindow, m);
  };
</script>
</body></html>
"""

# The widget: nothing but window.aui, as the plan's examples write them.
WIDGET_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>pizza widget</title>
<script src="/assistant-frames/widget-runtime.js" data-wire="aui"></script>
<script src="/widget-probe.js"></script>
</head><body><div id="root"></div>
<script>
  const KEYS = ["theme", "locale", "displayMode", "maxHeight", "toolInput", "toolOutput",
                "widgetState", "userAgent", "safeArea"];
  const snapshot = () =>
    JSON.parse(JSON.stringify(Object.fromEntries(KEYS.map((k) => [k, aui[k]]))));
  const events = [];
  function render() {
    document.getElementById("root").textContent =
      `${window.aui.theme}: ${JSON.stringify(window.aui.toolOutput)}`;
  }
  window.addEventListener("aui:set_globals", (event) => {
    events.push(event.detail.globals);
    render();
  });
  render();
  // Test probes, not widget code: the globals at load, and what the parent posted.
  let atLoad = null;
  window.aui.ready.then(() => { atLoad = snapshot(); });
  const fromParent = [], fromOthers = [];
  window.addEventListener("message",
    (e) => (e.source === parent ? fromParent : fromOthers).push(e.data));
  const started = {};
  window.widgetTest = {
    nonce: Math.random(),
    events, fromParent, fromOthers, settle,
    globals: snapshot,
    atLoad: () => atLoad,
    text: () => document.getElementById("root").textContent,
    start: (name, promise) => { started[name] = settle(promise); },
    outcome: (name) => started[name],
    post: (message) => parent.postMessage(message, "*"),
  };
</script>
</body></html>
"""

GLOBALS: dict[str, Any] = {
    "theme": "dark",
    "locale": "fr-FR",
    "displayMode": "inline",
    "maxHeight": 640,
    "toolInput": {"size": "large"},
    "toolOutput": {"pizzas": ["margherita"]},
    "widgetState": {"cart": []},
    "userAgent": {"device": {"type": "desktop"}, "capabilities": {"hover": True, "touch": False}},
    "safeArea": {"insets": {"top": 10, "bottom": 20, "left": 0, "right": 0}},
}

READY = "window.widgetTest && widgetTest.atLoad() !== null"

# The same widget carrying the runtime inline, as a widget that runs in ChatGPT or Claude
# must (the runtime's own source holds "</script>"-like text: inlined by hand, it broke).
RUNTIME_TAG = b'<script src="/assistant-frames/widget-runtime.js" data-wire="aui"></script>'
INLINED_HTML = WIDGET_HTML.replace(
    RUNTIME_TAG, inline_script("widget-runtime.js", data_wire="aui").encode()
)
assert INLINED_HTML != WIDGET_HTML


@dataclass
class Connection:
    """One relay connection: its ready ``WidgetHost``; setting ``end`` drops the socket."""

    host: WidgetHost
    end: anyio.Event = field(default_factory=anyio.Event)


@dataclass
class Side:
    """The host side: the server, each connection's host, and what the handlers saw."""

    server: WebSocketServer
    weather_calls: list[str]
    connections: anyio.abc.ObjectReceiveStream[Connection]
    log: dict[str, list[Any]]
    release: anyio.Event

    def seen(self, what: str) -> list[Any]:
        return self.log.setdefault(what, [])

    async def next_connection(self) -> Connection:
        with anyio.fail_after(WAIT):
            return await self.connections.receive()


@asynccontextmanager
async def aui_side(
    db: Path, manifest: WidgetManifest | None = None, **handlers: Any
) -> AsyncIterator[Side]:
    """A websocket server whose every connection is a ``WidgetHost`` with recording handlers.

    ``handlers`` replace the recording ones (``None``: the host has no handler).
    """
    send, receive = anyio.create_memory_object_stream[Connection](10)
    log: dict[str, list[Any]] = {}
    release = anyio.Event()

    def record(what: str, answer: Any = None) -> Callable[..., Any]:
        def handler(*args: Any) -> Any:
            log.setdefault(what, []).append(args[0] if len(args) == 1 else args)
            return args[0] if answer == "echo" else answer

        return handler

    callbacks: dict[str, Any] = {
        "on_widget_state": record("widget-state"),
        "on_follow_up": record("follow-up"),
        "on_request_display_mode": record("display-mode", "echo"),
        "on_request_modal": record("modal"),
        "on_request_close": record("close"),
        "on_open_external": record("external"),
        "on_intrinsic_height": record("height"),
        "on_ready": record("ready"),
        "on_resize": record("resize"),
        "on_action": record("action"),
        "on_add_result": record("add-result"),
        "on_widget_error": record("widget-error"),
        **handlers,
    }

    async with weather_server() as weather:

        async def accept(transport: Any) -> None:
            host = WidgetHost(
                transport,
                WIDGET_ID,
                globals=GLOBALS,
                manifest=manifest or WidgetManifest.all(),
                store=SQLiteWidgetStateStore(db),
                server=weather.frame,
                timeout=WAIT,
                **callbacks,
            )
            async with host:
                await host.wait_ready(WAIT)
                connection = Connection(host)
                await send.send(connection)
                await connection.end.wait()

        files = {
            **widget_files(),
            "/parent.html": (PARENT_HTML, HTML),
            "/view.html": (WIDGET_HTML, HTML),
            "/view.html/inlined": (INLINED_HTML, HTML),  # view_support finds it by that prefix
        }
        async with (
            send,
            receive,
            websocket_server(accept, token=TOKEN, http_files=files) as server,
        ):
            try:
                yield Side(server, weather.calls, receive, log, release)
            finally:
                release.set()


async def open_widget(
    page: BrowserPage, side: Side, view: str = "/view.html"
) -> tuple[str, Connection]:
    """Load the page; return the widget's origin and its connection, once the widget has
    its first globals."""
    origin = view_base(side.server)
    await page.goto(page_url(side.server, quote(f"{origin}{view}", safe="")))
    connection = await side.next_connection()
    await view_wait(page, origin, READY)
    return origin, connection


async def run(page: BrowserPage, origin: str, expression: str) -> Any:
    """Await the widget's promise ``expression``: ``{"result": ...}`` or ``{"error": ...}``."""
    with anyio.fail_after(WAIT):
        return await view_eval(page, origin, f"widgetTest.settle({expression})")


async def test_an_inlined_runtime_runs(page: BrowserPage, tmp_path: Path) -> None:
    async with aui_side(tmp_path / "state.db") as side:
        origin, connection = await open_widget(page, side, "/view.html/inlined")
        assert await view_eval(page, origin, "widgetTest.globals()") == GLOBALS
        assert await run(page, origin, "aui.setWidgetState({inline: true})") == {"result": None}
        assert connection.host.state.state == {"inline": True}
        body = await view_eval(page, origin, "document.body.innerText")
        assert "widget runtime" not in body  # no source shown as text
        assert body.startswith('dark: {"pizzas"')


async def test_globals_and_every_method(page: BrowserPage, tmp_path: Path) -> None:
    async with aui_side(tmp_path / "state.db") as side:
        origin, connection = await open_widget(page, side)
        host = connection.host

        # Every global from globals=, pushed in full once; the widget's render uses them.
        assert await view_eval(page, origin, "widgetTest.globals()") == GLOBALS
        assert await view_eval(page, origin, "widgetTest.atLoad()") == GLOBALS
        assert await view_eval(page, origin, "widgetTest.fromParent") == [
            {"type": "AUI_SET_GLOBALS", "globals": GLOBALS}
        ]
        text = 'dark: {"pizzas":["margherita"]}'
        assert await view_eval(page, origin, "widgetTest.text()") == text

        # A change: only what changed crosses the wire and reaches the event; the rest stays.
        output = {"pizzas": ["margherita", "funghi"]}
        await host.update_globals(theme="light", locale="fr-FR", toolOutput=output)
        await view_wait(page, origin, "aui.theme === 'light'")
        changed = {"theme": "light", "toolOutput": output}
        assert (await view_eval(page, origin, "widgetTest.fromParent"))[-1] == {
            "type": "AUI_SET_GLOBALS",
            "globals": changed,
        }
        assert (await view_eval(page, origin, "widgetTest.events"))[-1] == changed
        assert await view_eval(page, origin, "widgetTest.globals()") == {**GLOBALS, **changed}
        text = 'light: {"pizzas":["margherita","funghi"]}'
        assert await view_eval(page, origin, "widgetTest.text()") == text

        # callTool: an app-visible tool reaches the real server; a model-only one never does.
        called = await run(page, origin, "aui.callTool('forecast', { city: 'Paris' })")
        assert called["result"]["content"] == [{"type": "text", "text": "Sunny in Paris"}]
        assert not called["result"].get("isError")
        refused = await run(page, origin, "aui.callTool('secret', {})")
        assert 'Tool "secret" is not visible to apps' in refused["error"]["message"]
        assert refused["error"]["method"] == "callTool"
        assert side.weather_calls == ["forecast Paris"]

        state = {"cart": ["funghi"]}
        assert await run(page, origin, f"aui.setWidgetState({json.dumps(state)})") == {
            "result": None
        }
        assert side.seen("widget-state") == [state]
        assert await view_eval(page, origin, "aui.widgetState") == state
        assert await SQLiteWidgetStateStore(tmp_path / "state.db").load(WIDGET_ID) == state
        # A state that is no object is refused by the runtime: the widget keeps its own.
        bad = await run(page, origin, "aui.setWidgetState('x')")
        assert bad["error"]["code"] == "invalid"
        assert "must be an object or null" in bad["error"]["message"]
        assert await view_eval(page, origin, "aui.widgetState") == state
        assert side.seen("widget-state") == [state]

        follow_up = "aui.sendFollowUpMessage({ prompt: 'Two more', scrollToBottom: true })"
        assert await run(page, origin, follow_up) == {"result": None}
        assert side.seen("follow-up") == [{"prompt": "Two more", "scrollToBottom": True}]

        events_before = len(await view_eval(page, origin, "widgetTest.events"))
        assert await run(page, origin, "aui.requestDisplayMode({ mode: 'fullscreen' })") == {
            "result": {"mode": "fullscreen"}
        }
        assert side.seen("display-mode") == ["fullscreen"]
        await view_wait(page, origin, "aui.displayMode === 'fullscreen'")
        events = await view_eval(page, origin, "widgetTest.events")
        assert events[events_before:] == [{"displayMode": "fullscreen"}]

        modal = "aui.requestModal({ title: 'Toppings', params: { step: 2 } })"
        assert await run(page, origin, modal) == {"result": None}
        assert side.seen("modal") == [{"title": "Toppings", "params": {"step": 2}}]

        external = "aui.openExternal({ href: 'https://pizza.example/menu' })"
        assert await run(page, origin, external) == {"result": None}
        assert side.seen("external") == ["https://pizza.example/menu"]

        assert await run(page, origin, "aui.notifyIntrinsicHeight(321)") == {"result": None}
        assert side.seen("height") == [321]

        assert await run(page, origin, "aui.requestClose()") == {"result": None}
        assert side.seen("close") == [()]
        assert host.ignored == 0


async def test_widget_state_survives_a_re_render_and_a_host_restart(
    page: BrowserPage, tmp_path: Path
) -> None:
    db = tmp_path / "state.db"
    first, second = {"cart": ["margherita"]}, {"cart": ["margherita", "funghi"]}
    async with aui_side(db) as side:
        origin, connection = await open_widget(page, side)
        assert await view_eval(page, origin, "aui.widgetState") == GLOBALS["widgetState"]
        assert await run(page, origin, f"aui.setWidgetState({json.dumps(first)})") == {
            "result": None
        }
        nonce = await view_eval(page, origin, "widgetTest.nonce")

        # Re-render: the socket drops, the relay reconnects to a new host and reloads the
        # widget, which gets the saved state as it loads.
        connection.end.set()
        again = await side.next_connection()
        assert again.host is not connection.host
        await view_wait(page, origin, f"{READY} && widgetTest.nonce !== {nonce}")
        assert (await view_eval(page, origin, "widgetTest.atLoad()"))["widgetState"] == first
        assert await run(page, origin, f"aui.setWidgetState({json.dumps(second)})") == {
            "result": None
        }
        assert side.seen("widget-state") == [first, second]

    # Restart: a new server, host and store on the same file, and a fresh page.
    async with aui_side(db) as side:
        origin, connection = await open_widget(page, side)
        assert connection.host.globals["widgetState"] == second
        assert await view_eval(page, origin, "widgetTest.atLoad()") == {
            **GLOBALS,
            "widgetState": second,
        }


async def test_refused_unsupported_and_timed_out_calls(page: BrowserPage, tmp_path: Path) -> None:
    async def stuck(href: str) -> None:
        side.seen("external").append(href)
        await side.release.wait()  # never answers while the test runs

    # The default manifest: only the methods that act on the widget alone.
    async with aui_side(
        tmp_path / "state.db",
        manifest=WidgetManifest(),
        on_request_close=None,
        on_open_external=stuck,
    ) as side:
        origin, _ = await open_widget(page, side)
        assert await view_eval(page, origin, "aui.timeout") == 30000

        # Not granted: refused at once, saying so; neither the server nor a handler is reached.
        for call, method in [
            ("aui.callTool('forecast', { city: 'Rome' })", "callTool"),
            ("aui.requestModal({ title: 'Toppings' })", "requestModal"),
            ("aui.requestDisplayMode({ mode: 'fullscreen' })", "requestDisplayMode"),
            ("aui.sendFollowUpMessage({ prompt: 'hi' })", "sendFollowUpMessage"),
        ]:
            outcome = await run(page, origin, call)
            assert outcome["error"]["message"] == (
                f"window.aui.{method}: Method not granted to this widget by its manifest: {method}"
            ), outcome
            assert outcome["ms"] < 2000
        assert side.weather_calls == []
        for what in ("modal", "display-mode", "follow-up"):
            assert side.seen(what) == [], what
        assert await view_eval(page, origin, "aui.displayMode") == "inline"

        # Granted, but this host has no handler: rejected far below the 30 s bound.
        lacking = await run(page, origin, "aui.requestClose()")
        assert lacking["error"]["message"] == (
            "window.aui.requestClose: This host does not support requestClose"
        )
        assert lacking["ms"] < 2000

        # A handler that never answers: the widget's own (here short) bound rejects the call.
        await view_eval(page, origin, "aui.timeout = 300")
        late = await run(page, origin, "aui.openExternal({ href: 'https://pizza.example' })")
        assert late["error"]["code"] == "timeout"
        assert late["error"]["method"] == "openExternal"
        assert "within 300 ms" in late["error"]["message"]
        assert 250 <= late["ms"] < 5000
        assert side.seen("external") == ["https://pizza.example"]

        # The widget goes on working.
        await view_eval(page, origin, "aui.timeout = 30000")
        assert await run(page, origin, "aui.notifyIntrinsicHeight(200)") == {"result": None}
        assert side.seen("height") == [200]


async def test_malformed_messages_are_ignored_both_ways(page: BrowserPage, tmp_path: Path) -> None:
    gate = anyio.Event()

    async def slow_modal(options: dict[str, Any]) -> None:
        side.seen("modal").append(options)
        await gate.wait()

    async with aui_side(tmp_path / "state.db", on_request_modal=slow_modal) as side:
        origin, connection = await open_widget(page, side)
        host = connection.host

        # (a) Junk into the widget, while a call waits for its answer.
        await view_eval(page, origin, "widgetTest.start('modal', aui.requestModal({ title: 'x' }))")
        await wait_until(lambda: bool(side.seen("modal")), timeout=WAIT)
        [waiting] = await page.evaluate("calls.filter((c) => c.method === 'requestModal')")
        events = len(await view_eval(page, origin, "widgetTest.events"))
        forged = [
            {"type": "AUI_SET_GLOBALS", "globals": {"theme": "forged"}},
            {"type": "AUI_METHOD_RESPONSE", "id": waiting["id"], "result": "forged"},
            {"type": "AUI_METHOD_RESPONSE", "id": waiting["id"], "error": "forged"},
        ]
        # From the parent (the widget's host window): malformed, or for no call.
        await page.evaluate(
            "(junk) => junk.forEach((m) => relay.iframe.contentWindow.postMessage(m, '*'))",
            [
                "junk",
                42,
                None,
                [1, 2],
                {"type": "AUI_SET_GLOBALS"},
                {"type": "AUI_SET_GLOBALS", "globals": "forged"},
                {"type": "AUI_SET_GLOBALS", "globals": ["forged"]},
                {"type": "AUI_SET_GLOBALS", "globals": None},
                {"type": "AUI_METHOD_RESPONSE", "id": "nobody", "result": "forged"},
                {"type": "AUI_METHOD_RESPONSE", "id": "__proto__", "result": "forged"},
                {"type": "AUI_METHOD_RESPONSE", "id": "constructor", "error": "forged"},
                {"type": "AUI_METHOD_RESPONSE", "id": 1, "error": "forged"},
                {"type": "render", "props": {}},
            ],
        )
        # From other windows: the right shape, the wrong sender.
        await page.evaluate("(forged) => postFromAnotherWindow(forged)", forged)
        await view_eval(page, origin, "(ms) => ms.forEach((m) => postMessage(m, '*'))", forged)
        await view_wait(page, origin, f"widgetTest.fromOthers.length === {2 * len(forged)}")
        # The host's next change arrives after all of that: nothing forged got in.
        await host.update_globals(locale="de-DE")
        await view_wait(page, origin, "aui.locale === 'de-DE'")
        german = {**GLOBALS, "locale": "de-DE"}
        assert await view_eval(page, origin, "widgetTest.globals()") == german
        assert (await view_eval(page, origin, "widgetTest.events"))[events:] == [
            {"locale": "de-DE"}
        ]
        gate.set()
        assert await view_eval(page, origin, "widgetTest.outcome('modal')") == {"result": None}
        called = await run(page, origin, "aui.callTool('forecast', { city: 'Paris' })")
        assert called["result"]["content"] == [{"type": "text", "text": "Sunny in Paris"}]

        # (b) Junk from the widget to its host. What is no widget message at all the relay
        # drops; what the relay forwards the host ignores, counting each; no handler runs.
        assert host.ignored == 0
        forwarded = [
            {
                "type": "AUI_METHOD_CALL",
                "method": "callTool",
                "args": ["forecast", {"city": "Oslo"}],
            },
            {"type": "AUI_METHOD_CALL", "id": "junk-1", "args": []},
            {"type": "AUI_METHOD_CALL", "id": "junk-2", "method": "callTool", "args": "forecast"},
            {"type": "AUI_METHOD_CALL", "id": True, "method": "requestClose", "args": []},
            {"type": "resize", "payload": "tall"},
        ]
        dropped = ["junk", 7, None, [1], {"type": "AUI_HACK"}, {"method": "callTool"}]
        await view_eval(page, origin, "(ms) => ms.forEach(widgetTest.post)", dropped + forwarded)
        # Wrong argument types through window.aui: each call refused, saying why.
        for call, why in [
            ("aui.callTool(42, {})", "callTool(name, args): name: invalid argument 42"),
            ("aui.callTool('forecast', 'Paris')", "callTool(name, args): args must be an object"),
            ("aui.requestDisplayMode({ mode: 'huge' })", "requestDisplayMode: unknown mode 'huge'"),
            ("aui.openExternal({ href: 'javascript:1' })", "openExternal: not an http(s) URL"),
            ("aui.notifyIntrinsicHeight('tall')", "notifyIntrinsicHeight(height): invalid"),
            ("aui.sendFollowUpMessage({ prompt: 5 })", "prompt must be a string"),
        ]:
            outcome = await run(page, origin, call)
            assert why in outcome["error"]["message"], outcome
        # Sent before those calls, so read before their answers.
        assert host.ignored == len(forwarded)
        assert side.weather_calls == ["forecast Paris"]
        for what in ("close", "resize", "height", "external", "display-mode", "follow-up"):
            assert side.seen(what) == [], what
        assert await view_eval(page, origin, "aui.displayMode") == "inline"
        called = await run(page, origin, "aui.callTool('forecast', { city: 'Lyon' })")
        assert called["result"]["content"] == [{"type": "text", "text": "Sunny in Lyon"}]
        assert await run(page, origin, "aui.notifyIntrinsicHeight(99)") == {"result": None}
        assert side.seen("height") == [99]
        # Nothing the widget got tripped its runtime up.
        assert not [line for line in page.console if "could not handle" in line]


async def test_legacy_messages_reach_their_callbacks(page: BrowserPage, tmp_path: Path) -> None:
    async with aui_side(tmp_path / "state.db") as side:
        origin, connection = await open_widget(page, side)
        assert side.seen("ready") == [()]  # the runtime's own, at load
        await view_eval(
            page,
            origin,
            """() => [
                 { type: "ready" },
                 { type: "resize", payload: 480 },
                 { type: "action", payload: "order-pizza" },
                 { type: "addResult", payload: { approved: true } },
                 { type: "error", payload: "render failed" },
               ].forEach(widgetTest.post)""",
        )
        await wait_until(lambda: bool(side.seen("widget-error")), timeout=WAIT)
        assert side.seen("ready") == [(), ()]
        assert side.seen("resize") == [480]
        assert side.seen("height") == [480]  # a resize is the intrinsic height too
        assert side.seen("action") == ["order-pizza"]
        assert side.seen("add-result") == [{"approved": True}]
        assert side.seen("widget-error") == ["render failed"]
        # A second ready gets the globals in full again.
        await view_wait(page, origin, "widgetTest.fromParent.length === 2")
        assert await view_eval(page, origin, "widgetTest.fromParent[1]") == {
            "type": "AUI_SET_GLOBALS",
            "globals": GLOBALS,
        }
        assert connection.host.ignored == 0
