"""What rides beside the frame protocol on NATS: headers, the codec of payloads, and
the bookkeeping of a frame's context that hosts and replicas share.

Payloads are the frame protocol's own messages as JSON, exactly as on every other
transport; what NATS adds travels in headers, so a payload never changes meaning.
"""

from __future__ import annotations

import re
from typing import Any, Final, TypeVar

from .._json import decode_json
from ..transports.contract import encode_message

#: Which replica sent a message (a call's replies, a context update): its service id.
REPLICA: Final = "AF-Replica"
#: On a context message (whole or patch) and on an answer to a context request: the
#: number of the replica's context it carries or makes (the ``seq`` of its payload). On
#: a request to one replica: the number of that replica's context the asker holds.
SEQ: Final = "AF-Seq"
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
SERVICE_ERROR_CODE: Final = "Nats-Service-Error-Code"

#: Metadata keys of a frame's service, read by discovery.
META_PREFIX: Final = "assistant_frames.prefix"
META_KIND: Final = "assistant_frames.kind"
KIND: Final = "frame"

#: How many other replicas' tool sets a host or a replica keeps: a replica's id changes
#: with every restart, and anyone on the bus may publish under any id.
MAX_REPLICAS: Final = 256

#: A replica's id, as hosts follow it: one subject token, not too long.
_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
_MAX_ID = 64

_V = TypeVar("_V")


def encode(message: Any, limit: int | None = None) -> bytes:
    """One frame-protocol message as a NATS payload; ``MessageTooLarge`` past ``limit``
    (the server's ``max_payload``: nats-py would refuse it only after encoding)."""
    return encode_message(message, limit)


def decode(payload: bytes) -> Any:
    """A NATS payload as a frame-protocol value; ``ValueError`` if it is no JSON."""
    return decode_json(payload)


def decode_or_none(payload: bytes) -> Any:
    """A NATS payload as a frame-protocol value; ``None`` if it is no JSON (anyone may
    publish on a subject)."""
    try:
        return decode_json(payload)
    except ValueError:
        return None


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


def replica_id(headers: dict[str, str] | None) -> str | None:
    """The replica a message names in ``AF-Replica``, if it can be followed (it is one
    subject token: a host asks that replica alone on a subject made with it)."""
    replica = (headers or {}).get(REPLICA)
    if replica is None or len(replica) > _MAX_ID or not _TOKEN.fullmatch(replica):
        return None
    return replica


def seq_of(body: dict[str, Any]) -> int | None:
    """A context message's ``seq`` (``None``: it has none, or not an integer)."""
    seq = body.get("seq")
    return seq if type(seq) is int else None


def patch_body(message: Any) -> dict[str, Any] | None:
    """The ``model-context-patch`` ``message`` carries, if its shape is one (``seq``,
    ``context`` an object of which ``tools`` is an object, ``removed`` and ``order``
    lists of names); the host machine checks the tools themselves."""
    body = inner(message)
    if body is None or body.get("type") != "model-context-patch" or seq_of(body) is None:
        return None
    context = body.get("context")
    if not isinstance(context, dict) or not isinstance(context.get("tools", {}), dict):
        return None
    if not _names(body.get("removed", [])):
        return None
    order = body.get("order")
    if order is not None and not _names(order):
        return None
    return body


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(name, str) for name in value)


def own_copy(context: dict[str, Any]) -> dict[str, Any]:
    """A context in wire form that patches may change in place, sharing the tools' specs
    (which nobody changes) with ``context``."""
    copy = dict(context)
    tools = copy.get("tools")
    if isinstance(tools, dict):
        copy["tools"] = dict(tools)
    return copy


