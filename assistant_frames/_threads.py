"""Running sync tools in threads, with a limit that cancelled calls cannot get around.

``anyio.to_thread.run_sync(..., abandon_on_cancel=True)`` gives its limiter token back
as soon as the caller is cancelled, while the abandoned thread keeps running; a peer
that sends ``tool-call`` and ``tool-cancel`` in pairs could then grow the thread count
without bound. :class:`ThreadLimiter` counts a thread until its function has returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import math
import threading
from collections import deque
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar, cast

import anyio
import anyio.lowlevel
import anyio.to_thread
import sniffio

from ._anyio import running_asyncio

__all__ = [
    "DEFAULT_MAX_THREADS",
    "ThreadLimiter",
    "asyncio_call_soon_threadsafe",
    "call_soon_threadsafe",
    "current_limiter",
    "run_sync",
]

T = TypeVar("T")

DEFAULT_MAX_THREADS = 40  # anyio's default thread limit

#: The limiter of the frame serving the current task (set by ``AssistantFrameProvider``).
current_limiter: ContextVar[ThreadLimiter | None] = ContextVar(
    "assistant_frames_thread_limiter", default=None
)
_default_limiter: anyio.lowlevel.RunVar[ThreadLimiter] = anyio.lowlevel.RunVar(
    "assistant_frames_default_thread_limiter"
)
_unlimited: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar(
    "assistant_frames_unlimited_threads"
)


class ThreadLimiter:
    """At most ``total`` functions running in threads at once.

    Waiting for a free thread is cancellable. A cancelled call returns at once, as with
    ``abandon_on_cancel``, but its thread keeps its place until the function returns.
    May be created outside an event loop; one limiter may serve several in turn.
    """

    __slots__ = ("_running", "_waiters", "total")

    def __init__(self, total: int = DEFAULT_MAX_THREADS) -> None:
        if not isinstance(total, int) or isinstance(total, bool) or total < 1:
            raise ValueError(f"the thread limit must be a positive integer, not {total!r}")
        self.total = total
        self._running = 0
        self._waiters: deque[anyio.Event] = deque()

    @property
    def running(self) -> int:
        """How many threads are running a function now (abandoned ones included)."""
        return self._running

    async def run_sync(self, fn: Callable[[], T]) -> T:
        """Run ``fn()`` in a thread once one is free and return what it returns."""
        await self._acquire()
        job = _Job()

        def work() -> T:
            with job.lock:
                if job.abandoned:  # cancelled before the thread picked it up
                    return cast(T, None)  # nobody is waiting for it
                job.started = True
            try:
                return fn()
            finally:
                with job.lock:
                    job.finished = True
                    call_soon = job.call_soon  # set if the caller gave up on us meanwhile
                if call_soon is not None:  # nobody waits for us on the loop side
                    with contextlib.suppress(RuntimeError):  # the loop has ended: no one to wake
                        call_soon(self._release)

        try:
            result = await anyio.to_thread.run_sync(
                work, abandon_on_cancel=True, limiter=_unlimited_threads()
            )
        except BaseException:
            call_soon = _call_soon_threadsafe()
            with job.lock:
                release_now = job.finished or not job.started
                job.abandoned = True
                if not release_now:  # the thread runs on: it gives the place back
                    job.call_soon = call_soon
            if release_now:
                self._release()
            raise
        self._release()
        return result

    async def _acquire(self) -> None:
        if self._running < self.total and not self._waiters:
            self._running += 1  # no checkpoint here: run_sync's thread hand-off is one
            return
        waiter = anyio.Event()
        self._waiters.append(waiter)
        try:
            await waiter.wait()  # _release counted us in
        except BaseException:
            if waiter.is_set():  # counted in, but cancelled before we could use it
                self._release()
            else:
                self._waiters.remove(waiter)
            raise

    def _release(self) -> None:
        if self._waiters:
            self._waiters.popleft().set()  # the place passes straight to the next waiter
        else:
            self._running -= 1

    def __repr__(self) -> str:
        return f"<ThreadLimiter {self._running}/{self.total} running, {len(self._waiters)} waiting>"


class _Job:
    """What a thread and its (possibly cancelled) caller agree on, under ``lock``."""

    __slots__ = ("abandoned", "call_soon", "finished", "lock", "started")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started = False
        self.finished = False
        self.abandoned = False
        self.call_soon: Callable[[Callable[[], Any]], Any] | None = None


def asyncio_call_soon_threadsafe(
    loop: asyncio.AbstractEventLoop,
) -> Callable[[Callable[[], Any]], Any]:
    """Schedule a callback on ``loop`` from any thread, without waiting, in a copy of the
    caller's context that tells sniffio (and so anyio) the library is asyncio.

    An asyncio callback runs outside any task, where sniffio finds the library only in
    its context variable, which only ``anyio.run`` sets: without it, a callback that uses
    anyio (an ``Event``, a task group's ``start_soon``) raises ``NoEventLoopError``
    under ``asyncio.run``, uvloop or uvicorn.
    """
    context = contextvars.copy_context()
    context.run(sniffio.current_async_library_cvar.set, "asyncio")
    return functools.partial(loop.call_soon_threadsafe, context=context)


def _call_soon_threadsafe() -> Callable[[Callable[[], Any]], Any]:
    """Schedule a callback on the running event loop from any thread, without waiting;
    the callback may use anyio whichever runner started the loop."""
    if running_asyncio():
        return asyncio_call_soon_threadsafe(asyncio.get_running_loop())
    import trio

    return trio.lowlevel.current_trio_token().run_sync_soon


call_soon_threadsafe = _call_soon_threadsafe


def _unlimited_threads() -> anyio.CapacityLimiter:
    """anyio's own limit must not count again: ours already did."""
    try:
        return _unlimited.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(math.inf)
        _unlimited.set(limiter)
        return limiter


async def run_sync(fn: Callable[[], T]) -> T:
    """Run ``fn()`` in a thread under the current frame's limiter (or a default one)."""
    limiter = current_limiter.get()
    if limiter is None:
        try:
            limiter = _default_limiter.get()
        except LookupError:
            limiter = ThreadLimiter()
            _default_limiter.set(limiter)
    return await limiter.run_sync(fn)
