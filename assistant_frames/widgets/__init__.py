"""Hosting widgets written for the ``AUI_*`` wire (assistant-ui's ``window.aui`` plan).

:class:`WidgetHost` answers one widget's method calls, pushes its globals, keeps its
state in a :class:`WidgetStateStore` and enforces its :class:`WidgetManifest`.
:class:`WidgetStateKeeper` keeps state the same way for an MCP Apps ``AppBridge`` hosting
a widget that runs ``widget-runtime.js``. The ``AUI_*`` wire
itself is in :mod:`assistant_frames.widgets.protocol`, without I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from . import protocol
    from .host import MethodError, WidgetHost
    from .keeper import WIDGET_STATE_METHOD, InvalidWidgetState, WidgetStateKeeper
    from .manifest import BASE_METHODS, PERMISSION_METHODS, WidgetManifest
    from .store import MemoryWidgetStateStore, SQLiteWidgetStateStore, WidgetState, WidgetStateStore

__all__ = [
    "BASE_METHODS",
    "WIDGET_STATE_METHOD",
    "InvalidWidgetState",
    "PERMISSION_METHODS",
    "MemoryWidgetStateStore",
    "MethodError",
    "SQLiteWidgetStateStore",
    "WidgetHost",
    "WidgetManifest",
    "WidgetState",
    "WidgetStateKeeper",
    "WidgetStateStore",
    "protocol",
]

# Imported on first use (PEP 562): the wire, the manifest or a store without the host.
_LAZY = {
    "protocol": "",
    "MethodError": ".host",
    "WidgetHost": ".host",
    "InvalidWidgetState": ".keeper",
    "WIDGET_STATE_METHOD": ".keeper",
    "WidgetStateKeeper": ".keeper",
    "BASE_METHODS": ".manifest",
    "PERMISSION_METHODS": ".manifest",
    "WidgetManifest": ".manifest",
    "MemoryWidgetStateStore": ".store",
    "SQLiteWidgetStateStore": ".store",
    "WidgetState": ".store",
    "WidgetStateStore": ".store",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)
