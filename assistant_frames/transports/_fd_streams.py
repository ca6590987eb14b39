"""A pipe's file descriptors as anyio byte streams, with non-blocking reads and writes,
for any anyio backend: a worker's own stdin and stdout, and a spawned worker's stdin."""

from __future__ import annotations

import contextlib
import os

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream

from .stdio_transport import _READ_SIZE

__all__ = ["FdReceiveStream", "FdSendStream"]


class FdReceiveStream(ByteReceiveStream):
    """Non-blocking reads from a pipe's file descriptor, for any anyio backend."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def receive(self, max_bytes: int = _READ_SIZE) -> bytes:
        while True:
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        pass  # the descriptor belongs to the process


class FdSendStream(ByteSendStream):
    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._closed = False

    def try_write(self, data: bytes) -> int:
        """Write what the pipe takes now, without waiting; how many bytes that was."""
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except BrokenPipeError:
            raise anyio.BrokenResourceError("the host closed the channel") from None

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        view = memoryview(item)
        while view:
            try:
                written = os.write(self._fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            except BrokenPipeError:
                raise anyio.BrokenResourceError("the host closed the channel") from None
            view = view[written:]

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            with contextlib.suppress(OSError):
                os.close(self._fd)
