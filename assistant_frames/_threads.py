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
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import anyio
import anyio.lowlevel
import anyio.to_thread
import sniffio

from ._anyio import running_asyncio

if TYPE_CHECKING:
    from ._resident_threads import ResidentThreads

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

    On asyncio the functions run in up to ``total`` threads of the limiter's own that
    take calls from one queue (:mod:`._resident_threads`): a thread that finishes one
    takes the next at once, without the event loop. On trio they run in anyio's threads,
    and one call more than ``total`` is handed to a thread of its own, where it waits for
    a place: when a function returns, the next starts at once in that thread, instead of
    after the event loop has seen the result and started it (several loop turns, which
    a CPU-bound tool's thread would otherwise spend idle between calls).
    """

    __slots__ = ("_admitted", "_free", "_places", "_resident", "_waiters", "total")

    def __init__(self, total: int = DEFAULT_MAX_THREADS) -> None:
        if not isinstance(total, int) or isinstance(total, bool) or total < 1:
            raise ValueError(f"the thread limit must be a positive integer, not {total!r}")
        self.total = total
        # Loop side: calls handed to threads (running, waiting there for a place, or
        # abandoned and not yet returned), at most total + 1; the others wait in line.
        self._admitted = 0
        self._waiters: deque[anyio.Event] = deque()
        # Thread side, under _places: the places free for a function to run.
        self._places = threading.Condition(threading.Lock())
        self._free = total
        # On asyncio, made on first use (anyio's asyncio backend is imported then); False
        # where anyio lacks what they need.
        self._resident: ResidentThreads | Literal[False] | None = None

    @property
    def running(self) -> int:
        """How many threads are running a function now (abandoned ones included)."""
        resident = self._resident
        return self.total - self._free + (resident.running if resident else 0)

    async def run_sync(self, fn: Callable[[], T]) -> T:
        """Run ``fn()`` in a thread once one is free and return what it returns."""
        if running_asyncio():
            resident = self._resident
            if resident is None:
                resident = self._resident = _resident_threads(self.total)
            if resident:
                return cast(T, await resident.run_sync(fn))
        await self._acquire()
        job = _Job()
        places = self._places

        def work() -> T:
            call_soon: Callable[[Callable[[], Any]], Any] | None = None
            with places:
                if job.abandoned:  # cancelled before the thread picked it up
                    return cast(T, None)  # nobody is waiting for it
                job.entered = True
                while not self._free and not job.abandoned:
                    places.wait()
                if job.abandoned:  # cancelled while waiting here for a place
                    call_soon = job.call_soon  # our caller left the place to us
                else:
                    self._free -= 1
                    job.started = True
            if not job.started:
                _give_back(call_soon, self._release)
                return cast(T, None)
            try:
                return fn()
            finally:
                with places:
                    self._free += 1
                    places.notify()  # the call waiting in its thread runs now
                    job.finished = True
                    call_soon = job.call_soon  # set if the caller gave up on us meanwhile
                _give_back(call_soon, self._release)

        try:
            result = await anyio.to_thread.run_sync(
                work, abandon_on_cancel=True, limiter=_unlimited_threads()
            )
        except BaseException:
            call_soon = _call_soon_threadsafe()
            with places:
                release_now = job.finished or not job.entered
                job.abandoned = True
                if not release_now:  # its thread gives the place back when it is done
                    job.call_soon = call_soon
                    if not job.started:
                        places.notify_all()  # waiting for a place: it leaves now
            if release_now:
                self._release()
            raise
        self._release()
        return result

    async def _acquire(self) -> None:
        if self._admitted <= self.total and not self._waiters:
            self._admitted += 1  # no checkpoint here: run_sync's thread hand-off is one
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
            self._admitted -= 1

    def __repr__(self) -> str:
        return f"<ThreadLimiter {self.running}/{self.total} running, {len(self._waiters)} waiting>"


def _resident_threads(total: int) -> ResidentThreads | Literal[False]:
    from ._resident_threads import AVAILABLE, ResidentThreads

    return ResidentThreads(total) if AVAILABLE else False


def _give_back(
    call_soon: Callable[[Callable[[], Any]], Any] | None, release: Callable[[], None]
) -> None:
    """From a thread whose caller gave up on it (``call_soon`` set): ``release`` on the loop."""
    if call_soon is not None:  # nobody waits for us on the loop side
        with contextlib.suppress(RuntimeError):  # the loop has ended: no one to wake
            call_soon(release)


class _Job:
    """What a thread and its (possibly cancelled) caller agree on, under the limiter's
    lock: the thread has ``entered`` (it waits for a place), ``started`` the function,
    ``finished`` it; the caller has ``abandoned`` it, and gave ``call_soon`` to release
    its place from the thread."""

    __slots__ = ("abandoned", "call_soon", "entered", "finished", "started")

    def __init__(self) -> None:
        self.entered = False
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
