"""Byte streams for the transports: anyio's, with an asyncio fast path.

anyio's asyncio socket stream resumes and pauses the transport's reading around every
``receive`` (two ``epoll_ctl`` calls per message), and waiting on a pipe with
``anyio.wait_readable`` adds and removes a reader each time; that cost a round trip
about a sixth of its time here. Under asyncio we therefore use a small
``asyncio.Protocol`` that keeps reading into a buffer (pausing only when it holds
more than ``_HIGH_WATER`` bytes), for TCP connections and for a worker's stdin. Under
any other backend (trio) anyio's streams are used as they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import math
import os
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import anyio
import anyio.abc
from anyio.abc import ByteStream, SocketAttribute

from .._anyio import running_asyncio
from .._anyio import task_group as task_group_helper  # task_group: serve()'s argument

__all__ = [
    "ConnectionHandler",
    "TcpServer",
    "bind_tcp",
    "connect_tcp",
    "descriptor_limit",
    "offer_arrived",
    "read_pipe",
    "write_pipe",
]

logger = logging.getLogger("assistant_frames.transports")

_HIGH_WATER = 1024 * 1024
_LOW_WATER = 256 * 1024
# asyncio reads up to 256 KiB at a time (``max_size``): each read allocates that much,
# which glibc serves with mmap and munmap (plus a page fault), some 20 µs per read on
# small VMs; 64 KiB comes from the heap.
_READ_SIZE = 65536


class _Protocol(asyncio.Protocol):
    """Buffers what arrives and wakes the one waiting reader."""

    def __init__(self) -> None:
        self.transport: Any = None  # a socket or read-pipe transport
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.eof = False
        self.error: BaseException | None = None
        self.reader: asyncio.Future[None] | None = None
        self.paused_reading = False
        self.paused_writing = False
        self.drained: asyncio.Future[None] | None = None
        # Set by a stream's user that takes data as it arrives (take_arrived): it
        # returns whether the data was all dealt with (the reader is then not woken).
        self.on_data: Callable[[], bool] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        if getattr(transport, "max_size", 0) > _READ_SIZE:  # CPython's transports
            with contextlib.suppress(AttributeError, TypeError):
                setattr(transport, "max_size", _READ_SIZE)  # noqa: B010
        sock = transport.get_extra_info("socket")  # None for a pipe
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        if self.size > _HIGH_WATER and not self.paused_reading and self.transport is not None:
            self.paused_reading = True
            self.transport.pause_reading()
        on_data = self.on_data
        if on_data is None or not on_data():
            self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return True  # keep the transport open for writing (half-close)

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    def pause_writing(self) -> None:
        self.paused_writing = True

    def resume_writing(self) -> None:
        self.paused_writing = False
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    def _wake(self) -> None:
        reader, self.reader = self.reader, None
        if reader is not None and not reader.done():
            reader.set_result(None)


class _AsyncioStream(ByteStream):
    def __init__(self, protocol: _Protocol) -> None:
        assert protocol.transport is not None
        self._protocol = protocol
        self._transport = protocol.transport
        self._closed = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        protocol = self._protocol
        while not protocol.chunks:
            if self._closed:
                raise anyio.ClosedResourceError
            if protocol.eof:
                if protocol.error is not None:
                    raise anyio.BrokenResourceError from protocol.error
                raise anyio.EndOfStream
            protocol.reader = asyncio.get_running_loop().create_future()
            await protocol.reader
            if not (protocol.chunks or protocol.eof or self._closed) and protocol.on_data:
                return b""  # woken by on_data, which took the data itself
        chunk = protocol.chunks.popleft()
        if len(chunk) > max_bytes:
            chunk, rest = chunk[:max_bytes], chunk[max_bytes:]
            protocol.chunks.appendleft(rest)
        protocol.size -= len(chunk)
        if protocol.paused_reading and protocol.size < _LOW_WATER:
            protocol.paused_reading = False
            self._transport.resume_reading()
        return chunk

    def on_data(self, callback: Callable[[], bool] | None) -> None:
        """Call ``callback()`` as data arrives, in the event loop's callback, before
        waking a waiting :meth:`receive`: it takes the data with :meth:`take_arrived`
        and returns whether that was all (``receive`` is then not woken; if it is, with
        nothing left to read, it returns ``b""``). ``callback`` must not raise or wait."""
        self._protocol.on_data = callback

    def take_arrived(self) -> bytes:
        """All the data that has arrived and not been read, at once (``b""``: none)."""
        protocol = self._protocol
        chunks = protocol.chunks
        if not chunks:
            return b""
        data = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        protocol.size = 0
        if protocol.paused_reading:
            protocol.paused_reading = False
            self._transport.resume_reading()
        return data

    async def send(self, item: bytes) -> None:
        self.write_now(item)
        await self.wait_drained()

    def write_now(self, data: bytes) -> None:
        """Hand ``data`` to asyncio's buffer, whole and in order; never waits
        (``b""``: half-close)."""
        if self._closed:
            raise anyio.ClosedResourceError
        if self._transport.is_closing():
            raise anyio.BrokenResourceError("the connection is closed")
        if data:
            self._transport.write(data)
        elif self._transport.can_write_eof():
            self._transport.write_eof()

    @property
    def write_paused(self) -> bool:
        """Whether asyncio's buffer is over its high-water mark (the peer reads slowly)."""
        return self._protocol.paused_writing and not self._transport.is_closing()

    async def wait_drained(self) -> None:
        """Wait while the buffer is over its high-water mark (one waiter at a time)."""
        if self.write_paused:
            self._protocol.drained = asyncio.get_running_loop().create_future()
            await self._protocol.drained

    async def send_eof(self) -> None:
        if self._transport.can_write_eof() and not self._transport.is_closing():
            self._transport.write_eof()

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._transport.close()
            self._protocol._wake()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        info = self._transport.get_extra_info
        sock: socket.socket = info("socket")
        return {
            SocketAttribute.family: lambda: sock.family,
            SocketAttribute.local_address: lambda: info("sockname"),
            SocketAttribute.local_port: lambda: info("sockname")[1],
            SocketAttribute.remote_address: lambda: info("peername"),
            SocketAttribute.remote_port: lambda: info("peername")[1],
            SocketAttribute.raw_socket: lambda: sock,
        }


