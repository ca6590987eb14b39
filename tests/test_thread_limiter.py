"""``ThreadLimiter``: at most ``total`` sync functions run at once, the next one waits in
a thread of its own and starts there the moment a place frees (without the event loop),
and cancelled calls neither break the limit nor hold on to threads. Both backends."""

from __future__ import annotations

import threading
import time

import anyio
import anyio.abc
import pytest

from assistant_frames._threads import ThreadLimiter

from helpers import wait_until

pytestmark = pytest.mark.anyio

WAIT = 5.0  # only ever waited in full when a test fails


class Tracker:
    """Counts the functions running at once, and the most there ever were."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def run(self, seconds: float, value: int) -> int:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(seconds)
        with self.lock:
            self.now -= 1
        return value


@pytest.mark.parametrize("total", [1, 3])
async def test_at_most_total_functions_run_at_once(total: int) -> None:
    limiter = ThreadLimiter(total)
    tracker = Tracker()
    results: list[int] = []

    async def call(value: int) -> None:
        results.append(await limiter.run_sync(lambda: tracker.run(0.01, value)))

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            for value in range(12):
                group.start_soon(call, value)
    assert sorted(results) == list(range(12))
    assert tracker.most == total
    assert limiter.running == 0


async def test_the_next_call_starts_in_its_thread_without_the_event_loop() -> None:
    """With the event loop blocked, the call waiting for the place still starts as soon
    as the running one returns: it waits in a thread of its own, not in the loop."""
    limiter = ThreadLimiter(1)
    release_first = threading.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(limiter.run_sync, lambda: release_first.wait(WAIT))
        await wait_until(lambda: limiter.running == 1)
        started = await _next_starts_with_the_loop_blocked(limiter, group, release_first)
    assert started
    assert limiter.running == 0


async def _next_starts_with_the_loop_blocked(
    limiter: ThreadLimiter, group: anyio.abc.TaskGroup, release_running: threading.Event
) -> bool:
    """Start a call while ``limiter``'s one place is taken; release the running call and,
    with the event loop blocked, whether the new call starts."""
    started = threading.Event()
    group.start_soon(limiter.run_sync, started.set)
    await anyio.sleep(0.1)  # the new call reaches its thread, and waits there
    assert not started.is_set()
    release_running.set()
    return started.wait(WAIT)  # blocks the event loop: it can start nothing now


async def test_a_call_cancelled_while_waiting_in_its_thread_leaves_at_once() -> None:
    """Cancelled while it waits in its thread for the place, a call returns at once and
    its thread gives its turn back: the next call waits in a thread in its stead."""
    limiter = ThreadLimiter(1)
    release = threading.Event()
    ran: list[str] = []
    async with anyio.create_task_group() as group:
        group.start_soon(limiter.run_sync, lambda: release.wait(WAIT))
        await wait_until(lambda: limiter.running == 1)
        with anyio.move_on_after(0.2) as waiting:
            await limiter.run_sync(lambda: ran.append("cancelled"))
        assert waiting.cancelled_caught  # it waited for the place, then was cancelled
        await anyio.sleep(0.1)  # its thread gives the turn back through the loop
        started = await _next_starts_with_the_loop_blocked(limiter, group, release)
    assert started  # it would wait on the loop had the cancelled call kept its turn
    assert ran == []  # the cancelled function never ran
    assert limiter.running == 0


async def test_cancelled_calls_cannot_hold_more_threads_than_total_and_one() -> None:
    """Calls cancelled while the places are taken: one waits in a thread, the others in
    line on the loop; each leaves at once, and the thread count stays bounded."""
    limiter = ThreadLimiter(2)
    release = threading.Event()
    threads_before = threading.active_count()

    async with anyio.create_task_group() as group:
        for _ in range(2):
            group.start_soon(limiter.run_sync, lambda: release.wait(WAIT))
        await wait_until(lambda: limiter.running == 2)
        for _ in range(50):
            with anyio.move_on_after(0.005):
                await limiter.run_sync(lambda: None)
            # total + 1, and 2 for anyio: its thread rejoins its idle list a loop turn after
            # our function returns, so a call made in between starts another.
            assert threading.active_count() <= threads_before + 3 + 2
        release.set()
    assert limiter.running == 0
    assert await limiter.run_sync(lambda: "still works") == "still works"
