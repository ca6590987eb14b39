"""The transport conformance suite: every shipped transport keeps the contract.

The contract is ``assistant_frames/transports/contract.py``. Each test below states one
promise, once, for a connected pair of transports ``(local, remote)``; the kinds of
transport differ only in :func:`connected`, which opens a pair and says how the remote
end dies abruptly and what ``local`` then learns:

* ``memory``: :func:`memory_pair`. A memory peer can only go by closing (``aclose``, as
  its owner does when it fails or is cancelled), so its "abrupt" end is an ``aclose``
  with messages still queued both ways, and the reason is clean.
* ``websocket``: a real :func:`websocket_server` on 127.0.0.1 and
  :func:`connect_websocket`; ``local`` is the client. Abrupt: the server end's TCP
  socket is shut down under it, with no closing handshake (close code 1006, not clean).
* ``websocket-server``: the same, with ``local`` the server's end of the connection.
* ``multiplexed``: ``local`` is a :class:`Multiplexer` sub-stream (claiming every
  message) over the WebSocket client, ``remote`` the server's bare end; abrupt as for
  ``websocket``.
* ``stdio``: :func:`spawn_worker` running ``tests/transport_peer.py``, which holds the
  worker side of the stdio transport (what ``serve_stdio`` serves on) and is driven
  over a control connection. Abrupt: the worker is killed with SIGKILL (exit code -9).
* ``asgi``: a real uvicorn on 127.0.0.1 serving a Starlette application whose
  WebSocket route is :func:`assistant_frames.asgi.frame_endpoint`; ``local`` is the
  :class:`~assistant_frames.asgi.ASGIWebSocketTransport` the endpoint hands its handler
  (the server's end), ``remote`` a :func:`connect_websocket` client. Abrupt: the
  client's TCP socket is shut down under it, with no closing handshake; uvicorn (its
  default ``websockets-sansio`` implementation) reports that as close code 1005, not
  clean.

Each runs on asyncio and trio, except ``asgi``: uvicorn runs on asyncio only, so under
trio it is skipped (saying so), not run. A new transport is done when it passes: add a
branch to :func:`connected` and its name to ``KINDS``. A frame on NATS runs on routes
rather than on one connection between two peers: ``test_nats_route_contract.py`` checks
them against this contract, and names the two promises that differ for them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
import sniffio
from anyio.abc import ObjectStream, SocketAttribute

from assistant_frames.transports import (
    CloseReason,
    MessageTooLarge,
    Multiplexer,
    StdioTransport,
    TransportAttribute,
    TransportClosed,
    UnsendableMessage,
    WebSocketTransport,
    close_reason,
    connect_websocket,
    memory_pair,
    spawn_worker,
    websocket_listener,
    websocket_server,
)

pytestmark = pytest.mark.anyio

KINDS = ["memory", "websocket", "websocket-server", "stdio", "multiplexed", "asgi"]
LIMIT = 10_000  # every pair's max_message_bytes
ABRUPT_BOUND = 0.1  # an abrupt end is seen within 100 ms
PEER = Path(__file__).resolve().parents[1] / "transport_peer.py"
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Pair:
    """Two connected transports, and how the remote one dies abruptly."""

    local: ObjectStream[Any]
    remote: ObjectStream[Any]
    kill: Callable[[], Awaitable[None]]
    #: What ``close_reason`` of ``local``'s end of stream says after ``kill``.
    abrupt: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    if request.param == "asgi" and request.getfixturevalue("anyio_backend") != "asyncio":
        pytest.skip("asgi: uvicorn runs on asyncio only; the ASGI transport is not run on trio")
    return str(request.param)


@asynccontextmanager
async def connected(kind: str) -> AsyncIterator[Pair]:
    """A connected pair of the ``kind`` of transport, closed (or reaped) afterwards."""
    if kind == "memory":
        local, remote = memory_pair(max_message_bytes=LIMIT)

        async def close_with_messages_queued() -> None:
            await local.send("queued for the remote")
            await remote.send("queued for local")
            await remote.aclose()

        pair = Pair(local, remote, close_with_messages_queued, {"clean": True})
        try:
            yield pair
        finally:
            await local.aclose()
            await remote.aclose()
    elif kind == "multiplexed":
        async with websocket_pair() as (client, server_end):
            mux = Multiplexer(client)
            sub_stream = mux.open(lambda message: True, name="everything")
            async with mux:

                async def shut_down_the_server_socket() -> None:
                    sock = server_end.extra(SocketAttribute.raw_socket)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.shutdown(socket.SHUT_RDWR)

                try:
                    yield Pair(
                        sub_stream,
                        server_end,
                        shut_down_the_server_socket,
                        {"clean": False, "close_code": 1006},
                    )
                finally:
                    await close_while_reading(mux.aclose, server_end)
    elif kind in ("websocket", "websocket-server"):
        async with websocket_pair() as (client, server_end):
            if kind == "websocket":
                local, remote = client, server_end
            else:
                local, remote = server_end, client

            async def shut_down_the_socket() -> None:
                sock = remote.extra(SocketAttribute.raw_socket)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.shutdown(socket.SHUT_RDWR)

            yield Pair(local, remote, shut_down_the_socket, {"clean": False, "close_code": 1006})
    elif kind == "asgi":
        async with asgi_pair() as (server_end, client):

            async def shut_down_the_client_socket() -> None:
                sock = client.extra(SocketAttribute.raw_socket)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.shutdown(socket.SHUT_RDWR)

            yield Pair(
                server_end,
                client,
                shut_down_the_client_socket,
                {"clean": False, "close_code": 1005},
            )
    elif kind == "stdio":
        async with stdio_pair() as (worker, remote_end):

            async def sigkill() -> None:
                os.kill(worker.pid, signal.SIGKILL)

            yield Pair(worker, remote_end, sigkill, {"clean": False, "exit_code": -9})
    else:  # pragma: no cover
        raise ValueError(kind)


async def close_while_reading(
    close: Callable[[], Awaitable[None]], peer: ObjectStream[Any]
) -> None:
    """``close()`` while ``peer`` reads, as a live peer does: it answers the closing
    handshake at once. Nothing reads the server's end after a test, and a close that
    waits for an answer would wait out its whole bound (2 s) at every teardown."""

    async def read_to_the_end() -> None:
        with contextlib.suppress(Exception):
            while True:
                await peer.receive()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_to_the_end)
        await close()
        tasks.cancel_scope.cancel()


@asynccontextmanager
async def websocket_pair() -> AsyncIterator[tuple[WebSocketTransport, WebSocketTransport]]:
    """A client transport and the server's end of the same connection."""
    ends: list[WebSocketTransport] = []
    arrived = anyio.Event()
    release = anyio.Event()

    async def handler(transport: WebSocketTransport) -> None:
        ends.append(transport)
        arrived.set()
        await release.wait()

    options: dict[str, Any] = {"max_message_bytes": LIMIT, "ping_interval": None}
    async with (
        websocket_server(handler, **options) as server,
        connect_websocket(server.url, **options) as client,
    ):
        with anyio.fail_after(5):
            await arrived.wait()
        try:
            yield client, ends[0]
        finally:
            release.set()