async def connect_tcp(
    host: str, port: int, *, tls: bool = False, ssl_context: ssl.SSLContext | None = None
) -> ByteStream:
    """Open a TCP (optionally TLS) connection; raises ``OSError`` when it cannot."""
    if not running_asyncio():
        if tls:
            return await anyio.connect_tcp(host, port, tls=True, ssl_context=ssl_context)
        return await anyio.connect_tcp(host, port)
    context = (ssl_context or ssl.create_default_context()) if tls else None
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_connection(
        _Protocol, host, port, ssl=context, server_hostname=host if tls else None
    )
    return _AsyncioStream(protocol)


async def read_pipe(fd: int, *, close_fd: bool = False) -> anyio.abc.ByteReceiveStream | None:
    """A stream reading the pipe ``fd`` under asyncio; ``None`` under other loops.

    The descriptor stays open when the stream closes, unless ``close_fd``.
    """
    if not running_asyncio():
        return None
    pipe = os.fdopen(fd, "rb", buffering=0, closefd=close_fd)
    _, protocol = await asyncio.get_running_loop().connect_read_pipe(_Protocol, pipe)
    return _AsyncioStream(protocol)


async def write_pipe(fd: int) -> anyio.abc.ByteSendStream | None:
    """A stream writing the pipe ``fd`` under asyncio (it closes ``fd`` when closed);
    ``None`` under other loops."""
    if not running_asyncio():
        return None
    pipe = os.fdopen(fd, "wb", buffering=0)
    _, protocol = await asyncio.get_running_loop().connect_write_pipe(_Protocol, pipe)
    return _AsyncioStream(protocol)


def offer_arrived(messages: deque[Any], handler: Callable[[Any], bool] | None) -> None:
    """Hand ``messages`` (just decoded from arriving data, none queued before them) to
    ``handler`` in order, while it takes them; the rest stay queued."""
    if handler is None:
        return
    while messages:
        message = messages.popleft()
        if not handler(message):
            messages.appendleft(message)
            return


ConnectionHandler = Callable[[ByteStream], Coroutine[Any, Any, Any]]

# The listen backlog on every backend: anyio's default (the kernel caps it at its
# somaxconn). asyncio's own default of 100 left a burst of connects half-open.
_BACKLOG = 65536

# Running out of descriptors (or kernel memory) is temporary: wait, then accept again.
_ACCEPT_RETRY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_ACCEPT_RETRY_DELAY = 0.1


