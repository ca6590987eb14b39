"""ReconnectingHost over real WebSockets on 127.0.0.1: drops, restarts, backoff and giving up."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import pytest

from assistant_frames import (
    AssistantFrameProvider,
    ConnectError,
    FrameDisconnected,
    HandshakeRejected,
    ModelContextRegistry,
    ReconnectingHost,
)
from assistant_frames.transports import (
    WebSocketServer,
    WebSocketTransport,
    connect_websocket,
    websocket_server,
)

from helpers import CountingGate, Outcome, calculator, free_port, wait_until

pytestmark = pytest.mark.anyio

CALL_TIMEOUT = 30.0  # far above every bound the tests assert on


# -- helpers -----------------------------------------------------------------------------------


class ServerTask:
    """A websocket_server run by a task of its own, so a test can stop and restart it."""

    def __init__(
        self,
        task_group: anyio.abc.TaskGroup,
        handler: Callable[[WebSocketTransport], Any],
        **options: Any,
    ) -> None:
        self._task_group = task_group
        self._handler = handler
        self._options = options
        self._stop = anyio.Event()
        self._stopped = anyio.Event()

    async def start(self, port: int = 0) -> WebSocketServer:
        self._stop, self._stopped = anyio.Event(), anyio.Event()
        server: WebSocketServer = await self._task_group.start(self._run, port)
        return server

    async def stop(self) -> None:
        self._stop.set()
        with anyio.fail_after(5):
            await self._stopped.wait()

    async def _run(self, port: int, *, task_status: anyio.abc.TaskStatus[Any]) -> None:
        try:
            async with websocket_server(self._handler, port=port, **self._options) as server:
                task_status.started(server)
                await self._stop.wait()
        finally:
            self._stopped.set()


@asynccontextmanager
async def serving(
    frame: AssistantFrameProvider, **options: Any
) -> AsyncIterator[tuple[ServerTask, WebSocketServer]]:
    async with anyio.create_task_group() as tg:
        task = ServerTask(tg, frame.serve, **options)
        server = await task.start()
        try:
            yield task, server
        finally:
            await task.stop()


class Changes:
    """Counts a provider's change notifications; ``wait()`` for the next one."""

    def __init__(self) -> None:
        self.count = 0
        self._event = anyio.Event()

    def __call__(self) -> None:
        self.count += 1
        self._event.set()
        self._event = anyio.Event()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            while not predicate():
                await self._event.wait()


def counting(
    connect: Callable[[], AbstractAsyncContextManager[Any]],
) -> tuple[Callable[[], AbstractAsyncContextManager[Any]], list[float]]:
    """Wrap a connector, recording the time of every attempt."""
    attempts: list[float] = []

    def connector() -> AbstractAsyncContextManager[Any]:
        attempts.append(anyio.current_time())
        return connect()

    return connector, attempts


# -- tests -------------------------------------------------------------------------------------


async def test_connects_and_a_parent_registry_sees_the_tools() -> None:
    frame = AssistantFrameProvider(calculator())
    parent = ModelContextRegistry()
    with anyio.fail_after(10):
        async with serving(frame) as (_, server):
            reconnecting = ReconnectingHost(
                lambda: connect_websocket(server.url), name="calc", timeout=CALL_TIMEOUT
            )
            assert reconnecting.state == "new"
            async with reconnecting:
                changes = Changes()
                parent.subscribe(changes)
                parent.add_provider(reconnecting, namespace="calc")
                context = await reconnecting.wait_for_context(timeout=5)
                assert set(context.tools) == {"add"}
                assert reconnecting.state == "connected"
                assert reconnecting.connections == 1
                assert reconnecting.host is not None
                await changes.wait_for(lambda: "calc_add" in parent.get_model_context().tools)
                merged = parent.get_model_context()
                assert merged.system == "You can add numbers."
                assert await merged.call_tool("calc_add", {"a": 2, "b": 3}) == 5
                assert await reconnecting.call_tool("add", {"a": 1, "b": 1}) == 2
            # closing empties the context, and the parent hears of it
            assert reconnecting.state == "closed"
            assert reconnecting.host is None
            assert reconnecting.get_model_context().tools == {}
            await changes.wait_for(lambda: not parent.get_model_context().tools)
            with pytest.raises(FrameDisconnected):
                await reconnecting.call_tool("add", {"a": 1, "b": 1})
            with pytest.raises(FrameDisconnected):
                await reconnecting.wait_for_context(timeout=1)
            await wait_until(lambda: frame.connection_count == 0)


