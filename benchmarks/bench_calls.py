"""In-process calls: (a) the floor, (a') with a dispatcher, (b) assistant-frames,
(b') and (b'') sync tools, (c) ``mcp`` in-process, (c') FastMCP in-process."""

from __future__ import annotations

import gc
import itertools
import math
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from bench_common import (
    IN_FLIGHT,
    TIMEOUT_SECONDS,
    Call,
    CallResult,
    Config,
    add_registry,
    check_add,
    mcp_version,
    measure_in_flight,
    measure_paired,
    measure_rotating,
    measure_sequential,
    measure_throughput,
)
from bench_fastmcp import fastmcp_skipped, fastmcp_target, fastmcp_version
from bench_mcp import mcp_target

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContextRegistry,
    memory_pair,
)


def _request(call_id: int) -> dict[str, Any]:
    return {"id": call_id, "toolName": "add", "args": {"a": 1, "b": 2}}


async def _floor_server(
    receive: ObjectReceiveStream[dict[str, Any]],
    send: ObjectSendStream[dict[str, Any]],
) -> None:
    """Handles each request inline: no validation, no task per call."""
    async with receive, send:
        async for message in receive:
            if message["toolName"] == "add":
                args = message["args"]
                await send.send({"id": message["id"], "result": args["a"] + args["b"]})
            else:
                await send.send({"id": message["id"], "error": "not found"})


@asynccontextmanager
async def floor_direct() -> AsyncIterator[Call]:
    """(a), sequential: send a request, receive the response on the same task."""
    to_server, server_in = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
    server_out, from_server = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
    ids = itertools.count()
    send, receive = to_server.send, from_server.receive

    async def call() -> object:
        call_id = next(ids)
        await send(_request(call_id))
        response = await receive()
        if response["id"] != call_id:
            raise RuntimeError("floor: out-of-order response")
        return response["result"]

    async with to_server, from_server, anyio.create_task_group() as tg:
        tg.start_soon(_floor_server, server_in, server_out)
        yield call
        tg.cancel_scope.cancel()


class _Waiter:
    __slots__ = ("done", "result")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: object = None


@asynccontextmanager
async def floor_dispatcher() -> AsyncIterator[Call]:
    """(a), in flight: a minimal dispatcher (dict id -> anyio.Event) on the client side."""
    to_server, server_in = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
    server_out, from_server = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
    ids = itertools.count()
    pending: dict[int, _Waiter] = {}
    send = to_server.send

    async def dispatch() -> None:
        async for message in from_server:
            waiter = pending.pop(message["id"], None)
            if waiter is not None:
                waiter.result = message.get("result")
                waiter.done.set()

    async def call() -> object:
        call_id = next(ids)
        waiter = pending[call_id] = _Waiter()
        await send(_request(call_id))
        await waiter.done.wait()
        return waiter.result

    async with to_server, from_server, anyio.create_task_group() as tg:
        tg.start_soon(_floor_server, server_in, server_out)
        tg.start_soon(dispatch)
        yield call
        tg.cancel_scope.cancel()


