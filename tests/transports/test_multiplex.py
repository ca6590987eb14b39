"""One transport, several protocols: ``Multiplexer`` routes each message to the protocol
that claims it.

The end-to-end tests run a real frame and host on the frame channel and a small JSON-RPC
2.0 echo peer on each side, over one ``memory_pair`` and over one real WebSocket, with calls
interleaved both ways (including a frame tool that calls the host side over JSON-RPC while
the host waits for its result).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.abc import ObjectStream

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    FrameDisconnected,
    ModelContextRegistry,
    Multiplexer,
    TransportAttribute,
    memory_pair,
)
from assistant_frames.transports import (
    CloseReason,
    MemoryTransport,
    MultiplexedStream,
    TransportClosed,
    WebSocketAttribute,
    channel,
    close_reason,
    connect_websocket,
    frame_channel,
    jsonrpc,
    websocket_server,
)

from helpers import CHANNEL, envelope, wait_until
from jsonrpc_peer import JsonRpcPeer, rpc_request

pytestmark = pytest.mark.anyio

LOGGER = "assistant_frames.transports"
WAIT = 10.0
RELAY = "assistant-frames-relay"


def frame_message(n: int) -> dict[str, Any]:
    return envelope({"type": "tool-cancel", "id": f"call-{n}"})


async def receive(stream: ObjectStream[Any]) -> Any:
    with anyio.fail_after(WAIT):
        return await stream.receive()


async def nothing_arrives(stream: ObjectStream[Any], wait: float = 0.05) -> bool:
    with anyio.move_on_after(wait):
        await stream.receive()
        return False
    return True


# -- routing -----------------------------------------------------------------------------------


async def test_each_message_goes_to_the_protocol_that_claims_it_in_order(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    left, right = memory_pair()
    mux = Multiplexer(right)
    frames = mux.open(frame_channel)
    rpc = mux.open(jsonrpc)
    relay = mux.open(channel(RELAY))
    async with mux:
        sent: list[Any] = []
        for n in range(5):
            sent += [frame_message(n), rpc_request(n), {"channel": RELAY, "message": n}]
        sent.insert(4, {"channel": "somebody-else", "message": 1})
        sent.insert(9, [1, 2, 3])
        for message in sent:
            await left.send(message)
        assert [await receive(frames) for _ in range(5)] == [frame_message(n) for n in range(5)]
        assert [await receive(rpc) for _ in range(5)] == [rpc_request(n) for n in range(5)]
        assert [(await receive(relay))["message"] for _ in range(5)] == list(range(5))
        await wait_until(lambda: mux.unclaimed == 2)
        assert await nothing_arrives(frames)
    dropped = [r for r in caplog.records if r.name == LOGGER and "no protocol" in r.getMessage()]
    assert [r.levelno for r in dropped] == [logging.WARNING, logging.DEBUG]
    assert "channel='somebody-else'" in dropped[0].getMessage()
    assert "a value of type list" in dropped[1].getMessage()


async def test_the_first_claim_wins_and_a_closed_sub_stream_leaves_the_others_running() -> None:
    left, right = memory_pair()
    mux = Multiplexer(right)
    first = mux.open(frame_channel)
    second = mux.open(channel(CHANNEL))  # claims the same messages, after `first`
    rpc = mux.open(jsonrpc)
    async with mux:
        await left.send(frame_message(1))
        assert await receive(first) == frame_message(1)
        assert await nothing_arrives(second)

        await first.aclose()
        assert mux.streams == (second, rpc)
        with pytest.raises(anyio.ClosedResourceError):
            await first.receive()
        with pytest.raises(anyio.ClosedResourceError):
            await first.send(frame_message(0))
        await left.send(frame_message(2))  # now the next claim that matches takes it
        assert await receive(second) == frame_message(2)

        await second.aclose()
        await left.send(frame_message(3))  # nobody claims it any more
        await left.send(rpc_request(1))
        assert await receive(rpc) == rpc_request(1)  # the transport is still open
        assert mux.unclaimed == 1
        await rpc.send(rpc_request(2))  # and still sends
        assert await receive(left) == rpc_request(2)


async def test_a_claim_that_raises_counts_as_not_claiming(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(message: Any) -> bool:
        return bool(message["no such key"])

    left, right = memory_pair()
    mux = Multiplexer(right)
    mux.open(broken, name="broken")
    rpc = mux.open(jsonrpc)
    async with mux:
        await left.send(rpc_request(1))
        await left.send(rpc_request(2))
        assert [await receive(rpc), await receive(rpc)] == [rpc_request(1), rpc_request(2)]
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "broken" in warnings[0].getMessage()


async def test_send_eof_on_a_sub_stream_refuses_its_sends_only() -> None:
    left, right = memory_pair()
    mux = Multiplexer(right)
    frames, rpc = mux.open(frame_channel), mux.open(jsonrpc)
    async with mux:
        await frames.send_eof()
        with pytest.raises(anyio.ClosedResourceError):
            await frames.send(frame_message(1))
        await rpc.send(rpc_request(1))
        assert await receive(left) == rpc_request(1)
        await left.send(frame_message(2))
        assert await receive(frames) == frame_message(2)  # it still receives


async def test_open_and_enter_are_checked() -> None:
    _left, right = memory_pair()
    with pytest.raises(ValueError, match="max_buffer_size"):
        Multiplexer(right, max_buffer_size=0)
    mux = Multiplexer(right)
    with pytest.raises(ValueError, match="max_buffer_size"):
        mux.open(jsonrpc, max_buffer_size=0)
    async with mux:
        with pytest.raises(RuntimeError, match="only once"):
            await mux.__aenter__()
    with pytest.raises(anyio.ClosedResourceError):
        mux.open(jsonrpc)


# -- the end of the transport ------------------------------------------------------------------


async def test_the_end_of_the_transport_reaches_every_sub_stream_after_its_messages() -> None:
    left, right = memory_pair()
    mux = Multiplexer(right)
    frames, rpc = mux.open(frame_channel), mux.open(jsonrpc)
    async with mux:
        await left.send(frame_message(1))
        await left.send(rpc_request(1))
        await left.aclose()
        assert await receive(frames) == frame_message(1)  # what came before the end first
        assert await receive(rpc) == rpc_request(1)
        for stream in (frames, rpc, frames):
            with pytest.raises(anyio.EndOfStream):
                await receive(stream)
        late = mux.open(channel(RELAY))  # opened after the end: ended already
        with pytest.raises(anyio.EndOfStream):
            await receive(late)


async def test_closing_the_multiplexer_closes_the_transport_and_every_sub_stream() -> None:
    left, right = memory_pair()
    mux = Multiplexer(right)
    frames, rpc = mux.open(frame_channel), mux.open(jsonrpc)
    async with mux:
        await left.send(rpc_request(1))
        async with anyio.create_task_group() as tg:
            tg.start_soon(mux.aclose)  # while a consumer waits
            with pytest.raises(anyio.ClosedResourceError):
                await receive(frames)
    assert frames.closed
    assert rpc.closed
    with pytest.raises(anyio.ClosedResourceError):
        await rpc.receive()
    with pytest.raises(anyio.EndOfStream):
        await receive(left)
    await mux.aclose()  # idempotent


async def test_a_close_reason_survives_to_every_sub_stream() -> None:
    async def handler(transport: ObjectStream[Any]) -> None:
        with anyio.fail_after(WAIT):
            await transport.receive()  # the server ends on the oversized message

    async with (
        websocket_server(handler, max_message_bytes=1000) as server,
        connect_websocket(server.url) as ws,
    ):
        mux = Multiplexer(ws)
        frames, rpc = mux.open(frame_channel), mux.open(jsonrpc)
        async with mux:
            await rpc.send(rpc_request(1, params="x" * 5000))
            errors = []
            for stream in (frames, rpc):
                with pytest.raises(anyio.EndOfStream) as ended:
                    await receive(stream)
                errors.append(ended.value)
    assert "code 1009" in str(errors[0])
    assert str(errors[0]) == str(errors[1])
    assert type(errors[0]) is type(errors[1]) is TransportClosed
    assert close_reason(errors[0]).close_code == 1009
    assert close_reason(errors[1]) == close_reason(errors[0])
    assert errors[0] is not errors[1]  # each task raises its own copy


async def test_a_typed_close_reason_survives_to_every_sub_stream() -> None:
    class EndingTransport(ObjectStream[Any]):
        """Ends with a TransportClosed once its peer has closed, as a worker's does."""

        def __init__(self, inner: MemoryTransport) -> None:
            self.inner = inner

        async def receive(self) -> Any:
            try:
                return await self.inner.receive()
            except anyio.EndOfStream:
                raise TransportClosed(CloseReason("exited with 3", exit_code=3)) from None

        async def send(self, item: Any) -> None:
            await self.inner.send(item)

        async def send_eof(self) -> None:
            await self.inner.send_eof()

        async def aclose(self) -> None:
            await self.inner.aclose()

    left, right = memory_pair()
    ending = EndingTransport(right)
    mux = Multiplexer(ending)
    frames, rpc = mux.open(frame_channel), mux.open(jsonrpc)
    async with mux:
        await left.aclose()
        errors = []
        for stream in (frames, rpc):
            with pytest.raises(TransportClosed) as ended:
                await receive(stream)
            assert ended.value.reason == CloseReason("exited with 3", exit_code=3)
            assert str(ended.value) == "exited with 3"
            errors.append(ended.value)
        assert errors[0] is not errors[1]  # copied, though __init__ takes a CloseReason


