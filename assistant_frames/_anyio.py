"""Small helpers over anyio for hot paths."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Coroutine, Generator
from contextlib import AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import Any, Generic, TypeVar

import anyio
import anyio.lowlevel
import sniffio
from anyio.abc import TaskGroup

from .calls import PendingCalls

T = TypeVar("T")

__all__ = [
    "HeldTaskGroup",
    "UntilSuspended",
    "call_maybe_async",
    "cancel_scope_class",
    "cancelled_here",
    "clock",
    "FutureEvent",
    "event_class",
    "expire_calls",
    "running_asyncio",
    "task_group",
]


def running_asyncio() -> bool:
    """True when the running event loop is asyncio's."""
    try:
        return sniffio.current_async_library() == "asyncio"
    except sniffio.AsyncLibraryNotFoundError:  # pragma: no cover
        return False


def cancelled_here() -> bool:
    """Whether the cancellation exception being handled was meant for this task.

    On asyncio, a ``CancelledError`` may come from awaiting a task that someone else
    cancelled; then this task has no cancellation request of its own. trio (and anyio's
    cancel scopes on it) have no such case.
    """
    if running_asyncio():
        task = asyncio.current_task()
        return task is None or task.cancelling() > 0
    return True


def event_class() -> Callable[[], anyio.Event]:
    """The running backend's ``Event`` class, to construct events without a lookup.

    ``anyio.Event()`` finds the running backend on every call, which costs more than
    the event itself; hot paths create one per message. On asyncio that is
    :class:`FutureEvent`, a leaner one. Call this inside the event loop.
    """
    if running_asyncio():
        return FutureEvent
    return type(anyio.Event())


def cancel_scope_class() -> Callable[[], anyio.CancelScope]:
    """The running backend's ``CancelScope`` class, to open scopes without a lookup.

    ``anyio.CancelScope()`` finds the running backend each time (as ``anyio.Event()``
    does); a call path that opens a scope per call makes the class once. Call this
    inside the event loop.
    """
    return type(anyio.CancelScope())


def clock() -> Callable[[], float]:
    """The running backend's clock (``anyio.current_time`` without its lookup of the
    backend, which costs as much as reading the clock). Call this inside the event loop."""
    if running_asyncio():
        return asyncio.get_running_loop().time
    if sniffio.current_async_library() == "trio":
        import trio

        return trio.current_time
    return anyio.current_time  # pragma: no cover - anyio has no other backend


class FutureEvent(anyio.Event):
    """anyio's ``Event`` on asyncio, made of one future per waiter and nothing else.

    anyio's asyncio event wraps an ``asyncio.Event``, whose first ``wait`` takes a
    global lock to bind it to its loop; hot paths make one event per call, so that
    binding and the two layers were a large share of a wake-up. Same behaviour: ``set``
    wakes every waiter, ``wait`` on a set event is a checkpoint, a cancelled waiter
    leaves the others waiting. Made by :func:`event_class` while asyncio runs.
    """

    __slots__ = ("_flag", "_waiters")

    def __new__(cls) -> FutureEvent:
        return object.__new__(cls)

    def __init__(self) -> None:
        self._flag = False
        self._waiters: list[asyncio.Future[None]] | None = None

    def set(self) -> None:
        """Set the flag and wake every waiter."""
        if self._flag:
            return
        self._flag = True
        waiters = self._waiters
        if waiters:
            for future in waiters:
                if not future.done():  # a cancelled waiter's future is done
                    future.set_result(None)

    def is_set(self) -> bool:
        """Whether :meth:`set` was called."""
        return self._flag

    async def wait(self) -> None:
        """Wait until the flag is set (a checkpoint if it is already)."""
        if self._flag:
            await anyio.lowlevel.checkpoint()
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = []
        waiters.append(future)
        try:
            await future
        finally:
            waiters.remove(future)

    def statistics(self) -> anyio.EventStatistics:
        """How many tasks wait."""
        return anyio.EventStatistics(len(self._waiters or ()))


