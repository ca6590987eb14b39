"""``Federation``: many frames and MCP servers in one parent registry, kept connected."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from os import PathLike
from typing import Any, Literal, TypeAlias

import anyio
import anyio.abc

from .._driver import Lifecycle
from ..frames import ReconnectingHost
from ..registry import ModelContext, ModelContextRegistry, ProviderHandle
from ..registry.context import Unsubscribe
from ..registry.waiting import WaitsForTools
from .targets import FrameTarget, no_context

__all__ = ["Federation", "MemberState", "MemberStatus"]

MemberState: TypeAlias = Literal["connecting", "connected", "reconnecting", "failed", "closed"]
"""Where a member is: connecting for the first time, connected, reconnecting after a
drop, failed (gave up reconnecting) or closed (removed, or the federation closed)."""


@dataclass(frozen=True)
class MemberStatus:
    """One member of a :class:`Federation` as it is now.

    ``error`` says why it is reconnecting or failed (what ended the last connection or
    attempt), else ``None``; ``connections`` counts its connections so far.
    ``namespaced`` says whether its tools are ``<name>_<tool>`` in the merged context
    (``False``: under their own names, ``add(namespaced=False)``).
    """

    name: str
    target: str
    state: MemberState
    error: str | None
    connections: int
    namespaced: bool = True


class _Member:
    def __init__(
        self, name: str, target: FrameTarget, connection: ReconnectingHost, namespaced: bool
    ) -> None:
        self.name = name
        self.target = target
        self.connection = connection
        self.namespaced = namespaced
        self.handle: ProviderHandle | None = None
        self.stop = anyio.Event()
        self.done = anyio.Event()
        self.closed = False


class Federation(Lifecycle, WaitsForTools):
    """Frames and MCP servers joined in one parent registry, each under a namespace.

    Use it as an async context manager. :meth:`add` connects a member (anything
    :func:`~assistant_frames.connect` takes) and puts its tools in :attr:`registry`
    under ``<name>_``; :meth:`remove` takes it out and closes it; both work at any time
    while the federation is open. Every member is a
    :class:`~assistant_frames.ReconnectingHost`: when its connection drops (a worker
    dies, a server restarts) its tools leave the context, and it reconnects (a worker is
    started again) with backoff from ``initial_delay`` doubling up to ``max_delay``
    seconds, giving up after ``max_attempts`` failed attempts in a row (``None``:
    never). :meth:`status` says where each member is and why. Leaving the block closes
    the members one by one, the last added first, then the federation.

    The federation is a ``ModelContextProvider`` (the registry's context), so it can be
    served as a frame or an MCP server itself.
    """

    def __init__(
        self,
        registry: ModelContextRegistry | None = None,
        *,
        timeout: float | None = 30.0,
        connect_timeout: float = 10.0,
        initial_delay: float = 0.1,
        max_delay: float = 5.0,
        max_attempts: int | None = None,
    ) -> None:
        #: The parent registry: its context is the federation's (the members' tools,
        #: namespaced, beside whatever else it holds).
        self.registry = registry if registry is not None else ModelContextRegistry()
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._initial_delay = initial_delay
        self._max_delay = max_delay
        self._max_attempts = max_attempts
        self._members: dict[str, _Member] = {}
        self._init_lifecycle()

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> Federation:
        if self._tasks.group is not None:
            raise RuntimeError("The federation is already open")
        async with self._tasks.open():
            pass
        return self

    async def _stop(self) -> None:
        """Close every member, the last added first (``aclose`` and leaving the block)."""
        with anyio.CancelScope(shield=True):
            for member in reversed(list(self._members.values())):
                await self._close(member)

    # -- members -------------------------------------------------------------------------

    async def add(
        self,
        name: str,
        target: Any,
        *,
        mcp: bool | None = None,
        token: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | PathLike[str] | None = None,
        namespaced: bool = True,
        wait: bool = True,
    ) -> ReconnectingHost:
        """Connect ``target`` as the member ``name``; its tools join as ``<name>_<tool>``.

        ``target``, ``mcp``, ``token``, ``env`` and ``cwd`` are as for
        :func:`~assistant_frames.connect`. With ``wait`` (the default) this returns once
        the member's first context has arrived; if its first attempt fails, or no
        context comes within ``connect_timeout``, the member is removed and the error
        raised (:class:`~assistant_frames.ContextTimeout` or
        :class:`~assistant_frames.ConnectError`, naming the target). Later drops are
        reconnected. Without ``wait`` it returns at once and the tools join when they
        come. ``namespaced=False`` adds the tools under their own names. Raises
        ``ValueError`` if ``name`` is taken.
        """
        tasks = self._tasks.group
        if tasks is None:
            raise RuntimeError("Enter the federation (async with) before adding members")
        if name in self._members:
            raise ValueError(f"The federation already has a member named {name!r}")
        frame = FrameTarget(
            target,
            mcp=mcp,
            name=name,
            timeout=self.timeout,
            connect_timeout=self.connect_timeout,
            token=token,
            env=env,
            cwd=cwd,
        )
        connection = ReconnectingHost(
            frame.open,
            name=name,
            timeout=self.timeout,
            initial_delay=self._initial_delay,
            max_delay=self._max_delay,
            max_attempts=self._max_attempts,
        )
        member = _Member(name, frame, connection, namespaced)
        self._members[name] = member
        try:
            await tasks.start(self._run, member)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._close(member)
            raise
        # In the registry now, in the order added: the tools join when the context comes.
        member.handle = self.registry.add_provider(
            connection, namespace=name if namespaced else None
        )
        if wait:
            await self.wait_joined(name)
        return connection

    async def wait_joined(self, name: str) -> None:
        """Wait until the member ``name``'s first context has arrived, as
        :meth:`add` does with ``wait``: if its first attempt fails, or no context comes
        within ``connect_timeout``, the member is removed and the error raised.

        Members added with ``wait=False`` may be waited for side by side, so that
        slow starters (workers, MCP servers over stdio) start together, in the order
        added::

            for name, command in servers.items():
                await federation.add(name, command, mcp=True, wait=False)
            async with anyio.create_task_group() as tg:
                for name in servers:
                    tg.start_soon(federation.wait_joined, name)

        ``KeyError`` if there is no member ``name``.
        """
        member = self._members.get(name)
        if member is None:
            raise KeyError(f"The federation has no member named {name!r}")
        try:
            await self._first_context(member)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._close(member)
            raise

    async def remove(self, name: str) -> None:
        """Take the member ``name`` out of the context and close it; ``KeyError`` if none."""
        member = self._members.get(name)
        if member is None:
            raise KeyError(f"The federation has no member named {name!r}")
        await self._close(member)

    def status(self, name: str) -> MemberStatus:
        """Where the member ``name`` is, and why; ``KeyError`` if there is none."""
        member = self._members.get(name)
        if member is None:
            raise KeyError(f"The federation has no member named {name!r}")
        return _status_of(member)

    def statuses(self) -> list[MemberStatus]:
        """Every member's status, in the order they were added."""
        return [_status_of(member) for member in self._members.values()]

    def connection(self, name: str) -> ReconnectingHost:
        """The member ``name``'s connection; ``KeyError`` if there is none."""
        return self._members[name].connection

    def __contains__(self, name: object) -> bool:
        return name in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._members))

    def __len__(self) -> int:
        return len(self._members)

    # -- ModelContextProvider ------------------------------------------------------------

    def get_model_context(self) -> ModelContext:
        """The merged context: every connected member's tools, namespaced."""
        return self.registry.get_model_context()

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` whenever the merged context changes."""
        return self.registry.subscribe(callback)

    async def call_tool(self, name: str, args: Any = None) -> Any:
        """Call the tool ``name`` (e.g. ``"calc_add"``) of the merged context."""
        return await self.registry.get_model_context().call_tool(name, args)

    # -- internals -----------------------------------------------------------------------

    async def _run(self, member: _Member, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        # The connection's task group lives in this task, so any task may remove it.
        try:
            async with member.connection:
                task_status.started()
                await member.stop.wait()
        finally:
            member.done.set()

    async def _close(self, member: _Member) -> None:
        if self._members.get(member.name) is member:
            del self._members[member.name]
        if member.handle is not None:
            member.handle.remove()  # the tools leave the context before the connection goes
            member.handle = None
        member.closed = True
        member.stop.set()
        if self._tasks.group is not None:
            await member.done.wait()

    async def _first_context(self, member: _Member) -> None:
        connection = member.connection
        wake = anyio.Event()

        def changed() -> None:
            wake.set()

        unsubscribe = connection.subscribe(changed)
        try:
            with anyio.move_on_after(self.connect_timeout):
                while True:
                    host = connection.host
                    if host is not None and host.connected and getattr(host, "has_context", True):
                        return
                    error = connection.last_error
                    if error is not None or connection.state in ("failed", "closed"):
                        raise no_context(member.target, error, self.connect_timeout)
                    await wake.wait()
                    wake = anyio.Event()
            raise no_context(member.target, None, self.connect_timeout)
        finally:
            unsubscribe()


def _status_of(member: _Member) -> MemberStatus:
    connection = member.connection
    state: MemberState
    if member.closed or connection.state == "closed":
        state = "closed"
    elif connection.state == "connected":
        state = "connected"
    elif connection.state == "failed":
        state = "failed"
    elif connection.connections or connection.last_error is not None:
        state = "reconnecting"
    else:
        state = "connecting"
    error = connection.last_error if state in ("reconnecting", "failed") else None
    return MemberStatus(
        name=member.name,
        target=member.target.description,
        state=state,
        error=None if error is None else str(error),
        connections=connection.connections,
        namespaced=member.namespaced,
    )
