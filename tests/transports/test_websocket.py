"""WebSocket transports over real sockets on 127.0.0.1: frames, hosts, security and failures.

Raw peers are driven by hand: websockets' own sans-I/O ``ClientProtocol`` over an anyio TCP
stream (so they run on asyncio and trio alike), which lets a test send frames the library
never would, stop answering pings, or watch the close code the server sends.
"""

from __future__ import annotations

import json
import logging
import socket
import struct
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.abc import SocketAttribute
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ConnectError,
    FrameDisconnected,
    HandshakeRejected,
    ModelContextRegistry,
    ProviderDisposed,
    ToolNotFoundError,
)
from assistant_frames.transports import (
    WebSocketAttribute,
    WebSocketTransport,
    connect_websocket,
    websocket_server,
)

from helpers import (
    CountingGate,
    Gate,
    Outcome,
    body,
    calculator,
    envelope,
    free_port,
    raw_handshake,
    wait_until,
)

pytestmark = pytest.mark.anyio

TRANSPORT_LOGGER = "assistant_frames.transports"
REQUEST = envelope({"type": "model-context-request"})
# Far above every bound the tests assert on: a pending call that fails "at once" fails long
# before this.
CALL_TIMEOUT = 30.0


# -- helpers -----------------------------------------------------------------------------------


def echo_registry() -> ModelContextRegistry:
    """calculator() plus ``echo(text)``, ``size(text)`` and ``big(n)`` (a result of n chars)."""
    registry = calculator()

    @registry.tool
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @registry.tool
    async def size(text: str) -> int:
        """The length of the text."""
        await anyio.lowlevel.checkpoint()
        return len(text)

    @registry.tool
    def big(n: int) -> str:
        """A string of n characters."""
        return "x" * n

    return registry


class Handler:
    """A websocket_server handler that serves ``frame`` and counts the connections it saw."""

    def __init__(self, frame: AssistantFrameProvider) -> None:
        self.frame = frame
        self.calls = 0
        self.transports: list[WebSocketTransport] = []
        self.scopes: list[anyio.CancelScope] = []
        self.peers: list[Any] = []

    async def __call__(self, transport: WebSocketTransport) -> None:
        self.calls += 1
        self.transports.append(transport)
        self.peers.append(transport.extra(SocketAttribute.remote_address))
        with anyio.CancelScope() as scope:
            self.scopes.append(scope)
            await self.frame.serve(transport)


@asynccontextmanager
async def hosting(
    url: str, *, name: str | None = None, **options: Any
) -> AsyncIterator[AssistantFrameHost]:
    """A host on ``connect_websocket(url, **options)`` that already has the frame's context."""
    async with (
        connect_websocket(url, **options) as transport,
        AssistantFrameHost(transport, timeout=CALL_TIMEOUT, name=name) as host,
    ):
        await host.wait_for_context(timeout=5)
        yield host


class RawClient:
    """A WebSocket client driven by hand: websockets' sans-I/O protocol over anyio TCP."""

    def __init__(self, stream: anyio.abc.SocketStream, protocol: ClientProtocol) -> None:
        self.stream = stream
        self.protocol = protocol
        self.frames: deque[Frame] = deque()
        self.eof = False

    async def flush(self) -> None:
        """Send what the protocol wants sent (pongs, close replies)."""
        for data in self.protocol.data_to_send():
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                if data:
                    await self.stream.send(data)
                else:
                    await self.stream.send_eof()

    async def read_once(self) -> None:
        try:
            data = await self.stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            self.eof = True
            self.protocol.receive_eof()
            return
        self.protocol.receive_data(data)
        for event in self.protocol.events_received():
            if isinstance(event, Frame):
                self.frames.append(event)

    async def send_frame(self, opcode: Opcode, data: bytes) -> None:
        self.protocol.send_frame(Frame(opcode, data))
        await self.flush()

    async def send_json(self, message: Any) -> None:
        await self.send_frame(Opcode.TEXT, json.dumps(message).encode())

    async def send_raw(self, data: bytes) -> None:
        """Bytes straight onto the TCP connection, bypassing the WebSocket framing."""
        await self.stream.send(data)

    async def receive_message(self, kind: str | None = None) -> dict[str, Any]:
        """The next frame message (of type ``kind``, without a frame's ``documentId``),
        answering pings meanwhile."""
        while True:
            while self.frames:
                frame = self.frames.popleft()
                if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
                    raw = json.loads(frame.data)
                    message = body(raw) if "documentId" in raw["message"] else raw["message"]
                    if kind is None or message["type"] == kind:
                        return message  # type: ignore[no-any-return]
            if self.eof:
                raise EOFError(f"closed with code {self.protocol.close_code}")
            await self.read_once()
            await self.flush()

    async def call(self, call_id: str, tool: str, args: Any) -> dict[str, Any]:
        """Send a tool-call and return its tool-result."""
        await self.send_json(
            envelope({"type": "tool-call", "id": call_id, "toolName": tool, "args": args})
        )
        while True:
            message = await self.receive_message("tool-result")
            if message["id"] == call_id:
                return message

    async def wait_closed(self) -> int | None:
        """Read until the server closes the TCP connection; the close code it sent."""
        while not self.eof:
            await self.read_once()
            await self.flush()
        return self.protocol.close_code

    async def close(self, code: int = 1000) -> int | None:
        """Start the closing handshake and wait for the server's reply."""
        self.protocol.send_close(code)
        await self.flush()
        return await self.wait_closed()


