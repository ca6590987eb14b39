"""``WidgetStateKeeper`` behind a real ``AppBridge``, and on its own.

A widget running ``widget-runtime.js`` under an MCP Apps host asks it to keep its state
with the extension request ``x-assistant-frames/widget-state {state}``; the keeper's
``extensions`` answer it. The view side here is written by hand over ``memory_pair()``,
message by message, so each test says exactly what crosses the wire; the durable store
is a real SQLite file.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import anyio
import pytest

from assistant_frames.apps import AppBridge, protocol
from assistant_frames.transports import memory_pair
from assistant_frames.widgets import (
    WIDGET_STATE_METHOD,
    InvalidWidgetState,
    MemoryWidgetStateStore,
    SQLiteWidgetStateStore,
    WidgetState,
    WidgetStateKeeper,
    WidgetStateStore,
)

pytestmark = pytest.mark.anyio

WAIT = 5.0
WIDGET = "message-7/pizza"


class RawView:
    """The view end of the pair: JSON-RPC dicts in and out, nothing more."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.next_id = 0
        self.context: dict[str, Any] = {}  # the host context, once initialized

    async def send(self, message: dict[str, Any]) -> None:
        await self.transport.send(message)

    async def receive(self) -> dict[str, Any]:
        with anyio.fail_after(WAIT):
            message: dict[str, Any] = await self.transport.receive()
        return message

    async def send_request(self, method: str, params: Any = None) -> int:
        self.next_id += 1
        await self.send(protocol.encode_request(self.next_id, method, params))
        return self.next_id

    async def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request; return its answer (anything else first fails the test)."""
        request_id = await self.send_request(method, params)
        answer = await self.receive()
        assert answer.get("id") == request_id, answer
        return answer

    async def initialize(self) -> dict[str, Any]:
        """The handshake; the host context the host answered with."""
        params = {
            "protocolVersion": protocol.PROTOCOL_VERSION,
            "appInfo": {"name": "pizza-widget", "version": "1.0.0"},
            "appCapabilities": {},
        }
        answer = await self.request(protocol.INITIALIZE, params)
        await self.send(protocol.encode_notification(protocol.INITIALIZED))
        self.context = answer["result"]["hostContext"]
        return self.context

    async def keep(self, state: Any) -> dict[str, Any]:
        """What a widget's ``setWidgetState(state)`` asks the host to keep."""
        return await self.request(WIDGET_STATE_METHOD, {"state": state})


@asynccontextmanager
async def widget_bridge(keeper: WidgetStateKeeper) -> AsyncIterator[RawView]:
    """An initialized view of a bridge told the kept state, as a host renders a widget."""
    host_side, view_side = memory_pair()
    context = {"theme": "dark", "widgetState": await keeper.load()}
    async with AppBridge(host_side, host_context=context, extensions=keeper.extensions):
        view = RawView(view_side)
        await view.initialize()
        yield view


async def test_each_state_is_saved_and_reported_in_the_order_it_was_set() -> None:
    store = MemoryWidgetStateStore()
    reported: list[WidgetState] = []

    async def report(state: WidgetState) -> None:
        await anyio.sleep(0.01)  # slow enough that the requests below overlap
        reported.append(state)

    keeper = WidgetStateKeeper(store, WIDGET, on_widget_state=report)
    assert keeper.extensions.keys() == {WIDGET_STATE_METHOD}
    async with widget_bridge(keeper) as view:
        assert (await view.keep({"count": 1}))["result"] == {}
        assert await store.load(WIDGET) == {"count": 1}
        assert reported == [{"count": 1}]

        # Sent without waiting for the answers: the bridge serves them concurrently.
        ids = [
            await view.send_request(WIDGET_STATE_METHOD, {"state": {"count": n}})
            for n in range(2, 7)
        ]
        answers = [await view.receive() for _ in ids]
        assert sorted(answer["id"] for answer in answers) == ids
        assert all(answer["result"] == {} for answer in answers)
        assert reported == [{"count": n} for n in range(1, 7)]
        assert await store.load(WIDGET) == {"count": 6}
        assert keeper.state == {"count": 6}

        # null forgets it.
        assert (await view.keep(None))["result"] == {}
        assert await store.load(WIDGET) is None
        assert reported[-1] is None


def memory_store(_path: Path) -> WidgetStateStore:
    return MemoryWidgetStateStore()


def same_store(store: WidgetStateStore, _path: Path) -> WidgetStateStore:
    return store


def new_sqlite_store(_store: WidgetStateStore, path: Path) -> WidgetStateStore:
    return SQLiteWidgetStateStore(path)