async def test_server_restart_drops_and_restores_the_tools() -> None:
    registry = calculator()
    gate = CountingGate()
    registry.add_tool("wait", gate, description="Wait until released.")
    frame = AssistantFrameProvider(registry)
    parent = ModelContextRegistry()
    changes = Changes()
    parent.subscribe(changes)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            server_task = ServerTask(tg, frame.serve)
            server = await server_task.start()
            connector, attempts = counting(lambda: connect_websocket(server.url))
            reconnecting = ReconnectingHost(
                connector, timeout=CALL_TIMEOUT, initial_delay=0.02, max_delay=0.2
            )
            async with reconnecting:
                parent.add_provider(reconnecting)
                await reconnecting.wait_for_context(timeout=5)
                await changes.wait_for(lambda: "wait" in parent.get_model_context().tools)

                # the server goes away with calls in flight
                outcomes = [Outcome(), Outcome()]
                for outcome in outcomes:
                    tg.start_soon(outcome.run, reconnecting, "wait", {})
                await gate.started.wait()
                await wait_until(lambda: gate.calls == 2)
                started = anyio.current_time()
                await server_task.stop()
                with anyio.fail_after(3):
                    for outcome in outcomes:
                        await outcome.done.wait()
                assert anyio.current_time() - started < 3  # not the 30 s call timeout
                for outcome in outcomes:
                    assert isinstance(outcome.error, FrameDisconnected), outcome.error
                await changes.wait_for(lambda: not parent.get_model_context().tools)
                assert reconnecting.get_model_context().tools == {}
                # the state follows a moment later, once the old connection is torn down
                await wait_until(lambda: reconnecting.state == "connecting", timeout=1)
                with pytest.raises(FrameDisconnected, match="not connected"):
                    await reconnecting.call_tool("add", {"a": 1, "b": 2})

                # it keeps trying, with bounded backoff, while the server is down
                tries = len(attempts)
                await wait_until(lambda: len(attempts) >= tries + 3)
                assert reconnecting.state == "connecting"
                # the frame changes meanwhile: the new connection must ask again
                registry.add_tool("mul", lambda a, b: a * b, description="Multiply.")

                restarted = await server_task.start(port=server.port)
                assert restarted.port == server.port
                started = anyio.current_time()
                context = await reconnecting.wait_for_context(timeout=5)
                assert anyio.current_time() - started < 1.5  # max_delay is 0.2 s
                assert set(context.tools) == {"add", "wait", "mul"}
                assert reconnecting.state == "connected"
                assert reconnecting.connections == 2
                await changes.wait_for(lambda: "mul" in parent.get_model_context().tools)
                merged = parent.get_model_context()
                assert await merged.call_tool("mul", {"a": 6, "b": 7}) == 42
                assert await reconnecting.call_tool("add", {"a": 1, "b": 2}) == 3

                # the delays between attempts stayed below max_delay (plus slack for connecting)
                later = attempts[tries:]
                gaps = [b - a for a, b in itertools.pairwise(later)]
                assert gaps
                assert max(gaps) < 0.2 + 0.5
            assert reconnecting.state == "closed"
            await changes.wait_for(lambda: not parent.get_model_context().tools)
            await server_task.stop()


async def test_subscribers_hear_why_a_connection_ended_before_the_next_attempt() -> None:
    frame = AssistantFrameProvider(calculator())
    seen: list[tuple[str, BaseException | None]] = []
    heard = anyio.Event()
    with anyio.fail_after(20):
        async with serving(frame) as (server_task, server):
            # The next attempt is seconds away: only the drop itself can tell the reason.
            reconnecting = ReconnectingHost(
                lambda: connect_websocket(server.url), initial_delay=10.0, max_delay=10.0
            )
            async with reconnecting:
                await reconnecting.wait_for_context(timeout=5)

                def record() -> None:
                    seen.append((reconnecting.state, reconnecting.last_error))
                    if reconnecting.last_error is not None:
                        heard.set()

                reconnecting.subscribe(record)
                await server_task.stop()
                with anyio.fail_after(5):
                    await heard.wait()
                state, error = seen[-1]
                assert state == "connecting"
                assert "disconnected" in str(error), seen
                assert seen[0][1] is None  # the tools went first, the reason after