@asynccontextmanager
async def raw_client(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[RawClient]:
    """An open raw WebSocket connection (the handshake succeeded)."""
    stream, protocol, response = await raw_handshake(url, headers)
    async with stream:
        assert response.status_code == 101, (response.status_code, response.body)
        yield RawClient(stream, protocol)


# -- frames served over WebSockets ---------------------------------------------------------------


async def test_context_and_calls() -> None:
    frame = AssistantFrameProvider(echo_registry())
    with anyio.fail_after(10):
        async with websocket_server(frame.serve) as server:
            assert server.host == "127.0.0.1"
            assert server.port > 0
            assert server.url == f"ws://127.0.0.1:{server.port}"
            async with hosting(server.url, name="calc") as host:
                context = host.get_model_context()
                assert context.system == "You can add numbers."
                assert set(context.tools) == {"add", "echo", "size", "big"}
                assert context.tools["add"].description == "Add two numbers."
                assert await host.call_tool("add", {"a": 2, "b": 3}) == 5
                assert await host.call_tool("echo", {"text": "héllo ✓"}) == "héllo ✓"
                # the tool object a parent registry would use calls across the socket too
                assert await context.call_tool("add", {"a": 40, "b": 2}) == 42
                with pytest.raises(ToolNotFoundError):
                    await host.call_tool("missing", {})
                assert frame.connection_count == 1
            await wait_until(lambda: frame.connection_count == 0)


async def test_live_updates_reach_the_host() -> None:
    registry = echo_registry()
    frame = AssistantFrameProvider(registry)
    with anyio.fail_after(10):
        async with websocket_server(frame.serve) as server, hosting(server.url) as host:
            changed = anyio.Event()

            def on_change() -> None:
                nonlocal changed
                changed.set()

            host.subscribe(on_change)

            async def next_change() -> None:
                nonlocal changed
                with anyio.fail_after(5):
                    await changed.wait()
                changed = anyio.Event()

            handle = registry.add_tool("mul", lambda a, b: a * b, description="Multiply.")
            await next_change()
            assert host.get_model_context().tools["mul"].description == "Multiply."

            handle.update(description="Multiply two numbers.")
            await next_change()
            assert host.get_model_context().tools["mul"].description == "Multiply two numbers."

            instruction = registry.add_instruction("Be brief.")
            await next_change()
            assert host.get_model_context().system == "You can add numbers.\n\nBe brief."

            handle.remove()
            instruction.remove()
            await next_change()
            await wait_until(lambda: "mul" not in host.get_model_context().tools)
            assert host.get_model_context().system == "You can add numbers."


async def test_many_concurrent_calls() -> None:
    registry = echo_registry()
    gate = Gate()
    registry.add_tool("wait", gate, description="Wait until released.")
    frame = AssistantFrameProvider(registry)
    results: dict[int, Any] = {}

    async def call(i: int) -> None:
        results[i] = await host.call_tool("size", {"text": "x" * i})

    with anyio.fail_after(15):
        async with websocket_server(frame.serve) as server, hosting(server.url) as host:
            slow = Outcome()
            async with anyio.create_task_group() as tg:
                tg.start_soon(slow.run, host, "wait", {})
                await gate.started.wait()
                for i in range(300):  # a slow call holds up none of them
                    tg.start_soon(call, i)
                await wait_until(lambda: len(results) == 300)
                assert not slow.done.is_set()
                gate.release.set()
            assert results == {i: i for i in range(300)}
            assert slow.result == "released"


async def test_several_hosts_on_one_server() -> None:
    registry = echo_registry()
    frame = AssistantFrameProvider(registry)
    with anyio.fail_after(10):
        async with (
            websocket_server(frame.serve) as server,
            hosting(server.url, name="one") as one,
            hosting(server.url, name="two") as two,
        ):
            async with hosting(server.url, name="three") as three:
                assert frame.connection_count == 3
                hosts = [one, two, three]
                for i, host in enumerate(hosts):
                    assert await host.call_tool("add", {"a": i, "b": 10}) == i + 10
                registry.add_tool("mul", lambda a, b: a * b, description="Multiply.")
                await wait_until(lambda: all("mul" in h.get_model_context().tools for h in hosts))
            # one host leaving does not disturb the others
            await wait_until(lambda: frame.connection_count == 2)
            assert await one.call_tool("mul", {"a": 6, "b": 7}) == 42
            assert await two.call_tool("echo", {"text": "still here"}) == "still here"


async def test_reverse_direction_frames_dial_in() -> None:
    """A server whose handler hosts the frames that connect, federating them in a parent."""
    parent = ModelContextRegistry()
    parent.add_instruction("Parent.")
    accepted: list[str] = []

    async def accept(transport: WebSocketTransport) -> None:
        namespace = transport.extra(WebSocketAttribute.path).strip("/")
        async with AssistantFrameHost(transport, timeout=CALL_TIMEOUT, name=namespace) as host:
            await host.wait_for_context(timeout=5)
            handle = parent.add_provider(host, namespace=namespace)
            accepted.append(namespace)
            try:
                await host.wait_disconnected()
            finally:
                handle.remove()

    calc = AssistantFrameProvider(calculator("Calc."))
    words = ModelContextRegistry()
    words.add_tool("upper", lambda text: text.upper(), description="Upper-case.")
    words_frame = AssistantFrameProvider(words)

    async def dial(frame: AssistantFrameProvider, url: str, scope: anyio.CancelScope) -> None:
        with scope:
            async with connect_websocket(url) as transport:
                await frame.serve(transport)

    with anyio.fail_after(10):
        async with websocket_server(accept) as server, anyio.create_task_group() as tg:
            calc_scope, words_scope = anyio.CancelScope(), anyio.CancelScope()
            tg.start_soon(dial, calc, f"{server.url}/calc", calc_scope)
            tg.start_soon(dial, words_frame, f"{server.url}/words", words_scope)
            await wait_until(lambda: len(parent.get_model_context().tools) == 2)
            context = parent.get_model_context()
            assert set(context.tools) == {"calc_add", "words_upper"}
            assert context.system is not None
            assert "Parent." in context.system
            assert "Calc." in context.system
            assert await context.call_tool("calc_add", {"a": 1, "b": 2}) == 3
            assert await context.call_tool("words_upper", {"text": "hi"}) == "HI"
            assert sorted(accepted) == ["calc", "words"]

            # a frame that hangs up takes its tools with it; the other stays
            words_scope.cancel()
            await wait_until(lambda: set(parent.get_model_context().tools) == {"calc_add"})
            assert await parent.get_model_context().call_tool("calc_add", {"a": 2, "b": 2}) == 4
            calc_scope.cancel()
            await wait_until(lambda: not parent.get_model_context().tools)


async def test_a_handler_that_raises_affects_no_other_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    frame = AssistantFrameProvider(calculator())

    async def handler(transport: WebSocketTransport) -> None:
        if transport.extra(WebSocketAttribute.path) == "/bad":
            await transport.receive()
            raise RuntimeError("handler bug")
        await frame.serve(transport)

    caplog.set_level(logging.ERROR, logger=TRANSPORT_LOGGER)
    with anyio.fail_after(10):
        async with websocket_server(handler) as server, hosting(server.url) as good:
            async with (
                connect_websocket(f"{server.url}/bad") as transport,
                AssistantFrameHost(transport, timeout=CALL_TIMEOUT) as bad,
            ):
                with pytest.raises(FrameDisconnected):
                    await bad.wait_for_context(timeout=5)
            assert await good.call_tool("add", {"a": 1, "b": 2}) == 3
        assert any("handler raised" in r.getMessage() for r in caplog.records)


# -- token -------------------------------------------------------------------------------------


async def test_token_in_header_and_query() -> None:
    handler = Handler(AssistantFrameProvider(calculator()))
    with anyio.fail_after(10):
        async with websocket_server(handler, token="s3cret") as server:
            async with hosting(server.url, token="s3cret") as host:
                assert await host.call_tool("add", {"a": 1, "b": 1}) == 2
            async with hosting(f"{server.url}/?access_token=s3cret") as host:
                assert await host.call_tool("add", {"a": 2, "b": 2}) == 4
            assert handler.calls == 2
            first, second = handler.transports
            assert first.extra(WebSocketAttribute.path) == "/"
            assert second.extra(WebSocketAttribute.path) == "/"  # the token is not passed on
            assert handler.peers[0][0] == "127.0.0.1"


@pytest.mark.parametrize(
    ("token", "query"),
    [(None, ""), ("wrong", ""), (None, "?access_token=wrong"), ("", ""), ("s3cret-", "")],
)
async def test_wrong_or_missing_token_is_refused_with_401(token: str | None, query: str) -> None:
    frame = AssistantFrameProvider(calculator())
    handler = Handler(frame)
    with anyio.fail_after(10):
        async with websocket_server(handler, token="s3cret") as server:
            with pytest.raises(HandshakeRejected) as info:
                async with connect_websocket(f"{server.url}/{query}", token=token):
                    pytest.fail("the handshake should have been refused")
            assert info.value.status == 401
            assert isinstance(info.value, ConnectError)
            assert "401" in str(info.value)
            assert "bearer token" in info.value.body
            # the refused client never reached the handler: no frame traffic at all
            assert handler.calls == 0
            assert frame.connection_count == 0
            # and a good client still gets in afterwards
            async with hosting(server.url, token="s3cret") as host:
                assert await host.call_tool("add", {"a": 1, "b": 2}) == 3
            assert handler.calls == 1


async def test_refused_token_answers_www_authenticate() -> None:
    handler = Handler(AssistantFrameProvider(calculator()))
    with anyio.fail_after(10):
        async with websocket_server(handler, token="s3cret") as server:
            stream, _, response = await raw_handshake(
                server.url, {"Authorization": "Basic czNjcmV0"}
            )
            await stream.aclose()
            assert response.status_code == 401
            assert response.headers.get("WWW-Authenticate") == "Bearer"
            assert handler.calls == 0


# -- origin ------------------------------------------------------------------------------------


async def test_origin_allowlist() -> None:
    handler = Handler(AssistantFrameProvider(calculator()))
    allowed = "https://app.example"
    with anyio.fail_after(10):
        async with websocket_server(handler, allowed_origins=[allowed]) as server:
            async with hosting(server.url, origin=allowed) as host:
                assert await host.call_tool("add", {"a": 1, "b": 2}) == 3
            assert handler.transports[0].extra(WebSocketAttribute.origin) == allowed

            for other in ("https://evil.example", "http://app.example", "null"):
                with pytest.raises(HandshakeRejected) as info:
                    async with connect_websocket(server.url, origin=other):
                        pytest.fail(f"origin {other} should have been refused")
                assert info.value.status == 403
            assert handler.calls == 1

            # programs send no Origin at all: allowed
            async with hosting(server.url) as host:
                assert await host.call_tool("add", {"a": 2, "b": 2}) == 4
            assert handler.transports[1].extra(WebSocketAttribute.origin) is None
            assert handler.calls == 2


# -- message size ------------------------------------------------------------------------------


async def test_oversized_message_closes_with_1009_and_spares_other_connections() -> None:
    frame = AssistantFrameProvider(echo_registry())
    with anyio.fail_after(10):
        async with (
            websocket_server(frame.serve, max_message_bytes=10_000) as server,
            hosting(server.url, name="bystander") as bystander,
            hosting(server.url, name="big") as big,
        ):
            assert await big.call_tool("size", {"text": "x" * 5_000}) == 5_000
            started = anyio.current_time()
            with pytest.raises(FrameDisconnected) as info:
                await big.call_tool("size", {"text": "x" * 20_000})
            assert anyio.current_time() - started < 5
            assert "1009" in str(info.value)
            assert big.state == "disconnected"
            assert big.get_model_context().tools == {}

            assert await bystander.call_tool("size", {"text": "y" * 9_000}) == 9_000
            async with hosting(server.url) as newcomer:
                assert await newcomer.call_tool("add", {"a": 1, "b": 2}) == 3


async def test_oversized_result_closes_the_client_with_1009() -> None:
    frame = AssistantFrameProvider(echo_registry())
    with anyio.fail_after(10):
        async with (
            websocket_server(frame.serve) as server,
            hosting(server.url, max_message_bytes=10_000) as host,
        ):
            assert len(await host.call_tool("big", {"n": 5_000})) == 5_000
            with pytest.raises(FrameDisconnected) as info:
                await host.call_tool("big", {"n": 50_000})
            assert "1009" in str(info.value)
            await wait_until(lambda: frame.connection_count == 0)


async def test_raw_oversized_frame_closes_with_1009() -> None:
    handler = Handler(AssistantFrameProvider(calculator()))
    with anyio.fail_after(10):
        async with websocket_server(handler, max_message_bytes=1_000) as server:
            async with raw_client(server.url) as client:
                await client.send_frame(Opcode.TEXT, json.dumps(envelope("x" * 2_000)).encode())
                assert await client.wait_closed() == 1009
                assert client.protocol.close_rcvd is not None
                assert "exceeds limit" in client.protocol.close_rcvd.reason
            # a fragmented message that adds up to too much is refused as well
            async with raw_client(server.url) as client:
                for _ in range(3):
                    client.protocol.send_frame(Frame(Opcode.TEXT, b"[" + b"1," * 200, fin=False))
                    await client.flush()
                    client.protocol.send_frame(Frame(Opcode.CONT, b"1" * 200, fin=False))
                    await client.flush()
                assert await client.wait_closed() == 1009
            async with hosting(server.url) as host:
                assert await host.call_tool("add", {"a": 1, "b": 2}) == 3


# -- keep-alive --------------------------------------------------------------------------------


async def test_silent_peer_is_closed_with_1011() -> None:
    """A client that completed the handshake and then never reads (so never pongs)."""
    ended: list[BaseException] = []
    done = anyio.Event()

    async def handler(transport: WebSocketTransport) -> None:
        try:
            await transport.receive()
        except Exception as exc:
            ended.append(exc)
        finally:
            done.set()

    with anyio.fail_after(10):
        async with websocket_server(handler, ping_interval=0.05, ping_timeout=0.2) as server:
            stream, protocol, response = await raw_handshake(server.url)
            async with stream:
                assert response.status_code == 101
                started = anyio.current_time()
                with anyio.fail_after(3):
                    await done.wait()  # we read nothing meanwhile: no pong went out
                assert anyio.current_time() - started < 3
                assert "keepalive" in str(ended[0])
                client = RawClient(stream, protocol)
                assert await client.wait_closed() == 1011
                # what arrived before the close were the server's pings
                assert protocol.close_rcvd is not None
                assert "keepalive" in protocol.close_rcvd.reason


async def test_server_that_stops_reading_fails_the_clients_pending_call() -> None:
    stop = anyio.Event()

    async def deaf(transport: WebSocketTransport) -> None:
        await transport.receive()  # the request...
        await transport.send(
            envelope({"type": "model-context-update", "context": {"tools": {"t": {}}}})
        )
        await stop.wait()  # ...then never reads again, so never answers a ping

    with anyio.fail_after(10):
        async with websocket_server(deaf) as server:
            async with (
                connect_websocket(server.url, ping_interval=0.05, ping_timeout=0.2) as transport,
                AssistantFrameHost(transport, timeout=CALL_TIMEOUT) as host,
            ):
                await host.wait_for_context(timeout=5)
                started = anyio.current_time()
                with pytest.raises(FrameDisconnected) as info:
                    await host.call_tool("t", {})
                assert anyio.current_time() - started < 3
                assert "keepalive" in str(info.value)
                assert host.get_model_context().tools == {}
            stop.set()


async def test_idle_connection_survives_many_ping_intervals() -> None:
    frame = AssistantFrameProvider(calculator())
    with anyio.fail_after(10):
        async with (
            websocket_server(frame.serve, ping_interval=0.02, ping_timeout=0.5) as server,
            hosting(server.url, ping_interval=0.02, ping_timeout=0.5) as host,
        ):
            for i in range(3):
                await anyio.sleep(0.15)  # idle for several intervals of both sides' pings
                assert host.connected
                assert frame.connection_count == 1
                assert await host.call_tool("add", {"a": i, "b": 1}) == i + 1


# -- garbage -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("opcode", "payload"),
    [
        (Opcode.TEXT, b"this is not json"),
        (Opcode.TEXT, b'{"channel": "assistant-ui-frame", "message": '),
        (Opcode.BINARY, b"\x00\x01\x02\xff"),
        (Opcode.TEXT, b""),
    ],
    ids=["text", "truncated-json", "binary", "empty"],
)
async def test_non_json_frames_are_dropped_and_the_connection_keeps_serving(
    opcode: Opcode, payload: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    handler = Handler(AssistantFrameProvider(calculator()))
    caplog.set_level(logging.DEBUG, logger=TRANSPORT_LOGGER)
    with anyio.fail_after(10):
        async with websocket_server(handler) as server, raw_client(server.url) as client:
            for _ in range(3):
                await client.send_frame(opcode, payload)
            await client.send_json(REQUEST)
            update = await client.receive_message("model-context-update")
            assert set(update["context"]["tools"]) == {"add"}
            result = await client.call("c1", "add", {"a": 2, "b": 5})
            assert result == {"type": "tool-result", "id": "c1", "result": 7}

            drops = [r for r in caplog.records if "not JSON" in r.getMessage()]
            assert [r.levelno for r in drops] == [logging.WARNING] + [logging.DEBUG] * 2
            assert drops[0].name == TRANSPORT_LOGGER

            # and another connection is untouched
            async with hosting(server.url) as host:
                assert await host.call_tool("add", {"a": 1, "b": 2}) == 3


async def test_json_that_is_not_a_frame_message_is_ignored() -> None:
    handler = Handler(AssistantFrameProvider(calculator()))
    with anyio.fail_after(10):
        async with websocket_server(handler) as server, raw_client(server.url) as client:
            for message in (
                [1, 2, 3],
                "hello",
                None,
                {"channel": "other", "message": {"type": "tool-call"}},
                envelope({"type": "no-such-type"}),
                envelope({"type": "tool-call", "id": "bad"}),  # malformed, answered
            ):
                await client.send_json(message)
            malformed = await client.receive_message("tool-result")
            assert malformed["id"] == "bad"
            assert malformed["error"].startswith("Malformed tool-call")
            assert await client.call("c1", "add", {"a": 1, "b": 1}) == {
                "type": "tool-result",
                "id": "c1",
                "result": 2,
            }


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x8f\x80\x00\x00\x00\x00",  # reserved opcode 0xF
        b"\xc1\x80\x00\x00\x00\x00",  # RSV1 set with no extension negotiated
        b"\x81\x05hello",  # unmasked client frame
        b"\x89\xfe\x01\x00" + b"\x00" * 4 + b"p" * 256,  # control frame longer than 125
    ],
    ids=["reserved-opcode", "rsv1", "unmasked", "long-ping"],
)
async def test_bytes_that_are_not_websocket_frames_close_with_1002(garbage: bytes) -> None:
    handler = Handler(AssistantFrameProvider(calculator()))
    with anyio.fail_after(10):
        async with websocket_server(handler) as server:
            async with raw_client(server.url) as client:
                await client.send_raw(garbage)
                assert await client.wait_closed() == 1002
            await wait_until(lambda: handler.frame.connection_count == 0)
            async with hosting(server.url) as host:
                assert await host.call_tool("add", {"a": 1, "b": 2}) == 3