@asynccontextmanager
async def asgi_pair() -> AsyncIterator[tuple[Any, WebSocketTransport]]:
    """The transport ``frame_endpoint`` hands its handler under uvicorn, and a client."""
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute

    from assistant_frames.asgi import frame_endpoint

    from uvicorn_support import serve_asgi

    ends: list[Any] = []
    arrived = anyio.Event()
    release = anyio.Event()

    async def handler(transport: Any) -> None:
        ends.append(transport)
        arrived.set()
        await release.wait()

    endpoint = frame_endpoint(handler, max_message_bytes=LIMIT)
    app = Starlette(routes=[WebSocketRoute("/frames", endpoint)])
    async with (
        serve_asgi(app, ws_ping_interval=None) as running,
        connect_websocket(
            f"{running.ws}/frames", max_message_bytes=LIMIT, ping_interval=None
        ) as client,
    ):
        with anyio.fail_after(5):
            await arrived.wait()
        try:
            yield ends[0], client
        finally:
            release.set()


@asynccontextmanager
async def stdio_pair() -> AsyncIterator[tuple[Any, RemoteEnd]]:
    """A worker transport (``spawn_worker``) and the worker's end, driven from here."""
    backend = sniffio.current_async_library()
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(SocketAttribute.local_port)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(PEER.parent)])}
        command = [sys.executable, str(PEER), backend, str(port), str(LIMIT)]
        async with spawn_worker(
            command, env=env, stderr="capture", max_message_bytes=LIMIT, grace_period=1
        ) as worker:
            with anyio.fail_after(10):
                stream = await listener.listeners[0].accept()
            control = StdioTransport(stream, stream, max_message_bytes=None)
            remote = RemoteEnd(control)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(control.run)
                tasks.start_soon(remote.run)
                try:
                    yield worker, remote
                except BaseException:
                    print("worker stderr:", worker.stderr_tail(), file=sys.stderr)
                    raise
                finally:
                    await remote.aclose()
                    await control.aclose()
                    tasks.cancel_scope.cancel()


