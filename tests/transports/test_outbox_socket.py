"""An outbox over a plain TCP socket stream: on trio it writes in the sending task while
nothing is queued (the writer task only writes what the socket could not take); on
asyncio the transport's own buffer is never written around. Real sockets on 127.0.0.1,
both backends.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import pytest

from assistant_frames.transports._outbox import Outbox, outbox_for

from helpers import wait_until

pytestmark = pytest.mark.anyio

WAIT = 10.0  # bound on each wait of these tests
# SO_LINGER on, 0 s: close() resets the connection instead of closing it cleanly.
_LINGER_RESET = (socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@asynccontextmanager
async def socket_pair() -> AsyncIterator[tuple[anyio.abc.SocketStream, anyio.abc.SocketStream]]:
    """A connected client stream and the server's end of it, on loopback."""
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        accepted: list[anyio.abc.SocketStream] = []
        got = anyio.Event()

        async def keep(stream: anyio.abc.SocketStream) -> None:
            accepted.append(stream)
            got.set()
            await anyio.sleep_forever()

        async with anyio.create_task_group() as group:
            group.start_soon(listener.serve, keep)
            with anyio.fail_after(WAIT):
                client = await anyio.connect_tcp("127.0.0.1", port)
                await got.wait()
            async with client, accepted[0]:
                yield client, accepted[0]
            group.cancel_scope.cancel()


async def writer_started(outbox: Outbox) -> None:
    """Until the writer task runs (only then may a put write in the sender's task)."""
    await wait_until(lambda: not outbox.would_wait, WAIT)


async def write_until_broken(outbox: Outbox) -> None:
    for _ in range(1_000):  # bounded: a reset connection is seen within a few writes
        await outbox.put(lambda: [b"x" * 65_536])
        await anyio.sleep(0.001)


async def read_exactly(stream: anyio.abc.SocketStream, size: int) -> bytes:
    data = bytearray()
    with anyio.fail_after(WAIT):
        while len(data) < size:
            data += await stream.receive()
    return bytes(data)


async def test_the_outbox_writes_around_no_buffer_of_asyncio(anyio_backend: str) -> None:
    """trio: a socket write in the sending task. asyncio: never beside its transport."""
    async with socket_pair() as (client, _server):
        outbox = outbox_for(client, client.send, high_water=1024)
        assert isinstance(outbox, Outbox)
        assert (outbox._try_write is not None) == (anyio_backend == "trio")


async def test_what_the_socket_cannot_take_is_written_after_it_in_order(anyio_backend: str) -> None:
    """A peer that does not read fills the socket: the rest of a large message is queued
    for the writer task, and messages sent after it follow it, whole and in order."""
    big = bytes(range(256)) * 16_384  # 4 MiB: more than loopback's buffers hold
    small = [b"<%d>" % n for n in range(50)]
    async with socket_pair() as (client, server):
        outbox = outbox_for(client, client.send, high_water=len(big) * 2)
        assert isinstance(outbox, Outbox)
        async with anyio.create_task_group() as group:
            group.start_soon(outbox.run)
            await writer_started(outbox)
            with anyio.fail_after(WAIT):
                await outbox.put(lambda: [big])
                for chunk in small:
                    await outbox.put(lambda chunk=chunk: [chunk])  # type: ignore[misc]
            expected = big + b"".join(small)
            assert await read_exactly(server, len(expected)) == expected
            with anyio.fail_after(WAIT):
                await outbox.drain()
            group.cancel_scope.cancel()


async def test_a_peer_that_is_gone_fails_the_sender(anyio_backend: str) -> None:
    """Writing to a reset connection raises ``BrokenResourceError`` to the sender (from
    the write in its own task, or from the writer task's), never anything else."""
    async with socket_pair() as (client, server):
        outbox = outbox_for(client, client.send, high_water=1 << 20)
        assert isinstance(outbox, Outbox)
        async with anyio.create_task_group() as group:
            group.start_soon(outbox.run)
            await writer_started(outbox)
            server_socket = server.extra(anyio.abc.SocketAttribute.raw_socket)
            server_socket.setsockopt(*_LINGER_RESET)  # close() then resets the connection
            await server.aclose()
            with anyio.fail_after(WAIT), pytest.raises(anyio.BrokenResourceError):
                await write_until_broken(outbox)
            group.cancel_scope.cancel()