# -- backpressure ------------------------------------------------------------------------------


async def test_a_full_sub_stream_pauses_reading_and_loses_nothing() -> None:
    left, right = memory_pair(max_buffer_size=4)
    mux = Multiplexer(right)
    rpc = mux.open(jsonrpc, max_buffer_size=2)
    frames = mux.open(frame_channel)
    sent: list[Any] = []

    async def flood() -> None:
        for n in range(20):
            await left.send(rpc_request(n))
            sent.append(n)
        await left.send(frame_message(0))
        sent.append("frame")

    async with mux, anyio.create_task_group() as tg:
        tg.start_soon(flood)
        await wait_until(lambda: left.send_would_wait)
        await anyio.sleep(0.05)
        # 2 in the sub-stream, 1 held by the reader, 4 in the transport; the sender waits.
        assert len(sent) == 7
        assert await nothing_arrives(frames)  # behind the full sub-stream, not lost
        assert [await receive(rpc) for _ in range(20)] == [rpc_request(n) for n in range(20)]
        assert await receive(frames) == frame_message(0)
        assert sent[-1] == "frame"
        assert mux.unclaimed == 0


async def test_closing_a_stalled_sub_stream_releases_the_others() -> None:
    left, right = memory_pair(max_buffer_size=4)
    mux = Multiplexer(right, max_buffer_size=2)
    rpc = mux.open(jsonrpc)
    frames = mux.open(frame_channel)

    async def flood() -> None:
        for n in range(20):
            await left.send(rpc_request(n))
        await left.send(frame_message(0))

    async with mux, anyio.create_task_group() as tg:
        tg.start_soon(flood)
        await wait_until(lambda: left.send_would_wait)
        await rpc.aclose()  # its consumer gives up: its messages are unclaimed from now on
        assert await receive(frames) == frame_message(0)
        assert mux.unclaimed == 18  # the two it held were dropped with it, not "unclaimed"


