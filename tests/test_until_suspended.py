"""``_anyio.UntilSuspended``: awaiting a coroutine in the same task, told once just before
it first waits. A frame's reading worker runs each call this way and hands its reading
turn to another worker only when the call waits. On asyncio and trio."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from assistant_frames._anyio import UntilSuspended

pytestmark = pytest.mark.anyio


class Told:
    """An ``on_suspend`` that counts its calls and what had run when it was called."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        self.log.append("told")


async def waits_long(finished: anyio.Event) -> None:
    """Sleeps a minute; sets ``finished`` however it ends."""
    try:
        await anyio.sleep(60)
    finally:
        finished.set()


async def test_a_coroutine_that_never_waits_is_awaited_without_telling() -> None:
    log: list[str] = []
    told = Told(log)

    async def quick() -> int:
        log.append("ran")
        return 42

    waiter = UntilSuspended(quick(), told)
    assert not waiter.suspended
    assert await waiter == 42
    assert told.calls == 0
    assert not waiter.suspended
    assert log == ["ran"]


async def test_it_tells_once_before_the_first_wait_lets_anything_else_run() -> None:
    log: list[str] = []
    told = Told(log)

    async def other() -> None:
        log.append("other task")

    async def waits_twice() -> str:
        log.append("before")
        await anyio.lowlevel.checkpoint()
        log.append("between")
        await anyio.sleep(0.01)
        return "done"

    waiter = UntilSuspended(waits_twice(), told)
    async with anyio.create_task_group() as tg:
        tg.start_soon(other)  # runs only once the awaited coroutine waits
        assert await waiter == "done"
    assert told.calls == 1
    assert waiter.suspended
    assert log[:2] == ["before", "told"]
    assert log.index("other task") > log.index("told")
    assert "between" in log  # trio picks the order of the tasks it wakes together


async def test_errors_and_cancellation_pass_through_as_for_a_plain_await() -> None:
    told = Told([])

    async def fails_after_waiting() -> None:
        await anyio.lowlevel.checkpoint()
        raise ValueError("from inside")

    with pytest.raises(ValueError, match="from inside"):
        await UntilSuspended(fails_after_waiting(), told)
    assert told.calls == 1

    cleaned = anyio.Event()
    with anyio.move_on_after(0.05) as scope:  # the cancellation reaches the coroutine
        await UntilSuspended(waits_long(cleaned), Told([]))
    assert scope.cancelled_caught
    assert cleaned.is_set()


async def test_a_failing_on_suspend_closes_the_coroutine() -> None:
    closed = anyio.Event()

    def refuse() -> None:
        raise RuntimeError("no hand-off")

    with pytest.raises(RuntimeError, match="no hand-off"):
        await UntilSuspended(waits_long(closed), refuse)
    assert closed.is_set()
