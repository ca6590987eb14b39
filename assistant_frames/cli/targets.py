"""The frame ``inspect``, ``call`` and ``apps preview`` talk to: whatever
:func:`assistant_frames.connect` takes, as the command line gives it: a ws://, wss:// or
nats:// URL, an http(s):// MCP server, a registry ``MODULE:OBJECT`` served in this
process, or a worker command (one argument split like a shell, ``worker.py``, or
everything after ``--``); ``--mcp`` makes a command an MCP server."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from ..federation import connect as connect_target
from ..frames import FrameConnection
from .common import TOKEN_ENV, CommandError, usage_error
from .loading import load_frame_async

__all__ = ["Target", "client_token", "connect", "resolve_target"]

_FRAME_URLS = ("ws://", "wss://", "nats://", "tls://")
_MCP_URLS = ("http://", "https://")
# MODULE:OBJECT, as serve takes it (a command never looks like this: no path, no space).
_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


@dataclass(frozen=True)
class Target:
    url: str | None = None
    command: tuple[str, ...] | None = None
    mcp: bool = False  # an MCP server rather than an assistant-frames frame
    spec: str | None = None  # a registry (or provider) MODULE:OBJECT, served in-process

    def describe(self) -> str:
        if self.url is not None:
            return self.url
        if self.spec is not None:
            return self.spec
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
    target = options.target
    if target is None:
        raise usage_error(
            "give the frame: a ws:// or http(s):// URL, MODULE:OBJECT, a worker script or "
            "command, or '-- COMMAND ...'"
        )
    if target.startswith(_MCP_URLS):  # an MCP server, as connect() takes it
        return Target(url=target, mcp=True)
    if target.startswith(_FRAME_URLS):
        if options.mcp:
            raise usage_error(
                f"with --mcp, give an http:// or https:// URL, or a command; not {target!r}"
            )
        return Target(url=target)
    if "://" in target:
        raise usage_error(
            f"cannot connect to {target!r}: use ws://, wss://, nats://, http:// or https://"
        )
    if not options.mcp and _SPEC.fullmatch(target):
        return Target(spec=target)
    try:
        words = tuple(shlex.split(target))
    except ValueError as exc:
        raise usage_error(f"cannot read the command {target!r}: {exc}") from None
    if not words:
        raise usage_error("the command is empty: give the worker command to run")
    return Target(command=words, mcp=options.mcp)


@contextlib.asynccontextmanager
async def connect(
    target: Target, *, token: str | None, timeout: float
) -> AsyncIterator[tuple[FrameConnection, str]]:
    """The connection to ``target``, holding its context, and the frame's description.

    Built on :func:`assistant_frames.connect`; for an MCP server the description says
    which server and protocol version answered.
    """
    what: Any = target.url if target.url is not None else list(target.command or ())
    if target.spec is not None:
        what = await load_frame_async(target.spec)
        name = target.spec
    elif target.mcp:  # MCPFrameHost's messages say "the MCP server <name>" themselves
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
