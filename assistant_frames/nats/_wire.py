"""What rides beside the frame protocol on NATS: headers, and the codec of payloads.

Payloads are the frame protocol's own messages as JSON, exactly as on every other
transport; what NATS adds travels in headers, so a payload never changes meaning.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

from .._json import decode_json
from ..transports.contract import encode_message

#: Which replica sent a message (a call's replies, a context update): its service id.
REPLICA: Final = "AF-Replica"
#: A call's reply subject, on a ``tool-cancel``: the cancel is for that caller's call.
REPLY: Final = "AF-Reply"
#: On a call's reply subject, a message with no payload: the replica still runs the
#: call. Its value is the replica's heartbeat interval in seconds.
HEARTBEAT: Final = "AF-Heartbeat"
#: On a call's reply subject: the replica stops before the call ends (its value says why).
LOST: Final = "AF-Lost"
#: NATS' own status header; ``503`` on a reply subject means no one took the request.
STATUS: Final = "Status"
NO_RESPONDERS: Final = "503"
#: The NATS service API's error headers (``nats.micro``'s ``respond_error``).
SERVICE_ERROR: Final = "Nats-Service-Error"

#: Metadata keys of a frame's service, read by discovery.
META_PREFIX: Final = "assistant_frames.prefix"
META_KIND: Final = "assistant_frames.kind"
KIND: Final = "frame"

#: How many other replicas' tool sets a host or a replica keeps: a replica's id changes
#: with every restart, and anyone on the bus may publish under any id.
MAX_REPLICAS: Final = 256

_V = TypeVar("_V")


def encode(message: Any, limit: int | None = None) -> bytes:
    """One frame-protocol message as a NATS payload; ``MessageTooLarge`` past ``limit``
    (the server's ``max_payload``: nats-py would refuse it only after encoding)."""
    return encode_message(message, limit)


def decode(payload: bytes) -> Any:
    """A NATS payload as a frame-protocol value; ``ValueError`` if it is no JSON."""
    return decode_json(payload)


def inner(message: Any) -> dict[str, Any] | None:
    """The ``message`` of a frame-protocol envelope, if ``message`` is one."""
    if isinstance(message, dict):
        body = message.get("message")
        if isinstance(body, dict):
            return body
    return None


def forget_document(body: dict[str, Any]) -> None:
    """Drop a received message's ``documentId``: each replica is its own document, and
    the host must see one frame whichever replica answers (a new document would fail
    the other replicas' calls)."""
    body.pop("documentId", None)


def published_tools(message: Any) -> frozenset[str] | None:
    """The tool names a ``model-context-update`` carries (``None``: not one)."""
    body = inner(message)
    if body is None or body.get("type") != "model-context-update":
        return None
    context = body.get("context")
    # A context without tools leaves the key out: that replica has none.
    tools = context.get("tools", {}) if isinstance(context, dict) else None
    return frozenset(tools) if isinstance(tools, dict) else None


def remember(replicas: dict[str, _V], replica: str, value: _V) -> None:
    """``replicas[replica] = value``, the latest last; past ``MAX_REPLICAS`` the replica
    heard from least recently is forgotten."""
    replicas.pop(replica, None)
    replicas[replica] = value
    while len(replicas) > MAX_REPLICAS:
        del replicas[next(iter(replicas))]
