"""What a transport may tell the protocols that use it, as anyio typed attributes.

A transport is an ``anyio.abc.ObjectStream`` of JSON-compatible messages. Beyond that,
a transport may offer these through ``extra_attributes``; wrappers that pass the inner
stream's ``extra_attributes`` through keep them. Frames and hosts use them when present
and do without when not (``transport.extra(TransportAttribute.send_latest, None)``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from anyio import TypedAttributeSet, typed_attribute

__all__ = ["TransportAttribute"]


class TransportAttribute(TypedAttributeSet):
    """Optional capabilities of a transport (``transport.extra(...)``)."""

    #: ``await send_latest(key, message)``: like ``send``, but a message sent earlier
    #: under the same ``key`` that the peer has not received yet is replaced by this
    #: one. Transports whose ``send`` never waits (``memory_pair``) offer it, so that a
    #: frame keeps at most one context snapshot waiting for a peer that does not read.
    send_latest: Callable[[str, Any], Awaitable[None]] = typed_attribute()
    #: ``send_would_wait()``: whether ``send`` could wait if called now. A transport that
    #: answers ``False`` promises that the next ``send`` returns without waiting; hosts
    #: then time calls out without a cancel scope each (without it, they use one).
    send_would_wait: Callable[[], bool] = typed_attribute()
