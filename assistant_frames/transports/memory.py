"""A pair of connected in-memory transports, for frames in the same process and tests."""

from __future__ import annotations

import math
from typing import Any

import anyio
from anyio.abc import ObjectStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic_core import PydanticSerializationError, to_jsonable_python

__all__ = ["MemoryTransport", "copy_json", "memory_pair"]


def copy_json(value: Any) -> Any:
    """A deep copy of ``value`` in its JSON form; ``TypeError`` if it has none.

    Like ``postMessage``'s structured clone, the receiver gets its own copy, so neither
    side can change what the other holds. The copy is what JSON would carry: tuples and
    sets become lists, Pydantic models and dataclasses become objects, non-finite floats
    become ``None``. Runs in pydantic-core (Rust), several times faster than Python.
    """
    try:
        return to_jsonable_python(value, inf_nan_mode="null")
    except (PydanticSerializationError, ValueError, RecursionError) as exc:
        raise TypeError(f"Cannot send a value that has no JSON form: {exc}") from None


class MemoryTransport(ObjectStream[Any]):
    """One end of :func:`memory_pair`: an anyio object stream of JSON messages."""

    def __init__(
        self,
        send_stream: MemoryObjectSendStream[Any],
        receive_stream: MemoryObjectReceiveStream[Any],
    ) -> None:
        self._send_stream = send_stream
        self._receive_stream = receive_stream

    async def send(self, item: Any) -> None:
        """Send a copy of ``item``; ``TypeError`` if it is not JSON data."""
        await self._send_stream.send(copy_json(item))

    async def receive(self) -> Any:
        """The next message; ``anyio.EndOfStream`` once the peer has closed."""
        return await self._receive_stream.receive()

    async def send_eof(self) -> None:
        """Close the sending direction; the peer's ``receive`` then ends."""
        await self._send_stream.aclose()

    async def aclose(self) -> None:
        """Close both directions."""
        await self._send_stream.aclose()
        await self._receive_stream.aclose()


def memory_pair(max_buffer_size: float = math.inf) -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives (as its own copy).

    The buffer is unbounded by default, like ``postMessage``; a bound makes ``send``
    wait while the peer has that many unread messages.
    """
    a_send, b_receive = anyio.create_memory_object_stream[Any](max_buffer_size)
    b_send, a_receive = anyio.create_memory_object_stream[Any](max_buffer_size)
    return MemoryTransport(a_send, a_receive), MemoryTransport(b_send, b_receive)
