"""The frame wire protocol, sans-I/O: message models, decoding and encoding.

Every message is ``{"channel": "assistant-ui-frame", "message": {...}}``. :func:`decode`
turns a received value into one of the message models below, returns ``None`` for values
that are not ours (another channel, not an object), and raises :class:`MalformedMessage`
for values on our channel that do not validate. The ``encode_*`` functions build the
plain JSON-compatible dicts to send. Nothing here awaits or touches a transport.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from pydantic_core import ValidationError

from .._lazy import lazy_exports
from .._text import describe_validation_error
from ..errors import DOCUMENT_CHANGED, PROVIDER_DISPOSED, RESULT_NOT_SENDABLE
from ..registry.events import ToolEvent, ToolProgress
from ..registry.ui import ToolResult as ThreeTierResult
from ..registry.ui import UIResource
from .serialization import (
    ContextChanges,
    NotJSONSerializable,
    SerializedModelContext,
    SerializedTool,
    check_tool,
    check_tools,
    serialize_context,
    serialize_tool,
    serialize_tools,
    to_json_value,
    tool_options,
)

if TYPE_CHECKING:
    from ._messages import (
        FrameMessage,
        ModelContextPatch,
        ModelContextRequest,
        ModelContextResponse,
        ModelContextSubscribe,
        ModelContextUnsubscribe,
        ModelContextUpdate,
        ProviderDisposedMessage,
        ToolCall,
        ToolCancel,
        ToolLogMessage,
        ToolProgressMessage,
        ToolResult,
    )

__all__ = [
    "CHANNEL",
    "RESULT_NOT_SENDABLE",
    "FrameMessage",
    "MalformedMessage",
    "ModelContextRequest",
    "ModelContextResponse",
    "ModelContextSubscribe",
    "ModelContextUnsubscribe",
    "ModelContextPatch",
    "ModelContextUpdate",
    "NotJSONSerializable",
    "ProviderDisposedMessage",
    "SerializedModelContext",
    "SerializedTool",
    "ToolCall",
    "ToolCancel",
    "ToolLogMessage",
    "ToolProgressMessage",
    "ToolResult",
    "decode",
    "DOCUMENT_CHANGED",
    "PROVIDER_DISPOSED",
    "decode_ui_resources",
    "encode_context_patch",
    "encode_context_request",
    "encode_context_subscribe",
    "encode_context_unsubscribe",
    "encode_context_update",
    "encode_provider_disposed",
    "encode_tool_call",
    "encode_tool_cancel",
    "encode_tool_error",
    "encode_tool_event",
    "encode_tool_result",
    "new_document_id",
    "FastContext",
    "FastDisposed",
    "FastPatch",
    "fast_frame_message",
    "fast_host_message",
    "fast_tool_call",
    "fast_tool_result",
    "check_tool",
    "check_tools",
    "serialize_context",
    "serialize_tool",
    "serialize_tools",
    "to_json_value",
    "tool_options",
]

CHANNEL: Final = "assistant-ui-frame"


def new_document_id() -> str:
    """A frame's ``documentId``: a random (version 4) UUID as text, as JavaScript's
    ``crypto.randomUUID()`` makes one. Not through ``uuid``, whose import (and its
    ``platform``) every worker's start would pay for this one call."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40  # version 4
    raw[8] = raw[8] & 0x3F | 0x80  # the RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# The message models are Pydantic models, in ._messages: imported on first use (PEP 562),
# by decode() or by their names here. A frame reads what hosts send it on the fast paths
# (fast_tool_call, fast_host_message) and so starts without them, or Pydantic.
_MESSAGES: Final = frozenset(
    {
        "FrameMessage",
        "ModelContextPatch",
        "ModelContextRequest",
        "ModelContextResponse",
        "ModelContextSubscribe",
        "ModelContextUnsubscribe",
        "ModelContextUpdate",
        "ProviderDisposedMessage",
        "ToolCall",
        "ToolCancel",
        "ToolLogMessage",
        "ToolProgressMessage",
        "ToolResult",
        "three_tier_value",
    }
)


__getattr__, __dir__ = lazy_exports(
    __name__, globals(), dict.fromkeys(_MESSAGES, "assistant_frames.frames._messages")
)