@pytest.mark.parametrize(
    ("first", "again"),
    [
        pytest.param(memory_store, same_store, id="memory"),
        # A new store object on the same file: what a restarted host opens.
        pytest.param(SQLiteWidgetStateStore, new_sqlite_store, id="sqlite-reopened"),
    ],
)
async def test_a_second_bridge_for_the_same_widget_tells_the_view_its_state(
    tmp_path: Path,
    first: Callable[[Path], WidgetStateStore],
    again: Callable[[WidgetStateStore, Path], WidgetStateStore],
) -> None:
    path = tmp_path / "widgets.sqlite3"
    store = first(path)
    async with widget_bridge(WidgetStateKeeper(store, WIDGET)) as view:
        assert (await view.keep({"cart": ["margherita"], "step": 2}))["result"] == {}
    async with widget_bridge(WidgetStateKeeper(store, "message-8/other")) as view:
        assert (await view.keep({"cart": []}))["result"] == {}

    # The re-render: a new keeper and a new bridge for the same widget instance.
    keeper = WidgetStateKeeper(again(store, path), WIDGET)
    host_side, view_side = memory_pair()
    context = {"theme": "dark", "widgetState": await keeper.load()}
    async with AppBridge(host_side, host_context=context, extensions=keeper.extensions):
        view = RawView(view_side)
        assert await view.initialize() == {
            "theme": "dark",
            "widgetState": {"cart": ["margherita"], "step": 2},
        }
        assert (await view.keep({"cart": ["margherita", "funghi"], "step": 3}))["result"] == {}
    reopened = again(store, path)
    assert await reopened.load(WIDGET) == {"cart": ["margherita", "funghi"], "step": 3}
    assert await reopened.load("message-8/other") == {"cart": []}
    # A widget never rendered before has nothing: the view is told no state at all.
    async with widget_bridge(WidgetStateKeeper(reopened, "message-9/new")) as view:
        assert view.context == {"theme": "dark"}


async def test_the_sqlite_store_survives_a_new_keeper_and_store_on_the_same_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "widgets.sqlite3"
    async with widget_bridge(WidgetStateKeeper(SQLiteWidgetStateStore(path), WIDGET)) as view:
        state = {"text": "Größe: groß 🍕", "nested": {"list": [1, 2.5, None, True]}}
        assert (await view.keep(state))["result"] == {}
    # Nothing of the first host is left but the file.
    keeper = WidgetStateKeeper(SQLiteWidgetStateStore(path), WIDGET)
    assert keeper.state is None
    assert await keeper.load() == state
    assert keeper.state == state
    # And the file holds it as JSON, where any other process can read it.
    with anyio.fail_after(WAIT):
        text = await anyio.to_thread.run_sync(read_row, path, WIDGET)
    assert json.loads(text) == state


def read_row(path: Path, widget_id: str) -> str:
    with closing(sqlite3.connect(path)) as connection:
        row = connection.execute(
            "SELECT state FROM widget_state WHERE widget_id = ?", (widget_id,)
        ).fetchone()
    return str(row[0])


@pytest.mark.parametrize(
    ("params", "says"),
    [
        pytest.param({}, "takes {state}", id="no-state"),
        pytest.param(None, "takes {state}", id="no-params"),
        pytest.param({"widgetState": {"count": 9}}, "takes {state}", id="wrong-key"),
        pytest.param({"state": [1, 2]}, "must be an object or null", id="array"),
        pytest.param({"state": "count=9"}, "must be an object or null", id="string"),
        pytest.param({"state": 9}, "must be an object or null", id="number"),
        pytest.param({"state": {"blob": "x" * 200}}, "over the host's limit of 100", id="oversize"),
    ],
)
async def test_invalid_params_are_refused_clearly_and_nothing_is_saved(
    params: Any, says: str
) -> None:
    store = MemoryWidgetStateStore()
    reported: list[WidgetState] = []
    keeper = WidgetStateKeeper(store, WIDGET, on_widget_state=reported.append, max_state_bytes=100)
    async with widget_bridge(keeper) as view:
        assert (await view.keep({"count": 1}))["result"] == {}
        answer = await view.request(WIDGET_STATE_METHOD, params)
        assert answer["error"]["code"] == protocol.INVALID_PARAMS, answer
        assert answer["error"]["message"].startswith(WIDGET_STATE_METHOD), answer
        assert says in answer["error"]["message"], answer
        # The bridge goes on: the next state is kept.
        assert (await view.request("ping"))["result"] == {}
    assert await store.load(WIDGET) == {"count": 1}
    assert reported == [{"count": 1}]
    assert keeper.state == {"count": 1}


async def test_with_a_slow_store_the_state_that_arrived_last_is_the_one_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / "widgets.sqlite3"
    release = anyio.Event()
    reported: list[WidgetState] = []

    class SlowFirstSave(SQLiteWidgetStateStore):
        """Holds its first save until released, while later requests arrive."""

        saves = 0

        async def save(self, widget_id: str, state: WidgetState) -> None:
            self.saves += 1
            if self.saves == 1:
                await release.wait()
            await super().save(widget_id, state)

    keeper = WidgetStateKeeper(SlowFirstSave(path), WIDGET, on_widget_state=reported.append)
    async with widget_bridge(keeper) as view:
        first = await view.send_request(WIDGET_STATE_METHOD, {"state": {"step": "first"}})
        last = await view.send_request(WIDGET_STATE_METHOD, {"state": {"step": "last"}})
        await anyio.sleep(0.05)  # both in the keeper now: the last one waits for the first
        assert reported == []
        release.set()
        answers = {answer["id"]: answer for answer in [await view.receive(), await view.receive()]}
        assert answers[first]["result"] == answers[last]["result"] == {}
    assert reported == [{"step": "first"}, {"step": "last"}]
    assert await SQLiteWidgetStateStore(path).load(WIDGET) == {"step": "last"}


