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

This module gathers the three parts: the transport (``stdio_transport``), the host
side (``worker_process``) and the worker side (``worker_stdio``).
"""

from __future__ import annotations

from .stdio_transport import DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_MESSAGE_BYTES, StdioTransport
from .worker_process import WorkerTransport, spawn_worker
from .worker_stdio import own_stdio

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "StdioTransport",
    "WorkerTransport",
    "own_stdio",
    "spawn_worker",
]