class MalformedMessage(ValueError):
    """A message on our channel that does not validate.

    ``tool_call_id`` is set when it looks like a ``tool-call`` with a string ``id``, so
    the frame can still answer it with an error ``tool-result``.
    """

    def __init__(self, reason: str, *, message: object, tool_call_id: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.message = message
        self.tool_call_id = tool_call_id


def decode(raw: object) -> FrameMessage | None:
    """Decode a received value: a message, ``None`` (not ours), or ``MalformedMessage``."""
    if not isinstance(raw, dict) or raw.get("channel") != CHANNEL:
        return None
    message = raw.get("message")
    from ._messages import message_validator

    try:
        return message_validator.validate_python(message)  # type: ignore[no-any-return]
    except ValidationError as exc:
        tool_call_id = None
        if isinstance(message, dict) and message.get("type") == "tool-call":
            candidate = message.get("id")
            if isinstance(candidate, str):
                tool_call_id = candidate
        raise MalformedMessage(
            describe_validation_error(exc), message=message, tool_call_id=tool_call_id
        ) from None


def fast_tool_call(raw: object) -> tuple[str, str, Any, bool, str | None] | None:
    """``(id, toolName, args, events, documentId)`` of a well-formed ``tool-call``, else
    ``None``.

    The hot path: what :func:`decode` would accept as a :class:`ToolCall`, checked with
    a few type tests instead of a model. ``None`` means: use :func:`decode`.
    """
    if type(raw) is dict and raw.get("channel") == CHANNEL:
        message = raw.get("message")
        if type(message) is dict and message.get("type") == "tool-call":
            call_id = message.get("id")
            name = message.get("toolName")
            document = message.get("documentId")
            if (
                type(call_id) is str
                and type(name) is str
                and (document is None or type(document) is str)
            ):
                return call_id, name, message.get("args"), message.get("events") is True, document
    return None


def fast_host_message(raw: object) -> tuple[str, Any] | None:
    """``(type, value)`` of a well-formed ``model-context-request`` (``value``: its
    ``requestId``, or ``None``), ``model-context-subscribe`` (``value``: whether it asks
    for patches), ``model-context-unsubscribe`` (``None``) or ``tool-cancel`` (its
    ``id``), else ``None``.

    As :func:`fast_tool_call`, for the rest of what a host sends a frame: what
    :func:`decode` would accept as those messages, checked without their models. ``None``
    means: use :func:`decode`.
    """
    message = _fast_message(raw)
    if message is not None:
        kind = message.get("type")
        if kind == "model-context-request":
            request_id = message.get("requestId")
            if request_id is None or type(request_id) is str:
                return kind, request_id
        elif kind == "model-context-subscribe":
            return kind, message.get("patches") is True
        elif kind == "model-context-unsubscribe":
            return kind, None
        elif kind == "tool-cancel":
            call_id = message.get("id")
            if type(call_id) is str:
                return kind, call_id
    return None


def fast_tool_result(raw: object) -> tuple[str, Any, Any, Any] | None:
    """``(id, result, error, documentId)`` of a well-formed ``tool-result``, else ``None``
    (the ``documentId`` is as received: the caller checks it).

    As :func:`fast_tool_call`, for what :func:`decode` would accept as a
    :class:`ToolResult`.
    """
    if type(raw) is dict and raw.get("channel") == CHANNEL:
        message = raw.get("message")
        if type(message) is dict and message.get("type") == "tool-result":
            call_id = message.get("id")
            if type(call_id) is str and not (_THREE_TIERS & message.keys()):
                return (
                    call_id,
                    message.get("result"),
                    message.get("error"),
                    message.get("documentId"),
                )
    return None


_THREE_TIERS: Final = frozenset({"content", "structuredContent", "_meta"})


class FastContext(NamedTuple):
    """A ``model-context-update`` or ``model-context-response`` read by
    :func:`fast_frame_message`: the fields of :class:`ModelContextUpdate` a host reads."""

    type: str
    context: dict[str, Any]
    request_id: str | None
    seq: int | None  # always None for a response
    document_id: str | None


class FastPatch(NamedTuple):
    """A ``model-context-patch`` read by :func:`fast_frame_message`: the fields of
    :class:`ModelContextPatch`."""

    type: str
    seq: int
    context: dict[str, Any]
    removed: list[str]
    order: list[str] | None
    document_id: str | None


class FastDisposed(NamedTuple):
    """A ``provider-disposed`` read by :func:`fast_frame_message`."""

    type: str
    document_id: str | None


#: What a received context keeps (as the models' TypedDict does: other keys are dropped).
_CONTEXT_KEYS: Final = ("system", "tools", "uiResources")


def _fast_context(wire: object) -> dict[str, Any] | None:
    if type(wire) is not dict:
        return None
    system = wire.get("system")
    if system is not None and type(system) is not str:
        return None
    return {key: wire[key] for key in _CONTEXT_KEYS if key in wire}


def _names(value: object) -> list[str] | None:
    # At C speed: an ``order`` names every tool of a context (thousands).
    if type(value) is list and set(map(type, value)) <= {str}:
        return list(value)
    return None


def _fast_message(raw: object) -> dict[str, Any] | None:
    """The ``message`` of an envelope on our channel whose ``documentId`` is a string or
    absent, else ``None``: what every fast path but the two per call starts with."""
    if type(raw) is not dict or raw.get("channel") != CHANNEL:
        return None
    message = raw.get("message")
    if type(message) is not dict:
        return None
    document = message.get("documentId")
    if document is not None and type(document) is not str:
        return None
    return message


def fast_frame_message(raw: object) -> FastContext | FastPatch | FastDisposed | None:
    """A well-formed ``model-context-update``, ``-response``, ``-patch`` or
    ``provider-disposed``, else ``None``.

    As :func:`fast_tool_call`, for the rest of what a frame sends a host: what
    :func:`decode` would accept as those messages, with the same fields, checked without
    their models (so a host starts without Pydantic). ``None`` means: use :func:`decode`.
    """
    message = _fast_message(raw)
    if message is None:
        return None
    document = message.get("documentId")
    kind = message.get("type")
    if kind == "model-context-update" or kind == "model-context-response":
        request_id = message.get("requestId")
        seq = message.get("seq") if kind == "model-context-update" else None
        context = _fast_context(message.get("context"))
        if (
            context is not None
            and (request_id is None or type(request_id) is str)
            and (seq is None or type(seq) is int)
        ):
            return FastContext(kind, context, request_id, seq, document)
    elif kind == "model-context-patch":
        seq = message.get("seq")
        context = _fast_context(message.get("context"))
        removed = _names(message["removed"]) if "removed" in message else []
        wire_order = message.get("order")
        order = None if wire_order is None else _names(wire_order)
        if (
            type(seq) is int
            and context is not None
            and removed is not None
            and (order is not None or wire_order is None)
        ):
            return FastPatch(kind, seq, context, removed, order, document)
    elif kind == "provider-disposed":
        return FastDisposed(kind, document)
    return None


def decode_ui_resources(wire: Any) -> dict[str, UIResource]:
    """The ``uiResources`` of a received context by URI; ``ValueError`` if malformed."""
    if wire is None:
        return {}
    if not isinstance(wire, list):
        raise ValueError(f"uiResources must be a list, not {wire!r:.60}")
    resources: dict[str, UIResource] = {}
    for entry in wire:
        try:
            resource = UIResource.from_wire(entry)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"uiResources: {exc}") from None
        resources.setdefault(resource.uri, resource)
    return resources


