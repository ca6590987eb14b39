"""``ThreadLimiter``'s threads on asyncio (``_resident_threads``): they stay between
calls, and a function run in one sees what it would in anyio's own worker threads
(``anyio.from_thread``, ``check_cancelled``, the caller's context variables). The
behaviours every backend shares run on both."""

from __future__ import annotations

import contextvars
import threading

import anyio
import anyio.from_thread
import anyio.lowlevel
import pytest
import sniffio

from assistant_frames import _resident_threads
from assistant_frames._threads import ThreadLimiter

from helpers import wait_until

pytestmark = pytest.mark.anyio

WAIT = 5.0  # only ever waited in full when a test fails
request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")


async def test_a_function_reaches_back_into_the_event_loop() -> None:
    limiter = ThreadLimiter(2)
    seen: list[str] = []

    async def note(text: str) -> str:
        await anyio.lowlevel.checkpoint()
        seen.append(text)
        return text.upper()

    def work() -> str:
        anyio.from_thread.run_sync(seen.append, "sync")
        return anyio.from_thread.run(note, "async")

    with anyio.fail_after(WAIT):
        assert await limiter.run_sync(work) == "ASYNC"
    assert seen == ["sync", "async"]


async def test_a_function_sees_the_callers_context_and_no_async_library() -> None:
    limiter = ThreadLimiter(1)
    request_id.set("r-1")

    def work() -> tuple[str, bool]:
        try:
            sniffio.current_async_library()
        except sniffio.AsyncLibraryNotFoundError:
            library_found = False
        else:
            library_found = True
        return request_id.get(), library_found

    with anyio.fail_after(WAIT):
        assert await limiter.run_sync(work) == ("r-1", False)


async def test_check_cancelled_sees_the_caller_cancelled() -> None:
    limiter = ThreadLimiter(1)
    started, go_on = threading.Event(), threading.Event()
    outcome: list[str] = []

    def work() -> None:
        started.set()
        go_on.wait(WAIT)
        try:
            anyio.from_thread.check_cancelled()
        except BaseException as exc:  # the backend's cancellation exception
            outcome.append(type(exc).__name__)
        else:
            outcome.append("not cancelled")

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(limiter.run_sync, work)
            await anyio.to_thread.run_sync(started.wait, WAIT)
            group.cancel_scope.cancel()  # the caller returns at once; the thread runs on
        go_on.set()
        await wait_until(lambda: bool(outcome))
    assert outcome != ["not cancelled"]


async def test_stop_iteration_comes_out_as_a_runtime_error() -> None:
    def work() -> None:
        raise StopIteration

    with anyio.fail_after(WAIT), pytest.raises(RuntimeError):
        await ThreadLimiter(1).run_sync(work)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_one_thread_runs_call_after_call_and_ends_when_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_resident_threads, "_IDLE_SECONDS", 0.2)
    limiter = ThreadLimiter(1)
    before = threading.active_count()
    with anyio.fail_after(WAIT):
        idents = {await limiter.run_sync(threading.get_ident) for _ in range(20)}
        assert len(idents) == 1  # the same thread each time
        assert threading.active_count() == before + 1
        await wait_until(lambda: threading.active_count() == before)  # idle: it ended
        assert await limiter.run_sync(lambda: 42) == 42  # and a new one starts


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_call_cancelled_before_its_turn_never_runs() -> None:
    limiter = ThreadLimiter(1)
    release = threading.Event()
    ran: list[int] = []

    def hold() -> None:
        release.wait(WAIT)

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            group.start_soon(limiter.run_sync, hold)
            await wait_until(lambda: limiter.running == 1)
            with anyio.move_on_after(0.05):  # queued behind hold(), then given up
                await limiter.run_sync(lambda: ran.append(1))
            release.set()
        assert await limiter.run_sync(lambda: 2) == 2  # the queue moved on past it
    assert ran == []
    assert limiter.running == 0


def _call_in_a_new_loop(limiter: ThreadLimiter) -> None:
    async def call() -> int:
        with anyio.fail_after(WAIT):
            return await limiter.run_sync(lambda: 7)

    raise SystemExit(0 if anyio.run(call) == 7 else 1)


def test_a_forked_child_starts_threads_of_its_own() -> None:
    """A fork copies no thread: the child's calls must not wait for the parent's."""
    import multiprocessing

    limiter = ThreadLimiter(1)

    async def first() -> int:
        with anyio.fail_after(WAIT):
            return await limiter.run_sync(lambda: 1)

    assert anyio.run(first) == 1  # the parent's thread now exists, idle
    child = multiprocessing.get_context("fork").Process(target=_call_in_a_new_loop, args=(limiter,))
    child.start()
    child.join(WAIT + 5)
    if child.is_alive():  # hung: waiting for a thread the fork did not copy
        child.kill()
        child.join()
    assert child.exitcode == 0
