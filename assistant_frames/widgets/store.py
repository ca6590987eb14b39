"""Where widget state lives between renders: a store protocol and two stores.

Widget state (``window.aui.setWidgetState``) is kept per widget instance: a re-render of
the same instance (a new iframe, a new :class:`~.host.WidgetHost`) gets it back as the
``widgetState`` global. :class:`MemoryWidgetStateStore` lives as long as the process;
:class:`SQLiteWidgetStateStore` survives a restart.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from os import PathLike
from typing import Any, Protocol, TypeAlias

import anyio.to_thread

__all__ = [
    "MemoryWidgetStateStore",
    "SQLiteWidgetStateStore",
    "WidgetState",
    "WidgetStateStore",
]

#: A widget's state: a JSON object, or ``None`` for none.
WidgetState: TypeAlias = dict[str, Any] | None


class WidgetStateStore(Protocol):
    """Keeps each widget instance's state, by its id."""

    async def load(self, widget_id: str) -> WidgetState:
        """The state last saved for ``widget_id`` (``None``: none)."""
        ...

    async def save(self, widget_id: str, state: WidgetState) -> None:
        """Keep ``state`` for ``widget_id`` (``None`` forgets it)."""
        ...


class MemoryWidgetStateStore:
    """A store in a dict: shared by the hosts given it, gone with the process."""

    def __init__(self) -> None:
        self._states: dict[str, str] = {}  # kept as JSON: a copy nobody else can change

    async def load(self, widget_id: str) -> WidgetState:
        """The state last saved for ``widget_id`` (``None``: none)."""
        text = self._states.get(widget_id)
        return None if text is None else _decode(text)

    async def save(self, widget_id: str, state: WidgetState) -> None:
        """Keep ``state`` for ``widget_id`` (``None`` forgets it)."""
        if state is None:
            self._states.pop(widget_id, None)
        else:
            self._states[widget_id] = json.dumps(state)


class SQLiteWidgetStateStore:
    """A durable store in an SQLite file (the standard library's ``sqlite3``).

    Each operation opens its own connection in a worker thread, so the event loop never
    waits on the disk and the store may be shared by hosts on any thread. ``busy_timeout``
    bounds how long an operation waits for another process's lock (seconds).
    """

    def __init__(self, path: str | PathLike[str], *, busy_timeout: float = 5.0) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._ready = False

    async def load(self, widget_id: str) -> WidgetState:
        """The state last saved for ``widget_id`` (``None``: none)."""
        text = await anyio.to_thread.run_sync(self._load, widget_id)
        return None if text is None else _decode(text)

    async def save(self, widget_id: str, state: WidgetState) -> None:
        """Keep ``state`` for ``widget_id`` (``None`` forgets it)."""
        text = None if state is None else json.dumps(state)
        await anyio.to_thread.run_sync(self._save, widget_id, text)

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=self.busy_timeout)
        if not self._ready:
            with connection:
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS widget_state"
                    " (widget_id TEXT PRIMARY KEY, state TEXT NOT NULL)"
                )
            self._ready = True
        return connection

    def _load(self, widget_id: str) -> str | None:
        with closing(self._connect()) as connection:
            row = connection.execute(
                "SELECT state FROM widget_state WHERE widget_id = ?", (widget_id,)
            ).fetchone()
        return None if row is None else str(row[0])

    def _save(self, widget_id: str, text: str | None) -> None:
        with closing(self._connect()) as connection, connection:
            if text is None:
                connection.execute("DELETE FROM widget_state WHERE widget_id = ?", (widget_id,))
            else:
                connection.execute(
                    "INSERT INTO widget_state (widget_id, state) VALUES (?, ?)"
                    " ON CONFLICT (widget_id) DO UPDATE SET state = excluded.state",
                    (widget_id, text),
                )


def _decode(text: str) -> WidgetState:
    value = json.loads(text)
    return value if isinstance(value, dict) else None