def _add_variants_registry() -> ModelContextRegistry:
    """``add`` (async), and the same as sync tools on the event loop and in a thread."""
    registry = add_registry()

    @registry.tool(thread=False)
    def add_on_loop(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @registry.tool
    def add_in_thread(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return registry


@asynccontextmanager
async def assistant_frames_target() -> AsyncIterator[Callable[[str], Call]]:
    """(b), (b') and (b''): the library with its defaults, tool arguments validated from
    type hints; yields ``call_for(tool_name)``, one host serving all three tools."""
    host_end, frame_end = memory_pair()
    provider = AssistantFrameProvider(_add_variants_registry())
    async with anyio.create_task_group() as tg:
        tg.start_soon(provider.serve, frame_end)
        async with AssistantFrameHost(host_end) as host:
            await host.wait_for_context(timeout=TIMEOUT_SECONDS)
            call_tool = host.call_tool

            def call_for(name: str) -> Call:
                async def call() -> object:
                    return await call_tool(name, {"a": 1, "b": 2})

                return call

            yield call_for
        tg.cancel_scope.cancel()


async def bench_calls(config: Config, log: Callable[[str], None]) -> dict[str, CallResult]:
    """(a), (b), (c) and (c'), all connected at once and measured interleaved.

    Each repeat measures every target in turn (the order rotates), so the slow drift of
    a shared machine, or of a library being edited, hits all of them alike.
    """
    results = {
        "floor": CallResult("floor", "(a) floor: bare anyio streams"),
        "af": CallResult("af", "(b) assistant-frames"),
        "af_sync_loop": CallResult("af_sync_loop", "(b') sync tool, thread=False"),
        "af_sync_thread": CallResult("af_sync_thread", "(b'') sync tool, in a thread"),
        "mcp": CallResult("mcp", f"(c) mcp {mcp_version() or ''} in-process".replace("  ", " ")),
        "fastmcp": CallResult(
            "fastmcp", f"(c') fastmcp {fastmcp_version() or ''} in-process".replace("  ", " ")
        ),
        # Informational: the floor's sequential latency through its dispatcher, the
        # shape every multiplexing client (assistant-frames' host included) has.
        "floor_dispatcher": CallResult("floor_dispatcher", "(a') floor with dispatcher"),
    }
    async with AsyncExitStack() as stack:
        # key -> (call for the sequential figure, call for the in-flight one or None)
        targets: dict[str, tuple[Call, Call | None]] = {}
        floor_seq = await stack.enter_async_context(floor_direct())
        floor_par = await stack.enter_async_context(floor_dispatcher())
        targets["floor"] = (floor_seq, floor_par)
        targets["floor_dispatcher"] = (floor_par, None)
        af_call = await stack.enter_async_context(assistant_frames_target())
        af = af_call("add")
        targets["af"] = (af, af)
        # Sequential only. (b') is measured paired with (b), below.
        on_loop = af_call("add_on_loop")
        targets["af_sync_thread"] = (af_call("add_in_thread"), None)
        if mcp_version() is None:
            results["mcp"].skipped = "mcp is not installed (pip install 'assistant-frames[mcp]')"
        else:
            mcp_call = await stack.enter_async_context(mcp_target())
            targets["mcp"] = (mcp_call, mcp_call)
        results["fastmcp"].skipped = fastmcp_skipped()
        if not results["fastmcp"].skipped:
            fastmcp_call = await stack.enter_async_context(fastmcp_target())
            targets["fastmcp"] = (fastmcp_call, fastmcp_call)

        for key, (seq, par) in targets.items():
            await check_add(results[key].label, seq)
            await measure_sequential(seq, config.warmup_calls)
            if par is not None:
                await check_add(results[key].label, par)
                await measure_in_flight(par, 2)
        await check_add(results["af_sync_loop"].label, on_loop)
        await measure_sequential(on_loop, config.warmup_calls)

        # Sequential latency in blocks of 50 calls taken in turn (the order rotating per
        # repeat): (b)/(a) and (c)/(b) are ratios of figures measured in the same stretch
        # of time, which the drift of a shared machine between long runs of each would
        # swamp. FastMCP, some 5x slower than (c), takes fewer calls in blocks of its own.
        rotating = [key for key in targets if key != "fastmcp"]
        keys = [*targets, "af_sync_loop"]
        for repeat in range(config.repeats):
            log(f"calls: repeat {repeat + 1}/{config.repeats}")
            turn = repeat % len(rotating)
            gc.collect()
            order = rotating[turn:] + rotating[:turn]
            samples = await measure_rotating(
                {key: targets[key][0] for key in order}, config.sequential_calls
            )
            for key, taken in samples.items():
                results[key].latency_samples_ns += taken
            shift = repeat % len(keys)
            for key in keys[shift:] + keys[:shift]:
                if key == "af_sync_loop":
                    gc.collect()
                    samples_loop, reference = await measure_paired(
                        on_loop, af, config.sequential_calls
                    )
                    results[key].latency_samples_ns += samples_loop
                    results[key].reference_samples_ns += reference
                    continue
                seq, par = targets[key]
                if key == "fastmcp":
                    gc.collect()
                    results[key].latency_samples_ns += await measure_sequential(
                        seq, config.fastmcp_calls
                    )
                if par is not None:
                    result = results[key]
                    gc.collect()
                    result.throughputs.append(
                        await measure_throughput(par, config.rounds * IN_FLIGHT, IN_FLIGHT)
                    )
                    gc.collect()
                    result.spawned_throughputs.append(await measure_in_flight(par, config.rounds))
    return results
