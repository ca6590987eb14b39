"""Helpers shared by several test modules (``from helpers import ...``).

Raw peers speak plain JSON dicts on the wire, as assistant-ui's JavaScript does: one side is
the real Python class, the other a bare ``memory_pair()`` end driven by the test.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import socket
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from hypothesis import strategies as st
from pydantic import BaseModel

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    MemoryTransport,
    ModelContextRegistry,
    memory_pair,
)
from assistant_frames.transports import WebSocketServer

if TYPE_CHECKING:
    from websockets.client import ClientProtocol
    from websockets.http11 import Response

CHANNEL = "assistant-ui-frame"
EMPTY_OBJECT = {"type": "object", "properties": {}}
MESSAGE_TYPES = (
    "model-context-request",
    "model-context-subscribe",
    "model-context-unsubscribe",
    "model-context-update",
    "model-context-response",
    "model-context-patch",
    "tool-call",
    "tool-cancel",
    "tool-result",
)


# -- raw peers ---------------------------------------------------------------------------------


def envelope(message: Any) -> dict[str, Any]:
    return {"channel": CHANNEL, "message": message}


_documents: weakref.WeakKeyDictionary[MemoryTransport, str] = weakref.WeakKeyDictionary()


async def next_message(end: MemoryTransport, kind: str | None = None) -> dict[str, Any]:
    """The next message (of type ``kind``, skipping others) received on a raw end.

    Its ``documentId``, if any, is checked (a string, the same on everything that end
    received) and left out: see :func:`document_of`.
    """
    while True:
        raw = await end.receive()
        assert raw["channel"] == CHANNEL
        message: dict[str, Any] = raw["message"]
        document = message.pop("documentId", None)
        if document is not None:
            assert isinstance(document, str)
            assert _documents.setdefault(end, document) == document
        if kind is None or message["type"] == kind:
            return message


def body(raw: Any) -> dict[str, Any]:
    """The message of an envelope a frame sent, without its ``documentId`` (a string)."""
    assert raw["channel"] == CHANNEL
    message = dict(raw["message"])
    assert isinstance(message.pop("documentId"), str), raw
    return message


def document_of(end: MemoryTransport) -> str:
    """The ``documentId`` the frame on the other side of ``end`` sent (see next_message)."""
    return _documents[end]


_call_ids = itertools.count()


async def call_raw(end: MemoryTransport, tool: str, args: Any) -> tuple[dict[str, Any], list[Any]]:
    """Send a tool-call; return its tool-result message and what arrived before it."""
    call_id = f"tool-{next(_call_ids)}"
    await end.send(envelope({"type": "tool-call", "id": call_id, "toolName": tool, "args": args}))
    before: list[Any] = []
    while True:
        message = await next_message(end)
        if message.get("type") == "tool-result" and message.get("id") == call_id:
            return message, before
        before.append(message)


@asynccontextmanager
async def served(registry: ModelContextRegistry, **options: Any) -> AsyncIterator[MemoryTransport]:
    """Serve a Python frame for ``registry``; yield the raw end that plays the host."""
    frame = AssistantFrameProvider(registry, **options)
    host_end, frame_end = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(frame.serve, frame_end)
        yield host_end
        tg.cancel_scope.cancel()


@asynccontextmanager
async def raw_frame(
    context: Mapping[str, Any],
) -> AsyncIterator[tuple[AssistantFrameHost, MemoryTransport]]:
    """A Python host whose peer is a raw end playing the frame.

    The raw end has answered the host's request with ``context`` and received its subscribe.
    """
    host_end, frame_end = memory_pair()
    async with AssistantFrameHost(host_end, timeout=5) as host:
        assert await frame_end.receive() == envelope({"type": "model-context-request"})
        await frame_end.send(envelope({"type": "model-context-update", "context": context}))
        await host.wait_for_context(timeout=5)
        assert await next_message(frame_end) == {"type": "model-context-subscribe", "patches": True}
        yield host, frame_end


@asynccontextmanager
async def serve_frame(
    frame: AssistantFrameProvider, *, timeout: float = 5.0, name: str | None = None
) -> AsyncIterator[AssistantFrameHost]:
    """Serve ``frame`` over a fresh memory_pair() and yield a host that has its context."""
    host_end, frame_end = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(frame.serve, frame_end)
        async with AssistantFrameHost(host_end, timeout=timeout, name=name) as host:
            await host.wait_for_context(timeout=5)
            yield host
        tg.cancel_scope.cancel()


# -- tools, calls and registries ---------------------------------------------------------------


class Gate:
    """An async tool that runs until released, recording start and cancellation."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.release = anyio.Event()
        self.cancelled = anyio.Event()

    async def __call__(self) -> str:
        self.started.set()
        try:
            await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise
        return "released"


