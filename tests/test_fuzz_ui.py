"""Fuzzing every tool-UI protocol end with floods of hostile messages.

Four ends, each on asyncio and trio: the MCP Apps host side (``AppBridge``), the view
side (``App``), the ``AUI_*`` widget host (``WidgetHost``), and the preview page's relay
(``AppPage``: its ``/view/<id>`` WebSocket, then its ``/page`` control socket too, over
real WebSockets on 127.0.0.1). Each end takes ``MESSAGES`` malformed or hostile messages
(15,000; ``ASSISTANT_FRAMES_FLOOD_MESSAGES`` sets more, e.g. 100000 for a long run)
from a seeded ``random.Random`` (``SEED`` plus the end's number: a failure reproduces),
sent in bursts while a task drains and checks what comes back, over ``memory_pair()``
where the end is transport-agnostic. The mix: values that are no message at all and
batches; broken envelopes (``jsonrpc``, ids that are objects, floats, huge integers,
booleans, null, NaN; methods that are not strings; params that are not objects); every
method of the protocol as a request and as a notification, with valid params or params
broken in one or two places; methods nobody has; answers to requests never made, and
hostile answers to the end's own requests; duplicate ids and cancellations of whatever
is in flight; deep nesting, strings of up to a megabyte, lone surrogates in strings and
keys, NaN and infinities; text that is not JSON and binary frames on the WebSocket.

After each flood, with exact results: the end is still connected and serving; valid
requests on the same connection get their exact answers; a deterministic flood past
the end's cap (``max_requests``, ``max_calls``) is refused or held exactly as
documented; a peer that floods without reading holds a bounded amount (the flood waits
in the transport) and then gets every answer once; where the design disconnects a peer
that breaks its rules, it does so saying why; a second, well-behaved view or widget
beside it (the same app server, the same page, the same state store) was answered
correctly all along; the tasks alive never grew past a bound and came back to their
number; memory allocated over the last 80 % of the messages, and traced with
``tracemalloc`` over two windows, shows no growth per message; the end logged a bounded
number of warnings; and every wait is bounded, the whole test by ``LIMIT``.

The last section keeps, as small cases, what the floods found.
"""

from __future__ import annotations

import gc
import itertools
import json
import logging
import math
import os
import random
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import pytest
from mcp.server.mcpserver import MCPServer
from pydantic_core import from_json
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from assistant_frames import ModelContextRegistry, memory_pair
from assistant_frames.apps import App, AppBridge, LinkPolicy, protocol
from assistant_frames.apps.page import AppPage
from assistant_frames.mcp import MCPFrameHost
from assistant_frames.testing import connect_app
from assistant_frames.transports import connect_websocket
from assistant_frames.widgets import (
    MemoryWidgetStateStore,
    WidgetHost,
    WidgetManifest,
)
from assistant_frames.widgets import protocol as aui

pytestmark = pytest.mark.anyio

SEED = 20_260_512
# Hostile messages per end and backend: 15,000 by default, the suite's longest tests
# even so (they were 100,000, then 30,000, as the suite grew around them).
MESSAGES = max(10_000, int(os.environ.get("ASSISTANT_FRAMES_FLOOD_MESSAGES", "15000")))
CHUNK = 500  # messages sent between two looks at the tasks alive (each chunk bounded)
# Messages before memory is traced (caches, free lists, buffers filled): a whole chunk.
WARM_UP = MESSAGES // 5 // CHUNK * CHUNK
WINDOW = 1_000  # messages in each of the two traced windows (tracing costs 4x)
LIMIT = 150.0 * max(1.0, MESSAGES / 15_000)  # bound on each test; each takes a few seconds
WAIT = 15.0  # bound on waiting for one expected answer
QUIET = 0.2  # how long a negative check watches
ROUND_PAUSE = 0.05  # between two rounds of the well-behaved peer
TASK_SLACK = 8  # tasks a quiet end may keep beyond its baseline (idle readers...)
MEMORY_BOUND = 512 * 1024  # traced growth allowed over the second window (bytes)
BLOCKS_BOUND = (MESSAGES - WARM_UP) // 2  # blocks the last 80% may leave (a leak: 2x that)
WARNINGS_BOUND = 25  # warnings an end may log for a whole flood
UNREAD = 5_000  # requests sent to an end while its peer reads nothing
UNREAD_SECONDS = 0.3  # how long the peer tries (the buffers fill in milliseconds)
BUFFER = 1_024  # memory_pair's buffer, each way
UNREAD_BOUND = 2 * BUFFER + 2 * 64 + 8  # what may go while the peer reads nothing
BRIDGE_QUEUE = 256  # AppBridge's own queue of messages for its writer task
PROBE = "probe-"  # ids of the test's own requests; hostile ids never start so
MAX_REQUESTS = 64  # AppBridge's and WidgetHost's default caps
MAX_HOST_CONTEXT_KEYS = 256  # the keys of the host context an App keeps
TOO_MANY = f"Too many requests in flight (at most {MAX_REQUESTS})"

VIEW_URI = "ui://fuzz/view"
VIEW_HTML = "<!doctype html><p>fuzz</p>"


# -- the app's server, shared by the hostile end and the well-behaved one -------------------


def app_server() -> MCPServer:
    server = MCPServer("fuzz")

    @server.tool(meta={"ui": {"resourceUri": VIEW_URI}})
    def show(city: str) -> str:
        """A tool with a view, for the model and the view."""
        return f"Shown: {city}"

    @server.tool(meta={"ui": {"visibility": ["app"]}})
    def echo(text: str) -> str:
        """For views only."""
        return text

    @server.tool(meta={"ui": {"visibility": ["model"]}})
    def secret() -> str:
        """For the model only: a view asking for it is refused."""
        return "never"

    @server.resource(VIEW_URI, mime_type=protocol.APP_MIME_TYPE)
    def view_html() -> str:
        return VIEW_HTML

    return server


@asynccontextmanager
async def shared_frame() -> AsyncIterator[MCPFrameHost]:
    async with MCPFrameHost(app_server(), name="fuzz") as frame:
        yield frame


# -- hostile values --------------------------------------------------------------------------

SURROGATES = ("\ud800", "\udbff", "\udc00", "\udfff")
UNICODE = ("é", "中文", "𝄞", "😀", "\u0301", "\u200b", "\u202e", "\ufeff", "\x00", "\u2028")
WORDS: tuple[str, ...] = (*protocol.METHODS, *aui.METHODS, *aui.LEGACY_TYPES)
WORDS += (aui.METHOD_CALL, aui.SET_GLOBALS, aui.METHOD_RESPONSE, "jsonrpc", "2.0", "id")
WORDS += ("method", "params", "result", "error", "__proto__", "constructor", "null", "")
NUMBERS: tuple[Any, ...] = (0, -1, 1, 2**31, 2**53 + 1, -(2**63), 2**64, 10**30, -(10**300))
NUMBERS += (-0.0, 0.5, 1.0, 1e308, -1e308, 5e-324, math.nan, math.inf, -math.inf)
BAD_IDS: tuple[Any, ...] = ({}, {"id": 1}, [], [1], 1.5, 1.0, -0.0, 2**70, 10**30, -(2**64))
BAD_IDS += (True, False, None, math.nan, math.inf)
BAD_JSONRPC: tuple[Any, ...] = ("1.0", "2", "2.0 ", " 2.0", 2.0, 2, None, "", ["2.0"], "2.0\x00")
NEAR_METHODS = ("UI/INITIALIZE", "ui/initialize ", "tools/call\x00", "tools/", "ui/", "ping ")
NEAR_METHODS += ("x-assistant-frames/modal", "x-fuzz/nope", "", "__proto__", "constructor")
NEAR_METHODS += ("notifications/", "rpc.discover", "$/cancelRequest", "initialize")
NEAR_TYPES: tuple[Any, ...] = ("aui_method_call", "AUI_METHOD_CALL ", "AUI_METHOD_CAL", "")
NEAR_TYPES += ("Ready", "READY", "ready ", "AUI_SET_GLOBALS", "AUI_METHOD_RESPONSE", None, 7)
NEAR_TYPES += (["ready"], {"type": "ready"}, "resized", "add_result", "AUI_METHOD_CALL\x00")


