"""A host that never reads must not make a frame's memory grow without bound.

The host sends one ``model-context-request`` (so the frame pushes it every change) and
then never reads again, while the frame makes ``CHANGES`` changes to its context, each a
different ~50 KB instruction, yielding between them so that pushes really happen. A
frame that queues every snapshot for the silent host would hold ``CHANGES`` x 50 KB
(~500 MB); one that waits for the transport (or coalesces) holds a few snapshots at most.

Every shipped transport is covered: WebSocket and stdio with the frame in a subprocess
(its RSS from ``/proc/self/status``, before and after the changes), and ``memory_pair()``
in process (``tracemalloc``'s traced memory, before and after).
"""

from __future__ import annotations

import gc
import json
import os
import socket
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import ObjectStream
from websockets.client import ClientProtocol
from websockets.http11 import Response
from websockets.uri import parse_uri

from assistant_frames import AssistantFrameProvider, ModelContextRegistry, memory_pair
from assistant_frames.transports import MemoryTransport, TransportAttribute

from helpers import envelope, wait_until

CHANGES = 10_000
TEXT_CHARS = 50 * 1024
LIMIT = 50 * 1024 * 1024  # the growth allowed: a few snapshots, far below CHANGES of them
GIVE_UP = 1024 * 1024 * 1024  # stop changing past this growth: the test has failed anyway
CASE_SECONDS = 30.0  # each case must finish within this
REQUEST = envelope({"type": "model-context-request"})
MiB = 1024 * 1024

FRAME = r'''
"""python frame.py BACKEND websocket|stdio OUT_DIR: a frame that makes CHANGES big changes.

Writes OUT_DIR/port (websocket), then OUT_DIR/result.json: its RSS before and after.
"""
import json
import os
import sys
import time

import anyio
from anyio.abc import ObjectStream

from assistant_frames import AssistantFrameProvider, ModelContextRegistry
from assistant_frames.frames import serve_stdio
from assistant_frames.transports import websocket_server

backend, mode, out_dir = sys.argv[1:4]
CHANGES = int(os.environ["CHANGES"])
TEXT_CHARS = int(os.environ["TEXT_CHARS"])
GIVE_UP = int(os.environ["GIVE_UP"])
BODY = "abcdefghijklmnopqrstuvwxyz" * (TEXT_CHARS // 26 + 1)


def text(i):
    return f"change {i:06d} " + BODY[i % 26 : i % 26 + TEXT_CHARS]


def status(field):
    with open("/proc/self/status") as lines:
        for line in lines:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise LookupError(field)


def write(name, content):
    path = os.path.join(out_dir, name)
    with open(path + ".tmp", "w") as f:
        f.write(content)
    os.replace(path + ".tmp", path)


class Watched(ObjectStream):
    """The frame's transport, passed through as it is, noting what goes through it."""

    def __init__(self, inner):
        self.inner = inner
        self.received = 0
        self.sends_started = 0
        self.sends_done = 0

    async def send(self, item):
        self.sends_started += 1
        await self.inner.send(item)
        self.sends_done += 1

    async def receive(self):
        item = await self.inner.receive()
        self.received += 1
        return item

    async def send_eof(self):
        await self.inner.send_eof()

    async def aclose(self):
        await self.inner.aclose()

    @property
    def extra_attributes(self):
        return self.inner.extra_attributes


class Frame(AssistantFrameProvider):
    watched = None

    async def serve(self, transport):
        self.watched = Watched(transport)
        await super().serve(self.watched)


async def until(predicate, what):
    for _ in range(1000):
        if predicate():
            return
        await anyio.sleep(0.01)
    raise TimeoutError(f"no {what} in 10 s")


async def push_changes(frame, handle):
    await until(lambda: frame.watched is not None and frame.watched.received >= 1, "request")
    watched = frame.watched
    await until(lambda: watched.sends_done >= 1, "the first context")
    await anyio.sleep(0.2)
    before = status("VmRSS")
    started = time.monotonic()
    done = 0
    for i in range(1, CHANGES + 1):
        handle.update(text(i))
        done = i
        await anyio.sleep(0)
        if i % 100 == 0 and status("VmRSS") - before > GIVE_UP:
            break
    await anyio.sleep(0.5)  # let the last pushes happen
    result = {
        "before": before,
        "after": status("VmRSS"),
        "peak": status("VmHWM"),
        "changes": done,
        "seconds": time.monotonic() - started,
        "sends_started": watched.sends_started,
        "sends_done": watched.sends_done,
    }
    write("result.json", json.dumps(result))
    # The host never reads, so a clean close could wait on it: leave at once.
    os._exit(0)


async def main():
    registry = ModelContextRegistry()
    handle = registry.add_instruction(text(0))
    frame = Frame(registry)
    if mode == "websocket":
        async with websocket_server(frame.serve) as server:
            write("port", str(server.port))
            await push_changes(frame, handle)
    else:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_stdio, frame)
            await push_changes(frame, handle)


anyio.run(main, backend=backend)
'''


