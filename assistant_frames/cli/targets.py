"""The frame ``inspect`` and ``call`` talk to: a ws:// URL to connect to, a worker command
to spawn, or with ``--mcp`` an MCP server (an http(s):// URL or a command); connecting to
it and waiting for its model context."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..frames import AssistantFrameHost
from ..registry import ModelContext
from .common import TOKEN_ENV, CommandError, usage_error, websocket_module

__all__ = ["Connected", "Target", "client_token", "connect", "context_of", "resolve_target"]


class Connected(Protocol):
    """What ``connect`` yields: a frame host, or an ``MCPFrame`` for an MCP server."""

    def get_model_context(self) -> ModelContext: ...

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]: ...

    async def wait_for_context(self, timeout: float | None = None) -> ModelContext: ...

    async def call_tool(
        self, name: str, args: Any = None, *, timeout: float | None = None
    ) -> Any: ...


@dataclass(frozen=True)
class Target:
    url: str | None = None
    command: tuple[str, ...] | None = None
    mcp: bool = False  # an MCP server rather than an assistant-frames frame

    def describe(self) -> str:
        if self.url is not None:
            return self.url
        what = "MCP server" if self.mcp else "worker"
        return f"{what} `{shlex.join(self.command or ())}`"


def resolve_target(options: argparse.Namespace) -> Target:
    command = options.worker_command
    if command is not None:
        if options.target is not None:
            raise usage_error(
                f"give the frame once: a URL ({options.target}) or '-- COMMAND', not both"
            )
        if not command:
            raise usage_error("nothing after '--': give the worker command to run")
        return Target(command=tuple(command), mcp=options.mcp)
    url = options.target
    if url is None:
        raise usage_error("give the frame: a ws:// URL, or '-- COMMAND ...' to start a worker")
    if options.mcp:
        if not url.startswith(("http://", "https://")):
            raise usage_error(
                f"with --mcp, give an http:// or https:// URL, or '-- COMMAND ...'; not {url!r}"
            )
        return Target(url=url, mcp=True)
    if not url.startswith(("ws://", "wss://")):
        hint = " (an MCP server? add --mcp)" if url.startswith(("http://", "https://")) else ""
        raise usage_error(
            f"the frame must be a ws:// or wss:// URL, or '-- COMMAND ...' to start a worker; "
            f"not {url!r}{hint}"
        )
    return Target(url=url)


@contextlib.asynccontextmanager
async def connect(
    target: Target, *, token: str | None, timeout: float
) -> AsyncIterator[tuple[Connected, str]]:
    """A host connected to ``target`` and the frame's description (with a pid for workers).

    For an MCP server the "host" is an ``MCPFrame``, which offers the same calls.
    """
    if target.mcp:
        async with _connect_mcp(target, timeout=timeout) as connected:
            yield connected
        return
    if target.url is not None:
        connect_websocket = websocket_module().connect_websocket
        async with (
            connect_websocket(target.url, token=token, open_timeout=timeout) as transport,
            AssistantFrameHost(transport, timeout=timeout, name=target.url) as host,
        ):
            yield host, target.url
        return
    from ..transports.stdio import spawn_worker

    command = list(target.command or ())
    async with contextlib.AsyncExitStack() as stack:
        try:
            transport = await stack.enter_async_context(
                spawn_worker(command, grace_period=min(timeout, 2.0))
            )
        except OSError as exc:
            raise CommandError(
                f"cannot start the worker {shlex.join(command)}: {exc.strerror or exc}"
            ) from None
        host = await stack.enter_async_context(
            AssistantFrameHost(transport, timeout=timeout, name="worker")
        )
        yield host, f"worker pid {transport.pid}: {shlex.join(command)}"


@contextlib.asynccontextmanager
async def _connect_mcp(target: Target, *, timeout: float) -> AsyncIterator[tuple[Connected, str]]:
    try:
        from ..mcp import MCPFrame
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    server = target.url if target.url is not None else list(target.command or ())
    async with MCPFrame(
        server, name=target.describe(), timeout=timeout, connect_timeout=timeout
    ) as frame:
        info = frame.server_info
        name = " ".join(part for part in (info.name, info.version) if part) if info else ""
        about = f" ({name})" if name else ""
        yield frame, f"{target.describe()}{about}, MCP {frame.protocol_version}"


async def context_of(host: Connected, target: Target, timeout: float) -> ModelContext:
    try:
        return await host.wait_for_context(timeout)
    except TimeoutError:
        raise CommandError(
            f"{target.describe()} sent no model context within {timeout:g} s "
            "(is it an assistant-frames frame?)"
        ) from None


def client_token(options: argparse.Namespace) -> str | None:
    token: str | None = options.token or os.environ.get(TOKEN_ENV) or None
    return token
