"""Worker subprocesses: newline-delimited JSON over a child's stdin and stdout.

Host side, :func:`spawn_worker` starts a command and yields a :class:`WorkerTransport`
connected to its stdin/stdout, passing its stderr through (or capturing it) and keeping
the tail for diagnosis. When the worker dies, ``receive`` ends with its exit code and
that tail, so an :class:`~assistant_frames.AssistantFrameHost` fails every pending call
at once with a :class:`~assistant_frames.FrameDisconnected` that says why. Leaving the
block shuts the worker down: stdin closed, then SIGTERM after a grace period, then
SIGKILL; the process is always reaped.

Worker side, :func:`serve_stdio` serves a provider over the process's own stdin and
stdout. It first moves file descriptor 1 to stderr, so whatever the worker's code
prints (``print``, C extensions, subprocesses) cannot corrupt the channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream, ObjectStream

from .._anyio import running_asyncio, task_group
from .._text import command_text
from ._ndjson import LineDecoder, encode_line
from ._outbox import (
    DEFAULT_HIGH_WATER,
    BufferedWriter,
    DirectOutbox,
    outbox_attributes,
    outbox_for,
)
from ._streams import read_pipe, write_pipe
from .contract import (
    CloseReason,
    TransportClosed,
    _renamed_limit,
)

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "StdioTransport",
    "WorkerTransport",
    "own_stdio",
    "spawn_worker",
]

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_LINE_BYTES = DEFAULT_MAX_MESSAGE_BYTES  # its name before max_message_bytes
_READ_SIZE = 65536
_STDERR_TAIL_BYTES = 4096
_EXIT_WAIT = 1.0  # after stdout ends, how long to wait for the exit code
_CLOSE_TIMEOUT = 2.0  # how long aclose waits for queued lines to be written


class StdioTransport(ObjectStream[Any]):
    """Newline-delimited JSON over a byte stream pair, one message per line.

    ``send`` refuses a message longer than ``max_message_bytes`` as JSON
    (:class:`~assistant_frames.transports.MessageTooLarge`; ``None``: no limit).
    Lines that are not JSON, and lines longer than ``max_message_bytes`` (which are
    skipped up to their end), are dropped with one WARNING per transport; a partial
    last line at the end of the stream is dropped too. ``max_line_bytes`` is the
    deprecated name of ``max_message_bytes``.

    While :meth:`run` writes for it (:func:`spawn_worker` and :func:`serve_stdio` run
    it), ``send`` queues whole lines and waits only while more than ``high_water``
    bytes are queued, so a cancelled send never leaves half a line in the pipe.
    Without it, ``send`` writes inline.
    """

    def __init__(
        self,
        receive_stream: ByteReceiveStream,
        send_stream: ByteSendStream,
        *,
        max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
        high_water: int = DEFAULT_HIGH_WATER,
        max_line_bytes: int | None = None,
    ) -> None:
        limit = _renamed_limit(
            max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES, max_line_bytes, "max_line_bytes"
        )
        self._receive_stream = receive_stream
        self._send_stream = send_stream
        self._max_message_bytes = limit
        self._lines = LineDecoder(limit)
        self._messages = self._lines.messages
        self._outbox = outbox_for(send_stream, send_stream.send, high_water=high_water)
        self._ended: BaseException | None = None
        self._closed = False

    async def send(self, item: Any) -> None:
        """Write ``item`` as one line of JSON.

        Raises :class:`~assistant_frames.transports.UnsendableMessage` (a ``TypeError``)
        if it has no JSON form or is larger than ``max_message_bytes``, before anything
        is written.
        """
        line = (encode_line(item, self._max_message_bytes),)
        if self._closed:
            raise anyio.ClosedResourceError
        self._check_peer()
        try:
            await self._outbox.put(lambda: line)
        except anyio.BrokenResourceError as exc:
            raise anyio.BrokenResourceError(await self._describe_end(exc.__cause__)) from None

    def _check_peer(self) -> None:
        """Raise ``anyio.BrokenResourceError`` if the peer is known to be gone (a
        subclass knows more: a worker that has exited)."""

    @property
    def dropped_count(self) -> int:
        """How many received lines were dropped (not JSON, too long, cut off)."""
        return self._lines.dropped

    @property
    def dropped_samples(self) -> tuple[str, ...]:
        """The first few dropped lines (up to 80 characters each), for diagnosis: a peer
        whose every line is dropped is not speaking newline-delimited JSON."""
        return tuple(self._lines.dropped_samples)

    @property
    def send_would_wait(self) -> bool:
        """Whether :meth:`send` could wait right now (its queue is full, or no writer)."""
        return self._outbox.would_wait

    async def run(self) -> None:
        """Write queued lines until cancelled; run it in the task group that owns the
        transport."""
        await self._outbox.run()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        """:class:`TransportAttribute` ``send_would_wait``, ``max_message_bytes`` and
        ``receive_ready``."""
        return outbox_attributes(self._outbox, self._messages, self._max_message_bytes)

    async def receive(self) -> Any:
        """The next message; :class:`~assistant_frames.transports.TransportClosed` (an
        ``anyio.EndOfStream`` saying why) once the peer is gone."""
        while not self._messages:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._ended is not None:
                raise self._ended
            try:
                chunk = await self._receive_stream.receive(_READ_SIZE)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError) as exc:
                self._lines.end()
                self._ended = await self._end_of_stream(exc)
                continue
            self._lines.feed(chunk)
        return self._messages.popleft()

    async def send_eof(self) -> None:
        """Close the sending direction (the peer's stdin sees end of file)."""
        await self._send_stream.aclose()

    async def aclose(self) -> None:
        """Close both directions, after writing what is queued (waiting at most 2 s for
        a peer that does not read); idempotent."""
        if self._closed:
            return
        self._closed = True
        self._outbox.close()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(_CLOSE_TIMEOUT):
                await self._outbox.drain()
            await self._send_stream.aclose()
            await self._receive_stream.aclose()

    async def _end_of_stream(self, exc: BaseException | None) -> anyio.EndOfStream:
        """What ``receive`` raises once the peer is gone: ``exc`` is what reading raised
        (``anyio.EndOfStream`` when the peer closed its end)."""
        clean = exc is None or isinstance(exc, anyio.EndOfStream)
        return TransportClosed(CloseReason(await self._describe_end(exc), clean=clean))

    async def _describe_end(self, exc: BaseException | None) -> str:
        """Why the peer is gone; subclasses know more (an exit code...)."""
        if exc is None or isinstance(exc, anyio.EndOfStream):
            return "the peer closed the channel"
        return f"the channel broke: {exc!r}"


# -- host side: a worker subprocess -------------------------------------------------------


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
    # (_FdSendStream.try_write), not through a writer task.
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
        send_stream = None if stdin_pipe is None else _FdSendStream(stdin_pipe[1])
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


# -- worker side: serve over our own stdin/stdout ------------------------------------------


class _FdReceiveStream(ByteReceiveStream):
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


class _FdSendStream(ByteSendStream):
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
    """
    max_message_bytes = _renamed_limit(
        max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES, max_line_bytes, "max_line_bytes"
    )
    with _claim_stdio() as (in_fd, out_fd):
        # Text the process wrote to stdout without a newline before this would otherwise
        # be glued to our first message; an empty line is skipped by the reader.
        with contextlib.suppress(BrokenPipeError):  # the host is gone already: receive ends
            os.write(out_fd, b"\n")
        stdin = await read_pipe(in_fd) or _FdReceiveStream(in_fd)
        stdout = await write_pipe(out_fd) or _FdSendStream(out_fd)
        transport = StdioTransport(stdin, stdout, max_message_bytes=max_message_bytes)
        async with task_group() as tasks:
            tasks.start_soon(transport.run)
            try:
                yield transport
            finally:
                tasks.cancel_scope.cancel()


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
