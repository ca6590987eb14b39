"""RFC 6455 framing for the common case, beside websockets' sans-I/O protocol.

Nearly every frame a frame or host exchanges is one whole text frame of JSON. websockets
parses each with a generator chain and builds a ``Frame`` for it; here such a frame is
read (and written) in a few byte operations. Every other frame (control frames,
fragments, reserved bits or opcodes, bad masking, sizes over the limit) is handed to the
protocol whole, which answers, validates and fails the connection as it always does.
Handing it only whole frames keeps its parser at a frame's start, where taking the next
frame here is safe; :func:`at_frame_start` checks that when it cannot be known.
"""

from __future__ import annotations

import os
import struct
from typing import Any, NamedTuple

from websockets.streams import StreamReader

try:  # websockets' C helper, and its own fallback when it was built without it
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - a websockets without its C extension
    from websockets.utils import apply_mask

__all__ = [
    "FIN_BINARY",
    "FIN_TEXT",
    "Head",
    "at_frame_start",
    "encode_text",
    "read_head",
    "unmasked_payload",
]

FIN_TEXT = 0x81  # FIN, no reserved bits, opcode 1: a whole text frame
FIN_BINARY = 0x82
_AT_EOF = StreamReader.at_eof.__code__
_SHORT = struct.Struct("!BBH")
_LONG = struct.Struct("!BBQ")


class Head(NamedTuple):
    """A frame's header: where its payload starts and ends in the buffer."""

    first: int  #: the first byte: FIN, the reserved bits and the opcode
    masked: bool
    start: int
    end: int


def read_head(data: bytes | bytearray, pos: int) -> Head | None:
    """The header of the frame at ``pos`` in ``data`` (``None``: not all of it is there).

    ``end`` may lie beyond ``data``: the payload has not all arrived.
    """
    available = len(data) - pos
    if available < 2:
        return None
    second = data[pos + 1]
    length = second & 0x7F
    start = pos + 2
    if length == 126:
        if available < 4:
            return None
        length = int.from_bytes(data[start : start + 2], "big")
        start += 2
    elif length == 127:
        if available < 10:
            return None
        length = int.from_bytes(data[start : start + 8], "big")
        start += 8
    masked = second >= 0x80
    if masked:
        start += 4
    return Head(data[pos], masked, start, start + length)


def unmasked_payload(data: bytes | bytearray, head: Head) -> bytes:
    """The payload of the whole frame ``head`` describes, unmasked."""
    payload = bytes(data[head.start : head.end])
    if head.masked:
        return apply_mask(payload, bytes(data[head.start - 4 : head.start]))
    return payload


def encode_text(payload: bytes, *, mask: bool) -> bytes:
    """``payload`` as one whole text frame (masked with a fresh key on a client)."""
    length = len(payload)
    bit = 0x80 if mask else 0
    if length < 126:
        head = bytes((FIN_TEXT, bit | length))
    elif length < 65536:
        head = _SHORT.pack(FIN_TEXT, bit | 126, length)
    else:
        head = _LONG.pack(FIN_TEXT, bit | 127, length)
    if mask:
        key = os.urandom(4)  # what websockets uses too (secrets.token_bytes)
        return head + key + apply_mask(payload, key)
    return head + payload


def at_frame_start(protocol: Any) -> bool:
    """Whether ``protocol``'s parser waits for the first byte of a frame (and holds no
    bytes): only then may a frame be taken past it. ``False`` when unsure (a websockets
    that parses differently), which only costs speed."""
    reader = getattr(protocol, "reader", None)
    if reader is None or len(getattr(reader, "buffer", b"?")):
        return False
    generator = getattr(protocol, "parser", None)
    for _ in range(8):  # parse() may wrap parse() (the handshake's), never deeply
        inner = getattr(generator, "gi_yieldfrom", None)
        if inner is None:
            return False
        if getattr(inner, "gi_code", None) is _AT_EOF:
            return True
        generator = inner
    return False
