"""What ``serve`` serves: one ``MODULE:OBJECT``, or a federation of frames and MCP servers.

``--frame NAME=FRAME`` connects an assistant-frames frame (a ws:// URL or a worker
command) and ``--mcp NAME=SERVER`` an MCP server (an http(s):// URL or a command); each
joins one parent registry under the namespace NAME, beside ``MODULE:OBJECT`` if given.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass

from ..errors import FrameDisconnected
from ..frames import AssistantFrameProvider, ReconnectingHost
from ..registry import ModelContextRegistry
from .common import CommandError, note, usage_error, websocket_module
from .loading import load_frame_async
from .targets import Target, connect, context_of

__all__ = ["Member", "parse_member", "served_frame"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")


@dataclass(frozen=True)
class Member:
    """One ``--frame`` or ``--mcp`` option: a namespace and what to connect to."""

    kind: str  # "frame" or "mcp"
    name: str
    spec: str


def parse_member(kind: str, text: str) -> Member:
    """``NAME=WHAT`` -> a :class:`Member`; ``ValueError`` says what is wrong."""
    name, sep, spec = text.partition("=")
    if not sep or not spec.strip():
        raise ValueError(f"expected NAME=... (e.g. time='uvx mcp-server-time'), not {text!r}")
    if not _NAME.fullmatch(name):
        raise ValueError(
            f"a namespace is a letter or digit then letters, digits, '_' or '-' "
            f"(up to 32), not {name!r}"
        )
    return Member(kind, name, spec.strip())


@contextlib.asynccontextmanager
async def served_frame(
    options: argparse.Namespace, *, timeout: float
) -> AsyncIterator[AssistantFrameProvider]:
    """The frame to serve: ``MODULE:OBJECT`` alone, or the federation the options name."""
    members: list[Member] = [*(options.frame or ()), *(options.mcp or ())]
    if not members:
        if options.target is None:
            raise usage_error("give what to serve: MODULE:OBJECT, or --frame / --mcp members")
        yield await load_frame_async(options.target)
        return
    names = [member.name for member in members]
    if len(set(names)) != len(names):
        twice = sorted({name for name in names if names.count(name) > 1})
        raise usage_error(f"each namespace once: {', '.join(twice)} given twice")
    parent = ModelContextRegistry()
    if options.target is not None:
        parent.add_provider(await load_frame_async(options.target))
    async with contextlib.AsyncExitStack() as stack:
        for member in members:
            description = await _join(stack, parent, member, timeout)
            count = len(parent.get_model_context().tools)
            tools = f"{count} tool{'s' if count != 1 else ''}"
            note(f"{member.name}: {description} joined ({tools} in all now)")
        yield AssistantFrameProvider(parent)


async def _join(
    stack: contextlib.AsyncExitStack,
    parent: ModelContextRegistry,
    member: Member,
    timeout: float,
) -> str:
    if member.kind == "mcp":
        from ..errors import ConnectError
        from ..mcp import MCPFrame

        frame = MCPFrame(member.spec, name=member.name, connect_timeout=timeout)
        try:
            await stack.enter_async_context(frame)
        except ConnectError as exc:
            raise CommandError(f"--mcp {member.name}: {exc}") from None
        parent.add_provider(frame, namespace=member.name)
        return f"MCP server {member.spec}"
    if member.spec.startswith(("ws://", "wss://")):
        return await _join_websocket(stack, parent, member, timeout)
    target = Target(command=tuple(shlex.split(member.spec)))
    host, description = await stack.enter_async_context(
        connect(target, token=None, timeout=timeout)
    )
    await context_of(host, target, timeout)
    parent.add_provider(host, namespace=member.name)
    return description


async def _join_websocket(
    stack: contextlib.AsyncExitStack,
    parent: ModelContextRegistry,
    member: Member,
    timeout: float,
) -> str:
    """A WebSocket frame, reconnected whenever its connection drops."""
    connect_websocket = websocket_module().connect_websocket
    url = member.spec
    host = ReconnectingHost(
        lambda: connect_websocket(url, open_timeout=timeout), name=member.name, timeout=timeout
    )
    await stack.enter_async_context(host)
    try:
        await host.wait_for_context(timeout)
    except (TimeoutError, FrameDisconnected) as exc:
        why = f"no model context within {timeout:g} s" if isinstance(exc, TimeoutError) else exc
        raise CommandError(f"--frame {member.name}: cannot reach {url}: {why}") from None
    parent.add_provider(host, namespace=member.name)
    return f"{url} (reconnected if it drops)"