async def test_garbage_instead_of_a_handshake_is_closed_promptly() -> None:
    """A client that does not speak HTTP is answered and hung up on, not left to time out."""
    handler = Handler(AssistantFrameProvider(calculator()))
    with anyio.fail_after(10):
        async with websocket_server(handler, handshake_timeout=10) as server:
            async with await anyio.connect_tcp("127.0.0.1", server.port) as stream:
                await stream.send(b"\x16\x03\x01 this is not HTTP\r\n\r\n")
                received = b""
                with anyio.fail_after(2):  # far below handshake_timeout
                    with suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                        while True:
                            received += await stream.receive()
                assert not received or received.startswith(b"HTTP/1.1 4")
            assert handler.calls == 0
            async with hosting(server.url) as host:
                assert await host.call_tool("add", {"a": 1, "b": 2}) == 3


async def test_plain_http_request_is_refused() -> None:
    handler = Handler(AssistantFrameProvider(calculator()))
    with anyio.fail_after(10):
        async with websocket_server(handler) as server:
            async with await anyio.connect_tcp("127.0.0.1", server.port) as stream:
                await stream.send(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
                received = b""
                with suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                    while b"\r\n\r\n" not in received:
                        received += await stream.receive()
                assert received.split(b" ")[1] in (b"400", b"426")
            assert handler.calls == 0


async def test_silent_client_is_dropped_after_the_handshake_timeout() -> None:
    handler = Handler(AssistantFrameProvider(calculator()))
    with anyio.fail_after(10):
        async with websocket_server(handler, handshake_timeout=0.2) as server:
            async with await anyio.connect_tcp("127.0.0.1", server.port) as stream:
                started = anyio.current_time()
                with (
                    anyio.fail_after(3),
                    pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)),
                ):
                    await stream.receive()
                assert anyio.current_time() - started < 3
            assert handler.calls == 0