def descriptor_limit() -> int | None:
    """This process's soft limit on open file descriptors (``None`` when unknown)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


class TcpServer:
    """A bound TCP listening socket (:func:`bind_tcp`): where it listens, and the
    connections it serves while :meth:`serve` runs.

    Connections that arrive while nothing serves wait in the kernel's backlog for
    :meth:`serve`. Beyond ``max_connections`` served at once, a new connection is closed
    as soon as it is accepted. Running out of file descriptors pauses accepting briefly
    (logged at most every few seconds) instead of ending the server.

    The sockets are anyio's on every backend; under asyncio the accepted connections
    are wrapped in the buffering protocol above. asyncio's own server is not used: it
    takes its backlog as the number of accepts per wake-up, and on EMFILE logs and
    schedules a retry for each of them (a flood of tracebacks, the loop stalled).
    """

    def __init__(self, listener: anyio.abc.Listener[Any], limit: float) -> None:
        self._listener = listener
        self.host = str(listener.extra(SocketAttribute.local_address)[0])
        self.port = int(listener.extra(SocketAttribute.local_port))
        self.connections = 0  # being served now
        self.refused = 0  # turned away because max_connections were being served
        self._limit = limit
        self._refusals = _RateLimitedLog(
            "Refused a connection: %d are being served (max_connections)"
        )
        self._closed = False
        self._accepting: anyio.CancelScope | None = None

    async def serve(
        self,
        handler: ConnectionHandler,
        task_group: anyio.abc.TaskGroup | None = None,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run ``handler(stream)`` for each connection (in ``task_group`` when given),
        until cancelled or :meth:`aclose` d; started once it accepts."""
        if self._closed:
            raise anyio.ClosedResourceError
        accept = _accept_loop_asyncio if running_asyncio() else _accept_loop
        async with task_group_helper() as own:
            tasks = task_group or own
            with anyio.CancelScope() as self._accepting:
                async with task_group_helper() as accepting:
                    for one in getattr(self._listener, "listeners", [self._listener]):
                        accepting.start_soon(accept, one, tasks, handler, self)  # IPv4, IPv6
                    task_status.started()

    async def aclose(self) -> None:
        """Stop listening (connections being served are not affected); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._accepting is not None:  # before the sockets close under a pending accept
            self._accepting.cancel()
        await self._listener.aclose()

    def _admit(self) -> bool:
        """Count a new connection in, or refuse it (``max_connections`` are served)."""
        if self.connections >= self._limit:
            self.refused += 1
            self._refusals.log(self.connections)
            return False
        self.connections += 1  # counted at once: a burst of accepts sees it
        return True


async def bind_tcp(host: str, port: int, *, max_connections: int | None = None) -> TcpServer:
    """Listen on ``host:port`` (``port=0``: any free port); serve with
    :meth:`TcpServer.serve`. Raises ``OSError`` when it cannot (e.g. the port is in use)."""
    limit = math.inf if max_connections is None else max_connections
    listener = await anyio.create_tcp_listener(local_host=host, local_port=port, backlog=_BACKLOG)
    return TcpServer(listener, limit)


async def _counted(handler: ConnectionHandler, stream: ByteStream, state: TcpServer) -> None:
    try:
        await handler(stream)
    finally:
        state.connections -= 1


async def _accept_loop_asyncio(
    listener: anyio.abc.SocketListener,
    tasks: anyio.abc.TaskGroup,
    handler: ConnectionHandler,
    state: TcpServer,
) -> None:
    """asyncio: accept from the listener's socket, each connection to be wrapped in the
    buffering protocol by its own task."""
    loop = asyncio.get_running_loop()
    sock = listener.extra(SocketAttribute.raw_socket)
    out_of_descriptors = _RateLimitedLog("Cannot accept connections for now: %s")
    while True:
        try:
            connection, _ = await loop.sock_accept(sock)
        except OSError as exc:
            if state._closed:
                return
            if exc.errno == errno.ECONNABORTED:  # the client gave up first
                continue
            if exc.errno not in _ACCEPT_RETRY_ERRNOS:
                raise
            out_of_descriptors.log(exc)
            await anyio.sleep(_ACCEPT_RETRY_DELAY)
            continue
        if not state._admit():
            connection.close()
            continue
        tasks.start_soon(_serve_accepted, handler, connection, state)


async def _serve_accepted(
    handler: ConnectionHandler, connection: socket.socket, state: TcpServer
) -> None:
    try:
        _, protocol = await asyncio.get_running_loop().connect_accepted_socket(
            _Protocol, connection
        )
    except BaseException:
        connection.close()
        state.connections -= 1
        raise
    await _counted(handler, _AsyncioStream(protocol), state)


async def _accept_loop(
    listener: anyio.abc.SocketListener,
    tasks: anyio.abc.TaskGroup,
    handler: ConnectionHandler,
    state: TcpServer,
) -> None:
    """anyio's ``Listener.serve``, less its habit of ending on a failed accept."""
    out_of_descriptors = _RateLimitedLog("Cannot accept connections for now: %s")
    while True:
        try:
            stream = await listener.accept()
        except anyio.ClosedResourceError:
            return  # the server was closed
        except (anyio.BrokenResourceError, OSError) as exc:
            if state._closed:
                return
            cause = exc if isinstance(exc, OSError) else exc.__cause__
            if not isinstance(cause, OSError) or cause.errno not in _ACCEPT_RETRY_ERRNOS:
                raise
            out_of_descriptors.log(cause)
            await anyio.sleep(_ACCEPT_RETRY_DELAY)
            continue
        if not state._admit():
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            continue
        tasks.start_soon(_counted, handler, stream, state)


class _RateLimitedLog:
    """A WARNING at most once every few seconds (a flood must not flood the log too)."""

    __slots__ = ("_last", "_message")

    def __init__(self, message: str) -> None:
        self._message = message
        self._last = -math.inf

    def log(self, *args: object) -> None:
        now = time.monotonic()
        if now - self._last >= 5.0:
            self._last = now
            logger.warning(self._message, *args)