def apply_patch(wire: dict[str, Any], body: dict[str, Any]) -> bool:
    """Apply a well-formed patch (a replica's own provider's) to ``wire`` in place, as a
    host applies it; whether the tools' names changed."""
    changes: dict[str, Any] = body["context"]
    if "system" in changes:
        _put(wire, "system", changes["system"])
    if "uiResources" in changes:
        _put(wire, "uiResources", changes["uiResources"])
    removed: list[str] = body.get("removed") or []
    put: dict[str, Any] = changes.get("tools") or {}
    order: list[str] | None = body.get("order")
    if not (removed or put or order):
        return False
    tools: dict[str, Any] = wire.get("tools") or {}
    names_changed = any(name in tools for name in removed) or any(n not in tools for n in put)
    for name in removed:
        tools.pop(name, None)
    tools.update(put)
    if order is not None:
        tools = {name: tools[name] for name in order}
    _put(wire, "tools", tools)
    return names_changed


def _put(wire: dict[str, Any], key: str, value: Any) -> None:
    """``wire[key] = value``, leaving the key out when empty (as the frame writes it)."""
    if value:
        wire[key] = value
    else:
        wire.pop(key, None)


def published_tools(message: Any) -> frozenset[str] | None:
    """The tool names a ``model-context-update`` carries (``None``: not one)."""
    body = inner(message)
    if body is None or body.get("type") != "model-context-update":
        return None
    context = body.get("context")
    # A context without tools leaves the key out: that replica has none.
    tools = context.get("tools", {}) if isinstance(context, dict) else None
    return frozenset(tools) if isinstance(tools, dict) else None


class ReplicaTools:
    """The tool names each replica published, by replica: from its whole contexts, then
    followed through its patches while they come in order (at most ``MAX_REPLICAS``).

    A patch changes a replica's names in place, and its digest (how many, and the XOR of
    their hashes) with them: comparing replicas costs nothing per tool.
    """

    __slots__ = ("_digests", "_seqs", "tools")

    def __init__(self) -> None:
        #: Each replica's tool names (changed in place: copy to keep).
        self.tools: dict[str, set[str]] = {}
        self._digests: dict[str, tuple[int, int]] = {}
        self._seqs: dict[str, int | None] = {}

    def heard(self, replica: str | None, body: dict[str, Any]) -> bool:
        """A context message (whole, or a well-formed patch) from ``replica``: whether
        its tools are news (its first known set, or changed)."""
        if replica is None:
            return False
        kind = body.get("type")
        if kind == "model-context-update":
            tools = published_tools({"message": body})
            if tools is None:
                return False
            names = set(tools)
            digest = 0
            for name in names:
                digest ^= hash(name)
            self._keep(replica, names, (len(names), digest), seq_of(body))
            return True
        known, held, seq = self.tools.get(replica), self._seqs.get(replica), seq_of(body)
        if kind != "model-context-patch" or seq is None:
            return False
        if known is None or held is None or seq != held + 1:
            if held is None or seq > held:  # a gap: its names are unknown until a whole
                self._forget(replica)
            return False
        count, digest = self._digests[replica]
        changed = False
        for name in body.get("removed") or ():
            if name in known:
                known.discard(name)
                count, digest, changed = count - 1, digest ^ hash(name), True
        for name in (body.get("context") or {}).get("tools") or ():
            if name not in known:
                known.add(name)
                count, digest, changed = count + 1, digest ^ hash(name), True
        self._keep(replica, known, (count, digest), seq)
        return changed

    def differ(self) -> bool:
        """Whether the replicas known publish different tool names."""
        return len(set(self._digests.values())) > 1

    def _keep(
        self, replica: str, names: set[str], digest: tuple[int, int], seq: int | None
    ) -> None:
        remember(self.tools, replica, names)
        remember(self._digests, replica, digest)
        remember(self._seqs, replica, seq)

    def _forget(self, replica: str) -> None:
        self.tools.pop(replica, None)
        self._digests.pop(replica, None)
        self._seqs.pop(replica, None)

    def __len__(self) -> int:
        return len(self.tools)


def remember(replicas: dict[str, _V], replica: str, value: _V) -> None:
    """``replicas[replica] = value``, the latest last; past ``MAX_REPLICAS`` the replica
    heard from least recently is forgotten."""
    replicas.pop(replica, None)
    replicas[replica] = value
    while len(replicas) > MAX_REPLICAS:
        del replicas[next(iter(replicas))]
