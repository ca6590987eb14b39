"""Small helpers over anyio for hot paths."""

from __future__ import annotations

from collections.abc import Callable

import anyio

__all__ = ["event_class"]


def event_class() -> Callable[[], anyio.Event]:
    """The running backend's ``Event`` class, to construct events without a lookup.

    ``anyio.Event()`` finds the running backend on every call, which costs more than
    the event itself; hot paths create one per message. Call this inside the event loop.
    """
    return type(anyio.Event())
