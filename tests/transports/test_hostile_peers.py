"""Hostile peers and bad tools: each test is a bug found by attacking the library.

Every one failed before its fix (see the commit that added it). Frames and hosts are
the real classes over real transports: ``memory_pair``, anyio object streams, and
WebSockets on 127.0.0.1 against raw peers built from websockets' sans-I/O protocol.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import math
import socket
import struct
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import pytest
from anyio.streams.stapled import StapledObjectStream
from test_websocket import Handler, echo_registry, hosting, raw_client
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.server import ServerProtocol

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    FrameDisconnected,
    ModelContextRegistry,
    ToolArgumentsError,
    ToolCallError,
    ToolCallTimeout,
    memory_pair,
)
from assistant_frames.transports import connect_websocket, websocket_server
from assistant_frames.transports.memory import DEFAULT_MAX_BUFFER_SIZE

from helpers import (
    CHANNEL,
    Gate,
    Outcome,
    calculator,
    envelope,
    next_message,
    serve_frame,
    wait_until,
)

pytestmark = pytest.mark.anyio

BIG = 4_000_000
BLOCKING_CALLS = 8  # 32 MB: more than loopback's socket buffers hold, so sends block
STALL = 2.0  # a send that waits this long to a memory_pair the frame reads: it stopped reading
# (1 s was once reached under load, with the frame still reading)


@asynccontextmanager
async def raw_object_peer(
    frame: AssistantFrameProvider,
) -> AsyncIterator[StapledObjectStream[Any]]:
    """Serve ``frame`` over anyio memory object streams, which pass values through as
    they are (as a transport built on ``json.loads`` does); yield the peer's end."""
    to_frame_send, to_frame_receive = anyio.create_memory_object_stream[Any](math.inf)
    to_peer_send, to_peer_receive = anyio.create_memory_object_stream[Any](math.inf)
    peer = StapledObjectStream(to_frame_send, to_peer_receive)
    async with anyio.create_task_group() as tg:
        tg.start_soon(frame.serve, StapledObjectStream(to_peer_send, to_frame_receive))
        yield peer
        tg.cancel_scope.cancel()


@asynccontextmanager
async def a_call_held_open(registry: ModelContextRegistry) -> AsyncIterator[AssistantFrameHost]:
    """A host on ``registry``'s frame with one call of a ``wait`` tool running all along;
    on the way out the call is released and must have lived through the block."""
    gate = Gate()
    registry.add_tool("wait", gate)
    async with (
        serve_frame(AssistantFrameProvider(registry)) as host,
        anyio.create_task_group() as tg,
    ):
        waiting = Outcome()
        tg.start_soon(waiting.run, host, "wait", {})
        await gate.started.wait()
        yield host
        gate.release.set()
        await waiting.done.wait()
        assert waiting.result == "released"


async def raw_result(peer: StapledObjectStream[Any], call_id: str) -> dict[str, Any]:
    while True:
        raw = await peer.receive()
        message: dict[str, Any] = raw["message"]
        if message["type"] == "tool-result" and message["id"] == call_id:
            return message


# -- raw WebSocket servers ---------------------------------------------------------------------


