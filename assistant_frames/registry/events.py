"""What a running tool tells its caller before it returns: progress and log messages.

A tool reports them through its :class:`~assistant_frames.ToolCallContext`
(``report_progress``, ``log``); a caller receives them as :class:`ToolProgress` and
:class:`ToolLog` events through the ``on_event`` callback of ``call_tool``, whichever
boundaries (frames, MCP) lie between the two.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, get_args

__all__ = [
    "LOG_LEVELS",
    "LogLevel",
    "ToolEvent",
    "ToolEventCallback",
    "ToolEventSubscribers",
    "ToolLog",
    "ToolProgress",
    "deliver_event",
]

logger = logging.getLogger("assistant_frames.registry")

LogLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
"""MCP's (syslog's) log levels, least severe first."""

LOG_LEVELS: Final[tuple[LogLevel, ...]] = get_args(LogLevel)


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A tool call's progress: ``progress`` of ``total`` (if known), with a ``message``.

    ``tool_call_id`` and ``tool_name`` name the call as the receiver knows it.
    """

    progress: float
    total: float | None = None
    message: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None


@dataclass(frozen=True, slots=True)
class ToolLog:
    """A log message from a tool call: a ``level``, a ``message`` and/or JSON ``data``.

    ``tool_call_id`` and ``tool_name`` name the call as the receiver knows it; both are
    ``None`` for a message an MCP server logged outside any call.
    """

    level: LogLevel
    message: str | None = None
    data: Any = None
    tool_call_id: str | None = None
    tool_name: str | None = None


ToolEvent: TypeAlias = ToolProgress | ToolLog
"""What a running tool reports to its caller."""

ToolEventCallback: TypeAlias = Callable[[ToolEvent], object]
"""Receives a call's events, on the event loop's thread. It must not block: hand slow
work to a task (a memory object stream, say). What it raises is logged, never the call's."""


def deliver_event(callback: ToolEventCallback, event: ToolEvent) -> None:
    """Call ``callback(event)``; an exception is logged, so it never breaks the call."""
    try:
        callback(event)
    except Exception:
        logger.warning("A tool event callback raised; the call goes on", exc_info=True)


class ToolEventSubscribers:
    """The callbacks subscribed to every call's events on one connection.

    Calling it delivers an event to each; :attr:`active` (and its truth) says whether
    anyone is subscribed.
    """

    __slots__ = ("_callbacks", "_ids", "active")

    def __init__(self) -> None:
        self._callbacks: dict[int, ToolEventCallback] = {}
        self._ids = itertools.count()
        #: Whether anyone is subscribed (an attribute: hot paths read it per call).
        self.active = False

    def add(self, callback: ToolEventCallback) -> Callable[[], None]:
        """Subscribe ``callback``; returns the function that unsubscribes it."""
        if not callable(callback):
            raise TypeError(f"subscribe_tool_events() needs a callable, not {callback!r}")
        key = next(self._ids)
        self._callbacks[key] = callback
        self.active = True

        def unsubscribe() -> None:
            self._callbacks.pop(key, None)
            self.active = bool(self._callbacks)

        return unsubscribe

    def callbacks(self) -> list[ToolEventCallback]:
        """The subscribed callbacks, in the order they subscribed."""
        return list(self._callbacks.values())

    def __bool__(self) -> bool:
        return self.active

    def __call__(self, event: ToolEvent) -> None:
        for callback in tuple(self._callbacks.values()):
            deliver_event(callback, event)