class RemoteEnd(ObjectStream[Any]):
    """The worker's end of a stdio transport, in ``transport_peer.py``, as an object
    stream here: each call is an order over the control connection, and what the far
    end raised is raised here (a ``TransportClosed`` with its reason)."""

    def __init__(self, control: StdioTransport) -> None:
        self._control = control
        self._replies: dict[int, Any] = {}
        self._waiting: dict[int, anyio.Event] = {}
        self._next_id = 0
        self._closed = False
        self._gone = False

    async def run(self) -> None:
        """Hand replies to the orders waiting for them, until the control connection ends."""
        try:
            while True:
                reply = await self._control.receive()
                self._replies[reply["id"]] = reply
                self._waiting.pop(reply["id"]).set()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            self._gone = True
            for event in self._waiting.values():
                event.set()

    async def _order(self, op: str, **fields: Any) -> Any:
        if self._gone:
            raise anyio.BrokenResourceError("the worker is gone")
        order_id = self._next_id
        self._next_id += 1
        done = self._waiting[order_id] = anyio.Event()
        await self._control.send({"id": order_id, "op": op, **fields})
        await done.wait()
        reply = self._replies.pop(order_id, None)
        if reply is None:
            raise anyio.BrokenResourceError("the worker is gone")
        if "error" not in reply:
            return reply["ok"]
        error, text = reply["error"], reply["text"]
        if error == "TransportClosed":
            raise TransportClosed(CloseReason(**reply["reason"]))
        exception = getattr(anyio, error, None)
        if isinstance(exception, type) and issubclass(exception, Exception):
            raise exception(text)
        raise RuntimeError(f"{error}: {text}")

    async def send(self, item: Any) -> None:
        await self._order("send", message=item)

    async def receive(self) -> Any:
        return await self._order("receive")

    async def send_eof(self) -> None:  # pragma: no cover - not part of the suite
        raise NotImplementedError

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(anyio.BrokenResourceError):  # the worker may be gone
            await self._order("aclose")


async def drain_to_end(transport: ObjectStream[Any], timeout: float = 5) -> BaseException:
    """Receive what is left, then what ``receive`` raises at the end of the stream."""
    with anyio.fail_after(timeout), pytest.raises(anyio.EndOfStream) as info:  # noqa: PT012
        while True:
            await transport.receive()
    return info.value


async def receive_end(transport: ObjectStream[Any], timeout: float = 5) -> BaseException:
    """What ``receive`` raises at the end of the stream (failing if a message comes)."""
    with anyio.fail_after(timeout), pytest.raises(anyio.EndOfStream) as info:  # noqa: PT012
        message = await transport.receive()
        pytest.fail(f"expected the end of the stream, received {message!r}")
    return info.value


