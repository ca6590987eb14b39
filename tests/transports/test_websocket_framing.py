"""The WebSocket transport reads and writes whole data frames itself (framing.py) and hands
every other frame to websockets' protocol: the two must agree byte for byte, and frames
split or mixed any way on the wire must come out whole and in order."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Generator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import pytest
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.streams import StreamReader

from assistant_frames.transports import WebSocketTransport, connect_websocket, websocket_server
from assistant_frames.transports.websocket.framing import (
    at_frame_start,
    encode_text,
    read_head,
    unmasked_payload,
)

from helpers import raw_handshake

SIZES = [0, 1, 125, 126, 127, 65535, 65536, 70000]


def parse(data: bytes, *, mask: bool) -> Frame:
    """``data`` parsed by websockets itself."""
    reader = StreamReader()
    reader.feed_data(data)
    parser = Frame.parse(reader.read_exact, mask=mask)
    try:
        next(parser)
    except StopIteration as done:
        frame: Frame = done.value
        assert not reader.buffer, "the whole frame, no more"
        return frame
    raise AssertionError("websockets wanted more bytes")


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mask", [True, False], ids=["client", "server"])
def test_our_text_frames_are_what_websockets_reads(size: int, mask: bool) -> None:
    payload = bytes(i % 251 for i in range(size))
    frame = parse(encode_text(payload, mask=mask), mask=mask)
    assert (frame.opcode, frame.fin, frame.data) == (Opcode.TEXT, True, payload)
    assert (frame.rsv1, frame.rsv2, frame.rsv3) == (False, False, False)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mask", [True, False], ids=["client", "server"])
def test_we_read_the_frames_websockets_writes(size: int, mask: bool) -> None:
    payload = bytes(i % 251 for i in range(size))
    data = b"junk" + Frame(Opcode.BINARY, payload).serialize(mask=mask)
    head = read_head(data, 4)
    assert head is not None
    assert (head.first, head.masked, head.end) == (0x82, mask, len(data))
    assert unmasked_payload(data, head) == payload
    for cut in range(4, head.start - (4 if mask else 0)):  # every header cut short
        assert read_head(data[:cut], 4) is None


def test_the_parser_is_at_a_frames_start_only_between_frames() -> None:
    protocol = ServerProtocol()
    assert not at_frame_start(protocol)  # still reading the HTTP request
    protocol.receive_data(
        b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    protocol.send_response(protocol.accept(protocol.events_received()[0]))
    assert protocol.state is State.OPEN
    assert at_frame_start(protocol)
    frame = Frame(Opcode.TEXT, b'{"a": 1}').serialize(mask=True)
    protocol.receive_data(frame[:2])  # a header: the parser is inside a frame
    assert not at_frame_start(protocol)
    protocol.receive_data(frame[2:6])  # the mask too, the buffer empty again
    assert not at_frame_start(protocol)
    protocol.receive_data(frame[6:])
    assert [event.data for event in protocol.events_received()] == [b'{"a": 1}']
    assert at_frame_start(protocol)


def chunks(data: bytes, size: int) -> Generator[bytes, None, None]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


@asynccontextmanager
async def raw_connection(url: str) -> AsyncIterator[tuple[anyio.abc.SocketStream, ClientProtocol]]:
    """A client that writes whatever bytes it likes after a real handshake."""
    stream, protocol, response = await raw_handshake(url)
    async with stream:
        assert response.status_code == 101
        assert protocol.state is State.OPEN
        yield stream, protocol


async def read_frames(
    stream: anyio.abc.SocketStream, protocol: ClientProtocol, count: int
) -> list[Frame]:
    frames: list[Frame] = []
    while len(frames) < count:
        protocol.receive_data(await stream.receive())
        frames += protocol.events_received()
    return frames


async def echo(transport: WebSocketTransport) -> None:
    async for message in transport:
        await transport.send(message)


def mixed_frames() -> tuple[bytes, list[Any]]:
    """Whole frames, a ping, and a message in fragments with a ping amid them: the bytes
    a client sends, and the messages they hold."""
    messages: list[Any] = [{"n": 1}, "two", [3] * 100, {"big": "x" * 70_000}, {"n": 5}]
    parts = [
        Frame(Opcode.TEXT, json.dumps(messages[0]).encode()),
        Frame(Opcode.PING, b"p1"),
        Frame(Opcode.TEXT, json.dumps(messages[1]).encode()),
        Frame(Opcode.TEXT, json.dumps(messages[2]).encode()[:50], fin=False),
        Frame(Opcode.PING, b"p2"),
        Frame(Opcode.CONT, json.dumps(messages[2]).encode()[50:]),
        Frame(Opcode.BINARY, json.dumps(messages[3]).encode()),
        Frame(Opcode.TEXT, json.dumps(messages[4]).encode()),
    ]
    return b"".join(part.serialize(mask=True) for part in parts), messages


@pytest.mark.anyio
@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1000, 1 << 20])
async def test_frames_split_anywhere_come_out_whole_and_in_order(chunk: int) -> None:
    data, messages = mixed_frames()
    with anyio.fail_after(20):
        async with (
            websocket_server(echo) as server,
            raw_connection(server.url) as (stream, protocol),
        ):
            for piece in chunks(data, chunk):
                await stream.send(piece)
                if chunk < 64:
                    await anyio.lowlevel.checkpoint()  # reads then end mid-frame, mid-header
            frames = await read_frames(stream, protocol, len(messages) + 2)
    pongs = [frame.data for frame in frames if frame.opcode is Opcode.PONG]
    assert pongs == [b"p1", b"p2"]
    echoed = [json.loads(frame.data) for frame in frames if frame.opcode is Opcode.TEXT]
    assert echoed == messages


@pytest.mark.anyio
async def test_a_close_amid_frames_ends_reading_there() -> None:
    """Frames after the client's close are not delivered; the close is answered."""
    received: list[Any] = []

    async def collect(transport: WebSocketTransport) -> None:
        async for message in transport:
            received.append(message)

    data = b"".join(
        frame.serialize(mask=True)
        for frame in [
            Frame(Opcode.TEXT, b"1"),
            Frame(Opcode.CLOSE, b"\x03\xe8"),
            Frame(Opcode.TEXT, b"2"),
        ]
    )
    with anyio.fail_after(10):
        async with (
            websocket_server(collect) as server,
            raw_connection(server.url) as (stream, protocol),
        ):
            await stream.send(data)
            frames = await read_frames(stream, protocol, 1)
    assert frames[0].opcode is Opcode.CLOSE
    assert received == [1]


@pytest.mark.anyio
@pytest.mark.parametrize("size", [10, 70_000, 2_000_000])
async def test_large_messages_both_ways_over_our_client_and_server(size: int) -> None:
    """Messages larger than one read (64 KiB) wait for their frame's end on both sides."""
    messages = [{"i": i, "pad": "é" * (size // 2 + i)} for i in range(3)]
    with anyio.fail_after(20):
        async with websocket_server(echo) as server, connect_websocket(server.url) as transport:
            for message in messages:
                await transport.send(message)
            assert [await transport.receive() for _ in messages] == messages
