"""What :func:`connect` and :class:`Federation` connect to, and how one connection opens.

:class:`FrameTarget` reads a target once (a registry or provider, a ``ws://`` URL, a
worker command, an MCP server) and then opens one connection per :meth:`open`, which
:class:`~assistant_frames.ReconnectingHost` calls again after every drop. It remembers
what the last connection received, so that a peer that is not a frame gets an error
saying what it sent instead.

Kinds of target that live in other packages (NATS: ``nats://``) are added with
:func:`register_target_kind` by the package that implements them; this module never
imports those packages.
"""

from __future__ import annotations

import contextlib
import importlib
import shlex
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Any, Literal, TypeAlias

from .._anyio import task_group
from .._text import command_text
from ..errors import ConnectError, ContextTimeout, FrameDisconnected
from ..frames import AssistantFrameHost, AssistantFrameProvider, FrameConnection
from ..registry import ModelContextProvider
from ..transports import memory_pair

__all__ = ["FrameTarget", "TargetHandler", "TargetKind", "no_context", "register_target_kind"]

TargetKind: TypeAlias = Literal["in-process", "websocket", "worker", "mcp", "nats"]
"""How a target is reached: served in this process, a WebSocket, a worker subprocess
speaking the frame protocol over stdio, an MCP server (any of its transports), or NATS
(one frame by name, or every frame on the bus)."""

_FRAME_SCHEMES = ("ws://", "wss://")
_MCP_SCHEMES = ("http://", "https://")


@dataclass(frozen=True)
class TargetHandler:
    """A kind of target that another package adds to :class:`FrameTarget`.

    ``schemes`` are the URL prefixes it takes (``"nats://"``), ``accepts`` tells the
    target objects it takes. ``resolve(target, mcp=..., token=...)`` checks a target and
    returns what ``connection`` will need of it and a description (``ValueError`` when
    it is not one); ``connection(resolved, frame_target)`` makes one connection, not yet
    entered (the ``frame_target`` gives its ``name``, ``timeout`` and
    ``connect_timeout``), for each :meth:`FrameTarget.open`.
    """

    kind: TargetKind
    schemes: tuple[str, ...]
    accepts: Callable[[Any], bool]
    resolve: Callable[..., tuple[Any, str]]
    connection: Callable[[Any, FrameTarget], FrameConnection]


_HANDLERS: dict[TargetKind, TargetHandler] = {}

#: The URL schemes of the kinds that this library's optional packages add, and the package
#: whose import registers them: named here, not imported, so that the package loads only
#: when such a URL is used (``nats-py`` runs on asyncio only).
_REGISTERED_ON_IMPORT = {"nats://": "assistant_frames.nats", "tls://": "assistant_frames.nats"}


def register_target_kind(handler: TargetHandler) -> None:
    """Add a kind of target to :func:`connect` and ``Federation`` (replacing one of the
    same ``kind``)."""
    _HANDLERS[handler.kind] = handler


def _handler_for(target: Any) -> TargetHandler | None:
    if isinstance(target, str):
        for scheme, package in _REGISTERED_ON_IMPORT.items():
            if target.startswith(scheme):
                importlib.import_module(package)  # registers its kinds
        return next((h for h in _HANDLERS.values() if target.startswith(h.schemes)), None)
    return next((h for h in _HANDLERS.values() if h.accepts(target)), None)


