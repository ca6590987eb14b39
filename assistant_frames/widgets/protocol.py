"""The ``AUI_*`` widget wire, sans I/O: decoding what a widget sends, encoding what it gets.

The wire of assistant-ui's tool-UI plan (``window.aui``), as plain dicts (what
``postMessage`` carries). Parent to iframe::

    {"type": "AUI_SET_GLOBALS", "globals": {...}}
    {"type": "AUI_METHOD_RESPONSE", "id": ..., "result": ...}   # or "error": "..."

Iframe to parent::

    {"type": "AUI_METHOD_CALL", "id": ..., "method": "...", "args": [...]}
    {"type": "ready" | "resize" | "action" | "addResult" | "error", "payload": ...}

The last line is the plan's legacy messages, which still reach the host. Nothing here
waits or sends; :class:`~assistant_frames.widgets.WidgetHost` drives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

__all__ = [
    "GLOBAL_NAMES",
    "LEGACY_TYPES",
    "METHODS",
    "METHOD_CALL",
    "METHOD_RESPONSE",
    "SET_GLOBALS",
    "LegacyMessage",
    "LegacyType",
    "MethodCall",
    "WidgetMessage",
    "changed_globals",
    "decode",
    "encode_error",
    "encode_result",
    "encode_set_globals",
]

SET_GLOBALS: Final = "AUI_SET_GLOBALS"
METHOD_RESPONSE: Final = "AUI_METHOD_RESPONSE"
METHOD_CALL: Final = "AUI_METHOD_CALL"

#: The plan's globals (``window.aui.theme``...), in its order.
GLOBAL_NAMES: Final = (
    "theme",
    "locale",
    "displayMode",
    "maxHeight",
    "toolInput",
    "toolOutput",
    "widgetState",
    "userAgent",
    "safeArea",
)

#: The plan's methods (``window.aui.callTool``...).
METHODS: Final = frozenset(
    {
        "callTool",
        "setWidgetState",
        "sendFollowUpMessage",
        "requestDisplayMode",
        "requestModal",
        "requestClose",
        "openExternal",
        "notifyIntrinsicHeight",
    }
)

LegacyType: TypeAlias = Literal["ready", "resize", "action", "addResult", "error"]
#: The plan's legacy iframe-to-parent messages.
LEGACY_TYPES: Final[frozenset[str]] = frozenset({"ready", "resize", "action", "addResult", "error"})

#: A method call's id: the plan uses strings; numbers are accepted and echoed as sent.
CallId: TypeAlias = str | int


@dataclass(frozen=True, slots=True)
class MethodCall:
    """``AUI_METHOD_CALL``: the widget calls ``method`` with ``args``; answered by ``id``."""

    id: CallId
    method: str
    args: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    """A legacy message (``ready``, ``resize``, ``action``, ``addResult``, ``error``)."""

    type: LegacyType
    payload: Any = None


WidgetMessage: TypeAlias = MethodCall | LegacyMessage


def decode(message: object) -> WidgetMessage | str:
    """What a widget sent, or (a string) why it is malformed and must be ignored."""
    if not isinstance(message, Mapping):
        return f"not an object ({type(message).__name__})"
    kind = message.get("type")
    if kind == METHOD_CALL:
        call_id = message.get("id")
        if isinstance(call_id, bool) or not isinstance(call_id, str | int):
            return "AUI_METHOD_CALL without a string or number id"
        method = message.get("method")
        if not isinstance(method, str):
            return "AUI_METHOD_CALL without a method name"
        args = message.get("args", [])
        if not isinstance(args, list):
            return "AUI_METHOD_CALL whose args are not an array"
        return MethodCall(call_id, method, tuple(args))
    if isinstance(kind, str) and kind in LEGACY_TYPES:
        legacy: LegacyType = kind  # type: ignore[assignment]  # checked just above
        return LegacyMessage(legacy, message.get("payload"))
    return f"unknown message type {kind!r}"


def encode_set_globals(globals_: Mapping[str, Any]) -> dict[str, Any]:
    """``AUI_SET_GLOBALS`` carrying ``globals_`` (all of them, or only the changed ones)."""
    return {"type": SET_GLOBALS, "globals": dict(globals_)}


def encode_result(call_id: CallId, result: Any) -> dict[str, Any]:
    """A successful ``AUI_METHOD_RESPONSE`` (``result`` ``None`` for a void method)."""
    return {"type": METHOD_RESPONSE, "id": call_id, "result": result}


def encode_error(call_id: CallId, error: str) -> dict[str, Any]:
    """A failed ``AUI_METHOD_RESPONSE``: the widget's promise rejects with ``error``."""
    return {"type": METHOD_RESPONSE, "id": call_id, "error": error}


def changed_globals(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The globals of ``new`` that differ from (or are missing in) ``old``."""
    missing = object()
    return {name: value for name, value in new.items() if old.get(name, missing) != value}
