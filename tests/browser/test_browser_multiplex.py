"""The frame channel and JSON-RPC 2.0 at once through one browser relay, in Chromium.

Parent relay: the bridged iframe runs a real @assistant-ui/core ``AssistantFrameProvider``
and a small JSON-RPC 2.0 echo peer on ``postMessage``; the Python side splits the relay's
one WebSocket with a ``Multiplexer`` into an ``AssistantFrameHost`` and a JSON-RPC peer.
Child relay: the page runs a real JS ``AssistantFrameHost`` and a JSON-RPC peer through
``child-relay.html``; the Python side serves a frame and a JSON-RPC peer on one WebSocket.
The relays' rules hold for JSON-RPC as for the frame channel: only the bridged window and
origin, nothing while the socket is not open, never the relay's own channel.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from aui_pages import HOST_READY

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContextRegistry,
    Multiplexer,
)
from assistant_frames.browser import relay_files
from assistant_frames.frames.host_machine import FRAME_LOADED
from assistant_frames.transports import WebSocketServer, frame_channel, jsonrpc, websocket_server

from browser_support import BrowserPage, RecordingTransport
from helpers import wait_until
from jsonrpc_peer import JsonRpcPeer

pytestmark = pytest.mark.anyio

TOKEN = "browser-test-token"
WAIT = 10.0
HTML = "text/html; charset=utf-8"
JS = "text/javascript; charset=utf-8"
CALLS = 10

# A JSON-RPC 2.0 peer on postMessage, for a page talking to `target()` (its counterpart
# window): answers requests with {echo: params, by: "browser"}, matches responses by id.
RPC_PEER_JS = """
function startRpcPeer(target) {
  const pending = new Map();
  let nextId = 1;
  window.rpcLog = [];
  window.addEventListener("message", (event) => {
    if (event.source !== target() || event.origin !== location.origin) return;
    const data = event.data;
    if (!data || data.jsonrpc !== "2.0") return;
    rpcLog.push(data);
    if ("method" in data) {
      const result = { echo: data.params, by: "browser" };
      target().postMessage({ jsonrpc: "2.0", id: data.id, result }, location.origin);
    } else if (pending.has(data.id)) {
      pending.get(data.id)(data.result);
      pending.delete(data.id);
    }
  });
  window.rpcTest = {
    // Posted from a task of this window, so event.source is this window.
    call(params) {
      const id = "b" + nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, resolve);
        setTimeout(() => target().postMessage(
          { jsonrpc: "2.0", id, method: "echo", params }, location.origin), 0);
        setTimeout(() => reject(new Error("no JSON-RPC response within 10 s")), 10000);
      });
    },
    post(message) {
      setTimeout(() => target().postMessage(message, "*"), 0);
    },
  };
}
"""

# -- parent relay: a JS frame + JSON-RPC in the iframe, a Python host + JSON-RPC ----------

FRAME_HTML = (
    b"""<!doctype html>
<html><head><meta charset="utf-8"><title>JS frame with JSON-RPC</title></head>
<body><script src="/frame-page.js"></script><script>"""
    + RPC_PEER_JS.encode()
    + b"""startRpcPeer(() => window.parent);</script></body></html>
"""
)

PARENT_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>parent relay</title></head>
<body>
<div id="slot"></div>
<script src="/assistant-frames/parent-relay.js"></script>
<script>
  const config = new URLSearchParams(location.hash.slice(1));
  window.relayLog = [];
  window.seen = [];  // every JSON-RPC message this page gets, and from where
  window.addEventListener("message", (event) => {
    if (event.data && event.data.jsonrpc === "2.0")
      seen.push({ id: event.data.id, origin: event.origin,
                  bridged: !!relay.iframe && event.source === relay.iframe.contentWindow });
  });
  window.relay = AssistantFramesRelay.parent({
    url: `ws://${location.host}/frames/js`,
    token: config.get("token"),
    src: "/frame.html",
    container: "#slot",
    initialDelay: Number(config.get("initial_delay") || 100),
    onStatus: (status) => relayLog.push(status),
  });
</script>
</body></html>
"""

# Posts one JSON-RPC request, named by the page's query string, to its parent.
SENDER_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"></head><body><script>
  const id = new URLSearchParams(location.search).get("id");
  parent.postMessage({ jsonrpc: "2.0", id, method: "echo", params: id }, "*");
