"""Soak: ~1,000 tool calls in flight at once for a sustained period, ~100 KB each way.

Each of ``IN_FLIGHT`` callers starts a new call as soon as its last one finishes, until
``ASSISTANT_FRAMES_SOAK_SECONDS`` (default 3; set it higher for a longer soak) have
passed; then every started call must finish. Three seconds is some 3,000 to 11,000 calls
on a 2-core machine, every caller's call replaced by a new one several times over. The
echo tool returns its arguments, which carry the call's number, so a result that went
to the wrong caller, or was corrupted on the way, shows as a mismatch.

Run with ``pytest -s`` to see the counts (calls completed, MB moved, calls per second).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContextRegistry,
    ToolCallTimeout,
)
from assistant_frames.transports import connect_websocket, spawn_worker, websocket_server

pytestmark = pytest.mark.anyio

SOAK_SECONDS = float(os.environ.get("ASSISTANT_FRAMES_SOAK_SECONDS", "3"))
IN_FLIGHT = 1000
PAYLOAD_CHARS = 100 * 1024
CALL_TIMEOUT = 60.0  # generous: only a real stall makes a call time out
# After the soak every started call must finish within this: a call that is still
# waiting then is stuck.
DRAIN_SECONDS = CALL_TIMEOUT + 30.0
# The whole test (setup, soak, drain, teardown): a hang fails it instead of blocking the run.
TEST_BOUND = SOAK_SECONDS + DRAIN_SECONDS + 60.0
_BODY = ("".join(chr(ord("a") + i % 26) for i in range(997)) * (PAYLOAD_CHARS // 997 + 2))[
    :PAYLOAD_CHARS
]

WORKER = r'''
"""A stdio worker: python worker.py BACKEND. Serves echo(call, text) and invocations()."""
import sys

import anyio

from assistant_frames import ModelContextRegistry
from assistant_frames.frames import serve_stdio

registry = ModelContextRegistry()
invoked = 0


@registry.tool
async def echo(call: int, text: str) -> dict:
    """Return the arguments."""
    global invoked
    invoked += 1
    return {"call": call, "text": text}


@registry.tool
async def invocations() -> int:
    """How many times echo has run."""
    return invoked


anyio.run(serve_stdio, registry, backend=sys.argv[1])
'''


def payload(call: int) -> dict[str, Any]:
    """The arguments of call number ``call``: ~100 KB of text unique to that call."""
    shift = call % 997
    text = f"{call:010d}|{_BODY[shift:]}{_BODY[:shift]}|{call:010d}"
    return {"call": call, "text": text}


def echo_registry() -> tuple[ModelContextRegistry, Callable[[], int]]:
    """A registry with ``echo(call, text)``; and a function counting its invocations."""
    registry = ModelContextRegistry()
    invoked = 0

    @registry.tool
    async def echo(call: int, text: str) -> dict[str, Any]:
        """Return the arguments."""
        nonlocal invoked
        invoked += 1
        return {"call": call, "text": text}

    return registry, lambda: invoked


@dataclass
class Tally:
    """What happened to the calls of one soak."""

    started: int = 0
    ok: int = 0
    mismatched: int = 0
    lost: int = 0  # timed out: no result came back within CALL_TIMEOUT
    errors: list[str] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    max_latency: float = 0.0
    bytes_moved: int = 0  # text sent plus text received, for the calls that completed
    seconds: float = 0.0

    @property
    def finished(self) -> int:
        return self.ok + self.mismatched + self.lost + len(self.errors)

    @property
    def stuck(self) -> int:
        return self.started - self.finished


async def soak(host: AssistantFrameHost) -> Tally:
    """Keep ``IN_FLIGHT`` echo calls in flight for ``SOAK_SECONDS``, and until each
    caller has made two (so every call in flight was replaced at least once, however
    slow the machine), then let them drain."""
    tally = Tally()
    begin = anyio.current_time()
    stop_at = begin + SOAK_SECONDS

    async def caller() -> None:
        made = 0
        while made < 2 or anyio.current_time() < stop_at:
            made += 1
            call = tally.started
            tally.started += 1
            args = payload(call)
            tally.in_flight += 1
            tally.max_in_flight = max(tally.max_in_flight, tally.in_flight)
            sent_at = anyio.current_time()
            try:
                result = await host.call_tool("echo", args)
            except ToolCallTimeout:
                tally.lost += 1
            except Exception as exc:
                tally.errors.append(f"call {call}: {exc!r}")
            else:
                tally.max_latency = max(tally.max_latency, anyio.current_time() - sent_at)
                if result == args:
                    tally.ok += 1
                    tally.bytes_moved += 2 * len(args["text"])
                else:
                    tally.mismatched += 1
            finally:
                tally.in_flight -= 1

    with anyio.move_on_after(SOAK_SECONDS + DRAIN_SECONDS):  # what is left then is stuck
        async with anyio.create_task_group() as callers:
            for _ in range(IN_FLIGHT):
                callers.start_soon(caller)
    tally.seconds = anyio.current_time() - begin
    return tally


def report(name: str, tally: Tally, invoked: int) -> None:
    """Print the counts (visible with ``pytest -s``)."""
    megabytes = tally.bytes_moved / 1e6
    print(
        f"\n[soak {name}] {tally.ok} calls completed in {tally.seconds:.1f} s "
        f"({tally.ok / max(tally.seconds, 1e-9):.0f}/s), {megabytes:.0f} MB moved "
        f"({megabytes / max(tally.seconds, 1e-9):.0f} MB/s); started {tally.started}, "
        f"max in flight {tally.max_in_flight}, slowest call {tally.max_latency:.2f} s; "
        f"stuck {tally.stuck}, lost {tally.lost}, mismatched {tally.mismatched}, "
        f"errors {len(tally.errors)}, tool ran {invoked} times"
    )


async def check(
    name: str, host: AssistantFrameHost, invocations: Callable[[], Awaitable[int]]
) -> None:
    """Soak ``host`` and assert that every call came back, intact, exactly once."""
    tally = await soak(host)
    invoked = await invocations()
    report(name, tally, invoked)
    assert tally.errors == []
    assert tally.stuck == 0, f"{tally.stuck} calls still waiting {DRAIN_SECONDS:g} s after"
    assert tally.lost == 0
    assert tally.mismatched == 0
    assert tally.max_in_flight == IN_FLIGHT
    assert tally.ok == tally.started >= 2 * IN_FLIGHT  # each caller's two, at least
    assert invoked == tally.started  # each call reached the frame exactly once
    assert host.connected


async def test_websocket_soak(anyio_backend: str) -> None:
    """1,000 calls in flight with 100 KB each way over a WebSocket: none stuck, lost,
    mismatched or failed, and the host is still connected at the end."""
    registry, invoked = echo_registry()
    frame = AssistantFrameProvider(registry)

    async def invocations() -> int:
        return invoked()

    with anyio.fail_after(TEST_BOUND):
        async with (
            websocket_server(frame.serve) as server,
            connect_websocket(server.url) as transport,
            AssistantFrameHost(transport, timeout=CALL_TIMEOUT, name="soak") as host,
        ):
            await host.wait_for_context(timeout=10)
            await check(f"websocket/{anyio_backend}", host, invocations)


async def test_stdio_soak(anyio_backend: str, tmp_path: Path) -> None:
    """1,000 calls in flight with 100 KB each way to a worker subprocess over stdio: none
    stuck, lost, mismatched or failed, and the host is still connected at the end."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    with anyio.fail_after(TEST_BOUND):
        async with (
            spawn_worker([sys.executable, str(script), anyio_backend]) as transport,
            AssistantFrameHost(transport, timeout=CALL_TIMEOUT, name="soak") as host,
        ):
            await host.wait_for_context(timeout=15)

            async def invocations() -> int:
                count: int = await host.call_tool("invocations", {})
                return count

            await check(f"stdio/{anyio_backend}", host, invocations)
            assert transport.returncode is None