# -- the frame in a subprocess -----------------------------------------------------------------


@contextmanager
def frame_process(
    tmp_path: Path, backend: str, mode: str, **popen: Any
) -> Iterator[subprocess.Popen[bytes]]:
    """Start the frame script in ``mode``; kill and reap it on the way out."""
    script = tmp_path / "frame.py"
    script.write_text(FRAME)
    env = {
        **os.environ,
        "CHANGES": str(CHANGES),
        "TEXT_CHARS": str(TEXT_CHARS),
        "GIVE_UP": str(GIVE_UP),
    }
    with (tmp_path / "frame.stderr").open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(script), backend, mode, str(tmp_path)],
            env=env,
            stderr=stderr,
            **popen,
        )
        try:
            yield process
        finally:
            process.kill()
            process.wait(timeout=10)


def wait_for_file(path: Path, process: subprocess.Popen[bytes], deadline: float) -> str:
    """The content of ``path`` once the frame has written it; fails if the frame died."""
    while True:
        exited = process.poll() is not None  # checked first: it may write, then exit
        if path.exists():
            return path.read_text()
        stderr = (path.parent / "frame.stderr").read_text(errors="replace")[-3000:]
        if exited:
            pytest.fail(f"the frame exited with {process.returncode}:\n{stderr}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {path.name} from the frame in {CASE_SECONDS:g} s:\n{stderr}")
        time.sleep(0.02)


def check_growth(transport: str, result: Mapping[str, Any]) -> None:
    """Print the numbers and assert the growth is under ``LIMIT``."""
    growth = result["after"] - result["before"]
    print(
        f"\n[memory {transport}] {result['changes']} changes in {result['seconds']:.1f} s: "
        f"{result['before'] / MiB:.1f} -> {result['after'] / MiB:.1f} MiB "
        f"(growth {growth / MiB:.1f} MiB, peak {result.get('peak', 0) / MiB:.1f} MiB); "
        f"frame sends started {result['sends_started']}, done {result['sends_done']}"
    )
    assert result["sends_started"] > 1, "the frame never pushed a change: nothing was tested"
    assert growth < LIMIT, (
        f"the frame grew by {growth / MiB:.0f} MiB over {result['changes']} changes "
        f"for a host that never reads (limit {LIMIT / MiB:.0f} MiB)"
    )


def silent_websocket_host(port: int) -> socket.socket:
    """Open a WebSocket to the frame, send one request and return the socket, never read."""
    protocol = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}"))
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    protocol.send_request(protocol.connect())
    for data in protocol.data_to_send():
        sock.sendall(data)
    response: object = None
    while response is None:
        data = sock.recv(65536)
        assert data, "the frame closed the connection during the handshake"
        protocol.receive_data(data)
        response = next(iter(protocol.events_received()), None)
    assert isinstance(response, Response)
    assert response.status_code == 101, response.status_code
    protocol.send_text(json.dumps(REQUEST).encode())
    for data in protocol.data_to_send():
        sock.sendall(data)
    return sock


def test_websocket_frame_memory_is_bounded(tmp_path: Path, anyio_backend: str) -> None:
    """Over a WebSocket, a frame process pushing 10,000 large changes to a host that never
    reads grows by less than 50 MiB."""
    deadline = time.monotonic() + CASE_SECONDS
    with frame_process(tmp_path, anyio_backend, "websocket", stdout=subprocess.DEVNULL) as frame:
        port = int(wait_for_file(tmp_path / "port", frame, deadline))
        with silent_websocket_host(port):
            result = json.loads(wait_for_file(tmp_path / "result.json", frame, deadline))
    check_growth(f"websocket/{anyio_backend}", result)


