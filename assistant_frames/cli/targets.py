"""The frame ``inspect`` and ``call`` talk to: a ws:// or nats:// URL to connect to, a
worker command to spawn, or with ``--mcp`` an MCP server (an http(s):// URL or a
command), checked as the command line gives it and connected with
:func:`assistant_frames.connect`."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass

from ..federation import connect as connect_target
from ..frames import FrameConnection
from .common import TOKEN_ENV, CommandError, usage_error

__all__ = ["Target", "client_token", "connect", "resolve_target"]


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
    if not url.startswith(("ws://", "wss://", "nats://", "tls://")):
        hint = " (an MCP server? add --mcp)" if url.startswith(("http://", "https://")) else ""
        raise usage_error(
            f"the frame must be a ws://, wss:// or nats:// URL, or '-- COMMAND ...' to start "
            f"a worker; not {url!r}{hint}"
        )
    return Target(url=url)


@contextlib.asynccontextmanager
async def connect(
    target: Target, *, token: str | None, timeout: float
) -> AsyncIterator[tuple[FrameConnection, str]]:
    """The connection to ``target``, holding its context, and the frame's description.

    Built on :func:`assistant_frames.connect`; for an MCP server the description says
    which server and protocol version answered.
    """
    what = target.url if target.url is not None else list(target.command or ())
    if target.mcp:  # MCPFrameHost's messages say "the MCP server <name>" themselves
        name = target.url or f"`{shlex.join(target.command or ())}`"
    elif target.command is not None:
        name = "worker"  # errors name the worker, not its (perhaps long) command line
    else:
        name = target.describe()
    try:
        async with connect_target(
            what,
            mcp=target.mcp,
            name=name,
            token=token,
            timeout=timeout,
            connect_timeout=timeout,
        ) as connection:
            yield connection, _describe(target, connection)
    except ImportError as exc:  # the websockets or mcp extra is missing
        raise CommandError(str(exc)) from None


def _describe(target: Target, connection: FrameConnection) -> str:
    info = getattr(connection, "server_info", None)  # an MCPFrameHost's
    if not target.mcp:
        return target.describe()
    name = " ".join(part for part in (info.name, info.version) if part) if info else ""
    about = f" ({name})" if name else ""
    return f"{target.describe()}{about}, MCP {getattr(connection, 'protocol_version', '?')}"


def client_token(options: argparse.Namespace) -> str | None:
    token: str | None = options.token or os.environ.get(TOKEN_ENV) or None
    return token
