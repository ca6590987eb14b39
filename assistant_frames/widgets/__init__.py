"""Hosting widgets written for the ``AUI_*`` wire (assistant-ui's ``window.aui`` plan).

:class:`WidgetHost` answers one widget's method calls, pushes its globals, keeps its
state in a :class:`WidgetStateStore` and enforces its :class:`WidgetManifest`; the wire
itself is in :mod:`assistant_frames.widgets.protocol`, without I/O.
"""

from __future__ import annotations

from . import protocol
from .host import MethodError, WidgetHost
from .manifest import BASE_METHODS, PERMISSION_METHODS, WidgetManifest
from .store import MemoryWidgetStateStore, SQLiteWidgetStateStore, WidgetState, WidgetStateStore

__all__ = [
    "BASE_METHODS",
    "PERMISSION_METHODS",
    "MemoryWidgetStateStore",
    "MethodError",
    "SQLiteWidgetStateStore",
    "WidgetHost",
    "WidgetManifest",
    "WidgetState",
    "WidgetStateStore",
    "protocol",
]