</script></body></html>
"""


@dataclass
class Connection:
    host: AssistantFrameHost
    rpc: JsonRpcPeer
    mux: Multiplexer
    frame_messages: list[Any] = field(default_factory=list)


@dataclass
class PythonHostSide:
    server: WebSocketServer
    connections: anyio.abc.ObjectReceiveStream[Connection]

    @property
    def base(self) -> str:
        return f"http://{self.server.host}:{self.server.port}"

    async def next_connection(self) -> Connection:
        with anyio.fail_after(WAIT):
            connection = await self.connections.receive()
            await connection.host.wait_for_context(timeout=WAIT)
        return connection


@asynccontextmanager
async def python_host(bundles: dict[str, bytes]) -> AsyncIterator[PythonHostSide]:
    """Hosts every frame that dials in, with a JSON-RPC peer on the same WebSocket."""
    files = {
        **relay_files(),
        "/frame-page.js": (bundles["/frame-page.js"], JS),
        "/frame.html": (FRAME_HTML, HTML),
        "/parent.html": (PARENT_HTML, HTML),
        "/sender.html": (SENDER_HTML, HTML),
    }
    send, receive = anyio.create_memory_object_stream[Connection](10)

    async def accept(transport: Any) -> None:
        mux = Multiplexer(transport)
        frames = mux.open(frame_channel)
        rpc = JsonRpcPeer(mux.open(jsonrpc), "python")
        async with mux, anyio.create_task_group() as tg:
            tg.start_soon(rpc.run)
            log: list[Any] = []
            recording = RecordingTransport(frames, log)
            async with AssistantFrameHost(recording, name="js", timeout=WAIT) as host:
                await send.send(Connection(host, rpc, mux, log))
                await host.wait_disconnected()
            tg.cancel_scope.cancel()

    async with send, receive, websocket_server(accept, token=TOKEN, http_files=files) as server:
        yield PythonHostSide(server, receive)


FRAME_RPC = "window.relay.iframe.contentWindow.rpcTest"


async def test_frame_channel_and_json_rpc_share_the_parent_relay(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with python_host(bundles) as side:
        await page.goto(f"{side.base}/parent.html#token={TOKEN}")
        connection = await side.next_connection()
        host, rpc = connection.host, connection.rpc
        assert sorted(host.get_model_context().tools) == ["add", "fail", "slow"]
        results: dict[str, Any] = {}

        async def tool_call(n: int) -> None:
            results[f"add{n}"] = await host.call_tool("add", {"a": n, "b": 1})

        async def python_rpc(n: int) -> None:
            results[f"py{n}"] = await rpc.call(n)

        async def browser_rpc() -> None:
            results["browser"] = await page.evaluate(
                f"Promise.all(Array.from({{length: {CALLS}}}, (_, n) => {FRAME_RPC}.call(n)))"
            )

        with anyio.fail_after(WAIT * 2):
            async with anyio.create_task_group() as tg:
                tg.start_soon(browser_rpc)
                for n in range(CALLS):
                    tg.start_soon(tool_call, n)
                    tg.start_soon(python_rpc, n)
        for n in range(CALLS):
            assert results[f"add{n}"] == n + 1
            assert results[f"py{n}"] == {"echo": n, "by": "browser"}
        assert results["browser"] == [{"echo": n, "by": "python"} for n in range(CALLS)]
        # Each protocol saw only its own messages (the frame's include the relay's notice
        # that the iframe loaded, for its host); nothing went unclaimed.
        assert all(
            m.get("channel") == "assistant-ui-frame" or m == FRAME_LOADED
            for m in connection.frame_messages
        )
        assert connection.frame_messages.count(FRAME_LOADED) == 1
        assert all(m["jsonrpc"] == "2.0" for m in rpc.received)
        assert len([m for m in rpc.received if "method" in m]) == CALLS
        assert connection.mux.unclaimed == 0


async def test_parent_relay_forwards_json_rpc_only_from_the_frame_and_its_origin(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with python_host(bundles) as side:
        await page.goto(f"{side.base}/parent.html#token={TOKEN}")
        connection = await side.next_connection()
        # The page itself, a second same-origin iframe, and the relay's own channel.
        await page.evaluate(
            """() => {
              window.postMessage(
                { jsonrpc: "2.0", id: "intruder-page", method: "echo", params: 1 }, "*");
              const other = document.createElement("iframe");
              other.src = "/sender.html?id=intruder-sibling";
              document.body.appendChild(other);
            }"""
        )
        await page.evaluate(
            f"""{FRAME_RPC}.post({{ channel: "assistant-frames-relay", jsonrpc: "2.0",
                                   id: "intruder-relay-channel", method: "echo" }})"""
        )
        await page.wait_for(
            "['intruder-page', 'intruder-sibling', 'intruder-relay-channel']"
            ".every((id) => seen.some((m) => m.id === id))"
        )
        # A legitimate request from the frame after them, which must arrive after them.
        assert await page.evaluate(f"{FRAME_RPC}.call('legit')") == {
            "echo": "legit",
            "by": "python",
        }

        # The bridged iframe's window, navigated to a same-origin page: forwarded; to an
        # opaque origin (sandboxed, no allow-same-origin): dropped.
        await page.evaluate("relay.iframe.src = '/sender.html?id=same-origin'")
        await page.wait_for("seen.some((m) => m.id === 'same-origin' && m.bridged)")
        await wait_until(lambda: any(m.get("id") == "same-origin" for m in connection.rpc.received))
        await page.evaluate(
            """() => {
              relay.iframe.setAttribute("sandbox", "allow-scripts");
              relay.iframe.src = "/sender.html?id=intruder-origin";
            }"""
        )
        seen = await page.wait_for(
            "seen.find((m) => m.id === 'intruder-origin' && m.bridged)", timeout=WAIT
        )
        assert seen["origin"] == "null"
        await anyio.sleep(0.3)
        received = json.dumps(connection.rpc.received)
        assert "legit" in received
        assert "intruder" not in received
        assert connection.mux.unclaimed == 0


async def test_parent_relay_drops_json_rpc_while_its_socket_is_not_open(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with python_host(bundles) as side:
        # The relay waits 1.5 s before reconnecting: room to post while it is closed.
        await page.goto(f"{side.base}/parent.html#token={TOKEN}&initial_delay=1500")
        first = await side.next_connection()
        await first.mux.aclose()  # the Python side closes the WebSocket
        await page.wait_for("relayLog.includes('retrying')")
        await page.evaluate(
            f"""() => {{
              {FRAME_RPC}.post({{ jsonrpc: "2.0", id: "while-closed", method: "echo" }});
              {FRAME_RPC}.post({{ jsonrpc: "2.0", method: "notify-while-closed" }});
            }}"""
        )
        await page.wait_for("seen.some((m) => m.id === 'while-closed')")
        assert await page.evaluate("relay.status") == "retrying"
        second = await side.next_connection()  # it reconnected
        assert await page.evaluate(f"{FRAME_RPC}.call('after')") == {
            "echo": "after",
            "by": "python",
        }
        everything = json.dumps([first.rpc.received, second.rpc.received])
        assert "while-closed" not in everything
        assert "after" in everything
        assert second.mux.unclaimed == 0


# -- child relay: a JS host + JSON-RPC on the page, a Python frame + JSON-RPC ------------------

HOST_HTML = (
    b"""<!doctype html>
