"""WebSocket targets: (d) the bare ``websockets`` echo on an asyncio loop of its
own, (e) assistant-frames over ``connect_websocket``/``websocket_server``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Coroutine
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
from bench_common import (
    TIMEOUT_SECONDS,
    TOOL_CALL_MESSAGE,
    Probe,
    add_call,
    add_registry,
    local_probe,
    measure_sequential,
)

from assistant_frames import AssistantFrameHost, AssistantFrameProvider

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection
    from websockets.asyncio.server import ServerConnection


@asynccontextmanager
async def websocket_target() -> AsyncIterator[Probe]:
    """(e): ``AssistantFrameHost`` over ``connect_websocket`` to a ``websocket_server``
    serving an ``AssistantFrameProvider`` on 127.0.0.1, all on the runner's loop."""
    from assistant_frames.transports import connect_websocket, websocket_server

    provider = AssistantFrameProvider(add_registry())
    async with (
        websocket_server(provider.serve) as server,
        connect_websocket(server.url) as transport,
        AssistantFrameHost(transport, name="websocket") as host,
    ):
        await host.wait_for_context(timeout=TIMEOUT_SECONDS)
        yield local_probe(add_call(host))


T = TypeVar("T")


class AsyncioThread:
    """An asyncio event loop in a thread of its own, whatever the runner's backend.

    ``await thread.run(coroutine)`` runs the coroutine there; the runner's loop just
    waits (in a worker thread) meanwhile. Timing happens inside the coroutine, so the
    hop between threads is not in the figures.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="benchmark-asyncio", daemon=True
        )

    async def __aenter__(self) -> AsyncioThread:
        self._thread.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        await anyio.to_thread.run_sync(self._thread.join, TIMEOUT_SECONDS)
        if not self._thread.is_alive():
            self.loop.close()

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return await anyio.to_thread.run_sync(future.result, TIMEOUT_SECONDS)
        except BaseException:
            future.cancel()
            raise


class WebSocketEcho:
    """(d): the ``websockets`` package's own asyncio server (an echo handler) and client.

    Compression is off on both sides, as in our transport (``websockets`` would
    negotiate permessage-deflate by default). Runs on an :class:`AsyncioThread`.
    """

    def __init__(self) -> None:
        self._stack = AsyncExitStack()
        self._connection: ClientConnection | None = None

    @staticmethod
    async def _echo(connection: ServerConnection) -> None:
        async for message in connection:
            await connection.send(message)

    async def open(self) -> None:
        from websockets.asyncio.client import connect
        from websockets.asyncio.server import serve

        # Its own logger: MCPServer (row (c)) sets the root logger to INFO.
        quiet = logging.getLogger("benchmarks.websockets")
        quiet.setLevel(logging.WARNING)
        server = await self._stack.enter_async_context(
            serve(self._echo, "127.0.0.1", 0, compression=None, logger=quiet)
        )
        port = server.sockets[0].getsockname()[1]
        self._connection = await self._stack.enter_async_context(
            connect(f"ws://127.0.0.1:{port}", compression=None, logger=quiet)
        )

    async def call(self) -> object:
        connection = self._connection
        if connection is None:
            raise RuntimeError("not open")
        await connection.send(json.dumps(TOOL_CALL_MESSAGE))
        return json.loads(await connection.recv())

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._stack.aclose(), TIMEOUT_SECONDS)


@asynccontextmanager
async def websocket_echo_target() -> AsyncIterator[Probe]:
    """(d) on its own asyncio loop in a thread, under either backend."""
    echo = WebSocketEcho()
    async with AsyncioThread() as thread:
        await thread.run(echo.open())
        try:

            async def call() -> object:
                return await thread.run(echo.call())

            async def measure(n: int) -> list[int]:
                return await thread.run(measure_sequential(echo.call, n))

            yield Probe(call, measure, expected=TOOL_CALL_MESSAGE)
        finally:
            with anyio.CancelScope(shield=True):
                await thread.run(echo.close())
