"""What ``serve`` serves: one ``MODULE:OBJECT``, or a federation of frames and MCP servers.

``--frame NAME=FRAME`` connects an assistant-frames frame (a ws:// URL or a worker
command) and ``--mcp NAME=SERVER`` an MCP server (an http(s):// URL or a command); each
joins one :class:`~assistant_frames.Federation` under the namespace NAME, beside
``MODULE:OBJECT`` if given, and is reconnected (a worker restarted) if it drops.
"""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio

from ..errors import AssistantFramesError
from ..federation import Federation
from ..frames import AssistantFrameProvider
from ..registry import ModelContextRegistry
from .common import CommandError, note, usage_error
from .loading import load_frame_async

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
    async with Federation(parent, timeout=timeout, connect_timeout=timeout) as federation:
        for member in members:  # in the order given; they start side by side
            await _join(federation, member, wait=False)
        failures: list[BaseException] = []
        async with anyio.create_task_group() as tg:

            async def joined(member: Member) -> None:
                try:
                    await _join(federation, member, wait=True)
                except CommandError as exc:
                    failures.append(exc)
                    tg.cancel_scope.cancel()  # the first failure ends the start
                    return
                count = len(parent.get_model_context().tools)
                tools = f"{count} tool{'s' if count != 1 else ''}"
                what = federation.status(member.name).target
                note(f"{member.name}: {what} joined ({tools} in all now; reconnected if it drops)")

            for member in members:
                tg.start_soon(joined, member)
        if failures:
            raise failures[0]
        yield AssistantFrameProvider(federation)


async def _join(federation: Federation, member: Member, *, wait: bool) -> None:
    """Add ``member`` (``wait=False``), or wait for its first context (``wait=True``);
    what goes wrong is a :class:`CommandError` naming the option."""
    try:
        if wait:
            await federation.wait_joined(member.name)
        else:
            await federation.add(member.name, member.spec, mcp=member.kind == "mcp", wait=False)
    except ImportError as exc:  # the websockets or mcp extra is missing
        raise CommandError(str(exc)) from None
    except (AssistantFramesError, ValueError) as exc:
        raise CommandError(f"--{member.kind} {member.name}: {exc}") from None