# -- attributes --------------------------------------------------------------------------------


async def test_sub_streams_pass_the_transport_attributes_through() -> None:
    left, right = memory_pair(max_buffer_size=2)
    mux = Multiplexer(left)
    frames, rpc = mux.open(frame_channel), mux.open(jsonrpc)
    async with mux:
        would_wait = frames.extra(TransportAttribute.send_would_wait)
        assert would_wait() is False
        await rpc.send(rpc_request(1))
        await rpc.send(rpc_request(2))
        assert would_wait() is True  # the shared transport's own answer
        assert await receive(right) == rpc_request(1)
        assert await receive(right) == rpc_request(2)

        # send_latest replaces only this sub-stream's own message under the same key.
        frames_latest = frames.extra(TransportAttribute.send_latest)
        rpc_latest = rpc.extra(TransportAttribute.send_latest)
        await frames_latest("context", frame_message(1))
        await rpc_latest("context", rpc_request(1))
        await frames_latest("context", frame_message(2))
        assert await receive(right) == frame_message(2)
        assert await receive(right) == rpc_request(1)
        await frames.aclose()
        with pytest.raises(anyio.ClosedResourceError):
            await frames_latest("context", frame_message(3))


# -- frames, hosts and JSON-RPC together -------------------------------------------------------


def frame_registry(rpc: JsonRpcPeer) -> ModelContextRegistry:
    registry = ModelContextRegistry()
    registry.add_instruction("Numbers and questions.")

    @registry.tool
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        await anyio.sleep(0.001)
        return a + b

    @registry.tool
    async def ask_host(question: str) -> Any:
        """Ask the host side over JSON-RPC, on the same connection, while it waits for us."""
        return await rpc.call({"question": question})

    return registry


