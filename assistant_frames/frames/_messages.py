"""The frame protocol's message models: what :func:`~.protocol.decode` validates a
received message into.

Pydantic models, built when this module is first imported: by a host (which decodes
every context it is sent) or by the first message a frame cannot read on
:mod:`~.protocol`'s fast paths. A worker that is sent only tool calls and the context
messages never imports it, nor Pydantic: its start is that much faster. Their public
home is :mod:`assistant_frames.frames.protocol`, which imports them on first use.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, TypeAdapter
from typing_extensions import TypedDict

from ..registry.events import LogLevel, ToolLog, ToolProgress
from ..registry.ui import ToolResult as ThreeTierResult

__all__ = [
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
    "message_validator",
    "three_tier_value",
]


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

#: Validates a received message (the ``message`` of the envelope) into one of the models.
message_validator = TypeAdapter[FrameMessage](FrameMessage).validator


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
