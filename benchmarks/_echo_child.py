"""Echo child for ``benchmarks/run.py``: writes every line it reads back, flushed.

Without an argument, the floor for a round trip through a subprocess pipe: blocking
reads and writes, no parsing, no event loop. With ``asyncio`` or ``trio``, the same
echo from that event loop (the bytes written back as they arrive, still unparsed): the
floor for any worker that runs on one, as ours and ``mcp``'s do. With ``anyio-asyncio``
or ``anyio-trio``, that echo started by ``anyio.run`` once anyio and pydantic-core are
imported: the floor for the start of a worker on anyio with pydantic-core's JSON.
"""

from __future__ import annotations

import os
import sys


def blocking() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    for line in iter(stdin.readline, b""):
        stdout.write(line)
        stdout.flush()


async def asyncio_echo() -> None:
    import asyncio

    class Echo(asyncio.Protocol):
        def __init__(self, ended: asyncio.Future[None]) -> None:
            self._ended = ended

        def data_received(self, data: bytes) -> None:
            os.write(1, data)  # a line or two: the pipe takes it whole

        def connection_lost(self, exc: Exception | None) -> None:
            self._ended.set_result(None)

    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    stdin = os.fdopen(0, "rb", buffering=0)
    await loop.connect_read_pipe(lambda: Echo(ended), stdin)
    await ended


async def trio_echo() -> None:
    import trio.lowlevel

    stdin, stdout = trio.lowlevel.FdStream(os.dup(0)), trio.lowlevel.FdStream(os.dup(1))
    while data := await stdin.receive_some():
        await stdout.send_all(data)


def on_asyncio() -> None:
    import asyncio

    asyncio.run(asyncio_echo())


def on_trio() -> None:
    import trio

    trio.run(trio_echo)


def on_anyio(backend: str) -> None:
    import anyio
    import pydantic_core  # noqa: F401  (a worker's JSON: imported, not used by the echo)

    anyio.run(asyncio_echo if backend == "asyncio" else trio_echo, backend=backend)


if __name__ == "__main__":
    mode = sys.argv[1] if sys.argv[1:] else ""
    if mode.startswith("anyio-"):
        on_anyio(mode.removeprefix("anyio-"))
    else:
        {"": blocking, "asyncio": on_asyncio, "trio": on_trio}[mode]()
