"""What a transport is, in code: the contract every transport keeps.

A **transport** is an ``anyio.abc.ObjectStream[Any]`` of JSON-compatible messages, one
connection between two peers, like a ``postMessage`` channel:

- ``await send(message)`` queues one message for the peer, whole and in order. It is
  safe to call from several tasks at once. A message with no JSON form, or larger as
  JSON than the transport's ``max_message_bytes``, is refused with
  :class:`UnsendableMessage` before anything reaches the peer, and the transport stays
  usable. Sending on a transport closed by this side raises
  ``anyio.ClosedResourceError``; on one whose peer is gone, ``anyio.BrokenResourceError``.
- ``await receive()`` returns the next message as the receiver's own copy (changing it
  changes nothing the sender holds). Once the peer has gone, and what it sent before
  has been received, it raises ``anyio.EndOfStream``, as :class:`TransportClosed` when
  the transport knows why (a worker's exit code and stderr, a WebSocket close code):
  :func:`close_reason` reads the reason from whatever ``receive`` raised. An abrupt end
  (a killed process, a reset connection) is seen within 100 ms.
- One policy for an abrupt end: ``receive`` reports *every* end of the peer as the end
  of the stream, a broken connection included, as :class:`TransportClosed` with
  ``reason.clean`` ``False``; the shipped transports never raise
  ``anyio.BrokenResourceError`` from ``receive``. (Other streams may: code that reads
  the reason goes through :func:`close_reason`, which maps ``BrokenResourceError`` to a
  reason with ``clean=False``, and a plain ``EndOfStream`` to a clean one.) After this
  side's ``aclose()``, ``receive`` raises ``anyio.ClosedResourceError``, a pending
  ``receive`` included.
- ``await aclose()`` closes both directions; it is idempotent and never raises because
  the peer is already gone. The peer then sees the end of the stream.
- ``extra(TransportAttribute.x, default)`` tells what more the transport can do;
  ``TransportAttribute.max_message_bytes`` is the size limit.
- The size limit is one parameter, ``max_message_bytes``, wherever a transport is made
  (``None``: no limit), and bounds what is received too (a WebSocket closes with code
  1009, stdio drops the line). Every shipped transport encodes with
  :func:`encode_message`, the one JSON codec.

:class:`Connector` opens a transport (``ReconnectingHost`` opens one per attempt);
:class:`Listener` accepts transports (a server). The transport conformance suite
(``tests/transports/test_transport_contract.py``) checks every shipped transport against this,
on asyncio and trio; a new transport is done when it passes.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeAlias

import anyio
from anyio import TypedAttributeSet, typed_attribute
from anyio.abc import ObjectStream, TaskGroup

from .._json import decode_json, encode_json
from ..errors import AssistantFramesError

__all__ = [
    "CLOSED_ERRORS",
    "CloseReason",
    "Connector",
    "Listener",
    "MessageTooLarge",
    "Transport",
    "TransportAttribute",
    "TransportClosed",
    "UnsendableMessage",
    "close_reason",
    "decode_message",
    "encode_message",
]

Transport: TypeAlias = ObjectStream[Any]
"""A transport: an anyio object stream of JSON-compatible messages."""

Connector: TypeAlias = Callable[[], AbstractAsyncContextManager[Transport]]
"""Opens one connection: e.g. ``lambda: connect_websocket(url, token=token)``."""


class Listener(Protocol):
    """Accepts transports, one per peer that connects (anyio's ``Listener`` shape).

    ``serve(handler)`` runs ``handler(transport)`` for each accepted connection, in a
    task of its own (in ``task_group`` when given), until cancelled or closed; the
    handler's transport is closed when the handler returns.
    """

    async def serve(
        self,
        handler: Callable[[Transport], Awaitable[Any]],
        task_group: TaskGroup | None = None,
    ) -> None:
        """Accept connections and serve each with ``handler`` until cancelled."""

    async def aclose(self) -> None:
        """Stop accepting; connections being served are not affected."""


class TransportAttribute(TypedAttributeSet):
    """Optional capabilities of a transport (``transport.extra(...)``).

    Wrappers that pass the inner stream's ``extra_attributes`` through keep them.
    Frames and hosts use them when present and do without when not
    (``transport.extra(TransportAttribute.send_latest, None)``).
    """

    #: ``await send_latest(key, message)``: like ``send``, but a message sent earlier
    #: under the same ``key`` that the peer has not received yet is replaced by this
    #: one. Transports whose ``send`` never waits (``memory_pair``) offer it, so that a
    #: frame keeps at most one context snapshot waiting for a peer that does not read.
    send_latest: Callable[[str, Any], Awaitable[None]] = typed_attribute()
    #: ``send_would_wait()``: whether ``send`` could wait if called now. A transport that
    #: answers ``False`` promises that the next ``send`` returns without waiting; hosts
    #: then time calls out without a cancel scope each (without it, they use one).
    send_would_wait: Callable[[], bool] = typed_attribute()
    #: The largest message, in bytes of JSON, that ``send`` accepts (``None``: no limit).
    max_message_bytes: int | None = typed_attribute()
    #: ``receive_ready()``: whether a message has arrived that ``receive`` has not
    #: returned yet. A frame runs a call at once, in the task that read it, only when
    #: nothing is waiting behind it (its ``tool-cancel`` may be); without the attribute
    #: it hands every call to a worker task after reading what follows.
    receive_ready: Callable[[], bool] = typed_attribute()


# -- why a transport ended -------------------------------------------------------------


@dataclass(frozen=True)
class CloseReason:
    """Why a transport ended, as far as it knows.

    ``description`` is for people (``""`` when there is nothing to say); the other
    fields are for code: ``clean`` is ``False`` for an abrupt end (a killed process, a
    reset connection, a WebSocket closed with an error code); ``exit_code`` and
    ``stderr_tail`` describe a worker process that exited (a negative exit code is the
    signal that killed it); ``close_code`` is a WebSocket close code.
    """

    description: str = ""
    clean: bool = True
    exit_code: int | None = None
    stderr_tail: str | None = None
    close_code: int | None = None


class TransportClosed(anyio.EndOfStream):
    """``receive``'s end of stream, with the :class:`CloseReason` the transport knows.

    A subclass of ``anyio.EndOfStream``, so code that handles the end of any anyio
    stream handles this one too; ``str(exc)`` is the reason's description.
    """

    def __init__(self, reason: CloseReason) -> None:
        super().__init__(reason.description)
        self.reason = reason


#: What ``send`` and ``receive`` raise once a transport has ended, whichever end ended it:
#: ``except CLOSED_ERRORS`` is "the connection is gone".
CLOSED_ERRORS: Final = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)


def close_reason(exc: BaseException) -> CloseReason:
    """The :class:`CloseReason` behind an exception that ``receive`` or ``send`` raised."""
    reason = getattr(exc, "reason", None)
    if isinstance(reason, CloseReason):
        return reason
    clean = not isinstance(exc, anyio.BrokenResourceError)
    if isinstance(exc, anyio.ClosedResourceError):
        return CloseReason(str(exc) or "closed by this side")
    return CloseReason(str(exc), clean=clean)


# -- the one codec -----------------------------------------------------------------------


class UnsendableMessage(AssistantFramesError, TypeError, ValueError):
    """``send`` refused a message: it has no JSON form, or it is too large.

    Nothing was sent and the transport is still usable. A ``TypeError`` and a
    ``ValueError`` at once, so code written for either keeps working.
    """


class MessageTooLarge(UnsendableMessage):
    """A message is larger as JSON than the transport's ``max_message_bytes``."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"The message is {size} bytes as JSON; the limit is {limit}")
        self.size = size
        self.limit = limit


def encode_message(message: Any, max_message_bytes: int | None = None) -> bytes:
    """``message`` as compact JSON, or :class:`UnsendableMessage`.

    Non-finite floats become ``null`` and lone surrogates ``\\uXXXX`` escapes, as in
    JavaScript's ``JSON.stringify``.
    """
    try:
        data = encode_json(message)
    except TypeError as exc:
        raise UnsendableMessage(str(exc)) from None
    if max_message_bytes is not None and len(data) > max_message_bytes:
        raise MessageTooLarge(len(data), max_message_bytes)
    return data


def decode_message(data: bytes) -> Any:
    """The message ``data`` holds; ``ValueError`` if it is not UTF-8 JSON."""
    return decode_json(data)


def _renamed_limit(
    max_message_bytes: int | None, default: int | None, old_value: int | None, old_name: str
) -> int | None:
    """``max_message_bytes``, or the value passed under its deprecated ``old_name``."""
    if old_value is None:
        return max_message_bytes
    if max_message_bytes != default:
        raise TypeError(f"pass max_message_bytes or {old_name} (deprecated), not both")
    warnings.warn(
        f"{old_name} is deprecated; use max_message_bytes", DeprecationWarning, stacklevel=3
    )
    return old_value


@contextmanager
def receiving_inline(
    transport: object,
    handler: Callable[[Any], bool],
    on_arrival: Callable[[Any], bool] | None = None,
) -> Iterator[None]:
    """For the block, ``transport.receive_inline(handler)`` when the transport takes
    messages in the sender's task (a ``MemoryTransport``), or
    ``transport.receive_on_arrival(on_arrival)`` when it takes them in the event loop's
    callback (a WebSocket or stdio transport); then unset. Nothing for any other."""
    offer = getattr(transport, "receive_inline", None)
    taker: Callable[[Any], bool] | None = handler
    if offer is None and on_arrival is not None:
        offer, taker = getattr(transport, "receive_on_arrival", None), on_arrival
    if offer is None:
        yield
        return
    offer(taker)
    try:
        yield
    finally:
        offer(None)
