"""An outbox over a stream that can write without waiting (a worker's non-blocking
stdout pipe): a message goes out in the sending task while nothing is queued, the rest
of one the pipe took in part waits for the writer task, and the order holds."""

from __future__ import annotations

import os

import anyio
import pytest

from assistant_frames.transports._fd_streams import FdSendStream
from assistant_frames.transports._outbox import Outbox

from helpers import read_exactly, wait_until

pytestmark = pytest.mark.anyio


def _pipe() -> tuple[int, int]:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)
    return read_fd, write_fd


async def test_a_message_is_written_by_the_task_that_sends_it() -> None:
    read_fd, write_fd = _pipe()
    stream = FdSendStream(write_fd)
    outbox = Outbox(stream.send, try_write=stream.try_write)
    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(outbox.run)
                await anyio.wait_all_tasks_blocked()
                await outbox.put(lambda: (b"hello\n",))
                # No checkpoint since: the writer task has not run, yet it is in the pipe.
                assert os.read(read_fd, 100) == b"hello\n"
                tasks.cancel_scope.cancel()
    finally:
        os.close(read_fd)
        os.close(write_fd)


async def test_what_a_full_pipe_does_not_take_follows_in_order() -> None:
    read_fd, write_fd = _pipe()
    stream = FdSendStream(write_fd)
    outbox = Outbox(stream.send, try_write=stream.try_write, high_water=256 * 1024)
    messages = [bytes([65 + i % 26]) * (7_000 + i) + b"\n" for i in range(120)]  # ~1 MB
    expected = b"".join(messages)
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(outbox.run)
                await anyio.wait_all_tasks_blocked()  # the writer runs
                received: list[bytes] = []
                done = anyio.Event()

                async def read_all() -> None:
                    received.append(await read_exactly(read_fd, len(expected)))
                    done.set()

                for message in messages[:20]:  # the pipe (64 KiB) fills: the rest queues
                    await outbox.put(lambda message=message: (message,))
                tasks.start_soon(read_all)
                for message in messages[20:]:
                    await outbox.put(lambda message=message: (message,))
                await outbox.drain()
                await done.wait()
                tasks.cancel_scope.cancel()
        assert received[0] == expected
    finally:
        os.close(read_fd)
        os.close(write_fd)


async def test_a_broken_pipe_fails_the_send_and_every_later_one() -> None:
    read_fd, write_fd = _pipe()
    stream = FdSendStream(write_fd)
    outbox = Outbox(stream.send, try_write=stream.try_write)
    os.close(read_fd)
    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(outbox.run)
                await anyio.wait_all_tasks_blocked()
                with pytest.raises(anyio.BrokenResourceError):
                    await outbox.put(lambda: (b"lost\n",))
                with pytest.raises(anyio.BrokenResourceError):
                    await outbox.put(lambda: (b"lost again\n",))
                assert isinstance(outbox.error, anyio.BrokenResourceError)
                tasks.cancel_scope.cancel()
    finally:
        os.close(write_fd)


async def test_a_writer_started_after_an_inline_write_waits_for_it() -> None:
    """A sender that came before the writer task writes inline; the writer task, started
    while that write still waits for the pipe, must not write beside it (trio's streams
    refuse two writers, and the bytes would interleave)."""
    read_fd, write_fd = _pipe()
    stream = FdSendStream(write_fd)
    writing = 0
    most = 0

    async def write(data: bytes) -> None:
        nonlocal writing, most
        writing += 1
        most = max(most, writing)
        try:
            await stream.send(data)
        finally:
            writing -= 1

    outbox = Outbox(write, high_water=16 * 1024 * 1024)
    big = b"a" * 300_000 + b"\n"  # more than the pipe holds: the inline write waits
    expected = big + b"b\n" + b"c\n"
    try:
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tasks:
                received: list[bytes] = []

                async def send_first() -> None:
                    await outbox.put(lambda: (big,))

                tasks.start_soon(send_first)
                await anyio.wait_all_tasks_blocked()  # the inline write waits for room
                assert writing == 1
                outbox.put_urgent([b"b\n"])  # what the writer task would write at once
                tasks.start_soon(outbox.run)
                await anyio.wait_all_tasks_blocked()

                async def read_all() -> None:
                    received.append(await read_exactly(read_fd, len(expected)))

                tasks.start_soon(read_all)
                await outbox.put(lambda: (b"c\n",))  # after the inline write, in order
                await outbox.drain()
                await wait_until(lambda: bool(received))
                tasks.cancel_scope.cancel()
        assert most == 1
        assert received[0] == expected
    finally:
        os.close(read_fd)
        os.close(write_fd)