<html><head><meta charset="utf-8"><title>JS host with JSON-RPC</title></head>
<body><script src="/host-page.js"></script><script>"""
    + RPC_PEER_JS.encode()
    + b"""startRpcPeer(() => document.getElementById("relay").contentWindow);</script>
</body></html>
"""
)

# A sibling iframe of the relay that sends it JSON-RPC.
SIBLING_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"></head><body><script>
  const relay = parent.document.getElementById("relay").contentWindow;
  relay.postMessage({ jsonrpc: "2.0", id: "intruder-sibling", method: "echo" }, "*");
  parent.siblingSent = true;
</script></body></html>
"""

READY = HOST_READY


@dataclass
class PythonFrameSide:
    server: WebSocketServer
    peers: list[JsonRpcPeer] = field(default_factory=list)
    muxes: list[Multiplexer] = field(default_factory=list)

    def url(self, **options: Any) -> str:
        fragment = "&".join(f"{k}={v}" for k, v in {"access_token": TOKEN, **options}.items())
        return f"http://{self.server.host}:{self.server.port}/host.html#{fragment}"

    async def peer(self) -> JsonRpcPeer:
        await wait_until(lambda: bool(self.peers), timeout=WAIT)
        return self.peers[0]


@asynccontextmanager
async def python_frame(bundles: dict[str, bytes]) -> AsyncIterator[PythonFrameSide]:
    registry = ModelContextRegistry()

    @registry.tool
    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        return a * b

    provider = AssistantFrameProvider(registry)
    files = {
        **relay_files(),
        "/host-page.js": (bundles["/host-page.js"], JS),
        "/host.html": (HOST_HTML, HTML),
        "/sibling.html": (SIBLING_HTML, HTML),
    }
    side: PythonFrameSide

    async def accept(transport: Any) -> None:
        mux = Multiplexer(transport)
        frames = mux.open(frame_channel)
        rpc = JsonRpcPeer(mux.open(jsonrpc), "python")
        side.muxes.append(mux)
        side.peers.append(rpc)
        async with mux, anyio.create_task_group() as tg:
            tg.start_soon(rpc.run)
            await provider.serve(frames)
            tg.cancel_scope.cancel()

    async with websocket_server(accept, token=TOKEN, http_files=files) as server:
        side = PythonFrameSide(server)
        yield side