# -- connecting and listening ------------------------------------------------------------------


async def test_port_in_use_gives_connect_error() -> None:
    frame = AssistantFrameProvider(calculator())
    with anyio.fail_after(10):
        async with websocket_server(frame.serve) as server:
            with pytest.raises(ConnectError) as info:
                async with websocket_server(frame.serve, port=server.port):
                    pytest.fail("a second server should not listen on the same port")
            message = str(info.value)
            assert f"Cannot listen on 127.0.0.1:{server.port}" in message
            assert "in use" in message
            async with hosting(server.url) as host:  # the first one is unharmed
                assert await host.call_tool("add", {"a": 1, "b": 2}) == 3


async def test_connect_to_closed_port_fails_quickly() -> None:
    port = free_port()
    started = anyio.current_time()
    with anyio.fail_after(5), pytest.raises(ConnectError) as info:
        async with connect_websocket(f"ws://127.0.0.1:{port}", open_timeout=5):
            pytest.fail("nothing listens there")
    assert anyio.current_time() - started < 2
    assert f"ws://127.0.0.1:{port}" in str(info.value)


async def test_server_that_never_answers_the_handshake_times_out() -> None:
    accepted = anyio.Event()

    async def mute(stream: anyio.abc.SocketStream) -> None:
        accepted.set()
        await anyio.sleep_forever()  # accepts, then never answers

    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(SocketAttribute.local_port)
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, mute)
            started = anyio.current_time()
            with anyio.fail_after(5), pytest.raises(ConnectError) as info:
                async with connect_websocket(f"ws://127.0.0.1:{port}", open_timeout=0.3):
                    pytest.fail("the handshake never completes")
            assert anyio.current_time() - started < 2
            assert "0.3" in str(info.value)
            assert accepted.is_set()
            tg.cancel_scope.cancel()


