"""The frame ``inspect`` and ``call`` talk to: a ws:// URL to connect to, or a worker
command to spawn; connecting a host to it and waiting for its model context."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass

from ..frames import AssistantFrameHost
from ..registry import ModelContext
from .common import TOKEN_ENV, CommandError, usage_error, websocket_module

__all__ = ["Target", "client_token", "connect", "context_of", "resolve_target"]


@dataclass(frozen=True)
class Target:
    url: str | None = None
    command: tuple[str, ...] | None = None

    def describe(self) -> str:
        if self.url is not None:
            return self.url
        return f"worker `{shlex.join(self.command or ())}`"


def resolve_target(options: argparse.Namespace) -> Target:
    command = options.worker_command
    if command is not None:
        if options.target is not None:
            raise usage_error(
                f"give the frame once: a URL ({options.target}) or '-- COMMAND', not both"
            )
        if not command:
            raise usage_error("nothing after '--': give the worker command to run")
        return Target(command=tuple(command))
    url = options.target
    if url is None:
        raise usage_error("give the frame: a ws:// URL, or '-- COMMAND ...' to start a worker")
    if not url.startswith(("ws://", "wss://")):
        raise usage_error(
            f"the frame must be a ws:// or wss:// URL, or '-- COMMAND ...' to start a worker; "
            f"not {url!r}"
        )
    return Target(url=url)


@contextlib.asynccontextmanager
async def connect(
    target: Target, *, token: str | None, timeout: float
) -> AsyncIterator[tuple[AssistantFrameHost, str]]:
    """A host connected to ``target`` and the frame's description (with a pid for workers)."""
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


async def context_of(host: AssistantFrameHost, target: Target, timeout: float) -> ModelContext:
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