@asynccontextmanager
async def task_group() -> AsyncIterator[TaskGroup]:
    """An anyio task group whose lone error comes out as itself.

    Context managers that keep background tasks while their caller's block runs
    (connections, servers, workers) would otherwise hand every error from that block
    back wrapped in an ``ExceptionGroup``, so ``except ToolCallError`` around them
    would never match. Several errors still come out as a group.
    """
    try:
        async with anyio.create_task_group() as group:
            yield group
    except BaseExceptionGroup as errors:
        if len(errors.exceptions) == 1:
            raise errors.exceptions[0] from None
        raise


class HeldTaskGroup:
    """A task group held open from its owner's ``__aenter__`` to its ``__aexit__``.

    For objects whose background tasks run while their caller's block does (connections,
    bridges, federations): ``async with held.open() as group:`` in ``__aenter__`` (an
    error before the block ends leaves the group again), ``await held.close(*exc_info)``
    in ``__aexit__``. The block's exception is passed in: the task group must see a
    cancellation or a ``KeyboardInterrupt``, or it would swallow it.
    """

    def __init__(self) -> None:
        #: The group, once opened.
        self.group: TaskGroup | None = None
        self._stack: AsyncExitStack | None = None

    @asynccontextmanager
    async def open(self) -> AsyncIterator[TaskGroup]:
        """Enter the group; it stays open after this block unless the block fails."""
        if self.group is not None:
            raise RuntimeError("The task group is open already")
        try:
            async with AsyncExitStack() as stack:
                self.group = await stack.enter_async_context(task_group())
                yield self.group
                self._stack = stack.pop_all()
        except BaseException:
            self.group = None
            raise

    async def close(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
        *,
        cancel: bool = True,
    ) -> None:
        """Leave the group, after cancelling its tasks (``cancel``); idempotent.

        The group can then be opened again.
        """
        group, self.group = self.group, None
        if cancel and group is not None:
            group.cancel_scope.cancel()
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.__aexit__(exc_type, exc, tb)


async def call_maybe_async(callback: Callable[..., Any], *args: Any) -> Any:
    """Call a user's callback, plain or async, and return what it returned."""
    result = callback(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


async def expire_calls(calls: PendingCalls) -> None:
    """Time out ``calls`` as their deadlines pass; runs until cancelled.

    One task for all of a connection's calls: it sleeps until the earliest deadline and
    is woken only when a new call's deadline comes before that (a cancel scope per call
    would cost a large share of a fast call).
    """
    new_event = event_class()
    while True:
        wake = new_event()
        calls.timer_wake = wake.set
        with anyio.CancelScope(deadline=calls.arm()):
            await wake.wait()
        calls.expire(anyio.current_time())


class UntilSuspended(Generic[T]):
    """``await UntilSuspended(coro, on_suspend)``: await ``coro`` in this task, calling
    ``on_suspend()`` once, just before it first suspends (never, if it finishes first).

    Awaiting it is awaiting ``coro`` (what it yields goes to this task's runner, and what
    the runner sends or throws goes back), so cancel scopes and the backend's traps work
    as for a plain ``await``, on asyncio and trio alike. A frame's reading worker runs a
    call this way and hands its reading turn on only when the call waits; afterwards,
    :attr:`suspended` says whether it did.
    """

    __slots__ = ("_coro", "_on_suspend", "suspended")

    def __init__(self, coro: Coroutine[Any, Any, T], on_suspend: Callable[[], object]) -> None:
        self._coro = coro
        self._on_suspend = on_suspend
        #: Whether ``coro`` suspended (``on_suspend`` was called).
        self.suspended = False

    def __await__(self) -> Generator[Any, Any, T]:
        coro = self._coro
        try:
            value = coro.send(None)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        self.suspended = True
        try:
            self._on_suspend()
        except BaseException:
            coro.close()
            raise
        while True:
            try:
                sent = yield value
            except BaseException as exc:  # cancellation, GeneratorExit: into coro
                try:
                    value = coro.throw(exc)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
            else:
                try:
                    value = coro.send(sent)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
