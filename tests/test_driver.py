"""The one lifecycle of the connection drivers and task owners (``_driver``), on the real
classes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from assistant_frames import AssistantFrameHost, ReconnectingHost, memory_pair
from assistant_frames._driver import Driver, Lifecycle
from assistant_frames.apps import App, AppBridge
from assistant_frames.apps.page import AppPage
from assistant_frames.federation import Federation
from assistant_frames.mcp import MCPFrameHost
from assistant_frames.nats import NATSDiscovery, NATSFrameProvider
from assistant_frames.transports import Multiplexer
from assistant_frames.widgets import WidgetHost

pytestmark = pytest.mark.anyio

DRIVERS: dict[str, Callable[[Any], Driver]] = {
    "host": AssistantFrameHost,
    "bridge": AppBridge,
    "App": App,
    "WidgetHost": lambda transport: WidgetHost(transport, widget_id="w"),
}


@pytest.mark.parametrize("noun", sorted(DRIVERS))
async def test_waiting_before_entering_is_refused_saying_what_to_enter(noun: str) -> None:
    local, _ = memory_pair()
    driver = DRIVERS[noun](local)
    assert isinstance(driver, Driver)
    with pytest.raises(RuntimeError, match=f"Enter the {noun} \\(async with\\)"):
        await driver.wait_disconnected()


def test_every_connection_driver_shares_the_lifecycle() -> None:
    drivers = (AssistantFrameHost, ReconnectingHost, MCPFrameHost, AppBridge, App, WidgetHost)
    nats = (NATSDiscovery, NATSFrameProvider)
    for driver in (*drivers, *nats):
        assert issubclass(driver, Driver)
        assert "__aexit__" not in vars(driver)  # the one in Driver
        assert "aclose" not in vars(driver)


def test_what_owns_tasks_without_one_connection_shares_the_exit() -> None:
    # A Multiplexer's aclose stops it from any task (its block goes on), so it has its own.
    for owner in (Federation, Multiplexer, AppPage):
        assert issubclass(owner, Lifecycle)
        assert "__aexit__" not in vars(owner)  # the one in Lifecycle


async def test_closing_ends_the_connection_once_and_aclose_is_idempotent() -> None:
    host_end, peer_end = memory_pair()
    host = AssistantFrameHost(host_end, timeout=1.0)
    with anyio.fail_after(5):
        async with host:
            await host.aclose()
            await host.wait_disconnected()  # ended by the close
            await host.aclose()  # again: nothing more happens
            assert host.state == "closed"
        received = [message["message"]["type"] async for message in peer_end]
    assert received[0] == "model-context-request"  # then the end: the transport was closed
