"""``AppView(widget_state=...)``: a widget's state kept across connections of its view.

The view is the Python ``App`` over a ``memory_pair``; it asks to keep state with the
``x-assistant-frames/widget-state`` request, exactly as ``widget-runtime.js`` does for
``window.openai.setWidgetState``. The keeper is a real ``WidgetStateKeeper`` on an SQLite
file.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from assistant_frames.apps import App, AppRequestError, AppView
from assistant_frames.transports import memory_pair
from assistant_frames.widgets import (
    WIDGET_STATE_METHOD,
    SQLiteWidgetStateStore,
    WidgetStateKeeper,
)

pytestmark = pytest.mark.anyio

WAIT = 5.0
HTML = "<!doctype html><html><body>pizza</body></html>"


@asynccontextmanager
async def connected(view: AppView) -> AsyncIterator[App]:
    """One connection of ``view`` (a new iframe, as after a reload)."""
    host_end, view_end = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(view.serve, host_end)
        async with App(view_end, timeout=WAIT) as app:
            await view.wait_state("ready", timeout=WAIT)
            yield app
        await view.wait_state("loading", timeout=WAIT)


def pizza_view(keeper: Any, **options: Any) -> AppView:
    return AppView(title="Pizza", app_id="pizza-1", html=HTML, widget_state=keeper, **options)


async def test_the_state_set_on_one_connection_is_in_the_next_ones_host_context(
    tmp_path: Path,
) -> None:
    saved: list[Any] = []
    path = tmp_path / "widgets.sqlite3"
    keeper = WidgetStateKeeper(
        SQLiteWidgetStateStore(path), "msg-1/pizza", on_widget_state=saved.append
    )
    view = pizza_view(keeper, host_context={"theme": "dark"})

    async with connected(view) as app:
        assert app.host_context.model_extra == {}  # no state yet: none is sent
        assert app.host_context.theme == "dark"
        await app.request(WIDGET_STATE_METHOD, {"state": {"toppings": ["basil"]}})
        await app.request(WIDGET_STATE_METHOD, {"state": {"toppings": ["basil", "olives"]}})
    assert saved == [{"toppings": ["basil"]}, {"toppings": ["basil", "olives"]}]

    async with connected(view) as app:  # a re-render of the same item
        assert app.host_context.model_extra == {"widgetState": {"toppings": ["basil", "olives"]}}

    await view.close()
    # A host restart: a new view, keeper and store object on the same file.
    again = pizza_view(WidgetStateKeeper(SQLiteWidgetStateStore(path), "msg-1/pizza"))
    async with connected(again) as app:
        assert app.host_context.model_extra == {"widgetState": {"toppings": ["basil", "olives"]}}
    await again.close()


async def test_extensions_pass_through_and_a_bad_state_is_refused() -> None:
    modals: list[Any] = []
    keeper = WidgetStateKeeper(None, "msg-2/pizza", max_state_bytes=64)
    view = pizza_view(keeper, extensions={"x-assistant-frames/modal": modals.append})
    async with connected(view) as app:
        await app.request("x-assistant-frames/modal", {"title": "Pay"})
        with pytest.raises(AppRequestError) as refused:
            await app.request(WIDGET_STATE_METHOD, {"state": {"big": "x" * 100}})
        assert refused.value.jsonrpc_code == -32602
        assert "over the host's limit of 64" in str(refused.value)
        with pytest.raises(AppRequestError) as missing:
            await app.request(WIDGET_STATE_METHOD, {"widgetState": {}})
        assert missing.value.jsonrpc_code == -32602
    await view.close()
    assert modals == [{"title": "Pay"}]
    assert await keeper.load() is None  # nothing bad was kept


class BrokenStore:
    async def load(self, widget_id: str) -> Any:
        raise OSError("disk gone")

    async def save(self, widget_id: str, state: Any) -> None:
        raise OSError("disk gone")


async def test_a_store_that_cannot_be_read_still_shows_the_view(
    caplog: pytest.LogCaptureFixture,
) -> None:
    view = pizza_view(WidgetStateKeeper(BrokenStore(), "msg-3/pizza"))
    with caplog.at_level(logging.WARNING, logger="assistant_frames.apps"):
        async with connected(view) as app:
            assert app.host_context.model_extra == {}
            with pytest.raises(AppRequestError) as failed:  # a save fails: the view hears it
                await app.request(WIDGET_STATE_METHOD, {"state": {"a": 1}})
            assert "disk gone" in str(failed.value)
    await view.close()
    assert "its widget state could not be read" in caplog.text
