"""``receive_on_arrival``: a WebSocket connection or a stdio transport on asyncio offers
each message to a handler in the event loop's callback as it arrives (a host settles
results there, waking the caller without waking its reading task first). Messages the
handler declines, and every message behind one, go to ``receive`` in order; on trio
nothing changes."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from assistant_frames.transports import (
    StdioTransport,
    TransportClosed,
    connect_websocket,
    websocket_server,
)
from assistant_frames.transports._streams import read_pipe, write_pipe

pytestmark = pytest.mark.anyio

Transport = Any  # a WebSocketTransport or a StdioTransport


class Taker:
    """Takes messages whose ``take`` is true, noting whether it ran inside a task."""

    def __init__(self) -> None:
        self.taken: list[Any] = []
        self.in_task: list[bool] = []
        self.arrived = anyio.Event()

    def __call__(self, message: Any) -> bool:
        self.in_task.append(_in_a_task())
        if not message.get("take"):
            return False
        self.taken.append(message["n"])
        self.arrived.set()  # an event may be set from the callback
        return True


def _in_a_task() -> bool:
    try:
        return asyncio.current_task() is not None
    except RuntimeError:  # no asyncio loop: trio
        return True


def batch(*takes: bool, start: int = 0) -> list[dict[str, Any]]:
    return [{"n": start + i, "take": take} for i, take in enumerate(takes)]


@asynccontextmanager
async def websocket_pair() -> AsyncIterator[tuple[Transport, Callable[[Any], Any]]]:
    """A client WebSocket transport, and a function sending from the server's end."""
    ends: list[Any] = []
    ready = anyio.Event()
    done = anyio.Event()

    async def serve(transport: Any) -> None:
        ends.append(transport)
        ready.set()
        await done.wait()

    async with websocket_server(serve) as server, connect_websocket(server.url) as client:
        with anyio.fail_after(5):
            await ready.wait()
        try:
            yield client, ends[0].send
        finally:
            done.set()


@asynccontextmanager
async def pipe_pair() -> AsyncIterator[tuple[Transport, Callable[[Any], Any]]]:
    """A stdio transport reading a pipe, and a function sending into that pipe."""
    read_fd, write_fd = os.pipe()
    other_read, other_write = os.pipe()
    reading = await read_pipe(read_fd, close_fd=True)
    writing = await write_pipe(write_fd)
    unused_in = await read_pipe(other_read, close_fd=True)
    unused_out = await write_pipe(other_write)
    if reading is None or writing is None or unused_in is None or unused_out is None:
        pytest.skip("asyncio's pipes only")  # not reached: the tests run on asyncio
    ours = StdioTransport(reading, unused_out)
    theirs = StdioTransport(unused_in, writing)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(theirs.run)
        try:
            yield ours, theirs.send
        finally:
            await theirs.aclose()
            await ours.aclose()
            tasks.cancel_scope.cancel()


PAIRS = {"websocket": websocket_pair, "stdio": pipe_pair}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # a callback as data arrives: asyncio's protocols


@pytest.mark.parametrize("kind", PAIRS)
async def test_taken_messages_skip_receive_and_the_rest_keep_their_order(kind: str) -> None:
    taker = Taker()
    async with PAIRS[kind]() as (transport, send):
        transport.receive_on_arrival(taker)
        with anyio.fail_after(5):
            await send({"n": 0, "take": True})
            await taker.arrived.wait()
            assert taker.taken == [0]
            assert taker.in_task == [False]  # in the loop's callback, no task

            # declined: to receive, and what comes behind it waits behind it
            for message in batch(False, True, True, start=1):
                await send(message)
            assert (await transport.receive())["n"] == 1
            assert (await transport.receive())["n"] == 2
            assert (await transport.receive())["n"] == 3
            assert taker.taken == [0]

            # once nothing is queued, arrivals go to the handler again
            taker.arrived = anyio.Event()
            await send({"n": 4, "take": True})
            await taker.arrived.wait()
            assert taker.taken == [0, 4]

            # unset: everything to receive
            transport.receive_on_arrival(None)
            await send({"n": 5, "take": True})
            assert (await transport.receive())["n"] == 5
            assert taker.taken == [0, 4]


@pytest.mark.parametrize("kind", PAIRS)
async def test_a_receive_waiting_meanwhile_gets_what_the_handler_declines(kind: str) -> None:
    """The reading task waits in ``receive`` the whole time, as a host's does."""
    taker = Taker()
    received: list[int] = []
    async with PAIRS[kind]() as (transport, send):
        transport.receive_on_arrival(taker)

        all_in = anyio.Event()

        async def read() -> None:
            while True:
                received.append((await transport.receive())["n"])
                if len(received) == 2:
                    all_in.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            with anyio.fail_after(5):
                for message in batch(True, False, True, True, False):
                    await send(message)
                    await anyio.sleep(0.01)  # one arrival each
                await all_in.wait()
            tasks.cancel_scope.cancel()
    assert taker.taken == [0, 2, 3]
    assert received == [1, 4]


async def test_the_end_of_the_connection_still_reaches_receive() -> None:
    taker = Taker()
    go = anyio.Event()

    async def serve(transport: Any) -> None:  # two messages, then a close (code 1000)
        await go.wait()
        await transport.send({"n": 0, "take": True})
        await transport.send({"n": 1, "take": False})

    async with websocket_server(serve) as server, connect_websocket(server.url) as client:
        client.receive_on_arrival(taker)
        go.set()
        with anyio.fail_after(5):
            assert (await client.receive())["n"] == 1  # the declined one
            with pytest.raises(TransportClosed):
                await client.receive()
    assert taker.taken == [0]


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_on_trio_every_message_goes_to_receive(anyio_backend: str) -> None:
    taker = Taker()
    async with websocket_pair() as (transport, send):
        transport.receive_on_arrival(taker)
        with anyio.fail_after(5):
            await send({"n": 0, "take": True})
            assert (await transport.receive())["n"] == 0
    assert taker.taken == []