# -- sending and receiving ---------------------------------------------------------------------


async def test_order_is_kept_both_ways(kind: str) -> None:
    async with connected(kind) as pair:
        with anyio.fail_after(10):
            for n in range(30):
                await pair.local.send({"n": n})
            assert [await pair.remote.receive() for _ in range(30)] == [{"n": n} for n in range(30)]
            for n in range(30):
                await pair.remote.send([n])
            assert [await pair.local.receive() for _ in range(30)] == [[n] for n in range(30)]


async def test_the_receiver_gets_its_own_copy(kind: str) -> None:
    async with connected(kind) as pair:
        with anyio.fail_after(5):
            message: dict[str, Any] = {"list": [1, 2], "nested": {"ok": True}, "pair": (1, 2)}
            await pair.local.send(message)
            message["list"].append(3)  # after send: the peer must not see it
            message["nested"]["ok"] = False
            received = await pair.remote.receive()
            assert received == {"list": [1, 2], "nested": {"ok": True}, "pair": [1, 2]}

            await pair.remote.send({"nested": {"ok": True}})
            back = await pair.local.receive()
            back["nested"]["ok"] = False  # the receiver's own: changing it is harmless
            await pair.remote.send("next")
            assert await pair.local.receive() == "next"


# What JavaScript peers send and ``json.loads`` makes of LLM output: strings, object keys
# included, holding a lone UTF-16 surrogate (with a non-finite float beside them).
ODD_BUT_VALID = {"text": "x\ud800y", "k\udfff": ["\ud83d"], "nan": float("nan"), "ok": 1.5}
ODD_RECEIVED = {"text": "x\ud800y", "k\udfff": ["\ud83d"], "nan": None, "ok": 1.5}


async def test_lone_surrogates_cross_every_transport_alike(kind: str) -> None:
    """One rule everywhere: lone surrogates arrive as sent (as \\uXXXX escapes on the wire,
    as JSON.stringify writes them), non-finite floats as null. Before, memory_pair
    refused a lone surrogate in a key that the stream transports carried."""
    async with connected(kind) as pair:
        with anyio.fail_after(5):
            await pair.local.send(ODD_BUT_VALID)
            assert await pair.remote.receive() == ODD_RECEIVED
            await pair.remote.send(ODD_BUT_VALID)
            assert await pair.local.receive() == ODD_RECEIVED


async def test_concurrent_senders_interleave_whole_messages(kind: str) -> None:
    senders, each = 5, 20
    async with connected(kind) as pair:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tasks:
                for sender in range(senders):

                    async def send_all(sender: int = sender) -> None:
                        for n in range(each):
                            await pair.local.send({"sender": sender, "n": n, "pad": "x" * 500})

                    tasks.start_soon(send_all)
            received = [await pair.remote.receive() for _ in range(senders * each)]
    for sender in range(senders):  # all of them, each sender's in its order
        assert [m["n"] for m in received if m["sender"] == sender] == list(range(each))