# -- encoding --------------------------------------------------------------------------------


def _envelope(message: dict[str, Any]) -> dict[str, Any]:
    return {"channel": CHANNEL, "message": message}


def encode_context_request(*, request_id: str | None = None) -> dict[str, Any]:
    """``model-context-request``; ``request_id`` asks for it to be echoed (0.3.35)."""
    if request_id is None:
        return _envelope({"type": "model-context-request"})
    return _envelope({"type": "model-context-request", "requestId": request_id})


def encode_context_subscribe(*, patches: bool = False) -> dict[str, Any]:
    """``model-context-subscribe``; ``patches`` asks for changes as patches."""
    if patches:
        return _envelope({"type": "model-context-subscribe", "patches": True})
    return _envelope({"type": "model-context-subscribe"})


def encode_context_unsubscribe() -> dict[str, Any]:
    """``model-context-unsubscribe``."""
    return _envelope({"type": "model-context-unsubscribe"})


def encode_context_update(
    context: SerializedModelContext,
    *,
    document_id: str | None = None,
    request_id: str | None = None,
    seq: int | None = None,
) -> dict[str, Any]:
    """``model-context-update`` carrying an already serialized context; ``request_id``
    is the request it answers, ``seq`` its number (to a host that asked for patches)."""
    message: dict[str, Any] = {"type": "model-context-update", "context": context}
    if request_id is not None:
        message["requestId"] = request_id
    if seq is not None:
        message["seq"] = seq
    if document_id is not None:
        message["documentId"] = document_id
    return _envelope(message)