# -- the keeper on its own -------------------------------------------------------------------


async def test_a_save_with_an_older_ticket_than_the_last_saved_is_dropped() -> None:
    store = MemoryWidgetStateStore()
    reported: list[WidgetState] = []
    keeper = WidgetStateKeeper(store, WIDGET, on_widget_state=reported.append)
    earlier, later = keeper.ticket(), keeper.ticket()
    assert earlier < later
    # The later arrival got here first; the earlier one, arriving after, must not win.
    assert await keeper.save({"step": "later"}, later) is True
    assert await keeper.save({"step": "earlier"}, earlier) is False
    assert await store.load(WIDGET) == {"step": "later"}
    assert keeper.state == {"step": "later"}
    assert reported == [{"step": "later"}]
    # Without a ticket a save takes the next one: it is the latest.
    assert await keeper.save({"step": "next"}) is True
    assert await store.load(WIDGET) == {"step": "next"}
    assert reported == [{"step": "later"}, {"step": "next"}]


async def test_the_keeper_alone_loads_saves_and_checks(tmp_path: Path) -> None:
    keeper = WidgetStateKeeper(None, WIDGET)  # no store: one in memory
    assert isinstance(keeper.store, MemoryWidgetStateStore)
    assert await keeper.load() is None
    assert await keeper.save({"count": 1}) is True
    assert await keeper.load() == {"count": 1}
    assert await keeper.save(None) is True
    assert await keeper.load() is None

    path = tmp_path / "w.sqlite3"
    assert await WidgetStateKeeper(SQLiteWidgetStateStore(path), WIDGET).save({"count": 2})
    assert await WidgetStateKeeper(SQLiteWidgetStateStore(path), WIDGET).load() == {"count": 2}

    small = WidgetStateKeeper(None, WIDGET, max_state_bytes=20)
    assert await small.save({"n": "x" * 10}) is True  # 15 bytes as JSON
    with pytest.raises(InvalidWidgetState, match="over the host's limit of 20"):
        await small.save({"n": "x" * 20})
    with pytest.raises(InvalidWidgetState, match="must be an object or null"):
        await small.save(["x"])
    with pytest.raises(InvalidWidgetState, match="must be JSON"):
        await small.save({"n": {1, 2}})
    with pytest.raises(InvalidWidgetState, match="must be JSON"):
        await small.save({"n": float("nan")})
    # Bytes as the widget sends them (UTF-8): 5 characters of 2 bytes, not 6-byte escapes.
    assert await small.save({"n": "é" * 5}) is True  # 19 bytes
    with pytest.raises(InvalidWidgetState, match="is 21 bytes as JSON"):
        await small.save({"n": "é" * 6})
    assert await small.load() == {"n": "é" * 5}

    with pytest.raises(ValueError, match="timeout must be positive"):
        WidgetStateKeeper(None, WIDGET, timeout=0)


class Stuck(MemoryWidgetStateStore):
    """A store whose every operation hangs."""

    async def load(self, widget_id: str) -> WidgetState:
        await anyio.sleep_forever()

    async def save(self, widget_id: str, state: WidgetState) -> None:
        await anyio.sleep_forever()


async def test_a_store_that_hangs_times_out_saying_so_and_keeps_nothing() -> None:
    reported: list[WidgetState] = []
    keeper = WidgetStateKeeper(Stuck(), WIDGET, on_widget_state=reported.append, timeout=0.1)
    with anyio.fail_after(WAIT), pytest.raises(TimeoutError, match=r"took over 0\.1 s"):
        await keeper.save({"count": 1})
    with anyio.fail_after(WAIT), pytest.raises(TimeoutError, match="Loading the state of widget"):
        await keeper.load()
    assert keeper.state is None
    assert reported == []
    # The lock was let go: a save that works gets through.
    keeper.store = MemoryWidgetStateStore()
    assert await keeper.save({"count": 2}) is True


async def test_the_view_hears_why_when_the_store_hangs() -> None:
    keeper = WidgetStateKeeper(Stuck(), WIDGET, timeout=0.1)
    host_side, view_side = memory_pair()
    async with AppBridge(host_side, extensions=keeper.extensions):
        view = RawView(view_side)
        await view.initialize()
        answer = await view.keep({"count": 1})
        assert answer["error"] == {
            "code": -32603,
            "message": f"Keeping the state of widget '{WIDGET}' took over 0.1 s",
        }
        assert (await view.request("ping"))["result"] == {}
