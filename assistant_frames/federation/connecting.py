"""``connect(target)``: one call, one ``async with``, a frame's live connection."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from os import PathLike
from typing import Any

import anyio

from ..errors import FrameDisconnected
from ..frames import FrameConnection
from .targets import FrameTarget, no_context

__all__ = ["connect"]


@contextlib.asynccontextmanager
async def connect(
    target: Any,
    *,
    mcp: bool | None = None,
    name: str | None = None,
    timeout: float | None = 30.0,
    connect_timeout: float = 10.0,
    token: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | PathLike[str] | None = None,
) -> AsyncIterator[FrameConnection]:
    """Connect to a frame or an MCP server; yield the connection, its context arrived.

    ``target`` is one of:

    - a registry or any ``ModelContextProvider``, or an ``AssistantFrameProvider``:
      served in this process over a :func:`~assistant_frames.memory_pair`;
    - a ``ws://`` or ``wss://`` URL: a frame served over WebSockets (``token`` is the
      bearer token; needs the ``websockets`` extra);
    - a command, as a list of arguments or a string split like a shell does: a worker
      serving a frame on its stdin and stdout (``env`` and ``cwd`` apply); a command
      that starts with a ``.py`` script (``"worker.py"``) runs it with this interpreter;
    - an ``http://`` or ``https://`` URL (``token`` is the bearer token), a command with
      ``mcp=True``, or an ``mcp`` server object: an MCP server (needs the ``mcp`` extra).

    ``mcp`` (``None``: by that rule) says explicitly whether the target is an MCP
    server. The connection is an :class:`~assistant_frames.AssistantFrameHost` for a
    frame and an :class:`~assistant_frames.mcp.MCPFrameHost` for an MCP server; either way a
    :class:`~assistant_frames.FrameConnection`, already holding the first context.
    ``timeout`` bounds each call (``None``: no limit); ``connect_timeout`` bounds
    connecting and waiting for that context. Leaving the block closes the connection
    (a worker is stopped).

    Raises :class:`~assistant_frames.ContextTimeout` when no context came in time, its
    message naming the target and what it sent instead (a process that is not a frame),
    :class:`~assistant_frames.ConnectError` when it cannot connect or the peer went away
    first, ``ValueError`` or ``TypeError`` for a target of no known kind.
    """
    frame = FrameTarget(
        target,
        mcp=mcp,
        name=name,
        timeout=timeout,
        connect_timeout=connect_timeout,
        token=token,
        env=env,
        cwd=cwd,
    )
    started = anyio.current_time()
    async with frame.open() as connection:
        left = max(connect_timeout - (anyio.current_time() - started), 0.001)
        try:
            await connection.wait_for_context(left)
        except TimeoutError:
            frame.stop_worker()
            raise no_context(frame, None, connect_timeout) from None
        except FrameDisconnected as exc:
            raise no_context(frame, exc, connect_timeout) from exc
        yield connection
