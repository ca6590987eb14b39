"""Transports: anyio object streams of JSON-compatible messages.

Any ``anyio.abc.ObjectStream`` works as a transport; its ``send`` must be safe to call
from several tasks at once (anyio's memory streams are).
"""

from .memory import MemoryTransport, copy_json, memory_pair

__all__ = ["MemoryTransport", "copy_json", "memory_pair"]