async def test_not_a_websocket_url() -> None:
    with pytest.raises(ValueError, match="Not a WebSocket URL"):
        async with connect_websocket("http://127.0.0.1:1/"):
            pytest.fail("not a ws:// URL")


# -- dropped connections -----------------------------------------------------------------------


def abort(transport: WebSocketTransport) -> None:
    """Reset the TCP connection under a transport (no closing handshake, an RST)."""
    sock = transport.extra(SocketAttribute.raw_socket)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.shutdown(socket.SHUT_RDWR)


@asynccontextmanager
async def background_server(
    handler: Callable[[WebSocketTransport], Awaitable[Any]], **options: Any
) -> AsyncIterator[tuple[Any, anyio.Event]]:
    """A websocket_server run by a task of its own; set the yielded event to stop it."""
    stop = anyio.Event()

    async def run(*, task_status: anyio.abc.TaskStatus[Any]) -> None:
        async with websocket_server(handler, **options) as server:
            task_status.started(server)
            await stop.wait()

    async with anyio.create_task_group() as tg:
        server = await tg.start(run)
        try:
            yield server, stop
        finally:
            stop.set()


@pytest.mark.parametrize("how", ["handler-cancelled", "tcp-reset", "server-stopped"])
async def test_dropped_connection_fails_pending_calls_at_once(how: str) -> None:
    registry = calculator()
    gate = CountingGate()
    registry.add_tool("wait", gate, description="Wait until released.")
    handler = Handler(AssistantFrameProvider(registry))
    with anyio.fail_after(10):
        async with (
            background_server(handler) as (server, stop_server),
            hosting(server.url) as host,
        ):
            outcomes = [Outcome() for _ in range(3)]
            async with anyio.create_task_group() as tg:
                for outcome in outcomes:
                    tg.start_soon(outcome.run, host, "wait", {})
                await gate.started.wait()
                await wait_until(lambda: gate.calls == 3)
                started = anyio.current_time()
                if how == "handler-cancelled":
                    handler.scopes[0].cancel()
                elif how == "tcp-reset":
                    abort(handler.transports[0])
                else:
                    stop_server.set()
                with anyio.fail_after(3):
                    for outcome in outcomes:
                        await outcome.done.wait()
            elapsed = anyio.current_time() - started
            assert elapsed < 2, elapsed  # far below the 30 s call timeout
            for outcome in outcomes:
                assert isinstance(outcome.error, FrameDisconnected), outcome.error
                if how == "tcp-reset":
                    assert outcome.error.message.startswith("frame disconnected: WebSocket")
                else:  # the frame stopped serving an open connection, and said so first
                    assert type(outcome.error) is ProviderDisposed, outcome.error
                    assert outcome.error.message == "AssistantFrameProvider has been disposed"
            await wait_until(lambda: host.state == "disconnected")
            assert host.get_model_context().tools == {}
            with pytest.raises(FrameDisconnected) as after:
                await host.call_tool("add", {"a": 1, "b": 2})
            if how != "tcp-reset":  # a clean close says so
                assert "code 1000" in str(after.value)
            await wait_until(gate.cancelled.is_set)  # the frame stopped the call