async def test_concurrent_receivers_share_the_messages_and_a_cancelled_one_loses_none(
    kind: str,
) -> None:
    """Several tasks may receive at once (one reads, the others wait for it); each message
    goes to exactly one of them, and a receiver cancelled while it waits takes none.

    The contract asks it of ``send`` only; the stdio transport reads its pipe from one
    task at a time (as frames and hosts always do).
    """
    if kind == "stdio":
        pytest.skip("stdio: one receiving task at a time (not asked by the contract)")
    total = 60
    async with connected(kind) as pair:
        with anyio.fail_after(10):
            got: list[Any] = []
            doomed = anyio.CancelScope()  # waits, then is cancelled: takes nothing

            async def receive_until_cancelled() -> None:
                with doomed:
                    got.append(("doomed", await pair.remote.receive()))

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(receive_until_cancelled)
                await anyio.wait_all_tasks_blocked()
                doomed.cancel()

                async def receive(count: int) -> None:
                    for _ in range(count):
                        got.append(await pair.remote.receive())

                for _ in range(3):
                    tasks.start_soon(receive, total // 3)
                await anyio.wait_all_tasks_blocked()
                for n in range(total):
                    await pair.local.send({"n": n})
    assert sorted(message["n"] for message in got) == list(range(total))


# -- what send refuses -------------------------------------------------------------------------


def cyclic() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


@pytest.mark.parametrize(
    "unsendable",
    [object(), {"nested": [1, {"handle": object()}]}, cyclic()],
    ids=["object", "nested-object", "cycle"],
)
async def test_a_message_with_no_json_form_is_refused_at_send(kind: str, unsendable: Any) -> None:
    async with connected(kind) as pair:
        with anyio.fail_after(5):
            with pytest.raises(UnsendableMessage) as info:
                await pair.local.send(unsendable)
            assert isinstance(info.value, TypeError)  # what code written before expects
            await pair.local.send("after")  # nothing was half-sent; still usable
            assert await pair.remote.receive() == "after"


async def test_the_size_limit_is_one_number_for_every_transport(kind: str) -> None:
    async with connected(kind) as pair:
        assert pair.local.extra(TransportAttribute.max_message_bytes) == LIMIT
        with anyio.fail_after(5):
            largest = "x" * (LIMIT - 2)  # its JSON, with the quotes, is LIMIT bytes
            await pair.local.send(largest)
            assert await pair.remote.receive() == largest

            with pytest.raises(MessageTooLarge) as info:
                await pair.local.send(largest + "x")
            assert (info.value.size, info.value.limit) == (LIMIT + 1, LIMIT)
            assert isinstance(info.value, UnsendableMessage)
            await pair.local.send("after")  # nothing was half-sent; still usable
            assert await pair.remote.receive() == "after"


# -- closing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("closing", ["local", "remote"])
async def test_a_clean_close_is_the_end_of_the_stream_on_the_other_side(
    kind: str, closing: str
) -> None:
    async with connected(kind) as pair:
        closer, other = (
            (pair.local, pair.remote) if closing == "local" else (pair.remote, pair.local)
        )

        async def send_and_close() -> None:
            await closer.send("last words")
            await closer.aclose()

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks:  # the other side is reading
                tasks.start_soon(send_and_close)
                assert await other.receive() == "last words"  # what was sent is delivered
                end = await receive_end(other)
        assert close_reason(end).clean, close_reason(end)
        with anyio.fail_after(5), pytest.raises(anyio.EndOfStream):
            await other.receive()  # and stays ended


async def test_an_abrupt_end_of_the_peer_is_seen_within_100_ms(kind: str) -> None:
    async with connected(kind) as pair:
        ended: list[BaseException] = []
        seen = anyio.Event()

        async def receive_until_the_end() -> None:
            try:
                while True:
                    await pair.local.receive()
            except Exception as exc:
                ended.append(exc)
                seen.set()

        with anyio.fail_after(5):
            await pair.remote.send("before")
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(receive_until_the_end)
                await anyio.sleep(0.05)  # the receive is pending
                await pair.kill()
                with anyio.fail_after(ABRUPT_BOUND):
                    await seen.wait()
        assert isinstance(ended[0], anyio.EndOfStream), repr(ended[0])
        reason = close_reason(ended[0])
        for name, value in pair.abrupt.items():
            assert getattr(reason, name) == value, reason

        with anyio.fail_after(1):  # sending to a dead peer fails, it does not hang
            with pytest.raises((anyio.BrokenResourceError, anyio.ClosedResourceError)):
                await pair.local.send("anyone there?")


async def test_aclose_wakes_a_pending_receive_of_its_own_side(kind: str) -> None:
    async with connected(kind) as pair:
        outcome: list[BaseException] = []

        async def receive() -> None:
            try:
                await pair.local.receive()
            except BaseException as exc:
                outcome.append(exc)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(receive)
                await anyio.sleep(0.05)
                await pair.local.aclose()
        assert len(outcome) == 1
        assert isinstance(outcome[0], anyio.ClosedResourceError), repr(outcome[0])


async def test_after_its_own_aclose_a_transport_refuses_everything(kind: str) -> None:
    async with connected(kind) as pair:
        with anyio.fail_after(5):
            # The peer reads, as a live one does, so it answers the closing handshake:
            # one that never reads makes the close wait out its bound (2 s), which this
            # test is not about (test_aclose_wakes_a_pending_receive_of_its_own_side
            # closes with a peer that reads nothing).
            await close_while_reading(pair.local.aclose, pair.remote)
            await pair.local.aclose()  # idempotent
            with pytest.raises(anyio.ClosedResourceError):
                await pair.local.receive()
            with pytest.raises(anyio.ClosedResourceError):
                await pair.local.send("too late")


async def test_aclose_is_quiet_when_the_peer_is_gone(kind: str) -> None:
    async with connected(kind) as pair:
        with anyio.fail_after(5):
            await pair.kill()
            await drain_to_end(pair.local)
            await pair.local.aclose()
            await pair.local.aclose()


# -- the WebSocket listener --------------------------------------------------------------------


async def test_websocket_listener_is_bound_first_and_serves_while_serve_runs() -> None:
    """A client that connects before ``serve`` runs waits for it; ``aclose`` ends ``serve``."""
    served = anyio.Event()

    async def echo(transport: ObjectStream[Any]) -> None:
        await transport.send(await transport.receive())

    with anyio.fail_after(10):
        async with await websocket_listener() as listener:
            assert listener.url.startswith("ws://127.0.0.1:")

            async def client() -> None:
                async with connect_websocket(listener.url) as transport:
                    await transport.send("early")
                    assert await transport.receive() == "early"
                    assert close_reason(await receive_end(transport)).close_code == 1000
                served.set()

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(client)
                await anyio.sleep(0.2)  # the client waits for the answer to its handshake
                assert not served.is_set()
                tasks.start_soon(listener.serve, echo)
                await served.wait()
                await listener.aclose()  # serve returns, so the task group can end
            await listener.aclose()  # idempotent


async def test_websocket_listener_serves_in_the_given_task_group() -> None:
    served = anyio.Event()

    async def handler(transport: ObjectStream[Any]) -> None:
        served.set()
        await transport.send("hello")

    with anyio.fail_after(10):
        async with anyio.create_task_group() as connections:
            async with await websocket_listener() as listener:
                with anyio.CancelScope() as scope:
                    async with anyio.create_task_group() as tasks:
                        tasks.start_soon(listener.serve, handler, connections)
                        async with connect_websocket(listener.url) as client:
                            assert await client.receive() == "hello"
                        scope.cancel()
            assert served.is_set()


# -- the one limit's old names -----------------------------------------------------------------


async def test_the_old_names_of_the_limit_still_work_with_a_warning() -> None:
    with anyio.fail_after(10), pytest.warns(DeprecationWarning, match="max_message_size") as caught:
        async with (
            websocket_server(lambda t: t.receive(), max_message_size=123) as server,
            connect_websocket(server.url, max_message_size=99) as client,
        ):
            assert client.extra(TransportAttribute.max_message_bytes) == 99
    assert [str(w.message) for w in caught] == [
        "max_message_size is deprecated; use max_message_bytes"
    ] * 2
    with anyio.fail_after(10):
        left, right = anyio.create_memory_object_stream[bytes]()
        with pytest.warns(DeprecationWarning, match="max_line_bytes"):
            stdio = StdioTransport(right, left, max_line_bytes=77)  # type: ignore[arg-type]
        assert stdio.extra(TransportAttribute.max_message_bytes) == 77
        with pytest.raises(TypeError, match="not both"), warnings.catch_warnings():
            StdioTransport(right, left, max_message_bytes=5, max_line_bytes=77)  # type: ignore[arg-type]
        await left.aclose()
        await right.aclose()
