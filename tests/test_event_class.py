"""``_anyio.event_class()``: the event hot paths make one of per call or wake-up. On
asyncio it is ``FutureEvent`` (a future per waiter), which must behave as anyio's own
``Event`` does; on trio it is anyio's. Every test runs on both backends."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from assistant_frames._anyio import FutureEvent, event_class, running_asyncio

pytestmark = pytest.mark.anyio


async def test_asyncio_gets_the_lean_event_and_trio_anyios() -> None:
    new_event = event_class()
    event = new_event()
    assert isinstance(event, anyio.Event)
    assert (type(event) is FutureEvent) == running_asyncio()


async def test_set_before_wait_returns_at_once_and_set_is_idempotent() -> None:
    event = event_class()()
    assert not event.is_set()
    event.set()
    event.set()
    assert event.is_set()
    with anyio.fail_after(1):
        await event.wait()
    assert event.statistics().tasks_waiting == 0


async def test_set_wakes_every_waiter() -> None:
    event = event_class()()
    woken: list[object] = []
    async with anyio.create_task_group() as group:
        for number in range(5):
            group.start_soon(wait_then_note, event, woken, number)
        await wait_for_waiters(event, 5)
        event.set()
    assert sorted(woken) == [0, 1, 2, 3, 4]
    assert event.statistics().tasks_waiting == 0


async def test_a_cancelled_waiter_leaves_the_others_waiting() -> None:
    event = event_class()()
    woken: list[object] = []
    async with anyio.create_task_group() as group:
        group.start_soon(wait_then_note, event, woken, "kept")
        await wait_for_waiters(event, 1)
        async with anyio.create_task_group() as inner:
            inner.start_soon(wait_then_note, event, woken, "cancelled")
            await wait_for_waiters(event, 2)
            inner.cancel_scope.cancel()
        assert event.statistics().tasks_waiting == 1
        event.set()
    assert woken == ["kept"]


async def test_waiting_on_a_set_event_is_a_checkpoint() -> None:
    """As anyio's own: a cancelled task is told so even when the event is already set."""
    event = event_class()()
    event.set()
    with anyio.CancelScope() as scope:
        scope.cancel()
        await event.wait()
        pytest.fail("wait() on a set event did not deliver the pending cancellation")
    assert scope.cancelled_caught


async def test_set_right_after_a_waiter_was_cancelled_is_harmless() -> None:
    """The waiter has not run since it was cancelled: its future is done but still
    listed, and must not be set again."""
    event = event_class()()
    async with anyio.create_task_group() as group:
        group.start_soon(event.wait)
        await wait_for_waiters(event, 1)
        group.cancel_scope.cancel()
        event.set()
    assert event.is_set()
    assert event.statistics().tasks_waiting == 0


async def test_a_waiter_woken_and_then_cancelled_before_it_runs_sees_the_cancellation() -> None:
    event = event_class()()
    outcome: list[str] = []

    async def waiter() -> None:
        try:
            await event.wait()
            outcome.append("woken")
        except anyio.get_cancelled_exc_class():
            outcome.append("cancelled")
            raise

    async with anyio.create_task_group() as group:
        group.start_soon(waiter)
        await wait_for_waiters(event, 1)
        event.set()
        group.cancel_scope.cancel()  # before the waiter has run again
    assert outcome in (["woken"], ["cancelled"])  # either is anyio's Event behaviour


async def wait_for_waiters(event: anyio.Event, count: int) -> None:
    with anyio.fail_after(5):
        while event.statistics().tasks_waiting < count:
            await anyio.lowlevel.checkpoint()


async def wait_then_note(event: anyio.Event, woken: list[object], name: object) -> None:
    """Wait for ``event``, then add ``name`` to ``woken``."""
    await event.wait()
    woken.append(name)
