"""``ToolCallContext``: what a running tool learns about its call, and how it talks back.

The context carries the call's id and tool name, its cancellation (a flag for async
tools, a blocking wait for sync tools in a worker thread), and the progress and log
events the tool reports to its caller, delivered on the event loop's thread whichever
thread reports them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
from collections.abc import Callable
from typing import Any

from .._threads import asyncio_call_soon_threadsafe, call_soon_threadsafe
from .events import (
    LOG_LEVELS,
    LogLevel,
    ToolEvent,
    ToolEventCallback,
    ToolLog,
    ToolProgress,
    deliver_event,
)

__all__ = ["ToolCallContext"]

logger = logging.getLogger("assistant_frames.registry")

_event_lock = threading.Lock()


class ToolCallContext:
    """What an ``execute`` function may learn about the call it is serving, and how it
    talks back to the caller before it returns.

    Async tools are cancelled the ordinary way (their task is cancelled); sync tools run in
    a thread that cannot be interrupted, so they should poll :attr:`cancelled` or block in
    :meth:`wait_cancelled` instead of ``time.sleep``.

    :meth:`report_progress` and :meth:`log` send :class:`ToolProgress` and
    :class:`ToolLog` events to the caller's ``on_event`` callback, across frames and
    MCP. They never block and may be called from the event loop or from the tool's
    worker thread; when nobody listens (:attr:`wants_events` is false) they do nothing.
    """

    __slots__ = ("_cancelled", "_event", "_sink", "tool_call_id", "tool_name")

    def __init__(
        self,
        tool_call_id: str,
        tool_name: str,
        on_event: ToolEventCallback | None = None,
    ) -> None:
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self._cancelled = False
        self._event: threading.Event | None = None
        self._sink = None if on_event is None else _EventSink(on_event)

    @property
    def cancelled(self) -> bool:
        """True once the caller has cancelled this call (``tool-cancel`` or timeout)."""
        return self._cancelled

    @property
    def wants_events(self) -> bool:
        """True when the caller receives this call's progress and log events."""
        return self._sink is not None

    def cancel(self) -> None:
        """Mark the call cancelled and wake :meth:`wait_cancelled` (frames call this)."""
        with _event_lock:
            self._cancelled = True
            if self._event is not None:
                self._event.set()

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Block the calling thread until cancelled or ``timeout``; return :attr:`cancelled`.

        Meant for sync tools running in a worker thread; never call it on the event loop.
        """
        with _event_lock:
            if self._cancelled:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the caller how far the call is: ``progress`` of ``total`` (if known).

        Progress should only grow (MCP requires it). Reports faster than the caller can
        take them are coalesced: the latest wins.
        """
        sink = self._sink
        if sink is None or self._cancelled:
            return
        sink.emit(ToolProgress(progress, total, message, self.tool_call_id, self.tool_name))

    def log(self, level: LogLevel, message: str | None = None, *, data: Any = None) -> None:
        """Send the caller a log message at ``level`` (MCP's levels: ``"debug"``,
        ``"info"``, ``"notice"``, ``"warning"``, ``"error"``, ``"critical"``,
        ``"alert"``, ``"emergency"``), with optional JSON ``data``."""
        if level not in LOG_LEVELS:
            raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
        sink = self._sink
        if sink is None or self._cancelled:
            return
        sink.emit(ToolLog(level, message, data, self.tool_call_id, self.tool_name))

    def send_event(self, event: ToolEvent) -> None:
        """Pass on an event from elsewhere (a nested call) as this call's own.

        A frame host's tools use it: the progress of the call they forward becomes the
        progress of the call they serve.
        """
        sink = self._sink
        if sink is None or self._cancelled:
            return
        sink.emit(
            dataclasses.replace(event, tool_call_id=self.tool_call_id, tool_name=self.tool_name)
        )

    def __repr__(self) -> str:
        return (
            f"ToolCallContext(tool_call_id={self.tool_call_id!r}, "
            f"tool_name={self.tool_name!r}, cancelled={self._cancelled})"
        )


_MAX_PENDING_EVENTS = 100  # per call, reported from a thread and not yet on the loop


class _EventSink:
    """Delivers a call's events to its callback on the event loop's thread.

    Created on the loop (a context with a callback is made there). From another thread
    (a sync tool), events wait in a short list until the loop runs the one scheduled
    flush: a burst of progress from a thread keeps only its latest, and more than
    :data:`_MAX_PENDING_EVENTS` waiting events are dropped rather than grow memory.
    """

    __slots__ = ("_call_soon", "_dropped", "_lock", "_loop_thread", "_pending", "callback")

    def __init__(self, callback: ToolEventCallback) -> None:
        self.callback = callback
        self._loop_thread = threading.get_ident()
        self._call_soon: Callable[[Callable[[], Any]], Any] | None = None
        self._lock = threading.Lock()
        self._pending: list[ToolEvent] = []
        self._dropped = 0
        try:  # asyncio's, looked up directly: this runs once per call that listens
            self._call_soon = asyncio_call_soon_threadsafe(asyncio.get_running_loop())
        except RuntimeError:
            with contextlib.suppress(Exception):  # no loop at all: events stay on this thread
                self._call_soon = call_soon_threadsafe()

    def emit(self, event: ToolEvent) -> None:
        if threading.get_ident() == self._loop_thread or self._call_soon is None:
            deliver_event(self.callback, event)
            return
        with self._lock:
            pending = self._pending
            scheduled = bool(pending)
            if pending and type(event) is ToolProgress and type(pending[-1]) is ToolProgress:
                pending[-1] = event  # latest wins
            elif len(pending) < _MAX_PENDING_EVENTS:
                pending.append(event)
            else:
                self._dropped += 1
        if not scheduled:
            with contextlib.suppress(RuntimeError):  # the loop has ended: nobody listens
                self._call_soon(self._flush)

    def _flush(self) -> None:
        with self._lock:
            events, self._pending = self._pending, []
            dropped, self._dropped = self._dropped, 0
        if dropped:
            logger.warning("Dropped %d events of a tool call: its caller was too slow", dropped)
        for event in events:
            deliver_event(self.callback, event)