def encode_context_patch(
    seq: int, changes: ContextChanges, *, document_id: str | None = None
) -> dict[str, Any]:
    """``model-context-patch`` number ``seq``, carrying ``changes``."""
    message: dict[str, Any] = {
        "type": "model-context-patch",
        "seq": seq,
        "context": changes.changed,
    }
    if changes.removed:
        message["removed"] = changes.removed
    if changes.order is not None:
        message["order"] = changes.order
    if document_id is not None:
        message["documentId"] = document_id
    return _envelope(message)


def encode_provider_disposed(document_id: str | None = None) -> dict[str, Any]:
    """``provider-disposed``."""
    if document_id is None:
        return _envelope({"type": "provider-disposed"})
    return _envelope({"type": "provider-disposed", "documentId": document_id})


def encode_tool_call(
    tool_call_id: str,
    tool_name: str,
    args: Any,
    *,
    events: bool = False,
    document_id: str | None = None,
) -> dict[str, Any]:
    """``tool-call``; ``events`` asks for its ``tool-progress`` and ``tool-log`` messages,
    ``document_id`` addresses the frame document the host knows (0.3.35)."""
    message = {"type": "tool-call", "id": tool_call_id, "toolName": tool_name, "args": args}
    if events:
        message["events"] = True
    if document_id is not None:
        message["documentId"] = document_id
    return _envelope(message)


def encode_tool_event(
    tool_call_id: str, event: ToolEvent, *, document_id: str | None = None
) -> dict[str, Any]:
    """``tool-progress`` or ``tool-log`` for call ``tool_call_id``; unset fields left out."""
    message: dict[str, Any]
    if isinstance(event, ToolProgress):
        message = {"type": "tool-progress", "id": tool_call_id, "progress": event.progress}
        if event.total is not None:
            message["total"] = event.total
    else:
        message = {"type": "tool-log", "id": tool_call_id, "level": event.level}
        if event.data is not None:
            message["data"] = event.data
    if event.message is not None:
        message["message"] = event.message
    if document_id is not None:
        message["documentId"] = document_id
    return _envelope(message)


def encode_tool_cancel(tool_call_id: str) -> dict[str, Any]:
    """``tool-cancel``."""
    return _envelope({"type": "tool-cancel", "id": tool_call_id})


def encode_tool_result(
    tool_call_id: str, result: Any, *, document_id: str | None = None
) -> dict[str, Any]:
    """A successful ``tool-result``; ``result`` must already be JSON-compatible.

    A :class:`~assistant_frames.ToolResult` sends what a model may see as ``result``
    (so a JS host gives its model nothing else) and its tiers as ``content``,
    ``structuredContent`` and ``_meta`` for a Python host to rebuild it.
    """
    if isinstance(result, ThreeTierResult):
        message = {"type": "tool-result", "id": tool_call_id, "result": result.model_value()}
        if result.content is not None:  # a string stays one: the host rebuilds it as it was
            content = result.content
            message["content"] = content if isinstance(content, str) else result.content_blocks()
        if result.structured_content is not None:
            message["structuredContent"] = result.structured_content
        if result.meta is not None:
            message["_meta"] = result.meta
    else:
        message = {"type": "tool-result", "id": tool_call_id, "result": result}
    if document_id is not None:
        message["documentId"] = document_id
    return _envelope(message)


def encode_tool_error(
    tool_call_id: str, error: str, *, document_id: str | None = None
) -> dict[str, Any]:
    """A failed ``tool-result``."""
    if document_id is None:
        return _envelope({"type": "tool-result", "id": tool_call_id, "error": error})
    return _envelope(
        {"type": "tool-result", "id": tool_call_id, "error": error, "documentId": document_id}
    )
