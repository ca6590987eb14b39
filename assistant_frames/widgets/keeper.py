"""``WidgetStateKeeper``: one widget instance's state, checked, saved in order, for any host.

Both hosts keep widget state the same way through it: :class:`~.host.WidgetHost` on the
``AUI_*`` wire (``setWidgetState``), and an MCP Apps ``AppBridge`` through the
``x-assistant-frames/widget-state`` request that ``widget-runtime.js`` sends
(:attr:`WidgetStateKeeper.extensions`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

import anyio

from .._anyio import call_maybe_async
from ..apps.protocol import InvalidParams
from .store import MemoryWidgetStateStore, WidgetState, WidgetStateStore

__all__ = ["WIDGET_STATE_METHOD", "InvalidWidgetState", "WidgetStateKeeper"]

#: The MCP Apps extension request by which ``widget-runtime.js`` asks a host to keep state.
WIDGET_STATE_METHOD: Final = "x-assistant-frames/widget-state"


class InvalidWidgetState(ValueError):
    """A widget state that is not a JSON object (or ``None``), or is over the size limit."""


class WidgetStateKeeper:
    """Keeps one widget instance's state in a :class:`~.store.WidgetStateStore`.

    ``widget_id`` names the instance (e.g. ``"<message id>/<tool call id>"``): a re-render
    of it, in a new iframe and a new host, gets the state back from :meth:`load`.
    ``on_widget_state(state)``, plain or async, is called after each save, in order;
    whether the model sees the state is the host's choice. ``max_state_bytes`` bounds a
    state as JSON; ``timeout`` bounds each store operation and the callback.

    With an MCP Apps ``AppBridge`` (the widget runs ``widget-runtime.js``)::

        keeper = WidgetStateKeeper(SQLiteWidgetStateStore(path), "message-7/pizza")
        bridge = AppBridge(
            transport,
            host_context={"theme": "dark", "widgetState": await keeper.load()},
            extensions=keeper.extensions,
        )
    """

    def __init__(
        self,
        store: WidgetStateStore | None,
        widget_id: str,
        *,
        on_widget_state: Callable[..., Any] | None = None,
        max_state_bytes: int = 256_000,
        timeout: float = 30.0,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        self.store: WidgetStateStore = store or MemoryWidgetStateStore()
        self.widget_id = widget_id
        self.on_widget_state = on_widget_state
        self.max_state_bytes = max_state_bytes
        self.timeout = timeout
        #: The state saved last (``None`` before any load or save).
        self.state: WidgetState = None
        self._lock = anyio.Lock()
        self._tickets = 0
        self._saved = 0  # the ticket of the state saved last

    @property
    def extensions(self) -> dict[str, Callable[[Any], Any]]:
        """The ``AppBridge(extensions=...)`` entry answering ``x-assistant-frames/widget-state``."""
        return {WIDGET_STATE_METHOD: self._from_view}

    async def load(self) -> WidgetState:
        """The state kept for this widget instance (``None``: none yet)."""
        with self._bounded("Loading"):
            self.state = await self.store.load(self.widget_id)
        return self.state

    @contextmanager
    def _bounded(self, doing: str) -> Iterator[None]:
        # anyio's TimeoutError says nothing; a widget hears this message (-32603).
        try:
            with anyio.fail_after(self.timeout):
                yield
        except TimeoutError:
            raise TimeoutError(
                f"{doing} the state of widget {self.widget_id!r} took over {self.timeout:g} s"
            ) from None

    def ticket(self) -> int:
        """A number for a save, taken when its request arrives: the later one wins."""
        self._tickets += 1
        return self._tickets

    async def save(self, state: Any, ticket: int | None = None) -> bool:
        """Check and keep ``state``; whether it was saved.

        A state whose ``ticket`` is older than the one saved last is not saved (requests
        are served concurrently, so they may get here out of order): the state the widget
        set last wins. Raises :class:`InvalidWidgetState` for a state that is not an
        object or ``None``, or is larger than ``max_state_bytes`` as JSON, and
        ``TimeoutError`` when the store and ``on_widget_state`` take over ``timeout``.
        """
        if ticket is None:
            ticket = self.ticket()
        if state is not None and not isinstance(state, dict):
            raise InvalidWidgetState("A widget state must be an object or null")
        try:
            # Its size as the widget sends it: UTF-8, not \u escapes; NaN is not JSON.
            size = len(json.dumps(state, ensure_ascii=False, allow_nan=False).encode())
        except (TypeError, ValueError) as exc:
            raise InvalidWidgetState(f"A widget state must be JSON: {exc}") from None
        if size > self.max_state_bytes:
            raise InvalidWidgetState(
                f"The widget state is {size} bytes as JSON, over the host's limit of "
                f"{self.max_state_bytes}"
            )
        async with self._lock:
            if ticket < self._saved:
                return False
            with self._bounded("Keeping"):
                await self.store.save(self.widget_id, state)
                self._saved = ticket
                self.state = state
                if self.on_widget_state is not None:  # in order too: the model may see it
                    await call_maybe_async(self.on_widget_state, state)
        return True

    async def _from_view(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        ticket = self.ticket()  # at arrival, before any wait
        if not isinstance(params, Mapping) or "state" not in params:
            raise InvalidParams(f"{WIDGET_STATE_METHOD} takes {{state}}, not {params!r}")
        try:
            await self.save(params["state"], ticket)
        except InvalidWidgetState as exc:
            raise InvalidParams(f"{WIDGET_STATE_METHOD}: {exc}") from None
        return {}