class Outcome:
    """Runs a host call in the background and keeps what it returned or raised."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    async def run(self, host: AssistantFrameHost, name: str, args: Any, **kw: Any) -> None:
        try:
            self.result = await host.call_tool(name, args, **kw)
        except Exception as exc:
            self.error = exc
        finally:
            self.done.set()


class Point(BaseModel):
    x: float
    y: float


class Segment(BaseModel):
    """A line segment."""

    start: Point
    end: Point
    label: str = "segment"


def calculator(instruction: str = "You can add numbers.") -> ModelContextRegistry:
    """A registry with one instruction and an ``add(a, b)`` tool."""
    registry = ModelContextRegistry()
    registry.add_instruction(instruction)

    @registry.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return registry


# -- hypothesis --------------------------------------------------------------------------------


def nested_json(
    scalars: st.SearchStrategy[Any], *, max_size: int, key_size: int
) -> st.SearchStrategy[Any]:
    """JSON values: ``scalars``, and lists and objects of them (at most 12 leaves in all)."""
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=max_size)
            | st.dictionaries(st.text(max_size=key_size), children, max_size=max_size)
        ),
        max_leaves=12,
    )


class CountingGate(Gate):
    """A Gate that counts how many calls have started."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        return await super().__call__()


async def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Poll ``predicate`` until it holds; ``TimeoutError`` after ``timeout`` seconds."""
    with anyio.fail_after(timeout + 1):
        for _ in range(int(timeout / 0.005) + 1):
            if predicate():
                return
            await anyio.sleep(0.005)
    raise TimeoutError(f"still not true after {timeout} s")


async def read_exactly(fd: int, size: int) -> bytes:
    """``size`` bytes from the non-blocking pipe ``fd``, waiting for them as they come."""
    data = bytearray()
    while len(data) < size:
        try:
            chunk = os.read(fd, size - len(data))
        except BlockingIOError:
            await anyio.wait_readable(fd)
            continue
        data += chunk
    return bytes(data)


def free_port() -> int:
    """A port that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def installed(path: Path, directory: Path) -> bool:
    """Whether ``path`` (in ``directory``'s ``node_modules``) is there, asked once no
    ``npm ci`` runs in ``directory``: another pytest-xdist worker may be installing it
    (under :func:`one_process_at_a_time`), and a half-installed tree would fail a test
    that should have waited or skipped."""
    with one_process_at_a_time(directory):
        return path.exists()


@contextmanager
def one_process_at_a_time(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory`` (blocking until it is free).

    Under pytest-xdist every worker runs the session fixtures, so two of them could run
    ``npm ci`` in the same directory at once; the second to get the lock finds the
    first's work done.
    """
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


async def http_get(
    server: WebSocketServer, path: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """A raw HTTP/1.1 GET: (status, headers with lower-case names, body)."""
    lines = [f"GET {path} HTTP/1.1", f"Host: {server.host}:{server.port}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    with anyio.fail_after(5):
        async with await anyio.connect_tcp(server.host, server.port) as stream:
            await stream.send(request)
            data = b""
            while True:
                try:
                    data += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), parsed, body


#: A worker script serving one tool, ``count`` (words in a text), with an instruction: the
#: dev page's tests and its screenshot federate it as ``words``.
WORDS_WORKER = """
import anyio

from assistant_frames import ModelContextRegistry
from assistant_frames.frames import serve_stdio

registry = ModelContextRegistry()
registry.add_instruction("Count words with the words tools.")


@registry.tool
def count(text: str) -> int:
    '''Count the words in a text.'''
    return len(text.split())


anyio.run(serve_stdio, registry)
"""


async def raw_handshake(
    url: str, headers: dict[str, str] | None = None
) -> tuple[anyio.abc.SocketStream, ClientProtocol, Response]:
    """Open TCP and send the WebSocket opening handshake by hand (websockets' sans-I/O
    client); the server's response (any status). The caller closes the stream."""
    from websockets.client import ClientProtocol
    from websockets.http11 import Response
    from websockets.uri import parse_uri

    uri = parse_uri(url)
    protocol = ClientProtocol(uri, max_size=None)
    stream = await anyio.connect_tcp(uri.host, uri.port)
    request = protocol.connect()
    for name, value in (headers or {}).items():
        request.headers[name] = value
    protocol.send_request(request)
    for data in protocol.data_to_send():
        await stream.send(data)
    events: list[object] = []
    while not events:
        try:
            data = await stream.receive()
        except anyio.EndOfStream:
            await stream.aclose()
            raise
        protocol.receive_data(data)
        events = protocol.events_received()
    response = events[0]
    assert isinstance(response, Response)
    return stream, protocol, response