class Hostile:
    """Hostile messages from a seeded generator: values, JSON-RPC both ways, ``AUI_*``.

    ``pool`` ids keep coming back, so requests collide with ones still in flight.
    Generated strings never start with :data:`PROBE`, so garbage cannot answer or
    collide with the test's own requests.
    """

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.pool: list[Any] = ["dup", 0, 1, -1, "é", "", 2**53, "x" * 40]
        self.counter = 0
        self.strings = [self.new_string(30) for _ in range(2000)]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # -- values ----------------------------------------------------------------------------

    def string(self, max_len: int = 12) -> str:
        """Mostly one of the protocols' words or a string from the pool, now and then a
        new one (any character, lone surrogates too)."""
        roll = self.rng.random()
        if roll < 0.3:
            return self.rng.choice(WORDS)
        if roll < 0.95:
            return self.strings[int(roll * 100_000) % len(self.strings)]
        return self.new_string(max_len)

    def new_string(self, max_len: int) -> str:
        rng = self.rng
        chars = []
        for _ in range(rng.randint(0, max_len)):
            roll = rng.random()
            if roll < 0.6:
                chars.append(chr(rng.randint(0x20, 0x7E)))
            elif roll < 0.85:
                chars.append(rng.choice(UNICODE))
            elif roll < 0.853:  # rare here: odd() and ids put them where they hurt
                chars.append(rng.choice(SURROGATES))
            else:
                code = rng.randint(0x80, 0x2FFFF)
                chars.append("?" if 0xD800 <= code <= 0xDFFF else chr(code))
        text = "".join(chars)
        return "x" + text if text.startswith(PROBE) else text

    def scalar(self) -> Any:
        roll = self.rng.random()
        if roll < 0.1:
            return None
        if roll < 0.2:
            return self.chance(0.5)
        if roll < 0.45:
            return self.rng.choice(NUMBERS)
        if roll < 0.5:
            return self.rng.randint(-1000, 1000)
        return self.string()

    def value(self, depth: int = 0) -> Any:
        roll = self.rng.random()
        if depth >= 3 or roll < 0.5:
            return self.scalar()
        size = self.rng.randint(0, 4)
        if roll < 0.75:
            return [self.value(depth + 1) for _ in range(size)]
        return {self.string(8): self.value(depth + 1) for _ in range(size)}

    def nested(self, depth: int) -> Any:
        """A value ``depth`` levels deep, objects and lists alternating."""
        value = self.scalar()
        for level in range(depth):
            value = [value] if level % 2 else {"k": value}
        return value

    def huge(self) -> str:
        """A huge string: up to a megabyte as escaped JSON, well within the 4 MiB of a
        WebSocket message."""
        size = self.rng.choice((70_000, 300_000, 1_000_000))
        char, escaped = self.rng.choice((("y", 1), ("é", 6), ("\ud800", 6), ("😀", 12)))
        return char * (size // escaped)

    def odd(self) -> Any:
        """Something odd where a value belongs: deep, huge, a lone surrogate, NaN."""
        roll = self.rng.random()
        if roll < 0.3:
            return self.nested(self.rng.randint(20, 200))
        if roll < 0.33:  # some hundred in a flood: each crosses the relay several times
            return self.huge()
        if roll < 0.7:
            return {self.rng.choice(SURROGATES) + self.string(3): self.value()}
        return self.rng.choice((math.nan, math.inf, -math.inf, 10**400 // 10**390, 2**1000))

    def fresh_id(self) -> Any:
        self.counter += 1
        return self.counter if self.chance(0.5) else f"h{self.counter}"

    def request_id(self) -> Any:
        roll = self.rng.random()
        if roll < 0.3:
            return self.rng.choice(self.pool)
        if roll < 0.9:
            return self.fresh_id()
        if roll < 0.95:
            return self.string(20) or "h"
        return self.rng.choice(SURROGATES) + "-id"

    def bad_id(self) -> Any:
        if self.chance(0.8):
            return self.rng.choice(BAD_IDS)
        return self.value()

    def mutate(self, params: Any) -> Any:
        """``params`` broken in one or two places (or replaced by a non-object)."""
        rng = self.rng
        if not isinstance(params, dict) or self.chance(0.1):
            return self.value() if self.chance(0.7) else [params]
        params = dict(params)
        for _ in range(rng.choice((1, 1, 2))):
            roll = rng.random()
            if params and roll < 0.3:
                del params[rng.choice(list(params))]
            elif params and roll < 0.75:
                key = rng.choice(list(params))
                inner = params[key]
                if isinstance(inner, dict) and inner and self.chance(0.5):
                    inner = dict(inner)
                    inner[rng.choice(list(inner))] = self.value()
                    params[key] = inner
                else:
                    params[key] = self.value() if self.chance(0.9) else self.odd()
            else:
                params[self.string(8)] = self.value()
        return params

    # -- MCP Apps JSON-RPC -----------------------------------------------------------------

    def app_params(self, method: str) -> dict[str, Any] | None:
        """Valid params for ``method``, with random content (``None``: it takes none)."""
        rng = self.rng
        text = self.string(30) if self.chance(0.7) else "hello"
        block = {"type": "text", "text": text}
        params: dict[str, Any] | None
        if method == protocol.INITIALIZE:
            params = {
                "protocolVersion": rng.choice((protocol.PROTOCOL_VERSION, "2020-01-01", "")),
                "appInfo": {"name": text, "version": "1"},
                "appCapabilities": rng.choice(
                    (
                        {},
                        {"tools": {"listChanged": True}},
                        {"tools": {}, "availableDisplayModes": ["inline", "pip"]},
                        {"experimental": {}},
                    )
                ),
            }
        elif method in (protocol.TOOL_INPUT, protocol.TOOL_INPUT_PARTIAL):
            params = {"arguments": {"city": text, "n": rng.randint(0, 9)}}
        elif method == protocol.TOOL_RESULT:
            params = {"content": [block], "structuredContent": {"v": text}}
        elif method == protocol.TOOL_CANCELLED:
            params = {"reason": text}
        elif method == protocol.HOST_CONTEXT_CHANGED:
            params = rng.choice(
                (
                    {"theme": rng.choice(("light", "dark"))},
                    {"displayMode": rng.choice(("inline", "fullscreen", "pip"))},
                    {"locale": text, "containerDimensions": {"maxHeight": 400}},
                    {"safeAreaInsets": {"top": 1, "right": 2, "bottom": 3, "left": 4}},
                    {"toolInfo": {"id": 1, "tool": {"name": "t", "inputSchema": {}}}},
                    {"widgetState": {"n": text}},
                )
            )
        elif method == protocol.SIZE_CHANGED:
            params = {"width": rng.randint(0, 2000), "height": rng.choice((0, 300, 1.5))}
        elif method == protocol.SANDBOX_PROXY_READY:
            params = {}
        elif method == protocol.SANDBOX_RESOURCE_READY:
            params = {"html": VIEW_HTML}
        elif method == protocol.MESSAGE:
            params = {"role": "user", "content": [block]}
        elif method == protocol.OPEN_LINK:
            params = {"url": rng.choice(("https://example.com/a", "javascript:alert(1)", text))}
        elif method == protocol.DOWNLOAD_FILE:
            params = {"contents": [{"type": "resource_link", "uri": "file:///x", "name": text}]}
        elif method == protocol.UPDATE_MODEL_CONTEXT:
            params = {"content": [block], "structuredContent": {"seen": text}}
        elif method == protocol.REQUEST_DISPLAY_MODE:
            params = {"mode": rng.choice(("inline", "fullscreen", "pip"))}
        elif method == protocol.RESOURCE_TEARDOWN:
            params = {}
        elif method == "tools/call":
            name = rng.choice(("echo", "echo", "secret", "show", "add", "nope", text))
            params = {"name": name, "arguments": {"text": text, "a": 1, "b": 2}}
            if self.chance(0.2):
                params["_meta"] = {"progressToken": self.request_id()}
        elif method in ("tools/list", "resources/list", "resources/templates/list"):
            params = {} if self.chance(0.7) else {"cursor": text}
        elif method == "prompts/list":
            params = {}
        elif method == "resources/read":
            params = {"uri": rng.choice((VIEW_URI, "ui://fuzz/none", text))}
        elif method == "sampling/createMessage":
            params = {"messages": [{"role": "user", "content": block}], "maxTokens": 5}
        elif method == "notifications/message":
            params = {"level": rng.choice(("info", "error", "nope")), "data": self.value()}
        elif method == "notifications/cancelled":
            params = {"requestId": self.request_id(), "reason": text}
        elif method == "notifications/progress":
            params = {"progressToken": self.request_id(), "progress": rng.randint(0, 9)}
        else:  # initialized, request-teardown, ping, list_changed: no params
            params = None
        return params

    def jsonrpc(self, methods: tuple[str, ...], extensions: tuple[str, ...] = ()) -> Any:
        """One hostile JSON-RPC message: mostly ``methods`` (requests and notifications
        as the table says, some flipped), the rest broken in every other way."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.05:  # not an object at all, or a batch
            if self.chance(0.3):
                return [self.jsonrpc(methods) for _ in range(rng.randint(0, 3))]
            return self.value()
        if roll < 0.58:  # a method of the protocol, as a request or a notification
            method = rng.choice(methods) if self.chance(0.85) else rng.choice(ALL_METHODS)
            spec = protocol.METHODS[method]
            as_request = spec.is_request != self.chance(0.1)  # some flipped
            params = self.app_params(method)
            if self.chance(0.55):
                params = self.mutate({} if params is None else params)
            message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
            if params is not None or self.chance(0.2):
                message["params"] = params
            if as_request:
                message["id"] = self.request_id()
        elif roll < 0.66:  # a method nobody has, or an extension
            method = rng.choice(NEAR_METHODS + extensions) if self.chance(0.7) else self.string()
            message = {"jsonrpc": "2.0", "method": method}
            if self.chance(0.7):
                message["id"] = self.request_id()
            if self.chance(0.6):
                message["params"] = {"text": self.string()} if self.chance(0.5) else self.value()
        elif roll < 0.78:  # an answer to a request never made
            message = {"jsonrpc": "2.0", "id": self.response_id()}
            kind = rng.random()
            if kind < 0.45:
                message["result"] = self.value() if self.chance(0.3) else {"k": self.value()}
            elif kind < 0.9:
                error: Any = {"code": rng.choice((-32601, -32000, 0, 1.5, "x")), "message": "e"}
                message["error"] = error if self.chance(0.7) else self.value()
            elif kind < 0.95:
                message["result"], message["error"] = {}, {"code": 1, "message": "both"}
        elif roll < 0.84:  # cancelling whatever may be in flight
            params = {"requestId": rng.choice(self.pool), "reason": "fuzz"}
            message = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
        elif roll < 0.96:  # a broken envelope
            method = rng.choice(methods)
            message = {"jsonrpc": "2.0", "id": self.request_id(), "method": method}
            params = self.app_params(method)
            if params is not None:
                message["params"] = params
            broken = rng.randrange(5)
            if broken == 0:
                message["jsonrpc"] = rng.choice(BAD_JSONRPC)
            elif broken == 1:
                del message["jsonrpc"]
            elif broken == 2:
                message["id"] = self.bad_id()
            elif broken == 3:
                message["method"] = self.value() if self.chance(0.5) else [method]
            else:
                message["params"] = rng.choice(([], "params", 1, True, [params]))
        else:  # odd values in the middle of a valid message
            method = rng.choice(methods)
            spec = protocol.METHODS[method]
            message = {"jsonrpc": "2.0", "method": method, "params": {"x": self.odd()}}
            params = self.app_params(method)
            if isinstance(params, dict) and params:
                params[rng.choice(list(params))] = self.odd()
                message["params"] = params
            if spec.is_request:
                message["id"] = self.request_id()
        if self.chance(0.03):
            message[self.string(6)] = self.value()  # an extra member
        return message

    def response_id(self) -> Any:
        roll = self.rng.random()
        if roll < 0.3:
            return self.rng.choice(self.pool)
        if roll < 0.6:  # what the ends' own request ids look like
            return self.rng.choice(("host-", "view-", "host-abcdef-")) + str(
                self.rng.randint(0, 99)
            )
        if roll < 0.8:
            return self.bad_id()
        return self.fresh_id()

    def tools_answer(self, request_id: Any) -> list[Any]:
        """A view's hostile answer to the host's ``tools/list`` (sometimes sent twice)."""
        rng = self.rng
        names = ("pick", "pick", "zoom", "bad name", "", "x" * 200, "é", "tools/call")

        def tool() -> Any:
            name = rng.choice(names) if self.chance(0.8) else self.value()
            spec: dict[str, Any] = {"name": name, "inputSchema": {"type": "object"}}
            if self.chance(0.3):
                spec["inputSchema"] = self.mutate({"type": "object", "properties": {}})
            if self.chance(0.2):
                spec["_meta"] = {"ui": {"visibility": self.value()}}
            if self.chance(0.1):
                spec[rng.choice(("description", "title", "annotations"))] = self.value()
            return spec

        roll = rng.random()
        result: Any
        if roll < 0.45:
            result = {"tools": [tool() for _ in range(rng.randint(0, 5))]}
        elif roll < 0.5:
            result = {"tools": [tool() for _ in range(200)]}
        elif roll < 0.6:
            result = {"tools": [tool()], "nextCursor": self.string() or "more"}
        elif roll < 0.75:
            result = {"tools": self.value() if self.chance(0.5) else [self.value()]}
        elif roll < 0.85:
            result = self.value()
        else:
            code = rng.choice((-32601, -32603, 1, 0))
            return [protocol.encode_error(request_id, code, self.string())]
        answer = {"jsonrpc": "2.0", "id": request_id, "result": result}
        return [answer, answer] if self.chance(0.1) else [answer]

    # -- AUI_* -----------------------------------------------------------------------------

    def aui_args(self, method: str) -> list[Any]:
        rng = self.rng
        text = self.string(20)
        if method == "callTool":
            return [rng.choice(("echo", "echo", "secret", "show", "nope", text)), {"text": text}]
        if method == "setWidgetState":
            return [rng.choice(({"n": text}, None, {"deep": {"a": [1, 2, {"b": text}]}}))]
        if method == "sendFollowUpMessage":
            return [{"prompt": text}]
        if method == "requestDisplayMode":
            return [{"mode": rng.choice(("inline", "fullscreen", "pip", "nope"))}]
        if method == "requestModal":
            return [{"title": text}]
        if method == "requestClose":
            return []
        if method == "openExternal":
            return [{"href": rng.choice(("https://example.com/", "javascript:x", text))}]
        if method == "notifyIntrinsicHeight":
            return [rng.choice((300, 0, -1, 1.5, 10**30))]
        if method == "hold":
            return [rng.choice((0, 0.001, 0.005))]
        return [self.value() for _ in range(rng.randint(0, 3))]  # echo and the rest

    def aui(self) -> Any:
        """One hostile message from a widget."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.06:
            return self.value()
        if roll < 0.14:  # a type nobody (or only the host) sends
            message: dict[str, Any] = {"type": rng.choice(NEAR_TYPES)}
            if self.chance(0.5):
                message["id"], message["method"] = (
                    self.request_id(),
                    rng.choice(sorted(aui.METHODS)),
                )
        elif roll < 0.28:  # the legacy messages
            kind = rng.choice(("resize", "resize", "action", "addResult", "error", "ready"))
            if kind == "ready" and self.chance(0.9):
                kind = "action"  # each ready pushes every global: keep them few
            payload = rng.choice((300, -1, 1.5, "300", None)) if kind == "resize" else self.value()
            message = {"type": kind, "payload": payload}
            if self.chance(0.2):
                del message["payload"]
        else:  # method calls, often broken
            methods = (*sorted(aui.METHODS), "hold", "echo", "uploadFile", "", "__proto__")
            method = rng.choice(methods) if self.chance(0.95) else self.value()
            args: Any = self.aui_args(method) if isinstance(method, str) else []
            if self.chance(0.3):
                args = self.mutate_args(args)
            message = {
                "type": aui.METHOD_CALL,
                "id": self.request_id() if self.chance(0.85) else self.bad_id(),
                "method": method,
                "args": args,
            }
            if self.chance(0.05):
                del message[rng.choice(("id", "method", "args"))]
        if self.chance(0.02):
            message[self.string(6)] = self.odd()
        return message

    def mutate_args(self, args: list[Any]) -> Any:
        rng = self.rng
        roll = rng.random()
        if roll < 0.2:
            return self.value() if self.chance(0.5) else {"0": args}
        args = list(args)
        if args and roll < 0.5:
            args[rng.randrange(len(args))] = self.value() if self.chance(0.8) else self.odd()
        elif args and roll < 0.7:
            args.pop()
        else:
            args.append(self.value())
        return args

    # -- the page's control socket ---------------------------------------------------------

    def control(self) -> Any:
        """A hostile command on the page's control socket. None is one a person could
        mean (no view is made, closed or retitled, no theme set): each is refused or
        acts on the hostile view alone."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.1:
            return self.value()
        if roll < 0.35:
            message: dict[str, Any] = {
                "type": "call",
                "tool": rng.choice(("nope", "", "echo", "secret", "SHOW", "show ")),
                "arguments": rng.choice(({}, {"city": "Oslo"}, "x", None, [1])),
            }
            if self.chance(0.2):
                message["tool"] = "show"  # a tool with a view, arguments not an object
                message["arguments"] = rng.choice(("x", None, [{"city": "Oslo"}], 5))
            if self.chance(0.3):
                message["displayMode"] = rng.choice(("inline", "nope", None, 3))
        elif roll < 0.55:
            message = {
                "type": "display-mode",
                "id": rng.choice(("hostile", "hostile", "nope", "", None, ["hostile"])),
                "mode": rng.choice(("inline", "fullscreen", "pip", "nope", None, 7)),
            }
        elif roll < 0.65:
            message = {"type": "theme", "theme": rng.choice(("purple", None, "LIGHT", 1, [""]))}
        elif roll < 0.75:
            message = {"type": "close", "id": rng.choice(("nope", "", None, "view-99", {}))}
        else:
            message = {"type": rng.choice(("", "hello", "view", "log", "Close", None, 5))}
            if self.chance(0.5):
                message["id"] = rng.choice(("hostile", "good"))  # never acted on
        if self.chance(0.05):
            message[self.string(6)] = self.odd()
        return message

    # -- raw text, for the relay's WebSocket -----------------------------------------------

    def raw_text(self) -> str:
        """Text a browser could send that JSON encoders do not write."""
        rng = self.rng
        valid = json.dumps(self.jsonrpc(VIEW_METHODS))
        roll = rng.random()
        if roll < 0.25:
            return valid[: rng.randrange(len(valid) + 1)]  # truncated
        if roll < 0.45:
            depth = rng.choice((250, 300, 1000, 5000))  # past pydantic-core's and json's
            head = '{"jsonrpc":"2.0","id":"d","method":"ping","params":'
            return head + "[" * depth + "]" * depth + "}"
        if roll < 0.6:
            token = rng.choice(("NaN", "-Infinity", "1e999", '"\\ud800"', '"\\udfff\\ud800"'))
            return '{"jsonrpc":"2.0","id":' + token + ',"method":"ping"}'
        if roll < 0.75:
            return rng.choice(("", " ", "null", "[]", "{}", "\ufeff" + valid, valid + valid))
        return self.string(60).encode("utf-8", "replace").decode()


ALL_METHODS = tuple(protocol.METHODS)
# Requests the host answers from the app's server (each a round trip through the MCP SDK,
# some hundred microseconds) come less often than the rest, so the flood stays fast.
SERVER_METHODS = ("tools/call", "resources/read", "resources/list", "resources/templates/list")
SERVER_METHODS += ("prompts/list",)


def weighted(methods: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(m for m in methods for _ in range(1 if m in SERVER_METHODS else 4))


VIEW_METHODS = weighted(tuple(m for m, s in protocol.METHODS.items() if s.sender != "host"))
HOST_METHODS = weighted(tuple(m for m, s in protocol.METHODS.items() if s.sender != "view"))


# -- bounds ----------------------------------------------------------------------------------


@contextmanager
def bounded(what: str, seconds: float = WAIT) -> Iterator[None]:
    """``anyio.fail_after(seconds)``, failing with an assertion that says what waited."""
    try:
        with anyio.fail_after(seconds):
            yield
    except TimeoutError:
        raise AssertionError(f"not within {seconds:g} s: {what}") from None


def task_count() -> int:
    return len(anyio.get_running_tasks())


async def until(predicate: Callable[[], bool], timeout: float = WAIT) -> bool:
    """Poll ``predicate`` (a count of tasks: nothing signals it) until it holds or
    ``timeout`` has passed; whether it holds."""
    with anyio.move_on_after(timeout):
        for _ in itertools.count():
            if predicate():
                break
            await anyio.sleep(0.005)
    return predicate()


class WarningCounter(logging.Handler):
    """Counts the records at WARNING and above of ``assistant_frames``."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.samples: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if len(self.samples) < 5:
            self.samples.append(record.getMessage()[:200])


@contextmanager
def counting_warnings() -> Iterator[WarningCounter]:
    """Count the library's warnings; below WARNING nothing is logged meanwhile.

    The ``mcp`` SDK's server sets the root logger to INFO when it is made; formatting
    and capturing an INFO line for many of the flood's messages is not what is measured.
    """
    counter = WarningCounter()
    logger, root = logging.getLogger("assistant_frames"), logging.getLogger()
    level = root.level
    logger.addHandler(counter)
    root.setLevel(logging.WARNING)
    try:
        yield counter
    finally:
        root.setLevel(level)
        logger.removeHandler(counter)


@dataclass
class Flood:
    """What a flood did: messages sent, time, tasks, memory and warnings."""

    end: str
    sent: int = 0
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0
    tasks_before: int = 0
    tasks_peak: int = 0
    tasks_after: int = 0
    memory: list[int] = field(default_factory=list)  # traced bytes at the window marks
    blocks: list[int] = field(default_factory=list)  # allocated blocks after warm-up, at the end
    warnings: int = 0

    def sample_tasks(self, bound: int) -> None:
        self.tasks_peak = max(self.tasks_peak, task_count())
        assert self.tasks_peak <= bound, f"{self.tasks_peak} tasks (bound {bound}): {self}"

    def mark_memory(self) -> None:
        gc.collect()
        self.memory.append(tracemalloc.get_traced_memory()[0])

    def mark_blocks(self) -> None:
        gc.collect()
        self.blocks.append(sys.getallocatedblocks())

    def __str__(self) -> str:
        traced = [f"{(b - a) / 1024:+.0f} KiB" for a, b in itertools.pairwise(self.memory)]
        blocks = [f"{b - a:+,}" for a, b in itertools.pairwise(self.blocks)]
        return (
            f"{self.end}: {self.sent:,} messages in {self.seconds:.1f} s; tasks "
            f"{self.tasks_before} -> peak {self.tasks_peak} -> {self.tasks_after}; traced "
            f"{' then '.join(traced)} over {WINDOW:,}-message windows; {', '.join(blocks)}"
            f" blocks over the last {MESSAGES - WARM_UP:,}; {self.warnings} warnings"
        )

    async def settle(self) -> None:
        """Wait (bounded) for the tasks alive to come back to their number before."""
        await until(lambda: task_count() <= self.tasks_before + TASK_SLACK)
        self.tasks_after = task_count()

    def check(self, warnings: WarningCounter) -> None:
        self.warnings = warnings.count
        print(self)
        assert self.sent >= MESSAGES
        assert self.tasks_after <= self.tasks_before + TASK_SLACK, str(self)
        _, second, third = self.memory
        assert third - second < MEMORY_BOUND, str(self)  # no steady growth
        assert self.blocks[1] - self.blocks[0] < BLOCKS_BOUND, str(self)
        assert warnings.count <= WARNINGS_BOUND, (str(self), warnings.samples)


async def run_flood(
    flood: Flood,
    send: Callable[[int], Awaitable[None]],
    sync: Callable[[], Awaitable[None]],
    *,
    peak_bound: int,
    level: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Send :data:`MESSAGES` through ``send(number)``, each chunk of :data:`CHUNK` within
    :data:`WAIT`, the tasks alive within ``peak_bound`` after each chunk.

    Memory is measured at quiet points (``sync()``: everything sent so far handled; the
    tasks back to their number; ``level()``, if given: bounded logs of recent messages
    brought to the same content): blocks allocated after the warm-up and at the end,
    and ``tracemalloc`` over two windows of :data:`WINDOW` messages.
    """
    flood.tasks_before = flood.tasks_peak = task_count()
    tracing = tracemalloc.is_tracing()
    marks = (WARM_UP, WARM_UP + WINDOW, WARM_UP + 2 * WINDOW)

    async def quiet() -> None:
        await sync()
        await until(lambda: task_count() <= flood.tasks_before + TASK_SLACK)
        if level is not None:
            await level()

    for start in range(0, MESSAGES, CHUNK):
        if start == WARM_UP:
            await quiet()
            flood.mark_blocks()
        if start in marks:
            await quiet()
            if start == marks[0] and not tracing:
                tracemalloc.start()
            flood.mark_memory()
            if start == marks[2] and not tracing:
                tracemalloc.stop()
        with bounded(f"{flood.end}: messages {start} to {start + CHUNK} sent"):
            for number in range(start, start + CHUNK):  # an end that stops reading
                await send(number)  # fails here, not at LIMIT
                flood.sent += 1
            await anyio.lowlevel.checkpoint()  # the well-behaved peer gets its turns
        flood.sample_tasks(peak_bound)
    await sync()
    flood.seconds = time.perf_counter() - flood.started
    await quiet()
    flood.mark_blocks()


@asynccontextmanager
async def beside(work: Callable[[anyio.Event], Awaitable[None]]) -> AsyncIterator[None]:
    """Run ``work(stop)`` beside the block; stop it after, and let its errors fail the test."""
    stop = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(work, stop)
        try:
            yield
        finally:
            stop.set()


# -- what the ends may send ------------------------------------------------------------------


def jsonrpc_shape(sender: str) -> Callable[[Any], str | None]:
    """A check that a message is JSON-RPC 2.0 as ``sender`` (host or view) may send it."""

    def check(message: Any) -> str | None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return f"not JSON-RPC 2.0: {message!r:.200}"
        if "method" in message:
            spec = protocol.METHODS.get(message["method"])
            if spec is None or spec.sender not in (sender, "both"):
                return f"a {message['method']!r} from the {sender}: {message!r:.200}"
            return None
        request_id = message.get("id")
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return f"an answer with the id {request_id!r}: {message!r:.200}"
        if ("result" in message) == ("error" in message):
            return f"an answer with neither or both of result and error: {message!r:.200}"
        error = message.get("error")
        if error is not None and not (
            isinstance(error, dict)
            and isinstance(error.get("code"), int)
            and isinstance(error.get("message"), str)
        ):
            return f"a malformed error: {message!r:.200}"
        return None

    return check


def aui_shape(message: Any) -> str | None:
    """A check that a message is one a widget host may send."""
    if not isinstance(message, dict):
        return f"not an object: {message!r:.200}"
    kind = message.get("type")
    if kind == aui.SET_GLOBALS:
        return None if isinstance(message.get("globals"), dict) else f"bad: {message!r:.200}"
    if kind != aui.METHOD_RESPONSE:
        return f"a {kind!r} from the host: {message!r:.200}"
    call_id = message.get("id")
    if isinstance(call_id, bool) or not isinstance(call_id, str | int):
        return f"a response with the id {call_id!r}"
    if ("result" in message) == ("error" in message):
        return f"a response with neither or both of result and error: {message!r:.200}"
    if "error" in message and not isinstance(message["error"], str):
        return f"a response whose error is not a string: {message!r:.200}"
    return None


def page_shape(message: Any) -> str | None:
    """A check that a message is one the page's control socket sends."""
    if isinstance(message, dict) and message.get("type") in PAGE_TYPES:
        return None
    return f"not a page message: {message!r:.200}"


PAGE_TYPES = frozenset({"hello", "view", "log", "notice", "theme", "link", "message", "size"})


# -- the hostile peer on memory_pair ---------------------------------------------------------


class Drain:
    """Reads everything an end sends, checks its shape, keeps the answers to probes.

    The end's own requests go to ``respond(request)``, whose replies (hostile ones, as
    a rule) a task of their own sends, so that reading never waits for sending; those
    it leaves (``None``) wait in :attr:`requests` for the test to answer.
    """

    def __init__(
        self,
        end: Any,
        check: Callable[[Any], str | None],
        respond: Callable[[dict[str, Any]], list[Any] | None] | None = None,
    ) -> None:
        self.end = end
        self.check = check
        self.respond = respond
        self.received = 0
        self.problems: list[str] = []
        self.probes: dict[Any, Any] = {}
        self.requests: list[dict[str, Any]] = []  # requests from the end, to answer
        self.closed = False
        self._changed = anyio.Event()
        self._reading = anyio.Event()
        self._reading.set()
        self._replies, self._to_send = anyio.create_memory_object_stream[Any](math.inf)

    async def run(self) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(self._send_replies)
            await self._read()
            group.cancel_scope.cancel()

    def pause(self) -> None:
        self._reading = anyio.Event()

    def resume(self) -> None:
        self._reading.set()

    async def _send_replies(self) -> None:
        async for reply in self._to_send:
            await self.end.send(reply)

    async def _read(self) -> None:
        try:
            while True:
                await self._reading.wait()
                self.take(await self.end.receive())
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.closed = True
            self._wake()

    def take(self, message: Any) -> None:
        self.received += 1
        problem = self.check(message)
        if problem is not None and len(self.problems) < 10:
            self.problems.append(problem)
        if not isinstance(message, dict):
            return
        key = message.get("id")
        if isinstance(key, str) and key.startswith(PROBE):
            self.probes[key] = message
            self._wake()
        elif "method" in message and "id" in message:
            replies = None if self.respond is None else self.respond(message)
            if replies is None:
                self.requests.append(message)
                self._wake()
            for reply in replies or ():
                self._replies.send_nowait(reply)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def answer(self, probe_id: str) -> Any:
        with bounded(f"the answer to {probe_id}"):
            while probe_id not in self.probes:
                assert not self.closed, f"the connection ended before {probe_id} was answered"
                await self._changed.wait()
        return self.probes.pop(probe_id)

    async def no_more_answers(self) -> None:
        with anyio.move_on_after(QUIET):
            while not self.probes:
                await self._changed.wait()
        assert not self.probes, f"answered more than once: {sorted(self.probes)[:5]}"

    async def request(self, method: str) -> dict[str, Any]:
        """The next request the end sends with ``method``."""
        with bounded(f"a {method} request"):
            while True:
                for index, message in enumerate(self.requests):
                    if message.get("method") == method:
                        return self.requests.pop(index)
                assert not self.closed, f"the connection ended before a {method} request"
                await self._changed.wait()


async def unread_flood(
    drain: Drain,
    send: Callable[[str], Awaitable[None]],
    answers: Callable[[str], tuple[Any, ...]],
    *,
    bound: int,
    most: int = UNREAD_BOUND,
) -> list[int]:
    """The peer stops reading and sends :data:`UNREAD` requests (``send(id)``), as many
    as the end takes within :data:`UNREAD_SECONDS`; the tasks alive stay within
    ``bound``, and no more than ``most`` requests go (what the buffers hold). Then it
    reads again, and each request gets one of its exact answers (``answers(id)``), once.
    How many got each of them.
    """
    drain.pause()
    sent: list[str] = []
    peak = task_count()
    with anyio.move_on_after(UNREAD_SECONDS):  # an end that stops reading holds it here
        for number in range(UNREAD):
            probe = f"{PROBE}unread-{number}"
            await send(probe)
            sent.append(probe)
            if number % 100 == 0:
                peak = max(peak, task_count())
                await anyio.lowlevel.checkpoint()
    await anyio.sleep(QUIET)
    peak = max(peak, task_count())
    assert peak <= bound, f"{peak} tasks while the peer read nothing (bound {bound})"
    drain.resume()
    got = [0] * len(answers(PROBE))
    for probe in sent:
        answer = await drain.answer(probe)
        expected = answers(probe)
        assert answer in expected, answer
        got[expected.index(answer)] += 1
    await drain.no_more_answers()
    assert sum(got) <= most, got  # the flood waited in the transport
    return got


# -- the well-behaved peers beside the hostile one -------------------------------------------


class Steady:
    """A well-behaved peer: rounds of requests, each answer checked exactly."""

    rounds = 0

    async def one_round(self) -> None:
        self.rounds += 1
        await self.exchange(self.rounds)

    async def exchange(self, number: int) -> None:
        raise NotImplementedError

    async def keep_working(self, stop: anyio.Event) -> None:
        while not stop.is_set():
            await self.one_round()
            await anyio.sleep(ROUND_PAUSE)


@dataclass
class GoodView(Steady):
    """A view beside the hostile end: an ``App`` with its own host (an ``AppBridge``, or
    the page's ``AppView``) on the same app server."""

    host: Any  # AppBridge or AppView: send_tool_input, and the bridge's model context
    app: App

    async def exchange(self, number: int) -> None:
        text = f"good-{number}"
        result = await self.app.call_server_tool("echo", {"text": text})
        assert not result.is_error
        assert [block.model_dump(exclude_none=True) for block in result.content] == [
            {"type": "text", "text": text}
        ]
        await self.host.send_tool_input({"n": number})
        await self.app.wait_until(lambda app: app.tool_input == {"n": number}, timeout=WAIT)
        await self.app.update_model_context(f"The good view is at {number}.")
        bridge = self.host if isinstance(self.host, AppBridge) else self.host.bridge
        assert bridge.get_model_context().system == f"The good view is at {number}."
        assert bridge.state == "initialized"
        assert bridge.malformed_count == 0
        assert self.app.connected
        assert self.app.rejected == 0


@dataclass
class GoodWidget(Steady):
    """A widget beside the hostile one: its own host, the same server and state store."""

    host: WidgetHost
    end: Any

    async def call(self, method: str, *args: Any) -> dict[str, Any]:
        call_id = f"good-{self.rounds}-{method}"
        await self.end.send(aui_call(call_id, method, *args))
        with bounded(f"the answer to the good widget's {method}"):
            answer: dict[str, Any] = await self.end.receive()
        assert answer.get("id") == call_id, answer
        return answer

    async def exchange(self, number: int) -> None:
        text = f"good-{number}"
        answer = await self.call("callTool", "echo", {"text": text})
        assert answer["result"]["content"] == [{"type": "text", "text": text}], answer
        assert answer["result"]["isError"] is False
        answer = await self.call("setWidgetState", {"n": number})
        assert answer == aui.encode_result(answer["id"], None)
        theme = ("light", "dark")[number % 2]
        await self.host.update_globals(theme=theme)
        with bounded("the good widget's globals"):
            assert await self.end.receive() == aui.encode_set_globals({"theme": theme})
        assert self.host.close_reason is None
        assert self.host.ignored == 0


def aui_call(call_id: Any, method: str, *args: Any) -> dict[str, Any]:
    return {"type": aui.METHOD_CALL, "id": call_id, "method": method, "args": list(args)}


INIT_PARAMS = {
    "protocolVersion": protocol.PROTOCOL_VERSION,
    "appInfo": {"name": "hostile", "version": "1"},
    "appCapabilities": {},
}


@asynccontextmanager
async def good_bridge_view(frame: MCPFrameHost) -> AsyncIterator[GoodView]:
    async with connect_app(server=frame, name="good", timeout=WAIT) as (bridge, app):
        yield GoodView(bridge, app)


# -- AppBridge: the host side under a hostile view -------------------------------------------


class BridgeUnderFuzz:
    """An ``AppBridge`` of the shared server, its view hostile: a raw peer on memory_pair
    that declares tools of its own (so the bridge lists them at each list_changed, and
    gets hostile answers) and floods JSON-RPC."""

    def __init__(self, frame: MCPFrameHost) -> None:
        self.garbage = Hostile(SEED)
        self.answers = Hostile(SEED + 10)  # to the bridge's tools/list, during the flood
        self.hostile_answers = True
        self.gate = anyio.Event()
        self.teardowns = 0
        host_end, self.end = memory_pair()
        self.bridge = AppBridge(
            host_end,
            server=frame,
            name="hostile",
            timeout=WAIT,
            on_message=lambda params: None,
            on_open_link=lambda params: protocol.ActionResult(),
            on_update_model_context=lambda params: None,
            on_request_display_mode=lambda params: params.mode,
            on_size_changed=lambda params: None,
            on_log=lambda params: None,
            on_request_teardown=self._teardown_asked,
            extensions={"x-fuzz/hold": self._hold, "x-fuzz/gate": self._gated},
        )
        self.drain = Drain(self.end, jsonrpc_shape("host"), self._respond)
        self.init = {**INIT_PARAMS, "appCapabilities": {"tools": {"listChanged": True}}}
        self.syncs = 0

    def _teardown_asked(self) -> None:
        self.teardowns += 1  # handled: the view stays (without a handler, it would go)

    async def _hold(self, params: Any) -> dict[str, Any]:
        await anyio.sleep(0.002)  # long enough for a burst to fill max_requests
        return {"held": True}

    async def _gated(self, params: Any) -> dict[str, Any]:
        await self.gate.wait()
        return {"released": True}

    def _respond(self, request: dict[str, Any]) -> list[Any] | None:
        if self.hostile_answers and request.get("method") == "tools/list":
            return self.answers.tools_answer(request["id"])
        return None

    async def ask(self, name: str, method: str, params: Any = None) -> Any:
        await self.end.send(protocol.encode_request(PROBE + name, method, params))
        return await self.drain.answer(PROBE + name)

    async def start(self) -> None:
        answer = await self.ask("init", protocol.INITIALIZE, self.init)
        assert answer["result"]["protocolVersion"] == protocol.PROTOCOL_VERSION
        await self.end.send(protocol.encode_notification(protocol.INITIALIZED))
        await self.bridge.wait_initialized(WAIT)

    async def sync(self) -> None:
        self.syncs += 1
        probe = f"sync-{self.syncs}"
        # Refused only while a burst of holds fills max_requests.
        assert await self.ask(probe, "ping") in (
            protocol.encode_result(PROBE + probe, {}),
            protocol.encode_error(PROBE + probe, protocol.REFUSED, TOO_MANY),
        )

    async def send(self, number: int) -> None:
        await self.end.send(self.garbage.jsonrpc(VIEW_METHODS, ("x-fuzz/hold",)))

    async def level(self) -> None:
        """What the view last told the bridge (its model context, its tools: a megabyte
        of text, 128 tools) set to the same, to measure."""
        update = {"content": [{"type": "text", "text": "level"}]}
        assert "result" in await self.ask("level", protocol.UPDATE_MODEL_CONTEXT, update)
        await self.list_tools([{"name": "pick", "inputSchema": {"type": "object"}}])

    async def list_tools(self, tools: list[dict[str, Any]]) -> None:
        """Have the bridge list the view's tools, answered with ``tools``, exactly.
        (The flood initialized again with other capabilities: declare tools again.)"""
        self.hostile_answers = False
        assert "result" in await self.ask("again", protocol.INITIALIZE, self.init)
        await self.end.send(protocol.encode_notification("notifications/tools/list_changed"))
        names = [tool["name"] for tool in tools]
        with bounded(f"the bridge listing the view's tools {names}"):
            while list(self.bridge.get_model_context().tools) != names:
                listing = await self.drain.request("tools/list")
                await self.end.send(protocol.encode_result(listing["id"], {"tools": tools}))
                await anyio.sleep(0.01)
        self.hostile_answers = True

    async def after_the_flood(self, flood: Flood) -> None:
        bridge, drain = self.bridge, self.drain
        assert bridge.state == "initialized"
        assert await self.ask("ping", "ping") == protocol.encode_result(PROBE + "ping", {})
        call = {"name": "echo", "arguments": {"text": "after the flood"}}
        echoed = (await self.ask("echo", "tools/call", call))["result"]
        assert echoed["content"] == [{"type": "text", "text": "after the flood"}]
        assert echoed["isError"] is False
        assert await self.ask("secret", "tools/call", {"name": "secret"}) == (
            protocol.encode_error(
                PROBE + "secret",
                protocol.REFUSED,
                "Tool \"secret\" is not visible to apps (its visibility is ['model'])",
            )
        )
        update = {"content": [{"type": "text", "text": "The flood is over."}]}
        answer = await self.ask("context", protocol.UPDATE_MODEL_CONTEXT, update)
        assert answer == protocol.encode_result(PROBE + "context", {})
        assert bridge.get_model_context().system == "The flood is over."

        # The bridge lists the view's tools again, and calls one, exactly.
        await self.list_tools([{"name": "pick", "inputSchema": {"type": "object"}}])
        self.hostile_answers = False
        picked: list[Any] = []
        async with anyio.create_task_group() as calling:

            async def call_pick() -> None:
                picked.append(await bridge.call_tool("pick", {"city": "Oslo"}))

            calling.start_soon(call_pick)
            called = await drain.request("tools/call")
            assert called["params"] == {"name": "pick", "arguments": {"city": "Oslo"}}
            text = {"type": "text", "text": "picked Oslo"}
            await self.end.send(protocol.encode_result(called["id"], {"content": [text]}))
        assert picked == ["picked Oslo"]

        # max_requests in flight, exactly: the next request is refused, saying why.
        for number in range(MAX_REQUESTS):
            await self.end.send(protocol.encode_request(f"{PROBE}gate-{number}", "x-fuzz/gate"))
        over = await self.ask("over", "ping")
        assert over == protocol.encode_error(PROBE + "over", protocol.REFUSED, TOO_MANY)
        self.gate.set()
        for number in range(MAX_REQUESTS):
            probe = f"{PROBE}gate-{number}"
            assert await drain.answer(probe) == protocol.encode_result(probe, {"released": True})

        # A view that floods without reading holds a bounded amount: the flood waits in
        # the transport (answered, or refused past max_requests, once each).
        async def ping(probe: str) -> None:
            await self.end.send(protocol.encode_request(probe, "ping"))

        answered, _ = await unread_flood(
            drain,
            ping,
            lambda probe: (
                protocol.encode_result(probe, {}),
                protocol.encode_error(probe, protocol.REFUSED, TOO_MANY),
            ),
            bound=flood.tasks_before + MAX_REQUESTS + TASK_SLACK,
            most=UNREAD_BOUND + BRIDGE_QUEUE,
        )
        assert answered >= MAX_REQUESTS

        assert bridge.state == "initialized"
        assert bridge.malformed_count > MESSAGES // 10
        assert self.teardowns > 0  # each went to the handler; nothing closed the view
        assert drain.problems == []
        assert [r for r in drain.requests if r["method"] != "tools/list"] == []
        assert not drain.closed


async def test_app_bridge_survives_a_flood_from_a_hostile_view(anyio_backend: str) -> None:
    flood = Flood(f"AppBridge/{anyio_backend}")
    with bounded("the whole test", LIMIT):
        async with shared_frame() as frame, good_bridge_view(frame) as good:
            fuzz = BridgeUnderFuzz(frame)
            async with fuzz.bridge, anyio.create_task_group() as group:
                group.start_soon(fuzz.drain.run)
                await fuzz.start()
                with counting_warnings() as warnings:
                    async with beside(good.keep_working):
                        peak = task_count() + 2 * MAX_REQUESTS + 32
                        await run_flood(
                            flood, fuzz.send, fuzz.sync, peak_bound=peak, level=fuzz.level
                        )
                    assert good.rounds >= 3, good.rounds
                    await flood.settle()
                    await fuzz.after_the_flood(flood)
                    await good.one_round()
                    await flood.settle()
                group.cancel_scope.cancel()
    flood.check(warnings)


# -- App: the view side under a hostile host -------------------------------------------------

INIT_RESULT = {
    "protocolVersion": protocol.PROTOCOL_VERSION,
    "hostInfo": {"name": "hostile-host", "version": "1"},
    "hostCapabilities": {"serverTools": {}},
    "hostContext": {"theme": "dark", "displayMode": "inline"},
}


def view_registry() -> ModelContextRegistry:
    registry = ModelContextRegistry()

    @registry.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return registry


class AppUnderFuzz:
    """An ``App`` (a view with a tool of its own) whose host is a raw hostile peer on
    memory_pair, flooding JSON-RPC."""

    def __init__(self) -> None:
        self.garbage = Hostile(SEED + 1)
        self.host, view_end = memory_pair()
        self.drain = Drain(self.host, jsonrpc_shape("view"))
        self.app = App(view_end, registry=view_registry(), timeout=WAIT)
        self.syncs = 0

    async def answer_initialize(self) -> None:
        request = await self.drain.request(protocol.INITIALIZE)
        await self.host.send(protocol.encode_result(request["id"], INIT_RESULT))

    async def ask(self, name: str, method: str, params: Any = None) -> Any:
        await self.host.send(protocol.encode_request(PROBE + name, method, params))
        return await self.drain.answer(PROBE + name)

    async def sync(self) -> None:
        self.syncs += 1
        probe = f"sync-{self.syncs}"
        # Refused only while a burst of requests fills max_requests.
        assert await self.ask(probe, "ping") in (
            protocol.encode_result(PROBE + probe, {}),
            protocol.encode_error(PROBE + probe, protocol.REFUSED, TOO_MANY),
        )

    async def send(self, number: int) -> None:
        await self.host.send(self.garbage.jsonrpc(HOST_METHODS))

    async def after_the_flood(self, flood: Flood) -> None:
        app, drain = self.app, self.drain
        assert app.connected
        assert app.state == "initialized"
        assert await self.ask("ping", "ping") == protocol.encode_result(PROBE + "ping", {})
        call = {"name": "add", "arguments": {"a": 2, "b": 3}}
        added = (await self.ask("add", "tools/call", call))["result"]
        assert added["content"] == [{"type": "text", "text": "5"}]
        assert added["isError"] is False
        arguments = {"arguments": {"after": "the flood"}}
        await self.host.send(protocol.encode_notification(protocol.TOOL_INPUT, arguments))
        theme, changed = {"theme": "light"}, protocol.HOST_CONTEXT_CHANGED
        await self.host.send(protocol.encode_notification(changed, theme))
        await app.wait_until(
            lambda app: (
                app.tool_input == {"after": "the flood"} and app.host_context.theme == "light"
            ),
            timeout=WAIT,
        )

        # A host adding keys to the (open) host context for ever: the App keeps 256.
        with bounded("2,000 host-context changes"):
            for number in range(2_000):
                change = {f"x-fuzz-{number}": number}
                await self.host.send(protocol.encode_notification(changed, change))
            await self.host.send(protocol.encode_notification(changed, {"theme": "dark"}))
            assert await self.ask("full", "ping") == protocol.encode_result(PROBE + "full", {})
        assert len(protocol.to_wire(app.host_context)) == MAX_HOST_CONTEXT_KEYS
        assert app.host_context.theme == "dark"  # a key it has still changes

        # The view's own requests get the host's exact answers.
        async def answer_message() -> None:
            request = await drain.request(protocol.MESSAGE)
            text = {"type": "text", "text": "after the flood"}
            assert request["params"] == {"role": "user", "content": [text]}
            await self.host.send(protocol.encode_result(request["id"], {}))

        async with anyio.create_task_group() as group:
            group.start_soon(answer_message)
            assert await app.send_message("after the flood") == protocol.ActionResult()

        # A host that floods without reading holds a bounded amount: the flood waits in
        # the transport (answered, or refused past max_requests, once each).
        async def ping(probe: str) -> None:
            await self.host.send(protocol.encode_request(probe, "ping"))

        answered, refused = await unread_flood(
            drain,
            ping,
            lambda probe: (
                protocol.encode_result(probe, {}),
                protocol.encode_error(probe, protocol.REFUSED, TOO_MANY),
            ),
            bound=flood.tasks_before + MAX_REQUESTS + TASK_SLACK,
        )
        assert answered >= MAX_REQUESTS
        assert refused >= 1

        assert app.connected
        assert app.state == "initialized"
        assert app.rejected > MESSAGES // 10
        assert drain.problems == []
        assert not drain.closed


async def test_app_survives_a_flood_from_a_hostile_host(anyio_backend: str) -> None:
    flood = Flood(f"App/{anyio_backend}")
    with bounded("the whole test", LIMIT):
        async with shared_frame() as frame, good_bridge_view(frame) as good:
            fuzz = AppUnderFuzz()
            async with anyio.create_task_group() as group:
                group.start_soon(fuzz.drain.run)
                group.start_soon(fuzz.answer_initialize)
                async with fuzz.app:
                    assert fuzz.app.host_context.theme == "dark"
                    with counting_warnings() as warnings:
                        async with beside(good.keep_working):
                            peak = task_count() + 2 * MAX_REQUESTS + 32
                            await run_flood(flood, fuzz.send, fuzz.sync, peak_bound=peak)
                        assert good.rounds >= 3, good.rounds
                        await flood.settle()
                        await fuzz.after_the_flood(flood)
                        await good.one_round()
                        await flood.settle()
                group.cancel_scope.cancel()
    flood.check(warnings)


# -- WidgetHost: the AUI_* host under a hostile widget ---------------------------------------

GLOBALS = {"theme": "light", "locale": "en-US", "displayMode": "inline", "maxHeight": 800}
SEND_TIMEOUT = 2.0  # the hostile widget's host disconnects a widget reading nothing this long


class WidgetUnderFuzz:
    """A ``WidgetHost`` of the shared server and state store (every method granted), its
    widget a raw hostile peer on memory_pair flooding ``AUI_*`` messages."""

    def __init__(self, frame: MCPFrameHost, store: MemoryWidgetStateStore) -> None:
        self.garbage = Hostile(SEED + 2)
        self.store = store
        self.gate = anyio.Event()
        self.follow_ups = 0
        host_end, self.end = memory_pair()
        self.host = WidgetHost(
            host_end,
            "fuzz/hostile",
            globals=GLOBALS,
            manifest=WidgetManifest.all(extra=["hold", "gate", "echo"]),
            store=store,
            server=frame,
            timeout=WAIT,
            send_timeout=SEND_TIMEOUT,
            methods={"hold": self._hold, "gate": self._gated, "echo": lambda *args: list(args)},
            on_follow_up=self._follow_up,
            on_request_display_mode=lambda mode: mode,
            on_request_close=lambda: None,
            on_open_external=lambda href: None,
            on_intrinsic_height=lambda height: None,
            on_ready=lambda: None,
            on_resize=lambda height: None,
            on_action=lambda payload: None,
            on_add_result=lambda payload: None,
            on_widget_error=lambda payload: None,
        )  # on_request_modal unset: "This host does not support requestModal"
        self.drain = Drain(self.end, aui_shape)
        self.syncs = 0

    def _follow_up(self, args: Any) -> None:
        self.follow_ups += 1

    async def _hold(self, *args: Any) -> str:
        await anyio.lowlevel.checkpoint()
        return "held"

    async def _gated(self, *args: Any) -> str:
        await self.gate.wait()
        return "released"

    async def ask(self, name: str, method: str, *args: Any) -> Any:
        await self.end.send(aui_call(PROBE + name, method, *args))
        return await self.drain.answer(PROBE + name)

    async def sync(self) -> None:
        self.syncs += 1
        probe = f"sync-{self.syncs}"
        # Never refused: past max_calls, the host reads nothing more until one is done.
        assert await self.ask(probe, "echo", self.syncs) == aui.encode_result(
            PROBE + probe, [self.syncs]
        )

    async def send(self, number: int) -> None:
        await self.end.send(self.garbage.aui())

    async def level(self) -> None:
        """The widget's state (up to 256 KB) set to the same, to measure."""
        state = await self.ask("level", "setWidgetState", {"level": 1})
        assert state == aui.encode_result(PROBE + "level", None)

    async def after_the_flood(self, flood: Flood, good: GoodWidget) -> None:
        host, drain = self.host, self.drain
        assert host.close_reason is None
        state = await self.ask("state", "setWidgetState", {"after": 1})
        assert state == aui.encode_result(PROBE + "state", None)
        mode = await self.ask("mode", "requestDisplayMode", {"mode": "pip"})
        assert mode == aui.encode_result(PROBE + "mode", {"mode": "pip"})
        echoed = await self.ask("echo", "callTool", "echo", {"text": "after the flood"})
        assert echoed["result"]["content"] == [{"type": "text", "text": "after the flood"}]
        assert await self.ask("secret", "callTool", "secret", {}) == aui.encode_error(
            PROBE + "secret", "Tool \"secret\" is not visible to apps (its visibility is ['model'])"
        )
        assert await self.ask("modal", "requestModal", {}) == aui.encode_error(
            PROBE + "modal", "This host does not support requestModal"
        )
        assert host.globals == {**GLOBALS, "displayMode": "pip", "widgetState": {"after": 1}}
        assert await self.store.load("fuzz/hostile") == {"after": 1}

        # max_calls in flight: the host reads nothing more until one is answered.
        for number in range(MAX_REQUESTS):
            await self.end.send(aui_call(f"{PROBE}gate-{number}", "gate"))
        await self.end.send(aui_call(PROBE + "waits", "echo", "waited"))
        await anyio.sleep(QUIET)
        assert PROBE + "waits" not in drain.probes
        self.gate.set()
        for number in range(MAX_REQUESTS):
            probe = f"{PROBE}gate-{number}"
            assert await drain.answer(probe) == aui.encode_result(probe, "released")
        waited = await drain.answer(PROBE + "waits")
        assert waited == aui.encode_result(PROBE + "waits", ["waited"])

        # A widget that floods without reading holds a bounded amount: the flood waits
        # in the transport, and every call is answered once it reads again.
        async def echo_call(probe: str) -> None:
            await self.end.send(aui_call(probe, "echo", probe))

        [answered] = await unread_flood(
            drain,
            echo_call,
            lambda probe: (aui.encode_result(probe, [probe]),),
            bound=flood.tasks_before + MAX_REQUESTS + TASK_SLACK,
        )
        assert answered >= MAX_REQUESTS
        assert host.ignored > MESSAGES // 20
        assert self.follow_ups > 0
        assert drain.problems == []
        assert drain.requests == []
        assert not drain.closed

        # The rule the design states: a widget that reads nothing for send_timeout is
        # disconnected, saying why; nothing else is harmed.
        drain.pause()
        for number in range(2 * BUFFER):
            await self.end.send(aui_call(f"{PROBE}last-{number}", "echo"))
        with bounded("the host disconnecting a widget that reads nothing"):
            await host.wait_disconnected()
        reason = f"the widget read nothing for send_timeout ({SEND_TIMEOUT:g} s)"
        assert host.close_reason == reason
        await good.one_round()
        assert await self.store.load("fuzz/good") == {"n": good.rounds}


async def test_widget_host_survives_a_flood_from_a_hostile_widget(anyio_backend: str) -> None:
    flood = Flood(f"WidgetHost/{anyio_backend}")
    store = MemoryWidgetStateStore()
    with bounded("the whole test", LIMIT):
        async with shared_frame() as frame:
            good_end, good_widget_end = memory_pair()
            good_host = WidgetHost(
                good_end,
                "fuzz/good",
                globals=GLOBALS,
                manifest=WidgetManifest.from_permissions({"callTools": True}),
                store=store,
                server=frame,
            )
            fuzz = WidgetUnderFuzz(frame, store)
            async with good_host, fuzz.host, anyio.create_task_group() as group:
                good = GoodWidget(good_host, good_widget_end)
                await good_widget_end.send({"type": "ready"})
                with bounded("the good widget's globals"):
                    first = await good_widget_end.receive()
                assert first == aui.encode_set_globals({**GLOBALS, "widgetState": None})
                group.start_soon(fuzz.drain.run)
                with counting_warnings() as warnings:
                    async with beside(good.keep_working):
                        peak = task_count() + MAX_REQUESTS + 32
                        await run_flood(
                            flood, fuzz.send, fuzz.sync, peak_bound=peak, level=fuzz.level
                        )
                    assert good.rounds >= 3, good.rounds
                    await flood.settle()
                    await fuzz.after_the_flood(flood, good)
                    await flood.settle()
                group.cancel_scope.cancel()
    flood.check(warnings)


# -- AppPage: the page's relay under a hostile view and a hostile page -----------------------

CONTROL_MESSAGES = 5_000  # hostile commands on the page's control socket, beside the flood
WS_BATCH = 64  # WebSocket messages written to the socket at once


class RawSocket:
    """A WebSocket client driven by hand (websockets' sans-I/O protocol over anyio TCP), so
    that it sends what a browser could and the library's client would not: text that is
    not JSON, NaN, binary frames. ``read()`` (in a task) checks what comes back, keeps
    the answers to probes and replies to requests (``respond``)."""

    def __init__(self, stream: anyio.abc.ByteStream, protocol: ClientProtocol) -> None:
        self.stream = stream
        self.protocol = protocol
        self.lock = anyio.Lock()
        self.check: Callable[[Any], str | None] = lambda message: None
        self.skip: bytes | None = None  # frames starting so are counted, not read
        self.keep: Callable[[Any], bool] = lambda message: False  # kept in seen
        self.respond: Callable[[dict[str, Any]], list[Any]] = lambda request: []
        self.received = 0
        self.problems: list[str] = []
        self.probes: dict[str, Any] = {}
        self.seen: list[Any] = []
        self.closed = anyio.Event()
        self._changed = anyio.Event()

    def text(self, text: str) -> None:
        self.protocol.send_text(text.encode())

    def json(self, message: Any) -> None:
        self.text(json.dumps(message))

    def binary(self, data: bytes) -> None:
        self.protocol.send_binary(data)

    async def flush(self) -> None:
        async with self.lock:
            await self._flush()

    async def _flush(self) -> None:
        data = b"".join(self.protocol.data_to_send())
        if data:
            await self.stream.send(data)

    async def read(self) -> None:
        try:
            while True:
                try:
                    data = await self.stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    self.protocol.receive_eof()
                    return
                self.protocol.receive_data(data)
                for event in self.protocol.events_received():
                    if isinstance(event, Frame):
                        self.on_frame(event)
                self._wake()
                try:  # pongs and replies; a sender holding the lock sends them later
                    self.lock.acquire_nowait()
                except anyio.WouldBlock:
                    continue
                try:
                    await self._flush()
                finally:
                    self.lock.release()
        finally:
            self.closed.set()
            self._wake()

    def on_frame(self, frame: Frame) -> None:
        if frame.opcode is not Opcode.TEXT:
            if frame.opcode not in (Opcode.PING, Opcode.PONG, Opcode.CLOSE):
                self.problems.append(f"a {frame.opcode.name} frame")
            return
        self.received += 1
        if self.skip is not None and frame.data.startswith(self.skip):
            return
        try:
            message = from_json(frame.data)
        except ValueError:  # a lone surrogate, escaped: pydantic-core refuses those
            message = json.loads(frame.data)
        problem = self.check(message)
        if problem is not None and len(self.problems) < 10:
            self.problems.append(problem)
        if not isinstance(message, dict):
            return
        key = message.get("id")
        if isinstance(key, str) and key.startswith(PROBE) and "jsonrpc" in message:
            self.probes[key] = message
        if self.keep(message):
            self.seen.append(message)
        if "method" in message:
            for reply in self.respond(message):
                self.json(reply)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, predicate: Callable[[], bool], what: str) -> None:
        with bounded(what):
            while not predicate():
                assert not self.closed.is_set(), f"the connection ended before {what}"
                await self._changed.wait()

    async def answer(self, probe: str) -> Any:
        await self.flush()
        await self.wait_for(lambda: probe in self.probes, f"the answer to {probe}")
        return self.probes.pop(probe)


@asynccontextmanager
async def raw_socket(url: str) -> AsyncIterator[RawSocket]:
    uri = parse_uri(url)
    protocol = ClientProtocol(uri, max_size=None)
    async with await anyio.connect_tcp(uri.host, uri.port) as stream:
        protocol.send_request(protocol.connect())
        await stream.send(b"".join(protocol.data_to_send()))
        events: list[object] = []
        with bounded(f"the WebSocket handshake with {url}"):
            while not events:
                protocol.receive_data(await stream.receive())
                events = protocol.events_received()
        response = events[0]
        assert isinstance(response, Response), response
        assert response.status_code == 101, response
        socket = RawSocket(stream, protocol)
        for event in events[1:]:
            if isinstance(event, Frame):
                socket.on_frame(event)
        async with anyio.create_task_group() as group:
            group.start_soon(socket.read)
            yield socket
            group.cancel_scope.cancel()


class PageUnderFuzz:
    """An ``AppPage`` of the shared server showing two views: the hostile one, a raw
    WebSocket on ``/view/hostile``, and the good one (an ``App`` on ``/view/good``); a
    hostile page on ``/page`` joins later."""

    def __init__(self, page: AppPage) -> None:
        self.garbage = Hostile(SEED + 3)
        self.commands = Hostile(SEED + 4)
        self.page = page
        self.base = page.origin.replace("http://", "ws://")
        self.query = f"?access_token={page.token}"
        self.syncs = 0
        self.socket: RawSocket  # the hostile view's, once connected

    @staticmethod
    def answer_teardown(request: dict[str, Any]) -> list[Any]:
        if request.get("method") == protocol.RESOURCE_TEARDOWN and "id" in request:
            return [protocol.encode_result(request["id"], {})]
        return []

    async def start(self, socket: RawSocket) -> None:
        self.socket = socket
        socket.check = jsonrpc_shape("host")
        socket.respond = self.answer_teardown
        socket.json(protocol.encode_request(PROBE + "init", protocol.INITIALIZE, INIT_PARAMS))
        socket.json(protocol.encode_notification(protocol.INITIALIZED))
        assert "result" in await socket.answer(PROBE + "init")

    async def ask(self, name: str, method: str, params: Any = None) -> Any:
        self.socket.json(protocol.encode_request(PROBE + name, method, params))
        return await self.socket.answer(PROBE + name)

    async def sync(self) -> None:
        self.syncs += 1
        probe = f"sync-{self.syncs}"
        assert await self.ask(probe, "ping") in (
            protocol.encode_result(PROBE + probe, {}),
            protocol.encode_error(PROBE + probe, protocol.REFUSED, TOO_MANY),
        )

    def hostile_message(self) -> None:
        """JSON-RPC as a view sends it, text that is not JSON, or binary. (Not the view's
        request to be torn down, which the design grants: that comes at the end.)"""
        rng, socket = self.garbage.rng, self.socket
        roll = rng.random()
        if roll < 0.9:
            message = self.garbage.jsonrpc(VIEW_METHODS, ("x-fuzz/hold",))
            while isinstance(message, dict) and message.get("method") == protocol.REQUEST_TEARDOWN:
                message = self.garbage.jsonrpc(VIEW_METHODS, ("x-fuzz/hold",))
            socket.json(message)
        elif roll < 0.98:
            socket.text(self.garbage.raw_text())
        else:
            socket.binary(rng.randbytes(rng.randint(0, 64)))

    async def send(self, number: int) -> None:
        self.hostile_message()
        if number % WS_BATCH == WS_BATCH - 1:
            await self.socket.flush()

    async def level(self) -> None:
        """The page's log (its last 2,000 messages) filled with the same, and what the
        view last told the model (a megabyte of text), to measure."""
        update = {"content": [{"type": "text", "text": "level"}]}
        assert "result" in await self.ask("level", protocol.UPDATE_MODEL_CONTEXT, update)
        for number in range(1_000):
            self.socket.json(protocol.encode_request(f"{PROBE}level-{number}", "ping"))
            if number % WS_BATCH == 0:
                await self.socket.flush()
        await self.socket.answer(f"{PROBE}level-999")
        self.socket.probes.clear()

    async def hostile_page(self, flood: Flood, good_app: App, peak: int) -> None:
        """The control socket's hostile commands, the view's flood going on beside."""
        async with raw_socket(f"{self.base}/page{self.query}") as control:
            control.check = page_shape
            control.skip = b'{"type":"log","id":"'  # the log of each view message
            control.keep = lambda message: message.get("type") == "theme"
            for start in range(0, CONTROL_MESSAGES, CHUNK):
                with bounded(f"commands {start} to {start + CHUNK} sent"):
                    for number in range(start, start + CHUNK):
                        control.json(self.commands.control())
                        self.hostile_message()
                        if number % WS_BATCH == WS_BATCH - 1:
                            await control.flush()
                            await self.socket.flush()
                flood.sent += CHUNK
                flood.sample_tasks(peak)
            await self.sync()
            # The page still works, for every view.
            control.json({"type": "theme", "theme": "dark"})
            await control.flush()
            dark = {"type": "theme", "theme": "dark"}
            await control.wait_for(lambda: dark in control.seen, "the theme")
            await good_app.wait_until(lambda app: app.host_context.theme == "dark", timeout=WAIT)
            assert self.page.theme == "dark"
            assert control.received > CONTROL_MESSAGES // 10  # notices and logs
            assert control.problems == []
            assert not control.closed.is_set()

    async def after_the_flood(self, hostile_view: Any, good_view: Any) -> None:
        page, socket = self.page, self.socket
        assert hostile_view.state == "ready"
        assert page.views == {"hostile": hostile_view, "good": good_view}
        assert await self.ask("ping", "ping") == protocol.encode_result(PROBE + "ping", {})
        call = {"name": "echo", "arguments": {"text": "after the flood"}}
        echoed = (await self.ask("echo", "tools/call", call))["result"]
        assert echoed["content"] == [{"type": "text", "text": "after the flood"}]
        # The log the page keeps is bounded, each message shortened past 8 KiB.
        assert len(page.traffic) == 2_000
        assert all(len(json.dumps(t.message)) < 16 * 1024 for t in page.traffic)
        assert socket.problems == []
        assert not socket.closed.is_set()

    async def teardown_asked(self, hostile_view: Any) -> None:
        """The view asks to go: the design tears it down and closes it."""
        self.socket.json(protocol.encode_notification(protocol.REQUEST_TEARDOWN))
        await self.socket.flush()
        await hostile_view.wait_state("closed", timeout=WAIT)
        with bounded("the hostile view's connection closed"):
            await self.socket.closed.wait()
        assert list(self.page.views) == ["good"]


async def test_page_relay_survives_a_flood_from_a_hostile_view_and_page(
    anyio_backend: str,
) -> None:
    """Two parts: ``MESSAGES`` at the hostile view's socket; then the control
    socket's hostile commands, the view's flood going on. (A connected page gets each
    view message logged to it twice: the second part keeps that cost to what shows
    the log's bounds.)"""
    flood = Flood(f"AppPage relay/{anyio_backend}")
    with bounded("the whole test", LIMIT):
        async with shared_frame() as frame, AppPage(frame, timeout=WAIT, init_timeout=WAIT) as page:
            hostile_view = await page.show(
                page.new_view(title="hostile", resource_uri=VIEW_URI, app_id="hostile")
            )
            good_view = await page.show(
                page.new_view(title="good", resource_uri=VIEW_URI, app_id="good")
            )
            fuzz = PageUnderFuzz(page)
            async with (
                raw_socket(f"{fuzz.base}/view/hostile{fuzz.query}") as socket,
                connect_websocket(f"{fuzz.base}/view/good", token=page.token) as good_transport,
                App(good_transport, timeout=WAIT) as good_app,
            ):
                good = GoodView(good_view, good_app)
                await fuzz.start(socket)
                await good_view.wait_state("ready", timeout=WAIT)
                await hostile_view.wait_state("ready", timeout=WAIT)
                with counting_warnings() as warnings:
                    async with beside(good.keep_working):
                        # The hostile view's requests in flight, their readers, the
                        # page's commands running (at most 16): no task per message.
                        peak = task_count() + MAX_REQUESTS + 48
                        await run_flood(
                            flood, fuzz.send, fuzz.sync, peak_bound=peak, level=fuzz.level
                        )
                        await fuzz.hostile_page(flood, good_app, peak)
                    assert good.rounds >= 3, good.rounds
                    await flood.settle()
                    await fuzz.after_the_flood(hostile_view, good_view)
                    await good.one_round()
                    await fuzz.teardown_asked(hostile_view)
                    await good.one_round()
                    await flood.settle()
    flood.check(warnings)


# -- what the floods found, one case each ----------------------------------------------------
#
# Each was found by the floods above with their seeds (SEED, SEED + 1 and SEED + 3), and
# is kept here as the smallest message that showed it.


async def test_a_method_that_is_a_list_is_refused_and_the_bridge_serves_on() -> None:
    # AppBridge looked an unhashable method up among its extensions: TypeError, taken
    # for a failed transport, and the view was dropped.
    host_end, view_end = memory_pair()
    async with AppBridge(host_end, extensions={"x-fuzz/echo": lambda params: params}) as bridge:
        with bounded("the answers"):
            await view_end.send({"jsonrpc": "2.0", "id": 1, "method": ["x-fuzz/echo"]})
            assert await view_end.receive() == protocol.encode_error(
                1, protocol.INVALID_REQUEST, "method must be a string"
            )
            await view_end.send(protocol.encode_request(2, "x-fuzz/echo", {"a": 1}))
            assert await view_end.receive() == protocol.encode_result(2, {"a": 1})
        assert bridge.state == "new"


async def test_a_lone_surrogate_in_a_host_context_key_keeps_the_app_connected() -> None:
    # protocol.to_wire (pydantic-core's JSON mode) refused the key, so the App's next
    # host-context merge raised and ended its connection.
    host_end, view_end = memory_pair()
    drain = Drain(host_end, jsonrpc_shape("view"))
    async with anyio.create_task_group() as group:
        group.start_soon(drain.run)

        async def answer_initialize() -> None:
            request = await drain.request(protocol.INITIALIZE)
            await host_end.send(protocol.encode_result(request["id"], INIT_RESULT))

        group.start_soon(answer_initialize)
        async with App(view_end, timeout=WAIT) as app:
            odd = {"widgetState": {"k\udc00": [1]}}
            changed = protocol.HOST_CONTEXT_CHANGED
            await host_end.send(protocol.encode_notification(changed, odd))
            await host_end.send(protocol.encode_notification(changed, {"theme": "light"}))
            await app.wait_until(lambda app: app.host_context.theme == "light", timeout=WAIT)
            assert app.connected
            assert protocol.to_wire(app.host_context)["widgetState"] == {"k\udc00": [1]}
            assert app.rejected == 0
        group.cancel_scope.cancel()


async def test_a_malformed_answer_fails_the_request_it_answers_at_once() -> None:
    # Both ends dropped it, and the request waited for its timeout (30 s here); the App
    # also answered the answer with an error.
    host_end, view_end = memory_pair()
    async with AppBridge(host_end, timeout=30.0) as bridge:
        await view_end.send(protocol.encode_request(1, protocol.INITIALIZE, INIT_PARAMS))
        await view_end.send(protocol.encode_notification(protocol.INITIALIZED))
        failed = anyio.Event()

        async def list_tools() -> None:
            with pytest.raises(protocol.InvalidRequest, match="result must be an object"):
                await bridge.list_view_tools()
            failed.set()

        with bounded("the listing failing"):
            await view_end.receive()  # the initialize answer
            async with anyio.create_task_group() as group:
                group.start_soon(list_tools)
                request = await view_end.receive()
                assert request["method"] == "tools/list"
                await view_end.send({"jsonrpc": "2.0", "id": request["id"], "result": []})
                await failed.wait()
        assert bridge.state == "initialized"
    host_end, view_end = memory_pair()
    drain = Drain(host_end, jsonrpc_shape("view"))
    async with anyio.create_task_group() as group:
        group.start_soon(drain.run)

        async def answer_initialize() -> None:
            request = await drain.request(protocol.INITIALIZE)
            await host_end.send(protocol.encode_result(request["id"], INIT_RESULT))

        group.start_soon(answer_initialize)
        async with App(view_end, timeout=30.0) as app:
            with bounded("the request failing"):

                async def answer_badly() -> None:
                    request = await drain.request(protocol.OPEN_LINK)
                    await host_end.send({"jsonrpc": "2.0", "id": request["id"], "result": 7})

                group.start_soon(answer_badly)
                with pytest.raises(protocol.InvalidParams, match="result must be an object"):
                    await app.open_link("https://example.com/")
            received = drain.received
            await anyio.sleep(QUIET)
            assert drain.received == received  # the answer was not answered
            assert app.connected
        group.cancel_scope.cancel()


async def test_the_app_refuses_requests_past_max_requests_and_reused_ids() -> None:
    # The App started a task per request of the host's: a host flooding requests and
    # reading nothing grew it without bound.
    gate = anyio.Event()
    registry = ModelContextRegistry()

    @registry.tool
    async def wait() -> str:
        """Wait for the gate."""
        await gate.wait()
        return "done"

    host_end, view_end = memory_pair()
    drain = Drain(host_end, jsonrpc_shape("view"))
    async with anyio.create_task_group() as group:
        group.start_soon(drain.run)

        async def answer_initialize() -> None:
            request = await drain.request(protocol.INITIALIZE)
            await host_end.send(protocol.encode_result(request["id"], INIT_RESULT))

        group.start_soon(answer_initialize)
        async with App(view_end, registry=registry, max_requests=2, timeout=WAIT):
            call = {"name": "wait", "arguments": {}}
            for name in ("a", "b"):
                await host_end.send(protocol.encode_request(PROBE + name, "tools/call", call))
            await host_end.send(protocol.encode_request(PROBE + "a", "ping"))
            await host_end.send(protocol.encode_request(PROBE + "c", "ping"))
            refused = await drain.answer(PROBE + "a")  # the reused id, refused at once
            assert refused == protocol.encode_error(
                PROBE + "a", protocol.REFUSED, "Request id 'probe-a' is already in flight"
            )
            assert await drain.answer(PROBE + "c") == protocol.encode_error(
                PROBE + "c", protocol.REFUSED, "Too many requests in flight (at most 2)"
            )
            gate.set()
            for name in ("a", "b"):
                answer = await drain.answer(PROBE + name)
                assert answer["result"]["content"] == [{"type": "text", "text": "done"}]
            await host_end.send(protocol.encode_request(PROBE + "d", "ping"))
            assert await drain.answer(PROBE + "d") == protocol.encode_result(PROBE + "d", {})
        group.cancel_scope.cancel()


async def test_a_view_message_with_lone_surrogates_is_logged_and_answered_by_the_page() -> None:
    # The page logged each message with pydantic-core's to_json, which refused it inside
    # the relay's receive: the bridge took it for a failed transport and dropped the view.
    async with shared_frame() as frame, AppPage(frame, timeout=WAIT, init_timeout=WAIT) as page:
        view = await page.show(page.new_view(title="odd", resource_uri=VIEW_URI, app_id="odd"))
        base = page.origin.replace("http://", "ws://")
        async with raw_socket(f"{base}/view/odd?access_token={page.token}") as socket:
            socket.json(protocol.encode_request(PROBE + "init", protocol.INITIALIZE, INIT_PARAMS))
            socket.json(protocol.encode_notification(protocol.INITIALIZED))
            assert "result" in await socket.answer(PROBE + "init")
            await view.wait_state("ready", timeout=WAIT)
            odd = {"structuredContent": {"k\ud800": "v\udfff"}}
            request = protocol.encode_request(PROBE + "odd", protocol.UPDATE_MODEL_CONTEXT, odd)
            socket.json(request)  # JSON escapes the surrogates, as JavaScript does
            assert await socket.answer(PROBE + "odd") == protocol.encode_result(PROBE + "odd", {})
            assert view.state == "ready"
            assert [t.message for t in page.traffic][-2:] == [
                request,
                protocol.encode_result(PROBE + "odd", {}),
            ]


def test_a_link_with_white_space_or_a_control_character_is_refused_as_before() -> None:
    # The check moved from a scan in Python (0.1 s a megabyte, three times a link) to a
    # regular expression: the same characters are refused.
    policy = LinkPolicy(allow=["https://a.example"])
    refused = [
        chr(code) for code in range(0x110000) if chr(code).isspace() or code < 0x20 or code == 0x7F
    ]
    assert len(refused) > 50
    for char in refused:
        assert policy.resolve(f"https://a.example/{char}x") is None, repr(char)
    for char in ("é", "\u200b", "\u202e", "😀", "\ufeff", "\x80", "%20"):
        assert policy.allowed(f"https://a.example/{char}x"), repr(char)


async def test_a_host_adding_context_keys_for_ever_keeps_the_app_bounded() -> None:
    # The App merged every host-context change into its (open) context: a host adding
    # new keys grew it without end, each merge copying it whole (quadratic).
    host_end, view_end = memory_pair()
    drain = Drain(host_end, jsonrpc_shape("view"))
    async with anyio.create_task_group() as group:
        group.start_soon(drain.run)

        async def answer_initialize() -> None:
            request = await drain.request(protocol.INITIALIZE)
            await host_end.send(protocol.encode_result(request["id"], INIT_RESULT))

        group.start_soon(answer_initialize)
        async with App(view_end, timeout=WAIT) as app:
            changed = protocol.HOST_CONTEXT_CHANGED
            for number in range(MAX_HOST_CONTEXT_KEYS + 10):
                await host_end.send(protocol.encode_notification(changed, {f"k{number}": 1}))
            await host_end.send(protocol.encode_notification(changed, {"theme": "light"}))
            await app.wait_until(lambda app: app.host_context.theme == "light", timeout=WAIT)
            kept = protocol.to_wire(app.host_context)
            assert len(kept) == MAX_HOST_CONTEXT_KEYS
            assert "k250" in kept
            assert "k260" not in kept
            assert app.rejected == 12  # the changes past the bound
            assert app.connected
        group.cancel_scope.cancel()


async def test_failed_listings_of_a_view_s_tools_warn_once() -> None:
    # Each failed listing was a warning: a view announcing changes and answering every
    # listing with an error flooded the log.
    host_end, view_end = memory_pair()

    def refuse(request: dict[str, Any]) -> list[Any] | None:
        if request.get("method") == "tools/list":
            return [protocol.encode_error(request["id"], -32603, "no")]
        return None

    drain = Drain(view_end, jsonrpc_shape("host"), refuse)
    with counting_warnings() as warnings:
        async with AppBridge(host_end, timeout=WAIT) as bridge, anyio.create_task_group() as group:
            group.start_soon(drain.run)
            init = {**INIT_PARAMS, "appCapabilities": {"tools": {"listChanged": True}}}
            await view_end.send(protocol.encode_request(PROBE + "init", protocol.INITIALIZE, init))
            await drain.answer(PROBE + "init")
            await view_end.send(protocol.encode_notification(protocol.INITIALIZED))
            for _ in range(200):
                await view_end.send(
                    protocol.encode_notification("notifications/tools/list_changed")
                )
                await anyio.lowlevel.checkpoint()
            await view_end.send(protocol.encode_request(PROBE + "ping", "ping"))
            await drain.answer(PROBE + "ping")
            assert await until(lambda: drain.received > 20)  # listings, each refused
            assert bridge.state == "initialized"
            group.cancel_scope.cancel()
    assert warnings.count == 1, warnings.samples