def test_stdio_frame_memory_is_bounded(tmp_path: Path, anyio_backend: str) -> None:
    """Over stdio, a worker pushing 10,000 large changes to a host that never reads its
    stdout grows by less than 50 MiB."""
    deadline = time.monotonic() + CASE_SECONDS
    with frame_process(
        tmp_path, anyio_backend, "stdio", stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as frame:
        stdin: IO[bytes] | None = frame.stdin
        assert stdin is not None
        stdin.write(json.dumps(REQUEST).encode() + b"\n")
        stdin.flush()  # and stdout is never read
        result = json.loads(wait_for_file(tmp_path / "result.json", frame, deadline))
    check_growth(f"stdio/{anyio_backend}", result)


# -- memory_pair, in process -------------------------------------------------------------------


class Watched(ObjectStream[Any]):
    """A frame's transport, passed through as it is, counting what goes through it."""

    def __init__(self, inner: ObjectStream[Any]) -> None:
        self.inner = inner
        self.received = 0
        self.sends_started = 0
        self.sends_done = 0

    async def send(self, item: Any) -> None:
        self.sends_started += 1
        await self.inner.send(item)
        self.sends_done += 1

    async def send_latest(self, key: str, item: Any) -> None:
        """What frames push contexts with, where the inner transport offers it."""
        self.sends_started += 1
        await self.inner.extra(TransportAttribute.send_latest)(key, item)
        self.sends_done += 1

    async def receive(self) -> Any:
        item = await self.inner.receive()
        self.received += 1
        return item

    async def send_eof(self) -> None:
        await self.inner.send_eof()

    async def aclose(self) -> None:
        await self.inner.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        attributes = dict(self.inner.extra_attributes)
        if TransportAttribute.send_latest in attributes:  # counted here too
            attributes[TransportAttribute.send_latest] = lambda: self.send_latest
        return attributes


_BODY = "abcdefghijklmnopqrstuvwxyz" * (TEXT_CHARS // 26 + 1)


def text(i: int) -> str:
    """A ~50 KB instruction, different for every ``i`` (as the frame script's)."""
    return f"change {i:06d} " + _BODY[i % 26 : i % 26 + TEXT_CHARS]


async def push_to_silent_host(
    host_end: MemoryTransport, frame_end: MemoryTransport
) -> dict[str, Any]:
    """Serve a frame on ``frame_end``; ``host_end`` requests once and never receives.

    Returns the frame's traced memory before and after ``CHANGES`` changes.
    """
    registry = ModelContextRegistry()
    handle = registry.add_instruction(text(0))
    frame = AssistantFrameProvider(registry)
    watched = Watched(frame_end)
    async with anyio.create_task_group() as tg:
        tg.start_soon(frame.serve, watched)
        await host_end.send(REQUEST)  # and never receive
        await wait_until(lambda: watched.sends_done >= 1)  # the request was answered
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        started = time.monotonic()
        done = 0
        for i in range(1, CHANGES + 1):
            handle.update(text(i))
            done = i
            await anyio.lowlevel.checkpoint()  # what anyio.sleep(0) does: pushes can happen
            if i % 100 == 0 and tracemalloc.get_traced_memory()[0] - before > GIVE_UP:
                break
        await anyio.sleep(0.2)  # let the last pushes happen
        gc.collect()
        after, peak = tracemalloc.get_traced_memory()
        tg.cancel_scope.cancel()
    return {
        "before": before,
        "after": after,
        "peak": peak,
        "changes": done,
        "seconds": time.monotonic() - started,
        "sends_started": watched.sends_started,
        "sends_done": watched.sends_done,
    }


@contextmanager
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


@pytest.mark.anyio
async def test_memory_pair_frame_memory_is_bounded(anyio_backend: str) -> None:
    """Over memory_pair(), a frame pushing 10,000 large changes to a host that never
    receives grows by less than 50 MiB."""
    with anyio.fail_after(CASE_SECONDS), traced():
        host_end, frame_end = memory_pair()
        async with host_end:
            result = await push_to_silent_host(host_end, frame_end)
    check_growth(f"memory_pair/{anyio_backend}", result)


@pytest.mark.anyio
async def test_bounded_memory_pair_frame_memory_is_bounded(anyio_backend: str) -> None:
    """Over memory_pair(max_buffer_size=8), a frame pushing 10,000 large changes to a host
    that never receives grows by less than 50 MiB."""
    with anyio.fail_after(CASE_SECONDS), traced():
        host_end, frame_end = memory_pair(max_buffer_size=8)
        async with host_end:
            result = await push_to_silent_host(host_end, frame_end)
    check_growth(f"memory_pair(max_buffer_size=8)/{anyio_backend}", result)