class RawPeer:
    """The server end of one raw WebSocket connection, on a plain blocking socket.

    After the handshake nothing reads from it (an event loop's stream would keep reading
    into memory), so a peer that has stopped reading is exactly that."""

    def __init__(self, sock: socket.socket, protocol: ServerProtocol) -> None:
        self.sock = sock
        self.protocol = protocol

    def send_json(self, message: Any) -> None:
        self.protocol.send_frame(Frame(Opcode.TEXT, json.dumps(message).encode()))
        for data in self.protocol.data_to_send():
            self.sock.sendall(data)

    def reset(self) -> None:
        """Reset the TCP connection (an RST, no closing handshake)."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


@contextmanager
def raw_server(first: Any) -> Iterator[tuple[str, list[RawPeer]]]:
    """Accept one WebSocket client in a thread, answer its handshake and send ``first``;
    yield the URL and the list that then holds its :class:`RawPeer`."""
    listener = socket.create_server(("127.0.0.1", 0))
    peers: list[RawPeer] = []

    def accept() -> None:
        sock, _ = listener.accept()
        protocol = ServerProtocol()
        events: list[object] = []
        while not events:
            protocol.receive_data(sock.recv(65536))
            events = protocol.events_received()
        request = events[0]
        assert isinstance(request, Request)
        protocol.send_response(protocol.accept(request))
        for data in protocol.data_to_send():
            sock.sendall(data)
        peer = RawPeer(sock, protocol)
        peer.send_json(first)
        peers.append(peer)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"ws://127.0.0.1:{listener.getsockname()[1]}", peers
    finally:
        listener.close()
        for peer in peers:
            with suppress(OSError):
                peer.sock.close()
        thread.join(5)


def context_update(*tools: str) -> dict[str, Any]:
    specs = {name: {"parameters": {"type": "object"}} for name in tools}
    return envelope({"type": "model-context-update", "context": {"tools": specs}})


# -- 1: WebSockets under load in both directions ---------------------------------------------


async def test_many_large_calls_both_ways_over_a_websocket_do_not_deadlock() -> None:
    """200 concurrent 100 KB calls with 100 KB results: all answered, the host connected.

    Before: each side's reader waited for its send lock after every read, so with both
    sides blocked sending, neither read again (51-112 calls stuck for good)."""
    frame = AssistantFrameProvider(echo_registry())
    payload = "x" * 100_000
    async with (
        websocket_server(frame.serve, ping_interval=2, ping_timeout=2) as server,
        connect_websocket(server.url, ping_interval=2, ping_timeout=2) as transport,
        AssistantFrameHost(transport, timeout=60) as host,
    ):
        await host.wait_for_context(timeout=5)
        results: list[str] = []

        async def one(i: int) -> None:
            results.append(await host.call_tool("echo", {"text": f"{i}:{payload}"}))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(200):
                    tg.start_soon(one, i)
        assert sorted(results) == sorted(f"{i}:{payload}" for i in range(200))
        assert host.connected


async def test_receiving_goes_on_while_a_send_is_blocked() -> None:
    """A peer that stops reading still gets its own messages read: the host applies a new
    context while its calls' sends wait for the socket to drain.

    Before: the reader waited for the send lock, held by a send blocked for good."""
    with raw_server(context_update("slow")) as (url, peers):
        async with (
            connect_websocket(url, ping_interval=None) as transport,
            AssistantFrameHost(transport, timeout=30) as host,
        ):
            await host.wait_for_context(timeout=5)
            async with anyio.create_task_group() as tg:
                for _ in range(BLOCKING_CALLS):
                    tg.start_soon(Outcome().run, host, "slow", {"pad": "x" * BIG})
                await anyio.sleep(0.3)
                await anyio.to_thread.run_sync(peers[0].send_json, context_update("slow", "new"))
                with anyio.fail_after(5):
                    await wait_until(lambda: "new" in host.get_model_context().tools)
                tg.cancel_scope.cancel()


# -- 2: the call timeout covers the send ---------------------------------------------------------


async def test_call_timeout_covers_a_send_that_waits_for_the_peer() -> None:
    """call_tool(timeout=1) to a WebSocket peer that stopped reading ends in about a second.

    Before: the deadline started after the send returned, and the send never did."""
    with raw_server(context_update("slow")) as (url, _):
        async with (
            connect_websocket(url, ping_interval=None) as transport,
            AssistantFrameHost(transport) as host,
        ):
            await host.wait_for_context(timeout=5)
            outcomes = [Outcome() for _ in range(BLOCKING_CALLS)]
            started = anyio.current_time()
            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:
                    for outcome in outcomes:
                        pad = {"pad": "x" * BIG}
                        tg.start_soon(partial(outcome.run, host, "slow", pad, timeout=1))
            elapsed = anyio.current_time() - started
            for outcome in outcomes:
                assert isinstance(outcome.error, ToolCallTimeout), outcome.error
            assert elapsed < 4, elapsed  # 1 s, plus at most 1 s to try sending the cancels


@pytest.mark.parametrize("timeout", [None, 0.5])
async def test_call_timeout_covers_a_send_to_a_full_memory_pair(timeout: float | None) -> None:
    """A bounded memory_pair whose peer never reads: the call times out in its send, with
    the host's default timeout (one task times those out) or its own."""
    host_end, frame_end = memory_pair(max_buffer_size=1)
    async with AssistantFrameHost(host_end, timeout=0.5) as host:
        await frame_end.send(context_update("t"))
        await host.wait_for_context(timeout=5)
        # the request is in the one-message buffer; nobody reads it
        with anyio.fail_after(5), pytest.raises(ToolCallTimeout):
            await host.call_tool("t", {}, timeout=timeout)


# -- 3 and 4: arguments no encoder takes -------------------------------------------------------


async def test_a_lone_surrogate_in_arguments_spares_the_connection() -> None:
    """JSON decoded from LLM output can hold lone surrogates: the call is answered (the
    standard library's encoder carries them as escapes), and the other calls live.

    Before: measuring the arguments raised inside serve() and ended the connection."""
    async with a_call_held_open(echo_registry()) as host:
        assert await host.call_tool("echo", {"text": "lone \ud800"}) == "lone \ud800"
        assert await host.call_tool("echo", {"text": "after"}) == "after"


