"""``receive_on_arrival``: a WebSocket connection or a stdio transport on asyncio offers
each message to a handler in the event loop's callback as it arrives (a host settles
results there, waking the caller without waking its reading task first). Messages the
handler declines, and every message behind one, go to ``receive`` in order; on trio
nothing changes."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from test_transport_contract import stdio_pair, websocket_pair

from assistant_frames.transports import TransportClosed, connect_websocket, websocket_server

pytestmark = pytest.mark.anyio


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


# The contract tests' pairs: a client WebSocket and the server's end; a worker
# (spawn_worker, reading the child's stdout pipe) and the child's end.
PAIRS = {"websocket": websocket_pair, "stdio": stdio_pair}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # a callback as data arrives: asyncio's protocols


@pytest.mark.parametrize("kind", PAIRS)
async def test_taken_messages_skip_receive_and_the_rest_keep_their_order(kind: str) -> None:
    taker = Taker()
    async with PAIRS[kind]() as (transport, peer):
        transport.receive_on_arrival(taker)
        with anyio.fail_after(5):
            await peer.send({"n": 0, "take": True})
            await taker.arrived.wait()
            assert taker.taken == [0]
            assert taker.in_task == [False]  # in the loop's callback, no task

            # declined: to receive, and what comes behind it waits behind it
            for message in batch(False, True, True, start=1):
                await peer.send(message)
            assert (await transport.receive())["n"] == 1
            assert (await transport.receive())["n"] == 2
            assert (await transport.receive())["n"] == 3
            assert taker.taken == [0]

            # once nothing is queued, arrivals go to the handler again
            taker.arrived = anyio.Event()
            await peer.send({"n": 4, "take": True})
            await taker.arrived.wait()
            assert taker.taken == [0, 4]

            # unset: everything to receive
            transport.receive_on_arrival(None)
            await peer.send({"n": 5, "take": True})
            assert (await transport.receive())["n"] == 5
            assert taker.taken == [0, 4]


@pytest.mark.parametrize("kind", PAIRS)
async def test_a_receive_waiting_meanwhile_gets_what_the_handler_declines(kind: str) -> None:
    """The reading task waits in ``receive`` the whole time, as a host's does."""
    taker = Taker()
    received: list[int] = []
    async with PAIRS[kind]() as (transport, peer):
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
                    await peer.send(message)
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
    async with websocket_pair() as (transport, peer):
        transport.receive_on_arrival(taker)
        with anyio.fail_after(5):
            await peer.send({"n": 0, "take": True})
            assert (await transport.receive())["n"] == 0
    assert taker.taken == []
