"""One interface for "a live connection to a frame", whatever carries it.

:class:`AssistantFrameHost` (a frame over a transport), :class:`~assistant_frames.mcp.MCPFrameHost`
(an MCP server) and :class:`ReconnectingHost` (either, kept connected) all implement
:class:`FrameConnection`, with the state names of :data:`ConnectionState`. Code that
federates frames (a parent registry, the CLI, a reconnecting wrapper) needs only this.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from ..registry.context import ModelContext, Unsubscribe
from ..registry.events import ToolEventCallback

__all__ = ["ConnectionState", "FrameConnection"]

ConnectionState: TypeAlias = Literal[
    "new", "connecting", "connected", "disconnected", "failed", "closed"
]
"""Where a connection is:

- ``"new"``: not entered yet;
- ``"connecting"``: setting up, or between two connections (reconnecting only);
- ``"connected"``: live; the frame's tools are in its context;
- ``"disconnected"``: the peer went away (calls fail with ``FrameDisconnected``);
- ``"failed"``: gave up reconnecting;
- ``"closed"``: closed by this side.
"""


@runtime_checkable
class FrameConnection(Protocol):
    """A live connection to one frame: its context, subscribe, call (with progress and
    log events), close, state.

    It is a ``ModelContextProvider`` (``parent.add_provider(connection)`` federates the
    frame) and an async context manager: entering connects, leaving closes.
    """

    name: str

    @property
    def state(self) -> ConnectionState:
        """Where the connection is (see :data:`ConnectionState`)."""

    @property
    def connected(self) -> bool:
        """True while the frame is reachable."""

    def get_model_context(self) -> ModelContext:
        """The frame's current context (empty while it is not connected)."""

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` whenever the frame's context changes."""

    async def wait_for_context(self, timeout: float | None = None) -> ModelContext:
        """Wait until the frame's context is there; ``TimeoutError`` after ``timeout``."""

    async def wait_for_tools(
        self, *wanted: str | Callable[[ModelContext], bool], timeout: float | None = 10.0
    ) -> ModelContext:
        """Wait until the context has the tools named and meets the predicates given;
        :class:`~assistant_frames.ContextTimeout` after ``timeout``."""

    async def call_tool(
        self,
        name: str,
        args: Any = None,
        *,
        timeout: float | None = None,
        on_event: ToolEventCallback | None = None,
    ) -> Any:
        """Call the frame's tool ``name``; its result, or a typed error.

        ``on_event`` receives the call's progress and log events while it runs.
        """

    def subscribe_tool_events(self, callback: ToolEventCallback) -> Unsubscribe:
        """Call ``callback(event)`` with the progress and log events of every call."""

    async def wait_disconnected(self) -> None:
        """Wait until the connection has ended for good."""

    async def aclose(self) -> None:
        """Close the connection (idempotent)."""

    async def __aenter__(self) -> Any:
        """Connect."""

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        """Close."""