class FrameTarget:
    """One target of :func:`connect`, resolved; :meth:`open` opens a connection to it.

    The rule: a ``ModelContextProvider`` (a registry...) or an
    ``AssistantFrameProvider`` is served in this process; a ``ws://`` or ``wss://`` URL
    is a frame over a WebSocket; an ``http://`` or ``https://`` URL is an MCP server
    (Streamable HTTP); a command (a list of arguments, or a string split like a shell
    does) is a worker serving a frame over stdio, or an MCP server when ``mcp=True``
    (a command that starts with a ``.py`` script runs it with this interpreter);
    an ``mcp`` server object (``MCPServer``, low-level ``Server``) is an MCP server in
    this process. ``mcp`` (``None``: by that rule) says explicitly whether it is one.
    A ``nats://`` URL (or an ``assistant_frames.nats`` ``NATSFrameTarget`` / ``NATSBusTarget``) is
    one frame on NATS (``nats://host:4222/calc``) or every frame there
    (``nats://host:4222``); ``token`` is the NATS token.
    """

    def __init__(
        self,
        target: Any,
        *,
        mcp: bool | None = None,
        name: str | None = None,
        timeout: float | None = 30.0,
        connect_timeout: float = 10.0,
        token: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | PathLike[str] | None = None,
    ) -> None:
        if not connect_timeout > 0:
            raise ValueError(f"connect_timeout must be positive, not {connect_timeout!r}")
        self.target = target
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._token = token
        self._env = env
        self._cwd = cwd
        self._command: list[str] | None = None
        self._handler: TargetHandler | None = None
        self._resolved: Any = None  # what the handler's connection() needs
        self.kind, self.description = self._resolve(target, mcp)
        self.name = name or self.description
        # What the last connection got: its host (frames) and worker transport (commands).
        self._last_host: AssistantFrameHost | None = None
        self._last_worker: Any = None

    def _resolve(self, target: Any, mcp: bool | None) -> tuple[TargetKind, str]:
        handler = _handler_for(target)
        if handler is not None:
            self._resolved, description = handler.resolve(target, mcp=mcp, token=self._token)
            self._handler = handler
            return handler.kind, description
        if isinstance(target, str) and "://" in target:
            if target.startswith(_FRAME_SCHEMES):
                if mcp:
                    raise ValueError(f"An MCP server is an http(s):// URL or a command: {target}")
                return "websocket", target
            if target.startswith(_MCP_SCHEMES):
                if mcp is False:
                    raise ValueError(
                        f"A frame is reached over ws:// or wss://; {target} is an MCP server's "
                        "kind of URL (leave mcp unset, or give a ws:// URL)"
                    )
                return "mcp", f"MCP server {target}"
            raise ValueError(
                f"Cannot connect to {target}: use ws://, wss://, http://, https:// or nats://"
            )
        if isinstance(target, str) or (
            isinstance(target, Sequence) and not isinstance(target, (bytes, bytearray))
        ):
            command = shlex.split(target) if isinstance(target, str) else [str(p) for p in target]
            if not command:
                raise ValueError("The command is empty")
            if command[0].endswith(".py"):  # a script: run it with this interpreter
                command = [sys.executable, *command]
            self._command = command
            what = "MCP server" if mcp else "worker"
            return ("mcp" if mcp else "worker"), f"{what} `{command_text(command)}`"
        if type(target).__module__.partition(".")[0] == "mcp" or mcp:
            return "mcp", f"MCP server {type(target).__name__}"
        if isinstance(target, AssistantFrameProvider) or (
            isinstance(target, ModelContextProvider) and mcp is None
        ):
            return "in-process", f"{type(target).__name__} in this process"
        raise TypeError(
            "connect() takes a registry or provider, a ws:// or http(s):// URL, a command "
            f"(a list or a string) or an mcp server object; not {target!r}"
        )

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[FrameConnection]:
        """Open one connection (entered, its context not yet waited for)."""
        self._last_host = self._last_worker = None
        if self.kind == "mcp":
            async with self._open_mcp() as frame:
                yield frame
            return
        if self._handler is not None:
            connection = self._handler.connection(self._resolved, self)
            if isinstance(connection, AssistantFrameHost):
                self._last_host = connection
            async with connection:
                yield connection
            return
        async with contextlib.AsyncExitStack() as stack:
            if self.kind == "in-process":
                transport: Any = await stack.enter_async_context(self._serve_here())
            elif self.kind == "websocket":
                from ..transports.websocket import connect_websocket

                transport = await stack.enter_async_context(
                    connect_websocket(
                        self.target, token=self._token, open_timeout=self.connect_timeout
                    )
                )
            else:
                from ..transports.stdio import spawn_worker

                spawning = spawn_worker(
                    self._command or [],
                    env=self._env,
                    cwd=self._cwd,
                    grace_period=min(self.connect_timeout, 2.0),
                )
                try:
                    transport = await stack.enter_async_context(spawning)
                except OSError as exc:
                    raise ConnectError(
                        f"Cannot connect to {self.description}: cannot start the worker: "
                        f"{exc.strerror or exc}"
                    ) from exc
                self._last_worker = transport
            host = AssistantFrameHost(transport, timeout=self.timeout, name=self.name)
            self._last_host = await stack.enter_async_context(host)
            yield host

    @contextlib.asynccontextmanager
    async def _serve_here(self) -> AsyncIterator[Any]:
        target = self.target
        provider = target if isinstance(target, AssistantFrameProvider) else None
        provider = provider or AssistantFrameProvider(target)
        host_end, frame_end = memory_pair()
        async with task_group() as tasks:
            tasks.start_soon(provider.serve, frame_end)
            try:
                yield host_end
            finally:
                tasks.cancel_scope.cancel()

    @contextlib.asynccontextmanager
    async def _open_mcp(self) -> AsyncIterator[FrameConnection]:
        from ..mcp import MCPFrameHost

        server = self._command if self._command is not None else self.target
        frame = MCPFrameHost(
            server,
            name=self.name,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            env=self._env,
            cwd=None if self._cwd is None else str(self._cwd),
            # the bearer token of an MCP server over HTTP (a process or an object needs none)
            token=self._token if self._command is None and isinstance(self.target, str) else None,
        )
        async with frame:
            yield frame

    def stop_worker(self) -> None:
        """Terminate the last connection's worker now (it is not a frame: it would sit
        out the grace period a frame gets to finish its work)."""
        worker = self._last_worker
        if worker is not None and worker.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                worker.process.terminate()

    def received(self) -> str:
        """What the last connection received that was not a frame's context, in words:
        ``"received nothing"``, or how many lines or messages were dropped and the first."""
        worker, host = self._last_worker, self._last_host
        if worker is not None and worker.dropped_count:
            count, first = worker.dropped_count, worker.dropped_samples[0]
            lines = _plural(count, "line")
            return f"it wrote {lines} that {_are(count)} not JSON, the first: {first!r}"
        if host is not None and host.ignored_count:
            count, first = host.ignored_count, host.ignored_samples[0]
            shown = repr(first)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            return (
                f"it sent {_plural(count, 'message')} that {_are(count)} not frame messages, "
                f"the first: {shown}"
            )
        return "received nothing"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _are(count: int) -> str:
    return "is" if count == 1 else "are"


def _is_it(target: FrameTarget) -> str:
    """The question a target that sent no context raises: is it what it was taken for?"""
    return "is it an MCP server?" if target.kind == "mcp" else "is it an assistant-frames frame?"


def no_context(target: FrameTarget, error: BaseException | None, waited: float) -> Exception:
    """The error for ``target`` (named by its name: by default what it is) sending no
    model context: ``error`` ended the attempt (``None``: ``waited`` seconds passed), and
    what it received instead says why."""
    received = target.received()
    if error is None:
        return ContextTimeout(
            f"{target.name} sent no model context within {waited:g} s "
            f"({received}): {_is_it(target)}",
            frame=target.name,
        )
    if isinstance(error, FrameDisconnected):
        hint = "" if received == "received nothing" else f" ({received}; {_is_it(target)})"
        why = str(error).removeprefix(f"{target.name} disconnected: ")
        return ConnectError(f"{target.name} sent no model context{hint}: {why}")
    return error if isinstance(error, Exception) else ConnectError(str(error))
