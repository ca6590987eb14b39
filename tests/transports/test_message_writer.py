"""MessageWriter: one order for messages sent from tasks and from callbacks, bounded.

Over real memory pairs (one slot each way where the test needs a peer that does not
read), on both backends.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from assistant_frames import memory_pair
from assistant_frames.transports.message_writer import ConnectionWriter, MessageWriter

pytestmark = pytest.mark.anyio

WAIT = 5.0  # bound on each wait of these tests


def writer_for(transport: Any, **options: Any) -> tuple[MessageWriter, list[BaseException]]:
    ended: list[BaseException] = []
    writer = MessageWriter(transport, on_closed=ended.append, on_unsendable=ended.append, **options)
    return writer, ended


async def receive(transport: Any, count: int) -> list[Any]:
    with anyio.fail_after(WAIT):
        return [await transport.receive() for _ in range(count)]


async def test_callbacks_and_tasks_share_one_order() -> None:
    local, remote = memory_pair()
    writer, ended = writer_for(local)
    writer.open()
    async with anyio.create_task_group() as group:
        group.start_soon(writer.run)
        assert writer.send_soon([{"n": 1}, {"n": 2}]) == []
        await writer.send([{"n": 3}], timeout=WAIT)
        assert writer.send_soon([{"n": 4}]) == []
        assert [m["n"] for m in await receive(remote, 4)] == [1, 2, 3, 4]
        group.cancel_scope.cancel()
    assert ended == []


async def test_a_full_queue_hands_back_the_rest_and_a_send_times_out() -> None:
    local, remote = memory_pair(1)  # the peer reads nothing: one message fits in the pair
    writer, _ = writer_for(local, queue_size=2)
    writer.open()
    async with anyio.create_task_group() as group:
        group.start_soon(writer.run)
        messages = [{"n": n} for n in range(6)]
        rest = writer.send_soon(messages)
        assert rest  # the queue is bounded: what did not fit comes back
        assert writer.waiting <= 2
        with pytest.raises(TimeoutError):
            await writer.send(rest, timeout=0.05)
        received = await receive(remote, 3)  # what was queued goes out, in order
        assert [m["n"] for m in received] == [0, 1, 2]
        group.cancel_scope.cancel()


async def test_a_peer_that_takes_nothing_for_send_timeout_ends_the_connection() -> None:
    local, _remote = memory_pair(1)  # the peer reads nothing: one message fits in the pair
    gone = anyio.Event()
    ended: list[BaseException] = []

    def closed(exc: BaseException) -> None:
        ended.append(exc)
        gone.set()

    writer = MessageWriter(local, on_closed=closed, on_unsendable=closed, send_timeout=0.05)
    writer.open()
    async with anyio.create_task_group() as group:
        group.start_soon(writer.run)
        assert writer.send_soon([{"n": 1}, {"n": 2}]) == []
        with anyio.fail_after(WAIT):
            await gone.wait()  # the second message waited 0.05 s for room
        group.cancel_scope.cancel()
    assert [type(exc) for exc in ended] == [TimeoutError]


async def test_a_closed_transport_ends_the_connection_once_not_the_sender() -> None:
    local, remote = memory_pair()
    ended: list[BaseException] = []
    told = anyio.Event()

    def on_closed(exc: BaseException) -> None:
        ended.append(exc)
        told.set()

    writer = MessageWriter(local, on_closed=on_closed, on_unsendable=ended.append)
    writer.open()
    await remote.aclose()
    async with anyio.create_task_group() as group:
        group.start_soon(writer.run)
        await writer.send([{"n": 1}], timeout=WAIT)  # the sender is not the one told
        with anyio.fail_after(WAIT):
            await told.wait()
        group.cancel_scope.cancel()
    assert len(ended) == 1
    assert isinstance(ended[0], anyio.BrokenResourceError | anyio.ClosedResourceError)


async def test_a_message_with_no_json_form_is_reported_and_stop_drops_the_queue() -> None:
    local, remote = memory_pair()
    writer, ended = writer_for(local)
    writer.open()
    async with anyio.create_task_group() as group:
        group.start_soon(writer.run)
        await writer.send([{"bad": object()}], timeout=WAIT)
        assert len(ended) == 1
        assert isinstance(ended[0], TypeError | ValueError)
        writer.stop()
        assert writer.send_soon([{"n": 1}]) == []  # queued, then dropped by the writer
        await writer.send([{"n": 2}], timeout=WAIT)
        with anyio.move_on_after(0.1):
            await remote.receive()
            pytest.fail("a stopped writer sent a message")
        group.cancel_scope.cancel()


async def test_a_connection_writer_hung_up_on_closes_its_connection() -> None:
    local, remote = memory_pair()
    writer = ConnectionWriter(local, on_ended=pytest.fail, on_unsendable=pytest.fail)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(writer.run)
            assert writer.writer.send_soon([{"n": 1}]) == []
            assert await receive(remote, 1) == [{"n": 1}]
            writer.hang_up()  # run closes the connection, then ends
        with pytest.raises(anyio.EndOfStream):
            await remote.receive()  # the peer sees the end


async def test_a_peer_that_takes_nothing_hangs_up_the_connection_writer() -> None:
    local, remote = memory_pair(1)  # the peer reads nothing: one message fits in the pair
    ended: list[BaseException] = []
    writer = ConnectionWriter(
        local, on_ended=ended.append, on_unsendable=pytest.fail, send_timeout=0.05
    )
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(writer.run)
            assert writer.writer.send_soon([{"n": 1}, {"n": 2}]) == []
            await writer.hung_up.wait()  # told why first, then hung up
    assert [type(exc) for exc in ended] == [TimeoutError]
    assert await receive(remote, 1) == [{"n": 1}]  # what was taken before stays


async def test_serve_hands_each_object_to_its_handler_and_hangs_up_when_the_peer_goes() -> None:
    local, remote = memory_pair()
    writer = ConnectionWriter(local, on_ended=lambda exc: None, on_unsendable=pytest.fail)
    handled: list[dict[str, Any]] = []

    async def handle(message: dict[str, Any]) -> None:
        handled.append(message)
        writer.writer.send_soon([{"echo": message["n"]}])  # written beside the reading

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(writer.serve, handle)
            for message in ({"n": 1}, [2], "three", {"n": 4}):
                await remote.send(message)
            assert await receive(remote, 2) == [{"echo": 1}, {"echo": 4}]
            await remote.aclose()  # the peer goes: the serving ends
    assert handled == [{"n": 1}, {"n": 4}]  # only the objects
    assert writer.hung_up.is_set()