async def test_a_lone_surrogate_crosses_a_websocket_both_ways() -> None:
    frame = AssistantFrameProvider(echo_registry())
    async with (
        websocket_server(frame.serve) as server,
        connect_websocket(server.url) as transport,
        AssistantFrameHost(transport, timeout=10) as host,
    ):
        await host.wait_for_context(timeout=5)
        assert await host.call_tool("echo", {"text": "x\udc00y"}) == "x\udc00y"
        assert await host.call_tool("echo", {"text": "after"}) == "after"


@pytest.mark.parametrize("depth", [300, 5000])
async def test_deeply_nested_arguments_get_an_error_result(depth: int) -> None:
    """Arguments nested deeper than pydantic-core encodes (300) or than any encoder
    does (5,000) get that call an error, and the frame serves on.

    Before: 'Maximum serialization depth exceeded' ended serve()."""
    deep: Any = []
    for _ in range(depth):
        deep = [deep]
    frame = AssistantFrameProvider(echo_registry())
    with anyio.fail_after(10):
        async with raw_object_peer(frame) as peer:
            call = {"type": "tool-call", "id": "deep", "toolName": "echo", "args": deep}
            await peer.send(envelope(call))
            failed = await raw_result(peer, "deep")
            assert isinstance(failed.get("error"), str)
            assert "echo" in failed["error"]
            call = {"type": "tool-call", "id": "ok", "toolName": "echo", "args": {"text": "hi"}}
            await peer.send(envelope(call))
            assert (await raw_result(peer, "ok"))["result"] == "hi"


async def test_a_tool_call_id_that_cannot_be_encoded_is_dropped_not_fatal() -> None:
    """No transport can send a result whose id no JSON encoder takes: that one reply is
    dropped (and logged), the connection serves on."""
    frame = AssistantFrameProvider(echo_registry())
    bad_id: Any = "id"
    with anyio.fail_after(10):
        async with (
            websocket_server(frame.serve) as server,
            connect_websocket(server.url) as transport,
        ):
            # a lone surrogate id crosses (as an escape); an unknown tool is answered
            await transport.send(envelope({"type": "tool-call", "id": "\ud800", "toolName": "x"}))
            reply = await next_message(transport, "tool-result")  # type: ignore[arg-type]
            assert reply["id"] == "\ud800"
            assert reply["error"] == 'Tool "x" not found'
        async with raw_object_peer(frame) as peer:
            for _ in range(3000):
                bad_id = [bad_id]
            # not a string: malformed, and there is no id to answer
            await peer.send(envelope({"type": "tool-call", "id": bad_id, "toolName": "echo"}))
            call = {"type": "tool-call", "id": "ok", "toolName": "echo", "args": {"text": "hi"}}
            await peer.send(envelope(call))
            assert (await raw_result(peer, "ok"))["result"] == "hi"


# What a frame holds of a peer that never reads: 1,000 calls queued, one per worker (at
# most 1,000), and what the two memory buffers hold (8 calls in, 8 results out).
HELD_AT_MOST = 1000 + 1000 + 2 * 8


def gated_echo_registry(gate: threading.Event) -> ModelContextRegistry:
    """``echo(text)``, a sync tool (so it runs in a thread) that waits for ``gate``."""
    registry = ModelContextRegistry()

    @registry.tool
    def echo(text: str) -> str:
        """Return the text once the gate opens."""
        gate.wait(30)
        return text

    return registry


@pytest.mark.parametrize("blocked", [False, True], ids=["fast", "blocked"])
async def test_a_peer_that_sends_calls_but_never_reads_meets_backpressure(
    blocked: bool,
) -> None:
    """The frame stops reading once 1,000 calls wait for a worker and its workers are
    blocked (sending results nobody reads, or in a tool), so the peer's sends wait
    instead of the frame's memory growing with every call it sends.

    Before: calls waiting for one of the 40 threads each held a worker, without limit; a
    slow sync tool let all 5,000 calls in (and a loaded machine, 1,100 of a fast one)."""
    host_end, frame_end = memory_pair(max_buffer_size=8)
    gate = threading.Event()
    if not blocked:
        gate.set()
    sent = 0
    async with anyio.create_task_group() as tg:
        tg.start_soon(AssistantFrameProvider(gated_echo_registry(gate)).serve, frame_end)
        # Send until one send has waited STALL seconds: the frame stopped reading. (A
        # frame without backpressure never stalls, and all 5,000 get sent.)
        for i in range(5000):
            call = {"type": "tool-call", "id": f"c{i}", "toolName": "echo"}
            with anyio.move_on_after(STALL) as stalled:
                await host_end.send(envelope({**call, "args": {"text": "x" * 1000}}))
            if stalled.cancelled_caught:
                break
            sent += 1
        assert 1000 <= sent <= HELD_AT_MOST, sent
        if blocked:  # every worker took a call: 40 wait in threads, the rest for one
            assert sent >= 1000 + 1000, sent
            gate.set()
            tg.cancel_scope.cancel()
            return

        # reading the results lets everything through
        async def read_all() -> None:
            while True:
                await host_end.receive()

        tg.start_soon(read_all)
        with anyio.fail_after(10):
            for i in range(sent, 5000):
                call = {"type": "tool-call", "id": f"c{i}", "toolName": "echo"}
                await host_end.send(envelope({**call, "args": {"text": "x"}}))
        tg.cancel_scope.cancel()


