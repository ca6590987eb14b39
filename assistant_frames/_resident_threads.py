"""Threads that stay, for sync tools on asyncio: one job queue, at most ``total`` threads.

``anyio.to_thread.run_sync`` yields to the event loop twice before it hands a function
to a thread (a checkpoint, and its capacity limiter's), hands it over through a
``queue.Queue`` and starts no sooner than the loop gets to it: some 115 µs of CPU per
call on a 2-core machine, three times a bare hand-off. Here a call queues a job on a
``SimpleQueue`` that up to ``total`` threads take in turn, and the thread that finishes a
job takes the next at once, without the event loop (a CPU-bound tool's thread never
waits for it between calls).

They are daemon threads: a program ends without waiting for a sync tool still running
(its caller was cancelled, or gave up). They are anyio worker threads as far as anyio
can tell (``anyio.from_thread`` works in them, and ``check_cancelled`` sees the caller's
cancel scope): that takes anyio's ``claim_worker_thread`` and ``threadlocals``, the same
since anyio 4.4. Where they are missing (another anyio), :data:`AVAILABLE` is false and
:class:`~assistant_frames._threads.ThreadLimiter` uses ``anyio.to_thread`` instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import weakref
from collections.abc import Callable
from contextlib import suppress
from queue import Empty, SimpleQueue
from typing import Any

import anyio
import sniffio

from ._anyio import cancel_scope_class

try:
    from anyio._backends._asyncio import AsyncIOBackend
    from anyio._core._eventloop import claim_worker_thread, threadlocals
except ImportError:  # pragma: no cover - an anyio that keeps these elsewhere
    AVAILABLE = False
else:
    AVAILABLE = True

__all__ = ["AVAILABLE", "ResidentThreads"]

_IDLE_SECONDS = 10.0  # a thread with no job for this long ends (anyio's figure too)


class _Job:
    __slots__ = ("context", "fn", "future", "loop", "scope")

    def __init__(
        self,
        fn: Callable[[], Any],
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        scope: anyio.CancelScope,
    ) -> None:
        self.fn = fn
        self.loop = loop
        self.future = future
        self.scope = scope
        self.context = contextvars.copy_context()
        # As in anyio's threads: no async library in the thread (sniffio's variable).
        self.context.run(sniffio.current_async_library_cvar.set, None)


class ResidentThreads:
    """Up to ``total`` threads taking jobs from one queue, started as jobs come and ended
    after ``_IDLE_SECONDS`` without one. Thread-safe; jobs may come from several loops."""

    __slots__ = (
        "__weakref__",
        "_idle",
        "_jobs",
        "_lock",
        "_new_scope",
        "_pending",
        "_running",
        "_started",
        "total",
    )

    def __init__(self, total: int) -> None:
        """Made inside a running asyncio loop (the only backend that uses them)."""
        self.total = total
        self._new_scope = cancel_scope_class()
        self._reset()
        _pools.add(self)

    def _reset(self) -> None:
        """No thread and no job: as made, and in a forked child (whose threads are gone)."""
        self._jobs: SimpleQueue[_Job] = SimpleQueue()
        self._lock = threading.Lock()
        self._started = 0  # threads alive
        self._idle = 0  # of them, waiting for a job
        self._pending = 0  # jobs queued, not yet taken
        self._running = 0  # functions running now (abandoned ones included)

    @property
    def running(self) -> int:
        """How many functions run now."""
        return self._running

    async def run_sync(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` in one of the threads; a cancelled caller returns at once (a job
        not yet started is skipped; a running one finishes in its thread)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._new_scope() as scope:  # what check_cancelled sees from the thread
            self._submit(_Job(fn, loop, future, scope))
            return await future

    def _submit(self, job: _Job) -> None:
        with self._lock:
            self._pending += 1
            start = self._pending > self._idle and self._started < self.total
            if start:
                self._started += 1
        if start:
            thread = threading.Thread(target=self._work, name="assistant-frames tool", daemon=True)
            try:
                thread.start()
            except BaseException:  # no thread to be had (a process limit): not queued
                with self._lock:
                    self._started -= 1
                    self._pending -= 1
                raise
        self._jobs.put(job)

    def _work(self) -> None:
        jobs, lock = self._jobs, self._lock
        while True:
            with lock:
                self._idle += 1
            try:
                job = jobs.get(timeout=_IDLE_SECONDS)
            except Empty:
                with lock:
                    if self._pending >= self._idle:  # a job came meanwhile: take it
                        self._idle -= 1
                        continue
                    self._idle -= 1
                    self._started -= 1
                return
            with lock:
                self._idle -= 1
                self._pending -= 1
                if job.future.cancelled():  # its caller left before it started
                    continue
                self._running += 1
            try:
                result, error = self._run(job), None
            except BaseException as exc:
                result, error = None, exc
            finally:
                with lock:
                    self._running -= 1
            with suppress(RuntimeError):  # the loop has closed: nobody waits for the result
                job.loop.call_soon_threadsafe(_settle, job.future, result, error)
            del job, result, error

    @staticmethod
    def _run(job: _Job) -> Any:
        with claim_worker_thread(AsyncIOBackend, job.loop):
            threadlocals.current_cancel_scope = job.scope
            try:
                return job.context.run(job.fn)
            finally:
                del threadlocals.current_cancel_scope


#: Every pool, so that a forked child starts its own threads (a fork copies no thread).
_pools: weakref.WeakSet[ResidentThreads] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for pool in list(_pools):
        pool._reset()  # noqa: SLF001


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # its caller was cancelled while it ran
        return
    if isinstance(error, StopIteration):  # a future refuses it (so does anyio)
        wrapped = RuntimeError("the function raised StopIteration")
        wrapped.__cause__ = error
        error = wrapped
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)