async def test_live_updates_still_flow_after_a_reconnect() -> None:
    registry = calculator()
    frame = AssistantFrameProvider(registry)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            server_task = ServerTask(tg, frame.serve)
            server = await server_task.start()
            reconnecting = ReconnectingHost(
                lambda: connect_websocket(server.url), initial_delay=0.02, max_delay=0.1
            )
            async with reconnecting:
                changes = Changes()
                reconnecting.subscribe(changes)
                await reconnecting.wait_for_context(timeout=5)
                await server_task.stop()
                await changes.wait_for(lambda: reconnecting.state == "connecting")
                await server_task.start(port=server.port)
                await reconnecting.wait_for_context(timeout=5)
                handle = registry.add_tool("mul", lambda a, b: a * b, description="Multiply.")
                await changes.wait_for(lambda: "mul" in reconnecting.get_model_context().tools)
                handle.remove()
                await changes.wait_for(lambda: "mul" not in reconnecting.get_model_context().tools)
            await server_task.stop()


async def test_gives_up_after_max_attempts_when_never_reachable() -> None:
    port = free_port()
    connector, attempts = counting(lambda: connect_websocket(f"ws://127.0.0.1:{port}"))
    reconnecting = ReconnectingHost(connector, initial_delay=0.01, max_delay=0.05, max_attempts=3)
    changes = Changes()
    reconnecting.subscribe(changes)
    with anyio.fail_after(10):
        async with reconnecting:
            started = anyio.current_time()
            with pytest.raises(FrameDisconnected) as info:
                await reconnecting.wait_for_context(timeout=5)
            assert anyio.current_time() - started < 3
            assert reconnecting.state == "failed"
            assert "failed" in str(info.value)
            assert isinstance(info.value.__cause__, ConnectError)
            assert len(attempts) == 3
            with pytest.raises(FrameDisconnected):
                await reconnecting.call_tool("add", {"a": 1, "b": 2})
            assert reconnecting.get_model_context().tools == {}
        assert reconnecting.state == "closed"


async def test_gives_up_after_max_attempts_once_the_server_is_gone() -> None:
    frame = AssistantFrameProvider(calculator())
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            server_task = ServerTask(tg, frame.serve)
            server = await server_task.start()
            connector, attempts = counting(lambda: connect_websocket(server.url))
            reconnecting = ReconnectingHost(
                connector, initial_delay=0.01, max_delay=0.05, max_attempts=2
            )
            async with reconnecting:
                await reconnecting.wait_for_context(timeout=5)
                await server_task.stop()
                await wait_until(lambda: reconnecting.state == "failed")
                # the connection that worked, then two attempts that failed to connect
                assert len(attempts) == 3
                with pytest.raises(FrameDisconnected):
                    await reconnecting.wait_for_context(timeout=5)
                assert reconnecting.get_model_context().tools == {}


async def test_refused_handshake_counts_as_a_failed_attempt() -> None:
    frame = AssistantFrameProvider(calculator())
    with anyio.fail_after(10):
        async with serving(frame, token="s3cret") as (_, server):
            reconnecting = ReconnectingHost(
                lambda: connect_websocket(server.url, token="wrong"),
                initial_delay=0.01,
                max_delay=0.05,
                max_attempts=2,
            )
            async with reconnecting:
                with pytest.raises(FrameDisconnected) as info:
                    await reconnecting.wait_for_context(timeout=5)
                assert reconnecting.state == "failed"
                cause = info.value.__cause__
                assert isinstance(cause, HandshakeRejected)
                assert cause.status == 401
            assert frame.connection_count == 0


async def test_wait_for_context_times_out_while_still_trying() -> None:
    port = free_port()
    reconnecting = ReconnectingHost(
        lambda: connect_websocket(f"ws://127.0.0.1:{port}"), initial_delay=0.01, max_delay=0.05
    )
    with anyio.fail_after(10):
        async with reconnecting:
            with pytest.raises(TimeoutError):
                await reconnecting.wait_for_context(timeout=0.2)
            assert reconnecting.state == "connecting"
            assert reconnecting.connections == 0


def test_rejects_bad_delays() -> None:
    def connect() -> AbstractAsyncContextManager[Any]:
        raise AssertionError("never called")

    with pytest.raises(ValueError, match="initial_delay"):
        ReconnectingHost(connect, initial_delay=0)
    with pytest.raises(ValueError, match="initial_delay"):
        ReconnectingHost(connect, initial_delay=1.0, max_delay=0.5)
