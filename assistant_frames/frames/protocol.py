"""The frame wire protocol, sans-I/O: message models, decoding and encoding.

Every message is ``{"channel": "assistant-ui-frame", "message": {...}}``. :func:`decode`
turns a received value into one of the message models below, returns ``None`` for values
that are not ours (another channel, not an object), and raises :class:`MalformedMessage`
for values on our channel that do not validate. The ``encode_*`` functions build the
plain JSON-compatible dicts to send. Nothing here awaits or touches a transport.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    TypeAdapter,
    ValidationError,
)
from typing_extensions import TypedDict

from .._text import describe_validation_error
from ..errors import DOCUMENT_CHANGED, PROVIDER_DISPOSED, RESULT_NOT_SENDABLE
from ..registry.events import LogLevel, ToolEvent, ToolLog, ToolProgress
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


class _ReceivedContext(TypedDict, total=False):
    """What a received context must look like before its tools are checked one by one.

    Tools are checked by :func:`check_tool` while the host walks them anyway, rather
    than by Pydantic up front: a context can hold thousands of tools.
    """

    system: str | None
    tools: Any  # checked by check_tools
    uiResources: Any  # checked by decode_ui_resources


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    #: The sending frame's document (``@assistant-ui/core`` 0.3.35): one per page load
    #: or provider session, stamped by frames on everything they send and by hosts on
    #: their ``tool-call``s. ``None`` from older peers.
    document_id: str | None = Field(None, alias="documentId")


class ModelContextRequest(_Message):
    """host -> frame: send me your context (and, per the JS host, keep me updated).

    ``requestId`` (0.3.35) is echoed by the ``model-context-update`` that answers it.
    """

    type: Literal["model-context-request"] = "model-context-request"
    request_id: str | None = Field(None, alias="requestId")


class ModelContextSubscribe(_Message):
    """host -> frame: push every change to me until I unsubscribe.

    ``patches: true`` (this library's addition; the JS frame ignores the whole message)
    asks for each change as a ``model-context-patch`` rather than a whole snapshot.
    """

    type: Literal["model-context-subscribe"] = "model-context-subscribe"
    patches: Any = None  # only ``true`` asks; anything else is ignored

    @property
    def wants_patches(self) -> bool:
        """True when the host asked for changes as patches."""
        return self.patches is True


class ModelContextUnsubscribe(_Message):
    """host -> frame: stop pushing changes."""

    type: Literal["model-context-unsubscribe"] = "model-context-unsubscribe"


class ModelContextUpdate(_Message):
    """frame -> host: the frame's whole current context (``requestId``: the request it
    answers, if that one had an id)."""

    type: Literal["model-context-update"] = "model-context-update"
    context: _ReceivedContext
    request_id: str | None = Field(None, alias="requestId")
    #: To a host that asked for patches: the number the next patch follows from.
    seq: StrictInt | None = None


class ModelContextResponse(_Message):
    """frame -> host: same as an update; accepted, never sent (the JS host ignores it)."""

    type: Literal["model-context-response"] = "model-context-response"
    context: _ReceivedContext
    request_id: str | None = Field(None, alias="requestId")


class ModelContextPatch(_Message):
    """frame -> host, to a host that subscribed with ``patches: true``: what changed
    since the context numbered ``seq - 1`` (this library's addition).

    ``context`` holds only what changed: ``system`` when it did (``null``: none now),
    the tools added or replaced, ``uiResources`` whole when they changed; ``removed``
    names the tools that went, ``order`` all of them in order when the added ones do
    not simply go last. A host whose context is not number ``seq - 1`` asks for
    a snapshot instead (a ``model-context-request``).
    """

    type: Literal["model-context-patch"] = "model-context-patch"
    seq: StrictInt
    context: _ReceivedContext
    removed: list[str] = []
    #: Every tool's name in order, when the added tools do not simply go last.
    order: list[str] | None = None


class ProviderDisposedMessage(_Message):
    """frame -> host (0.3.35): the frame stopped serving; its running calls were answered
    with an error, and it takes no new ones until its next ``model-context-update``."""

    type: Literal["provider-disposed"] = "provider-disposed"


class ToolCall(_Message):
    """host -> frame: run ``tool_name`` with ``args``; answer with a ``tool-result``.

    ``events: true`` (this library's addition; the JS frame ignores it) asks for the
    call's ``tool-progress`` and ``tool-log`` messages; without it none are sent.
    """

    type: Literal["tool-call"] = "tool-call"
    id: str
    tool_name: str = Field(alias="toolName")
    args: Any = None
    events: Any = None  # only ``true`` asks; anything else is ignored

    @property
    def wants_events(self) -> bool:
        """True when the host asked for this call's progress and log messages."""
        return self.events is True


class ToolCancel(_Message):
    """host -> frame: abandon call ``id``; no result is sent for it."""

    type: Literal["tool-cancel"] = "tool-cancel"
    id: str


class ToolResult(_Message):
    """frame -> host: the outcome of call ``id``.

    A string ``error`` (even empty) means failure; anything else is success with
    ``result`` (a missing ``result`` is success with ``None``), as in the JS host.
    """

    type: Literal["tool-result"] = "tool-result"
    id: str
    result: Any = None
    error: Any = None
    # This library's additions (the JS host ignores them): a three-tier result's parts.
    content: Any = None
    structuredContent: Any = None
    meta: Any = Field(None, alias="_meta")

    def value(self) -> Any:
        """``result``, or the three-tier result the extra fields describe."""
        return three_tier_value(self.result, self.content, self.structuredContent, self.meta)

    @property
    def failed(self) -> bool:
        """True when the frame reported an error."""
        return isinstance(self.error, str)


_Number = StrictInt | StrictFloat


class ToolProgressMessage(_Message):
    """frame -> host: how far call ``id`` is (sent only if its ``tool-call`` asked).

    This library's addition; the JS host ignores it.
    """

    type: Literal["tool-progress"] = "tool-progress"
    id: str
    progress: _Number
    total: _Number | None = None
    message: str | None = None

    def event(self, tool_call_id: str, tool_name: str) -> ToolProgress:
        """The :class:`~assistant_frames.ToolProgress` it carries."""
        return ToolProgress(self.progress, self.total, self.message, tool_call_id, tool_name)


class ToolLogMessage(_Message):
    """frame -> host: a log message of call ``id`` (sent only if its ``tool-call`` asked).

    This library's addition; the JS host ignores it.
    """

    type: Literal["tool-log"] = "tool-log"
    id: str
    level: LogLevel
    message: str | None = None
    data: Any = None

    def event(self, tool_call_id: str, tool_name: str) -> ToolLog:
        """The :class:`~assistant_frames.ToolLog` it carries."""
        return ToolLog(self.level, self.message, self.data, tool_call_id, tool_name)


FrameMessage: TypeAlias = Annotated[
    ModelContextRequest
    | ModelContextSubscribe
    | ModelContextUnsubscribe
    | ModelContextUpdate
    | ModelContextResponse
    | ModelContextPatch
    | ProviderDisposedMessage
    | ToolCall
    | ToolCancel
    | ToolResult
    | ToolProgressMessage
    | ToolLogMessage,
    Field(discriminator="type"),
]

_message_validator = TypeAdapter[FrameMessage](FrameMessage).validator


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
    try:
        return _message_validator.validate_python(message)  # type: ignore[no-any-return]
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


def three_tier_value(result: Any, content: Any, structured: Any, meta: Any) -> Any:
    """A received result: a :class:`~assistant_frames.ToolResult` when the three-tier
    fields say one (malformed ones are dropped), else ``result``."""
    content = content if isinstance(content, (str, list)) else None
    if isinstance(content, list) and not all(isinstance(block, dict) for block in content):
        content = None
    meta = meta if isinstance(meta, dict) else None
    if content is None and structured is None and meta is None:
        return result
    return ThreeTierResult(content=content, structured_content=structured, meta=meta)


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
