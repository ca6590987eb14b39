"""Worker side: :func:`own_stdio` gives the frame channel the process's own stdin and
stdout. It first moves file descriptor 1 to stderr, so whatever the worker's code prints
(``print``, C extensions, subprocesses) cannot corrupt the channel."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from .._anyio import task_group
from ..errors import ConnectError
from ._fd_streams import FdReceiveStream, FdSendStream
from ._streams import read_pipe, write_pipe
from .contract import (
    _renamed_limit,
)
from .stdio_transport import DEFAULT_MAX_MESSAGE_BYTES, StdioTransport

__all__ = ["own_stdio"]


@contextlib.contextmanager
def _claim_stdio() -> Any:
    """Give the channel stdin and (a copy of) stdout; point fd 1 at stderr meanwhile."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    channel_out = os.dup(1)
    saved_stdout = os.dup(1)
    os.dup2(2, 1)  # print() and C code writing to fd 1 now reach stderr
    blocking = {fd: os.get_blocking(fd) for fd in (0, channel_out)}
    for fd in blocking:
        os.set_blocking(fd, False)
    try:
        yield 0, channel_out
    finally:
        for fd, was in blocking.items():
            with contextlib.suppress(OSError):
                os.set_blocking(fd, was)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)


def _require_pollable(fd: int, name: str) -> None:
    """``ConnectError`` unless an event loop can wait on ``fd``: a pipe, a socket or a
    terminal. (A regular file or ``/dev/null`` would fail inside the loop, where a read
    side is never woken: the worker would wait for ever.)"""
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd)):
        return
    kind = "a regular file" if stat.S_ISREG(mode) else "a device that is not a terminal"
    raise ConnectError(
        f"The worker's {name} is {kind}: serving a frame over stdio needs a pipe or a "
        "socket, as spawn_worker makes them (or a terminal)"
    )


@asynccontextmanager
async def own_stdio(
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
    *,
    max_line_bytes: int | None = None,
) -> AsyncIterator[StdioTransport]:
    """The transport to the process that started this one, over this process's stdin
    and stdout; written to by a task of its own while the block runs.

    What a worker serves its frame on (``serve_stdio``). While the block runs, stdout
    belongs to the transport: ``print`` and other writes to file descriptor 1 go to
    stderr. POSIX only: stdin and stdout must be pipes (as :func:`spawn_worker` makes
    them) or sockets. ``max_message_bytes`` (16 MiB; ``None``: no limit) bounds the
    messages sent and the lines read (``max_line_bytes`` is its deprecated name).
    Anything else (a regular file, ``/dev/null``) is refused at once with
    :class:`~assistant_frames.ConnectError`.
    """
    max_message_bytes = _renamed_limit(
        max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES, max_line_bytes, "max_line_bytes"
    )
    _require_pollable(0, "stdin")
    _require_pollable(1, "stdout")
    with _claim_stdio() as (in_fd, out_fd):
        # Text the process wrote to stdout without a newline before this would otherwise
        # be glued to our first message; an empty line is skipped by the reader.
        with contextlib.suppress(BrokenPipeError):  # the host is gone already: receive ends
            os.write(out_fd, b"\n")
        stdin = await read_pipe(in_fd) or FdReceiveStream(in_fd)
        stdout = await write_pipe(out_fd) or FdSendStream(out_fd)
        transport = StdioTransport(stdin, stdout, max_message_bytes=max_message_bytes)
        async with task_group() as tasks:
            tasks.start_soon(transport.run)
            try:
                yield transport
            finally:
                tasks.cancel_scope.cancel()