async def test_a_frame_with_every_worker_busy_still_reads_its_connection() -> None:
    """With every worker of a connection busy (some 1,000 calls running, each waiting
    on a gate), a call that arrives alone over a WebSocket is queued for a worker, and
    the frame reads on: a context request sent after it is answered.

    Before: the reading worker ran that call itself and, with no worker left to take
    its reading turn, the frame stopped reading the connection until the call ended."""
    gate = anyio.Event()
    started = [anyio.Event()]
    count = 0
    registry = ModelContextRegistry()

    @registry.tool
    async def wait() -> str:
        """Wait for the gate."""
        nonlocal count
        count += 1
        started[0].set()
        await gate.wait()
        return "done"

    frame = AssistantFrameProvider(registry)
    async with (
        websocket_server(frame.serve) as server,
        connect_websocket(server.url) as peer,
    ):
        with anyio.fail_after(60):
            # One at a time, each running before the next is sent, until one cannot
            # start: every worker the connection may have is busy.
            for i in range(1100):  # bounded: the cap is 1,000 workers
                started[0] = anyio.Event()
                await peer.send(envelope({"type": "tool-call", "id": f"c{i}", "toolName": "wait"}))
                with anyio.move_on_after(STALL):
                    await started[0].wait()
                if not started[0].is_set():
                    break
            assert 990 <= count <= 1000, count
        await peer.send(envelope({"type": "model-context-request", "requestId": "r"}))
        with anyio.fail_after(10):
            reply = await next_message(peer, "model-context-update")  # type: ignore[arg-type]
        assert "wait" in reply["context"]["tools"]
        gate.set()


# -- 5: descriptors run out; too many connections --------------------------------------------

EMFILE_SERVER = textwrap.dedent(
    """
    import resource, sys, anyio
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    from assistant_frames import AssistantFrameProvider, ModelContextRegistry
    from assistant_frames.transports import websocket_server
    registry = ModelContextRegistry()
    registry.add_tool("echo", lambda text: text)
    async def main():
        serve = AssistantFrameProvider(registry).serve
        try:  # no connection cap: the point is running out of descriptors
            server = websocket_server(serve, max_connections=10_000)
        except TypeError:  # a version without the cap
            server = websocket_server(serve)
        async with server as listening:
            print(listening.port, flush=True)
            await anyio.sleep(60)
    anyio.run(main, backend=sys.argv[1])
    """
)


async def test_a_server_that_runs_out_of_descriptors_keeps_serving(
    anyio_backend: str, tmp_path: Path
) -> None:
    """100 idle connections against a 64-descriptor limit, then a real client is served.

    Before: on trio, the failed accept() ended websocket_server (asyncio recovered)."""
    log = tmp_path / "stderr.txt"
    with log.open("w") as stderr_file:  # a file: asyncio logs every failed accept
        process = subprocess.Popen(  # noqa: ASYNC220 - started once, read line by line
            [sys.executable, "-c", EMFILE_SERVER, anyio_backend],
            stdout=subprocess.PIPE,
            stderr=stderr_file,
            text=True,
        )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        sockets = [socket.create_connection(("127.0.0.1", port)) for _ in range(100)]
        await anyio.sleep(1.0)  # the server hits the limit meanwhile
        for sock in sockets:
            sock.close()
        await anyio.sleep(0.5)
        with anyio.fail_after(10):
            async with hosting(f"ws://127.0.0.1:{port}") as host:
                assert await host.call_tool("echo", {"text": "served"}) == "served"
        assert process.poll() is None
    finally:
        process.kill()
        process.communicate()
    stderr = log.read_text()
    assert "Too many open files" in stderr or "Cannot accept" in stderr


