"""Worker subprocesses, host side: :func:`spawn_worker` starts a command and yields a
:class:`WorkerTransport` connected to its stdin/stdout.

Its stderr is passed through (or captured), its tail kept for diagnosis. When the worker
dies, ``receive`` ends with its exit code and that tail, so an
:class:`~assistant_frames.AssistantFrameHost` fails every pending call at once with a
:class:`~assistant_frames.FrameDisconnected` that says why. Leaving the block shuts the
worker down: stdin closed, then SIGTERM after a grace period, then SIGKILL; the process
is always reaped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Literal

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream

from .._anyio import running_asyncio, task_group
from .._text import command_text
from ._fd_streams import FdSendStream
from ._outbox import (
    BufferedWriter,
    DirectOutbox,
)
from ._streams import read_pipe
from .contract import (
    CloseReason,
    TransportClosed,
    _renamed_limit,
)
from .stdio_transport import _READ_SIZE, DEFAULT_MAX_MESSAGE_BYTES, StdioTransport

__all__ = ["WorkerTransport", "describe_exit", "spawn_worker"]

_STDERR_TAIL_BYTES = 4096
_EXIT_WAIT = 1.0  # after stdout ends, how long to wait for the exit code


class WorkerTransport(StdioTransport):
    """The channel to a worker started by :func:`spawn_worker`."""

    def __init__(
        self,
        process: anyio.abc.Process,
        *,
        max_message_bytes: int | None,
        pass_stderr: bool,
        receive_stream: ByteReceiveStream | None = None,
        send_stream: ByteSendStream | None = None,
        command: Sequence[str] = (),
        own_process_group: bool = False,
    ) -> None:
        receive_stream = receive_stream or process.stdout
        send_stream = send_stream or process.stdin
        assert receive_stream is not None
        assert send_stream is not None
        super().__init__(receive_stream, send_stream, max_message_bytes=max_message_bytes)
        writer = _AsyncioPipeWriter.wrap(send_stream)
        if writer is not None:
            self._outbox = DirectOutbox(writer)
        self.process = process
        self.command = tuple(command)
        self._own_group = own_process_group
        self._pass_stderr = pass_stderr
        self._stderr = bytearray()
        self._stderr_limit = _STDERR_TAIL_BYTES if pass_stderr else 1024 * 1024

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        """The exit code once the worker has exited (negative: killed by that signal)."""
        return self.process.returncode

    def stderr_tail(self) -> str:
        """The end of what the worker wrote to stderr (all of it with ``stderr="capture"``,
        up to 1 MiB)."""
        return self._stderr.decode("utf-8", "replace")

    async def _pump_stderr(self) -> None:
        stream = self.process.stderr
        if stream is None:
            return
        with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            while True:
                chunk = await stream.receive(_READ_SIZE)
                if self._pass_stderr:
                    with contextlib.suppress(OSError, ValueError):
                        sys.stderr.buffer.write(chunk)
                        sys.stderr.buffer.flush()
                self._stderr += chunk
                if len(self._stderr) > self._stderr_limit:
                    del self._stderr[: len(self._stderr) - self._stderr_limit]

    def _check_peer(self) -> None:
        """A worker that has exited (and whose stdout has ended) takes no more messages."""
        if self._ended is not None and self.process.returncode is not None:
            raise anyio.BrokenResourceError(str(self._ended))

    async def _end_of_stream(self, exc: BaseException | None) -> anyio.EndOfStream:
        """Ends with the exit code and stderr tail attached, for ``FrameDisconnected``.

        Clean when the worker exited with code 0, or closed its stdout and is still
        running.
        """
        description = await self._describe_end(exc)
        code = self.process.returncode
        closed = exc is None or isinstance(exc, anyio.EndOfStream)
        reason = CloseReason(
            description,
            clean=code == 0 or (code is None and closed),
            exit_code=code,
            stderr_tail=self.stderr_tail(),
        )
        return TransportClosed(reason)

    def _describe_worker(self) -> str:
        """``worker process 4242 (`python worker.py`)``: which worker, for a person."""
        if not self.command:
            return f"worker process {self.pid}"
        return f"worker process {self.pid} (`{command_text(self.command)}`)"

    async def _describe_end(self, exc: BaseException | None) -> str:
        with anyio.move_on_after(_EXIT_WAIT):
            await self.process.wait()
        await anyio.lowlevel.checkpoint()  # let the stderr pump take what is already in the pipe
        return describe_exit(self._describe_worker(), self.process.returncode, self.stderr_tail())

    async def shutdown(self, grace_period: float) -> None:
        """Stop the worker: close its stdin, then SIGTERM, then SIGKILL; always reap it."""
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(Exception):
                await self.aclose()
            process = self.process
            try:
                for step in ("wait", "terminate", "kill"):
                    if step == "terminate":
                        self._signal(signal.SIGTERM)
                    elif step == "kill":
                        self._signal(signal.SIGKILL)
                    with anyio.move_on_after(grace_period if step != "kill" else None):
                        await process.wait()
                    if process.returncode is not None:
                        return
            finally:
                if self._own_group:  # what the worker started must not outlive it
                    self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        """Send ``signum`` to the worker, or to its whole process group if it has one."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self._own_group and hasattr(os, "killpg"):
                os.killpg(self.process.pid, signum)
            elif signum == signal.SIGTERM:
                self.process.terminate()
            else:
                self.process.kill()


