"""A real uvicorn serving an ASGI application on 127.0.0.1, in the test's event loop.

uvicorn runs on asyncio only: the tests that use it run under asyncio (trio has no
uvicorn to run on). The server binds a socket on a free port first, serves on it in a
task of the test's task group, and shuts down gracefully (bounded) at the end.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import uvicorn

#: The longest a server may take to start or to stop.
BOUND = 10.0


class InProcessServer(uvicorn.Server):
    """uvicorn's server, leaving the process's signal handlers to pytest."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass
class Running:
    """Where a server listens, and the server itself."""

    server: InProcessServer
    port: int

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}"


@asynccontextmanager
async def serve_asgi(app: Any, **options: Any) -> AsyncIterator[Running]:
    """Serve ``app`` with uvicorn on 127.0.0.1 (a free port) while the block runs.

    ``options`` go to ``uvicorn.Config``. By default: no lifespan (``lifespan="on"``
    to run one), no access log, and uvicorn's default WebSocket implementation
    (``websockets-sansio``) named explicitly, so that its behaviour is what is tested.
    """
    settings: dict[str, Any] = {
        "lifespan": "off",
        "log_config": None,
        "access_log": False,
        "ws": "websockets-sansio",
        "timeout_graceful_shutdown": 5,
        **options,
    }
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = InProcessServer(uvicorn.Config(app, **settings))
    with sock:
        async with anyio.create_task_group() as tasks:
            done = anyio.Event()

            async def serve() -> None:
                try:
                    await server.serve([sock])
                finally:
                    done.set()

            tasks.start_soon(serve)
            with anyio.fail_after(BOUND):
                while not server.started:
                    if done.is_set():
                        raise RuntimeError("uvicorn did not start (see its log)")
                    await anyio.sleep(0.01)
            try:
                yield Running(server, port)
            finally:
                server.should_exit = True
                with anyio.fail_after(BOUND, shield=True):
                    await done.wait()


async def fetch(
    url: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: str | bytes | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """``(status, headers with lower-case names, body)`` of one plain HTTP request
    (redirects are not followed), bounded by ``BOUND``."""
    rest = url.removeprefix("http://")
    netloc, _, path = rest.partition("/")
    host, _, port = netloc.rpartition(":")

    def request() -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(host, int(port), timeout=BOUND)
        try:
            connection.request(method, "/" + path, body=body, headers=headers or {})
            response = connection.getresponse()
            answer = response.read()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, answer
        finally:
            connection.close()

    with anyio.fail_after(BOUND + 1):
        return await anyio.to_thread.run_sync(request, abandon_on_cancel=True)