async def test_frame_channel_and_json_rpc_share_the_child_relay(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with python_frame(bundles) as side:
        await page.goto(side.url())
        await page.wait_for(READY)
        rpc = await side.peer()
        results: dict[str, Any] = {}

        async def browser() -> None:
            results["browser"] = await page.evaluate(
                f"""Promise.all([
                  ...Array.from({{length: {CALLS}}}, (_, n) => rpcTest.call(n)),
                  ...Array.from(
                    {{length: {CALLS}}}, (_, n) => hostTest.call("multiply", {{a: n, b: 2}})),
                ])"""
            )

        async def python_rpc(n: int) -> None:
            results[f"py{n}"] = await rpc.call(n)

        with anyio.fail_after(WAIT * 2):
            async with anyio.create_task_group() as tg:
                tg.start_soon(browser)
                for n in range(CALLS):
                    tg.start_soon(python_rpc, n)
        expected_rpc = [{"echo": n, "by": "python"} for n in range(CALLS)]
        expected_tools = [{"result": n * 2} for n in range(CALLS)]
        assert results["browser"] == expected_rpc + expected_tools
        for n in range(CALLS):
            assert results[f"py{n}"] == {"echo": n, "by": "browser"}
        assert side.muxes[0].unclaimed == 0


async def test_child_relay_forwards_json_rpc_only_from_its_parent(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with python_frame(bundles) as side:
        await page.goto(side.url())
        await page.wait_for(READY)
        rpc = await side.peer()
        await page.evaluate(
            """() => {
              const relay = document.getElementById("relay").contentWindow;
              // The relay posting to itself, and the relay's own channel from the parent.
              relay.eval(`setTimeout(() => window.postMessage(
                { jsonrpc: "2.0", id: "intruder-self", method: "echo" }, "*"), 0)`);
              rpcTest.post({ channel: "assistant-frames-relay", jsonrpc: "2.0",
                             id: "intruder-relay-channel", method: "echo" });
              const sibling = document.createElement("iframe");
              sibling.src = "/sibling.html";
              document.body.appendChild(sibling);
            }"""
        )
        await page.wait_for("window.siblingSent === true")
        await anyio.sleep(0.1)
        assert await page.evaluate("rpcTest.call('legit')") == {"echo": "legit", "by": "python"}
        await anyio.sleep(0.2)
        received = json.dumps(rpc.received)
        assert "legit" in received
        assert "intruder" not in received
        assert side.muxes[0].unclaimed == 0


async def test_child_relay_with_jsonrpc_false_forwards_the_frame_channel_only(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with python_frame(bundles) as side:
        await page.goto(side.url(jsonrpc="false"))
        await page.wait_for(READY)  # the frame channel still works
        assert await page.evaluate("hostTest.call('multiply', {a: 3, b: 4})") == {"result": 12}
        rpc = await side.peer()
        await page.evaluate("rpcTest.post({ jsonrpc: '2.0', id: 'not-forwarded', method: 'x' })")
        # WebSocket -> page is every JSON message, as before: the request reaches the page,
        # but its answer (page -> WebSocket) is not forwarded.
        await rpc.stream.send({"jsonrpc": "2.0", "id": "to-browser", "method": "echo"})
        await page.wait_for("rpcLog.some((m) => m.id === 'to-browser')")
        assert await page.evaluate("hostTest.call('multiply', {a: 1, b: 1})") == {"result": 1}
        await anyio.sleep(0.3)
        assert rpc.received == []
        assert side.muxes[0].unclaimed == 0
