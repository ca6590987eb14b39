"""The outbox over an asyncio stream that buffers (a pipe or a socket under asyncio):
while nothing waits ahead and the buffer has room, ``put`` hands the message over
without a checkpoint; once the buffer is over its high-water mark, puts wait in turn
and the order holds."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import anyio
import pytest

from assistant_frames.transports._outbox import DirectOutbox
from assistant_frames.transports._streams import write_pipe

from helpers import read_exactly

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the buffering streams are asyncio's


@pytest.fixture
async def piped() -> AsyncIterator[tuple[DirectOutbox, int]]:
    """An outbox writing into a pipe through asyncio, and the pipe's read end."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    stream = await write_pipe(write_fd)
    assert stream is not None
    try:
        yield DirectOutbox(stream), read_fd  # type: ignore[arg-type]
    finally:
        await stream.aclose()
        os.close(read_fd)


async def test_an_uncontended_put_hands_the_message_over_without_a_checkpoint(
    piped: tuple[DirectOutbox, int],
) -> None:
    outbox, read_fd = piped
    with anyio.CancelScope() as scope:
        scope.cancel()
        # A cancelled scope would raise at a checkpoint: there is none, so it is
        # handed over whole (as a memory transport's send would queue it).
        await outbox.put(lambda: (b"hello\n",))
    assert not scope.cancelled_caught
    assert await read_exactly(read_fd, 6) == b"hello\n"


async def test_puts_waiting_for_the_buffer_to_drain_keep_their_order(
    piped: tuple[DirectOutbox, int],
) -> None:
    outbox, read_fd = piped
    big = b"x" * (1024 * 1024) + b"\n"  # well over the buffer's high-water mark
    with anyio.fail_after(10):
        await outbox.put(lambda: (big,))
        assert outbox.would_wait  # the buffer is full: the next put waits
        sent: list[bytes] = []

        async def put(line: bytes) -> None:
            await outbox.put(lambda: (line,))
            sent.append(line)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(put, b"first\n")
            await anyio.wait_all_tasks_blocked()  # waiting for the drain, holding the turn
            tasks.start_soon(put, b"second\n")
            await anyio.wait_all_tasks_blocked()  # waiting behind it, not past it
            assert sent == []
            data = await read_exactly(read_fd, len(big) + len(b"first\nsecond\n"))
        assert sent == [b"first\n", b"second\n"]
        assert data == big + b"first\nsecond\n"