async def test_connections_beyond_the_cap_are_refused_at_once() -> None:
    """With max_connections=3, idle connections (upgraded or not) count; a fourth is
    closed as soon as it is accepted, and a place that frees up is used again."""
    frame = AssistantFrameProvider(echo_registry())
    async with websocket_server(frame.serve, max_connections=3) as server:
        port = server.port
        idle = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(2)]
        async with connect_websocket(server.url) as upgraded:
            await wait_until(lambda: server.connections == 3)
            extra = await anyio.connect_tcp("127.0.0.1", port)
            with anyio.fail_after(5):
                with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                    await extra.receive()  # closed without a word
            await extra.aclose()
            assert server.refused == 1
            await upgraded.send(envelope({"type": "model-context-request"}))
            assert await upgraded.receive()  # the upgraded one is served all along
        for stream in idle:
            await stream.aclose()
        await wait_until(lambda: server.connections == 0)
        async with hosting(server.url) as host:
            assert await host.call_tool("echo", {"text": "again"}) == "again"


async def test_the_default_cap_leaves_room_under_the_descriptor_limit() -> None:
    from assistant_frames.transports.websocket.server import _default_max_connections

    resource = pytest.importorskip("resource")
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert _default_max_connections() <= min(1000, soft * 3 // 4)


# -- 6: closing after the peer is gone ------------------------------------------------------


async def test_leaving_a_host_after_a_tcp_reset_is_quiet() -> None:
    """The pending call fails with FrameDisconnected, and leaving the blocks raises nothing.

    Before: closing tried to send a close frame on the reset connection and raised
    BrokenResourceError out of ``async with``."""

    with raw_server(context_update("t")) as (url, peers):
        with anyio.fail_after(10):
            async with (
                connect_websocket(url) as transport,
                AssistantFrameHost(transport, timeout=5) as host,
            ):
                await host.wait_for_context()
                async with anyio.create_task_group() as tg:
                    outcome = Outcome()
                    tg.start_soon(outcome.run, host, "t", {})
                    await anyio.sleep(0.2)
                    peers[0].reset()
                assert isinstance(outcome.error, FrameDisconnected), outcome.error


# -- 7 and 8: tools that raise what they should not ------------------------------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # trio has no foreign cancellation
async def test_a_tool_leaking_cancelled_error_fails_only_its_call(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A tool awaiting a task someone else cancelled: that call's error, logged.

    Before: serve() returned silently and every other call failed with FrameDisconnected."""
    registry = ModelContextRegistry()

    @registry.tool
    async def fetch() -> str:
        """Await a task that is cancelled under it."""
        task = asyncio.ensure_future(asyncio.sleep(10))
        asyncio.get_running_loop().call_later(0.05, task.cancel)
        await task
        return "unreachable"

    async with a_call_held_open(registry) as host:
        with pytest.raises(ToolCallError, match="CancelledError"):
            await host.call_tool("fetch")
        assert host.connected
    assert any("fetch" in record.getMessage() for record in caplog.records)


async def test_a_cancelled_call_is_still_a_cancellation() -> None:
    """The fix must not turn a real tool-cancel into an error result: none is sent."""
    registry = ModelContextRegistry()
    gate = Gate()
    registry.add_tool("wait", gate)
    async with raw_object_peer(AssistantFrameProvider(registry)) as peer:
        await peer.send(envelope({"type": "tool-call", "id": "c1", "toolName": "wait"}))
        await gate.started.wait()
        await peer.send(envelope({"type": "tool-cancel", "id": "c1"}))
        with anyio.fail_after(5):
            await gate.cancelled.wait()
        call = {"type": "tool-call", "id": "c2", "toolName": "nope"}
        await peer.send(envelope(call))
        assert (await raw_result(peer, "c2"))["error"] == 'Tool "nope" not found'


class Boom(BaseException):
    """A BaseException subclass, as some libraries define."""


@pytest.mark.parametrize("raised", [Boom("tool bug"), GeneratorExit()])
async def test_a_tool_raising_a_base_exception_fails_only_its_call(raised: BaseException) -> None:
    """The caller gets a ToolCallError; the WebSocket server serves on.

    Before: it escaped the handler's ``except Exception`` and stopped the whole server."""
    registry = echo_registry()

    @registry.tool
    async def bad() -> str:
        """Raise what a tool should not."""
        raise raised

    async with websocket_server(AssistantFrameProvider(registry).serve) as server:
        async with (
            connect_websocket(server.url) as transport,
            AssistantFrameHost(transport, timeout=5) as host,
        ):
            await host.wait_for_context(timeout=5)
            with pytest.raises(ToolCallError, match=type(raised).__name__):
                await host.call_tool("bad")
            assert await host.call_tool("echo", {"text": "still"}) == "still"
        async with hosting(server.url) as host:
            assert await host.call_tool("echo", {"text": "new"}) == "new"


async def test_a_handler_raising_a_base_exception_ends_only_its_connection() -> None:
    async def handler(transport: Any) -> None:
        raise Boom("handler bug")

    async with websocket_server(handler) as server:
        for _ in range(2):
            async with connect_websocket(server.url) as transport:
                with anyio.fail_after(5), pytest.raises(anyio.EndOfStream):
                    await transport.receive()


# -- 9: threads -------------------------------------------------------------------------------


class Blocker:
    """A sync tool that blocks its thread until released (like a blocking HTTP call)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            self.release.wait(10)
            return "done"
        finally:
            with self._lock:
                self.running -= 1


async def test_cancelled_sync_calls_cannot_grow_the_thread_count() -> None:
    """300 tool-call + tool-cancel pairs to a blocking sync tool: never more than
    ``max_threads`` threads run it, and the process's thread count stays near that.

    Before (asyncio): a new thread per pair, ~1,000 threads."""
    registry = ModelContextRegistry()
    blocker = Blocker()
    registry.add_tool("fetch", blocker)
    frame = AssistantFrameProvider(registry, max_threads=4)
    before = threading.active_count()
    try:
        async with raw_object_peer(frame) as peer:
            for i in range(300):
                await peer.send(envelope({"type": "tool-call", "id": f"c{i}", "toolName": "fetch"}))
                await anyio.sleep(0.001)
                await peer.send(envelope({"type": "tool-cancel", "id": f"c{i}"}))
            await wait_until(lambda: blocker.running == 4)
            assert frame.thread_limiter.running == 4
            assert threading.active_count() <= before + 4 + 2
            blocker.release.set()
            await wait_until(lambda: frame.thread_limiter.running == 0)
            assert blocker.most == 4
            # the frame still runs sync tools (the limiter's places came back)
            blocker.release = threading.Event()
            blocker.release.set()
            await peer.send(envelope({"type": "tool-call", "id": "last", "toolName": "fetch"}))
            assert (await raw_result(peer, "last"))["result"] == "done"
    finally:
        blocker.release.set()


async def test_cancelled_sync_calls_stay_within_the_default_thread_limit() -> None:
    """The same with the defaults (40 threads): the thread count stays near 40.

    Before (asyncio): one thread more per call + cancel pair."""
    registry = ModelContextRegistry()
    blocker = Blocker()
    registry.add_tool("fetch", blocker)
    before = threading.active_count()
    try:
        async with raw_object_peer(AssistantFrameProvider(registry)) as peer:
            for i in range(200):
                await peer.send(envelope({"type": "tool-call", "id": f"c{i}", "toolName": "fetch"}))
                await anyio.sleep(0.001)
                await peer.send(envelope({"type": "tool-cancel", "id": f"c{i}"}))
            await wait_until(lambda: blocker.running >= 40)
            await anyio.sleep(0.1)
            assert blocker.running == 40
            assert threading.active_count() <= before + 40 + 2
    finally:
        blocker.release.set()


async def test_a_call_waiting_for_a_thread_can_be_cancelled() -> None:
    registry = ModelContextRegistry()
    blocker = Blocker()
    registry.add_tool("fetch", blocker)

    @registry.tool
    def quick() -> str:
        """A sync tool that returns at once."""
        return "quick"

    frame = AssistantFrameProvider(registry, max_threads=1)
    try:
        async with raw_object_peer(frame) as peer:
            await peer.send(envelope({"type": "tool-call", "id": "busy", "toolName": "fetch"}))
            await wait_until(lambda: blocker.running == 1)
            await peer.send(envelope({"type": "tool-call", "id": "waits", "toolName": "quick"}))
            await anyio.sleep(0.1)
            await peer.send(envelope({"type": "tool-cancel", "id": "waits"}))
            await anyio.sleep(0.1)
            blocker.release.set()
            assert (await raw_result(peer, "busy"))["result"] == "done"
            await peer.send(envelope({"type": "tool-call", "id": "after", "toolName": "quick"}))
            result = await raw_result(peer, "after")  # "waits" was never answered
            assert result["result"] == "quick"
            assert frame.thread_limiter.running == 0
    finally:
        blocker.release.set()


def test_the_thread_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive integer"):
        AssistantFrameProvider(max_threads=0)


# -- smaller: invalid UTF-8; context pushes to a peer that does not read --------------------


async def test_invalid_utf8_in_a_text_frame_closes_with_1007() -> None:
    """RFC 6455: a text frame must be UTF-8; the connection closes with 1007, others live.

    Before: the frame was dropped silently."""
    handler = Handler(AssistantFrameProvider(calculator()))
    with anyio.fail_after(10):
        async with websocket_server(handler) as server:
            async with raw_client(server.url) as client:
                await client.send_frame(Opcode.TEXT, b"\xff\xfe not utf-8")
                assert await client.wait_closed() == 1007
            async with hosting(server.url) as host:
                assert await host.call_tool("add", {"a": 1, "b": 2}) == 3


@pytest.mark.parametrize("max_buffer_size", [math.inf, 4])
async def test_pushes_to_a_host_that_does_not_read_are_coalesced(max_buffer_size: float) -> None:
    """500 changes while the host reads nothing: one snapshot waits for it, the newest.

    Before: over memory_pair every change queued a snapshot of its own (+608 MiB for 10k)."""
    registry = ModelContextRegistry()
    handle = registry.add_instruction("version 0")
    host_end, frame_end = memory_pair(max_buffer_size)
    async with anyio.create_task_group() as tg:
        tg.start_soon(AssistantFrameProvider(registry).serve, frame_end)
        await host_end.send(envelope({"type": "model-context-request"}))
        for version in range(1, 501):
            handle.update(f"version {version}")
            await anyio.lowlevel.checkpoint()  # let the frame push
        await anyio.sleep(0.05)
        received: list[Any] = []
        with anyio.move_on_after(0.2):
            while True:
                received.append(await host_end.receive())
        assert all(raw["channel"] == CHANNEL for raw in received)
        systems = [raw["message"]["context"].get("system") for raw in received]
        assert systems[-1] == "version 500"
        # unbounded: the one snapshot the frame keeps replacing; bounded: the buffer's
        # worth, then the one the frame was waiting to send
        most = 1 if max_buffer_size == math.inf else max_buffer_size + 1
        assert len(systems) <= most, len(systems)
        tg.cancel_scope.cancel()


async def test_memory_pair_bound_makes_send_wait_cancellably() -> None:
    left, right = memory_pair(max_buffer_size=2)
    await left.send(1)
    await left.send(2)
    assert left.send_would_wait
    with anyio.move_on_after(0.1) as scope:
        await left.send(3)
    assert scope.cancelled_caught
    assert await right.receive() == 1
    assert not left.send_would_wait
    await left.send(3)
    assert [await right.receive(), await right.receive()] == [2, 3]
    with pytest.raises(ValueError, match="at least 1"):
        memory_pair(max_buffer_size=0)


async def test_memory_pair_is_bounded_by_default_and_unbounded_on_request() -> None:
    """A peer that never reads holds DEFAULT_MAX_BUFFER_SIZE messages, then send waits
    (before: unbounded, +608 MiB for a host that never read); math.inf lifts the bound."""
    left, _right = memory_pair()
    for i in range(DEFAULT_MAX_BUFFER_SIZE):
        await left.send(i)
    assert left.send_would_wait
    with anyio.move_on_after(0.1) as scope:
        await left.send("one too many")
    assert scope.cancelled_caught
    unbounded, _peer = memory_pair(max_buffer_size=math.inf)
    for i in range(DEFAULT_MAX_BUFFER_SIZE * 2):
        await unbounded.send(i)
    assert not unbounded.send_would_wait


async def test_send_latest_replaces_what_the_peer_has_not_taken() -> None:
    left, right = memory_pair()
    await left.send_latest("k", {"v": 1})
    await left.send("between")
    await left.send_latest("k", {"v": 2})  # replaces v1 in its place
    assert await right.receive() == {"v": 2}
    assert await right.receive() == "between"
    await left.send_latest("k", {"v": 3})  # taken already: queued anew
    assert await right.receive() == {"v": 3}
    await right.aclose()
    with pytest.raises(anyio.BrokenResourceError):
        await left.send_latest("k", {"v": 4})


async def test_receive_inline_takes_messages_at_once_only_when_none_are_queued() -> None:
    left, right = memory_pair()
    taken: list[object] = []
    declining = False

    def take(message: object) -> bool:
        if declining:
            return False
        taken.append(message)
        return True

    await left.send("queued first")
    right.receive_inline(take)
    await left.send("behind it")  # finds a message queued: queues behind it, in order
    await left.send_latest("k", {"v": 1})
    assert taken == []
    assert [await right.receive() for _ in range(3)] == ["queued first", "behind it", {"v": 1}]
    await left.send({"now": [1]})  # nothing queued: taken at once, as its own copy
    await left.send_latest("k", {"v": 2})
    assert taken == [{"now": [1]}, {"v": 2}]
    declining = True  # a handler that declines leaves the message to receive()
    await left.send("declined")
    declining = False
    await left.send("behind the declined one")
    assert taken == [{"now": [1]}, {"v": 2}]
    assert [await right.receive() for _ in range(2)] == ["declined", "behind the declined one"]
    right.receive_inline(None)
    await left.send("queued again")
    assert await right.receive() == "queued again"
    right.receive_inline(take)
    await right.aclose()  # a closed end takes nothing more: the sender hears it
    with pytest.raises(anyio.BrokenResourceError):
        await left.send("too late")
    assert len(taken) == 2
    await left.send_eof()


async def test_a_host_handles_its_frames_messages_in_the_frames_task() -> None:
    """Over memory_pair a host takes the frame's messages as they are sent: a result
    wakes its caller straight away, and a context reaches the subscribers before the
    frame's send returns. Messages sent before the host reads still arrive in order."""
    host_end, frame_end = memory_pair()
    await frame_end.send(context_update("first"))
    async with AssistantFrameHost(host_end) as host:
        await host.wait_for_context(timeout=5)
        seen: list[list[str]] = []
        host.subscribe(lambda: seen.append(sorted(host.get_model_context().tools)))
        await frame_end.send(context_update("second"))
        assert seen == [["second"]]  # handled inside the frame's send
        assert sorted(host.get_model_context().tools) == ["second"]
        async with anyio.create_task_group() as tg:
            outcome = Outcome()
            tg.start_soon(partial(outcome.run, host, "second", {}, timeout=5))
            with anyio.fail_after(5):
                request = (await frame_end.receive())["message"]
                while request["type"] != "tool-call":
                    request = (await frame_end.receive())["message"]
            await frame_end.send(
                envelope({"type": "tool-result", "id": request["id"], "result": 42})
            )
        assert outcome.error is None
        assert outcome.result == 42
    await frame_end.aclose()


SIDE: contextvars.ContextVar[str] = contextvars.ContextVar("SIDE", default="unset")


async def test_messages_taken_inline_are_handled_in_the_receivers_context() -> None:
    """Over memory_pair each side takes the other's messages in the sender's task, but in
    its own context: a tool sees the context its frame serves in, not the caller's, and
    the host's subscribers see the host's."""
    registry = ModelContextRegistry()

    @registry.tool
    async def side() -> str:
        """Which side's context the tool runs in."""
        return SIDE.get()

    host_end, frame_end = memory_pair()

    async def serve() -> None:
        SIDE.set("frame")
        await AssistantFrameProvider(registry).serve(frame_end)

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        SIDE.set("host")
        async with AssistantFrameHost(host_end) as host:
            await host.wait_for_context(timeout=5)
            seen: list[str] = []
            changed = anyio.Event()

            def on_change() -> None:
                seen.append(SIDE.get())
                changed.set()

            host.subscribe(on_change)
            assert [await host.call_tool("side", {}) for _ in range(3)] == ["frame"] * 3
            registry.add_instruction("A change, sent from the frame's task.")
            with anyio.fail_after(5):
                await changed.wait()
            assert set(seen) == {"host"}
        tg.cancel_scope.cancel()


async def test_a_frame_takes_a_burst_of_calls_past_its_queue_over_memory() -> None:
    """Over memory_pair a frame takes the host's calls in the host's task, up to its
    queue of 1,000; past it they wait in the transport. A burst of 1,500 sent without a
    pause is answered whole: every call once, none lost where the two paths meet."""
    host_end, frame_end = memory_pair(max_buffer_size=math.inf)
    async with anyio.create_task_group() as tg:
        tg.start_soon(AssistantFrameProvider(calculator()).serve, frame_end)
        await host_end.send(envelope({"type": "model-context-request"}))
        with anyio.fail_after(5):  # the frame serves: what comes next is taken inline
            assert (await host_end.receive())["message"]["type"] == "model-context-update"
        calls = 1_500
        for i in range(calls):  # memory sends never wait: the frame's workers wait too
            call = {"type": "tool-call", "id": f"c{i}", "toolName": "add", "args": {"a": i, "b": 1}}
            await host_end.send(envelope(call))
        results: dict[str, Any] = {}
        with anyio.fail_after(30):
            while len(results) < calls:
                message = (await host_end.receive())["message"]
                if message["type"] == "tool-result":
                    assert message["id"] not in results
                    results[message["id"]] = message["result"]
        assert results == {f"c{i}": i + 1 for i in range(calls)}
        tg.cancel_scope.cancel()


async def test_host_arguments_with_no_json_form_are_refused_before_sending() -> None:
    async with serve_frame(AssistantFrameProvider(echo_registry())) as host:
        with pytest.raises(ToolArgumentsError, match="cannot be sent"):
            await host.call_tool("echo", {"text": object()})
        assert await host.call_tool("echo", {"text": "fine"}) == "fine"