async def serve_frame_side(transport: ObjectStream[Any]) -> None:
    """The frame side of one connection: a frame and a JSON-RPC peer on one transport."""
    mux = Multiplexer(transport)
    frames = mux.open(frame_channel)
    rpc = JsonRpcPeer(mux.open(jsonrpc), "frame")
    async with mux, anyio.create_task_group() as tg:
        tg.start_soon(rpc.run)
        await AssistantFrameProvider(frame_registry(rpc)).serve(frames)
        assert rpc.received
        assert all(m["jsonrpc"] == "2.0" for m in rpc.received)
        assert mux.unclaimed == 0


@asynccontextmanager
async def host_side(
    transport: ObjectStream[Any],
) -> AsyncIterator[tuple[AssistantFrameHost, JsonRpcPeer, Multiplexer]]:
    mux = Multiplexer(transport)
    frames = mux.open(frame_channel)
    rpc = JsonRpcPeer(mux.open(jsonrpc), "host")
    async with mux, anyio.create_task_group() as tg:
        tg.start_soon(rpc.run)
        async with AssistantFrameHost(frames, name="muxed", timeout=WAIT) as host:
            yield host, rpc, mux
        tg.cancel_scope.cancel()


async def interleave(host: AssistantFrameHost, rpc: JsonRpcPeer) -> None:
    """Frame calls host -> frame and JSON-RPC calls both ways, all at once."""
    context = await host.wait_for_context(timeout=WAIT)
    assert sorted(context.tools) == ["add", "ask_host"]
    results: dict[str, Any] = {}

    async def call(key: str, make: Callable[[], Awaitable[Any]]) -> None:
        results[key] = await make()

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            for n in range(20):
                tg.start_soon(call, f"add{n}", lambda n=n: host.call_tool("add", {"a": n, "b": 1}))
                tg.start_soon(call, f"rpc{n}", lambda n=n: rpc.call(n))
                if n % 4 == 0:
                    question = f"q{n}"
                    tg.start_soon(
                        call,
                        question,
                        lambda q=question: host.call_tool("ask_host", {"question": q}),
                    )
    for n in range(20):
        assert results[f"add{n}"] == n + 1
        assert results[f"rpc{n}"] == {"echo": n, "by": "frame"}
        if n % 4 == 0:
            assert results[f"q{n}"] == {"echo": {"question": f"q{n}"}, "by": "host"}
    assert all(m["jsonrpc"] == "2.0" for m in rpc.received)


async def test_a_frame_a_host_and_json_rpc_share_one_memory_pair() -> None:
    left, right = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_frame_side, right)
        async with host_side(left) as (host, rpc, mux):
            await interleave(host, rpc)
            assert mux.unclaimed == 0


async def test_a_frame_a_host_and_json_rpc_share_one_websocket() -> None:
    origins: list[Any] = []

    async def handler(transport: ObjectStream[Any]) -> None:
        origins.append(transport.extra(WebSocketAttribute.origin))
        await serve_frame_side(transport)

    async with (
        websocket_server(handler) as server,
        connect_websocket(server.url, origin="https://app.example") as ws,
        host_side(ws) as (host, rpc, mux),
    ):
        sub: MultiplexedStream = mux.streams[0]
        assert sub.extra(WebSocketAttribute.path) == "/"
        would_wait = sub.extra(TransportAttribute.send_would_wait)  # the WebSocket's
        assert would_wait() in (True, False)
        await interleave(host, rpc)
        await interleave(host, rpc)  # and again, on the same connection
    assert origins == ["https://app.example"]


async def test_a_broken_transport_fails_a_muxed_hosts_calls_at_once() -> None:
    left, right = memory_pair()
    started = anyio.Event()

    registry = ModelContextRegistry()

    @registry.tool
    async def hang() -> None:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        frame_mux = Multiplexer(right)
        frame_sub = frame_mux.open(frame_channel)
        tg.start_soon(AssistantFrameProvider(registry).serve, frame_sub)
        async with frame_mux, host_side(left) as (host, rpc, _mux):
            await host.wait_for_context(timeout=WAIT)

            async def close_soon() -> None:
                await started.wait()
                await frame_mux.aclose()  # the frame side's transport goes away

            tg.start_soon(close_soon)
            with anyio.fail_after(WAIT), pytest.raises(FrameDisconnected):
                await host.call_tool("hang", {}, timeout=60)
            await wait_until(lambda: rpc.ended is not None)  # the end reached JSON-RPC too
            assert isinstance(rpc.ended, anyio.EndOfStream)
            with pytest.raises(anyio.BrokenResourceError):
                await rpc.call("anyone?")