# -- close codes -------------------------------------------------------------------------------


async def test_client_close_is_answered_with_1000() -> None:
    handler = Handler(AssistantFrameProvider(calculator()))
    with anyio.fail_after(10):
        async with websocket_server(handler) as server, raw_client(server.url) as client:
            await client.send_json(REQUEST)
            await client.receive_message("model-context-update")
            assert await client.close() == 1000
            await wait_until(lambda: handler.frame.connection_count == 0)


async def test_server_close_sends_1000() -> None:
    async def one_message(transport: WebSocketTransport) -> None:
        await transport.send(await transport.receive())  # echo one, then return

    with anyio.fail_after(10):
        async with websocket_server(one_message) as server, raw_client(server.url) as client:
            await client.send_json(REQUEST)
            assert await client.receive_message() == {"type": "model-context-request"}
            assert await client.wait_closed() == 1000


async def test_host_leaving_closes_with_1000() -> None:
    ended: list[BaseException] = []
    done = anyio.Event()

    async def handler(transport: WebSocketTransport) -> None:
        try:
            while True:
                await transport.receive()
        except Exception as exc:
            ended.append(exc)
        finally:
            done.set()

    with anyio.fail_after(10):
        async with websocket_server(handler) as server:
            async with connect_websocket(server.url) as transport:
                await transport.send(REQUEST)
            with anyio.fail_after(3):
                await done.wait()
            assert isinstance(ended[0], anyio.EndOfStream)
            assert "code 1000" in str(ended[0])


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_close_codes_seen_by_the_websockets_client() -> None:
    """websockets' own asyncio client: a JSON round trip, then clean closes both ways."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosedOK

    frame = AssistantFrameProvider(calculator())

    async def one_call(transport: WebSocketTransport) -> None:
        await transport.send(await transport.receive())

    with anyio.fail_after(10):
        async with websocket_server(frame.serve) as server:
            async with connect(server.url) as ws:
                await ws.send(json.dumps(REQUEST))
                update = json.loads(await ws.recv())
                assert update["message"]["type"] == "model-context-update"
                call = {
                    "type": "tool-call",
                    "id": "c1",
                    "toolName": "add",
                    "args": {"a": 1, "b": 2},
                }
                await ws.send(json.dumps(envelope(call)))
                result = json.loads(await ws.recv())
                assert body(result) == {"type": "tool-result", "id": "c1", "result": 3}
            assert ws.close_code == 1000  # we closed; the server answered in kind
            await wait_until(lambda: frame.connection_count == 0)

        async with websocket_server(one_call) as server, connect(server.url) as ws:
            await ws.send(json.dumps(REQUEST))
            assert json.loads(await ws.recv()) == REQUEST
            with pytest.raises(ConnectionClosedOK):
                await ws.recv()
            assert ws.close_code == 1000  # the server closed


async def test_a_burst_of_connects_is_accepted_whole() -> None:
    """The listen backlog is the same on both backends (asyncio's default of 100 left
    part of a 300-connect burst half-open in the kernel, never accepted)."""

    async def idle(transport: WebSocketTransport) -> None:
        await anyio.sleep_forever()

    async with websocket_server(idle, max_connections=1000) as server:
        clients: list[anyio.abc.SocketStream] = []

        async def connect() -> None:
            clients.append(await anyio.connect_tcp("127.0.0.1", server.port))

        try:
            with anyio.fail_after(10):
                async with anyio.create_task_group() as tasks:
                    for _ in range(300):
                        tasks.start_soon(connect)
            await wait_until(lambda: server.connections == 300)
            assert server.refused == 0
        finally:
            for client in clients:
                await client.aclose()


async def test_closing_the_server_hangs_up_on_a_client_mid_handshake() -> None:
    """A connection whose handshake is cut short by the server closing is closed then,
    not left to the garbage collector (under asyncio its transport leaked: a
    ResourceWarning, and on Python 3.13.0 a TypeError from asyncio's Server in __del__)."""

    async def idle(transport: WebSocketTransport) -> None:
        await anyio.sleep_forever()

    async with websocket_server(idle) as server:
        client = await anyio.connect_tcp("127.0.0.1", server.port)
        await wait_until(lambda: server.connections == 1)
        await anyio.sleep(0.05)  # its handler waits for the request
    try:
        with anyio.fail_after(5):
            with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                await client.receive()
    finally:
        await client.aclose()