class _AsyncioPipeWriter:
    """A worker's stdin under asyncio as a :class:`BufferedWriter`, so that lines go
    straight into asyncio's buffer: no writer task, nor the two checkpoints anyio's
    ``send`` takes, per message. Shares the one ``asyncio.StreamWriter`` with
    ``process.stdin``, so what is written either way stays in order.
    """

    __slots__ = ("_transport", "_writer")

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._transport = writer.transport

    @classmethod
    def wrap(cls, stream: object) -> _AsyncioPipeWriter | None:
        """One for anyio's wrapper of an ``asyncio.StreamWriter``; else ``None``."""
        writer = getattr(stream, "_stream", None)
        if isinstance(writer, asyncio.StreamWriter) and isinstance(
            writer.transport, asyncio.WriteTransport
        ):
            return cls(writer)
        return None

    def write_now(self, data: bytes) -> None:
        if self._transport.is_closing():
            raise anyio.BrokenResourceError("the worker's stdin is closed")
        if data:
            self._writer.write(data)

    @property
    def write_paused(self) -> bool:
        transport = self._transport
        if transport.is_closing():
            return False  # write_now raises
        return transport.get_write_buffer_size() > transport.get_write_buffer_limits()[1]

    async def wait_drained(self) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await self._writer.drain()


if TYPE_CHECKING:

    def _is_buffered_writer(writer: _AsyncioPipeWriter) -> BufferedWriter:
        return writer


@asynccontextmanager
async def spawn_worker(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: Literal["inherit", "capture"] = "inherit",
    grace_period: float = 2.0,
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
    max_line_bytes: int | None = None,
    own_process_group: bool = False,
) -> AsyncIterator[WorkerTransport]:
    """Start ``command`` as a worker and yield the transport to it.

    ``max_message_bytes`` (16 MiB; ``None``: no limit) bounds the messages sent to the
    worker and the lines read from it (``max_line_bytes`` is its deprecated name).

    ``stderr="inherit"`` passes the worker's stderr through to ours (keeping a tail for
    error messages); ``"capture"`` keeps it (up to 1 MiB) for
    :meth:`WorkerTransport.stderr_tail` instead. ``env`` replaces the environment
    (``None``: inherit ours). Raises ``OSError`` if the command cannot be started.

    ``own_process_group`` starts the worker in a session of its own (POSIX) and signals
    the whole process group when stopping it, then kills what is left of the group: a
    wrapper such as ``npx`` or ``uvx`` takes the processes it started with it, and a
    Ctrl-C in the terminal does not reach the worker (its parent stops it).

    The transport is the only reader of the worker's stdout and writer of its stdin:
    under asyncio it reads a pipe of its own (``transport.process.stdout`` is
    ``None``), under other event loops it writes to one (``transport.process.stdin``
    is ``None``).
    """
    if isinstance(command, str):
        raise TypeError("command must be a sequence of arguments, e.g. ['python', 'worker.py']")
    limit = _renamed_limit(
        max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES, max_line_bytes, "max_line_bytes"
    )
    # Under asyncio the worker's stdout is a pipe of ours, read by read_pipe: asyncio's
    # subprocess streams hand every chunk over a loop iteration late (call_soon).
    # Elsewhere its stdin is: a line then goes into the pipe in the task that sends it
    # (FdSendStream.try_write), not through a writer task.
    asyncio = running_asyncio()
    stdout_pipe = os.pipe() if asyncio else None
    stdin_pipe = None if asyncio else os.pipe()
    try:
        process = await anyio.open_process(
            list(command),
            stdin=subprocess.PIPE if stdin_pipe is None else stdin_pipe[0],
            stdout=subprocess.PIPE if stdout_pipe is None else stdout_pipe[1],
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=own_process_group and hasattr(os, "killpg"),
        )
    except BaseException:
        for fd in (*(stdout_pipe or ()), *(stdin_pipe or ())):
            os.close(fd)
        raise
    if stdin_pipe is not None:
        os.close(stdin_pipe[0])  # the worker's end
        os.set_blocking(stdin_pipe[1], False)
    try:
        receive_stream = None
        if stdout_pipe is not None:
            os.close(stdout_pipe[1])  # the worker's end
            receive_stream = await read_pipe(stdout_pipe[0], close_fd=True)
        # The transport closes it (aclose), once made.
        send_stream = None if stdin_pipe is None else FdSendStream(stdin_pipe[1])
        transport = WorkerTransport(
            process,
            max_message_bytes=limit,
            pass_stderr=stderr == "inherit",
            receive_stream=receive_stream,
            send_stream=send_stream,
            command=command,
            own_process_group=own_process_group,
        )
    except BaseException:
        if stdin_pipe is not None:
            os.close(stdin_pipe[1])
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.aclose()
        raise
    try:
        async with task_group() as tasks:
            tasks.start_soon(transport._pump_stderr)
            tasks.start_soon(transport.run)
            try:
                yield transport
            finally:
                await transport.shutdown(grace_period)
                tasks.cancel_scope.cancel()
    finally:
        await process.aclose()


def describe_exit(who: str, code: int | None, stderr_tail: str = "") -> str:
    """How a process ended, in words, with the last lines of its stderr: ``"<who> was
    killed by SIGKILL (exit code -9); the end of its stderr:\n..."``."""
    if code is None:
        what = f"{who} closed its stdout"
    elif code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        what = f"{who} was killed by {name} (exit code {code})"
    else:
        what = f"{who} exited with code {code}"
    tail = stderr_tail.strip()
    if tail:
        what += "; the end of its stderr:\n" + "\n".join(tail.splitlines()[-10:])
    return what
