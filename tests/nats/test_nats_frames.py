"""Frames as NATS services, against the real ``nats-server`` (no mocks).

Replicas run in this process (``NATSFrameProvider``) or in subprocesses
(``nats_replica.py``); hosts are ``NATSFrameHost``. ``nats-py`` runs on asyncio only, so
every test here does, except the one proving the rest of the library needs neither
``nats`` nor asyncio.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import logging
import shutil
import signal
import ssl
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ConnectError,
    FrameDisconnected,
    ModelContextRegistry,
    ToolCallContext,
    ToolCallTimeout,
    ToolEvent,
    ToolProgress,
    connect,
)

from helpers import CountingGate, Gate, Outcome, calculator, serve_frame, wait_until
from nats_support import NATSServer, leavable, make_credentials, nats_server, replica_process

pytestmark = pytest.mark.anyio

nats = pytest.importorskip("nats")

from assistant_frames.nats import (  # noqa: E402  (needs the nats extra, checked just above)
    NATSDiscovery,
    NATSFrameHost,
    NATSFrameProvider,
    NoResponders,
    ReplicaLost,
    connect_nats,
    nats_client,
)

__all__ = ["nats_server"]  # the fixture, imported for the tests below

HEARTBEAT = 0.1  # the replicas' heartbeat in these tests
LIVENESS = 0.5  # how long a host waits for a silent replica
CALL_TIMEOUT = 30.0  # far above every bound the tests assert on
# "At once": under half a host's default context_timeout (5 s), which is what waiting
# instead would take, with room for a loaded machine (0.5 s left little).
AT_ONCE = 2.0
LOGGER = "assistant_frames.nats"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # nats-py is asyncio only


def service(registry: ModelContextRegistry, url: str, name: str = "calc", **kw: Any) -> Any:
    kw.setdefault("heartbeat", HEARTBEAT)
    return NATSFrameProvider(registry, name, nats=url, **kw)


@asynccontextmanager
async def host_of(url: str, name: str = "calc", **kw: Any) -> AsyncIterator[NATSFrameHost]:
    """A host of the frame ``name`` that has its context."""
    kw.setdefault("liveness", LIVENESS)
    kw.setdefault("timeout", CALL_TIMEOUT)
    async with NATSFrameHost(name, nats=url, **kw) as host:
        await host.wait_for_context(5)
        yield host


def extra() -> str:
    """One more tool than the calculator has."""
    return "extra"


def calculator_with_extra() -> ModelContextRegistry:
    """The calculator, with one tool more: a replica with other tools than the others."""
    registry = calculator()
    registry.tool(extra)
    return registry


async def failure_of(host: AssistantFrameHost, tool: str, args: Any, **kw: Any) -> Exception:
    """The error the call raised (it must raise one)."""
    try:
        result = await host.call_tool(tool, args, **kw)
    except Exception as exc:
        return exc
    raise AssertionError(f"{tool} returned {result!r} instead of failing")


# -- one replica ---------------------------------------------------------------------------------


async def test_a_host_gets_the_context_calls_tools_and_hears_progress_and_changes(
    nats_server: NATSServer,
) -> None:
    registry = calculator()

    @registry.tool
    async def count(n: int, context: ToolCallContext) -> str:
        """Count to n, reporting each step."""
        for i in range(1, n + 1):
            context.report_progress(i, n, f"step {i}")
            await anyio.sleep(0.01)
        return f"counted to {n}"

    with anyio.fail_after(20):
        async with service(registry, nats_server.url), host_of(nats_server.url) as host:
            context = host.get_model_context()
            assert set(context.tools) == {"add", "count"}
            assert context.system == "You can add numbers."
            assert await host.call_tool("add", {"a": 2, "b": 3}) == 5
            results = [await host.call_tool("add", {"a": i, "b": i}) for i in range(50)]
            assert results == [2 * i for i in range(50)]

            events: list[ToolEvent] = []
            assert await host.call_tool("count", {"n": 5}, on_event=events.append) == "counted to 5"
            progress = [e for e in events if isinstance(e, ToolProgress)]
            assert progress, "no progress event arrived"
            assert [(e.progress, e.total) for e in progress][-1] == (5, 5)
            assert all(e.tool_name == "count" for e in progress)

            def mul(a: int, b: int) -> int:
                """Multiply."""
                return a * b

            handle = registry.add_tool("mul", mul)
            await wait_until(lambda: "mul" in host.get_model_context().tools)
            assert await host.call_tool("mul", {"a": 6, "b": 7}) == 42
            handle.remove()
            await wait_until(lambda: "mul" not in host.get_model_context().tools)
            assert isinstance(await failure_of(host, "mul", {"a": 1, "b": 1}), Exception)


# -- replicas behind one name ----------------------------------------------------------------------


async def test_the_nats_service_api_shows_each_replica_and_forgets_it_once_stopped(
    nats_server: NATSServer,
) -> None:
    """$SRV.PING / INFO / STATS, as `nats micro ls|info|stats` ask them."""

    async def ask(client: Any, subject: str, count: int) -> list[dict[str, Any]]:
        """The answers of every instance that answers within a moment."""
        inbox = client.new_inbox()
        answers: list[dict[str, Any]] = []
        got = anyio.Event()

        async def on(msg: Any) -> None:
            answers.append(json.loads(msg.data))
            if len(answers) >= count:
                got.set()

        subscription = await client.subscribe(inbox, cb=on)
        await client.publish(subject, b"", reply=inbox)
        with anyio.move_on_after(2):
            await got.wait()
        await anyio.sleep(0.1)  # and no more than that
        await subscription.unsubscribe()
        return answers

    url = nats_server.url
    with anyio.fail_after(30):
        async with nats_client(url) as client:
            async with (
                service(calculator(), url, version="1.2.3", description="Adds.") as one,
                service(calculator(), url, version="1.2.3") as two,
                host_of(url) as host,
            ):
                for i in range(7):
                    assert await host.call_tool("add", {"a": i, "b": 1}) == i + 1
                pings = await ask(client, "$SRV.PING.calc", 2)
                assert sorted(p["id"] for p in pings) == sorted([one.replica, two.replica])
                assert {(p["name"], p["version"]) for p in pings} == {("calc", "1.2.3")}

                infos = {i["id"]: i for i in await ask(client, "$SRV.INFO.calc", 2)}
                info = infos[one.replica]
                assert info["description"] == "Adds."
                assert info["metadata"] == {
                    "assistant_frames.kind": "frame",
                    "assistant_frames.prefix": "frames",
                }
                endpoints = {e["name"]: e for e in info["endpoints"]}
                assert endpoints["call"]["subject"] == "frames.calc.call"
                assert endpoints["call"]["queue_group"] == "frames.calc"  # shared: one replica
                assert endpoints["context"]["subject"] == "frames.calc.context.get"
                assert endpoints["context"]["queue_group"] == f"frames.calc.{one.replica}"

                stats = await ask(client, "$SRV.STATS.calc", 2)
                calls = sum(
                    e["num_requests"] for s in stats for e in s["endpoints"] if e["name"] == "call"
                )
                assert calls == 7  # each call reached exactly one replica
                assert all(e["num_errors"] == 0 for s in stats for e in s["endpoints"])

            # Stopped: nobody answers for the frame any more.
            assert await ask(client, "$SRV.PING.calc", 1) == []


async def test_replicas_share_the_calls_each_call_runs_exactly_once(
    nats_server: NATSServer,
) -> None:
    calls = 60
    with anyio.fail_after(60):
        async with (
            replica_process(nats_server.url, "calc") as one,
            replica_process(nats_server.url, "calc") as two,
            host_of(nats_server.url) as host,
        ):
            answers: dict[str, Any] = {}

            async def call(marker: str) -> None:
                answers[marker] = await host.call_tool("whoami", {"marker": marker})

            async with anyio.create_task_group() as group:
                for i in range(calls):
                    group.start_soon(call, f"m{i}")
            markers = {f"m{i}" for i in range(calls)}
            # The replicas' stdout may trail their replies over NATS.
            await wait_until(lambda: len(one.started("whoami") + two.started("whoami")) >= calls)
            assert set(answers) == markers  # each call answered (exactly once: one result each)
            by = {answer["replica"] for answer in answers.values()}
            assert by == {one.id, two.id}, "both replicas take calls"
            assert {answer["pid"] for answer in answers.values()} == {one.pid, two.pid}
            ran_one, ran_two = one.started("whoami"), two.started("whoami")
            # Each call ran on exactly one replica, and on the one that answered it.
            assert sorted(ran_one + ran_two) == sorted(markers)
            assert set(ran_one) == {m for m, a in answers.items() if a["replica"] == one.id}
            assert await host.call_tool("cpu", {"n": 1000}) == sum(i * i for i in range(1000))


@pytest.mark.parametrize("replicas", [0, 1])
async def test_no_responders(nats_server: NATSServer, replicas: int) -> None:
    """No replica takes the call: an error at once, far below the call timeout."""
    with anyio.fail_after(20):
        async with AsyncExitStack() as stack:
            if replicas:  # one replica, gone again before the calls
                leave = await stack.enter_async_context(
                    leavable(service(calculator(), nats_server.url))
                )
                host = await stack.enter_async_context(host_of(nats_server.url))
                assert await host.call_tool("add", {"a": 1, "b": 1}) == 2
                await leave()
                assert host.connected, "a frame without replicas is still the host's frame"
            else:  # the connection ends at once, not after context_timeout
                started = time.perf_counter()
                host = await stack.enter_async_context(
                    NATSFrameHost("calc", nats=nats_server.url, timeout=CALL_TIMEOUT)
                )
                with pytest.raises(FrameDisconnected, match="No replica of frame 'calc'"):
                    await host.wait_for_context(10)
                assert time.perf_counter() - started < AT_ONCE
                with pytest.raises(ConnectError, match="No replica of frame 'calc' answers"):
                    async with connect(f"{nats_server.url}/calc", connect_timeout=10):
                        pass
                assert time.perf_counter() - started < 2 * AT_ONCE  # both, under 5 s
            for _ in range(5):
                started = time.perf_counter()
                error = await failure_of(host, "add", {"a": 1, "b": 1})
                elapsed = time.perf_counter() - started
                assert isinstance(error, FrameDisconnected), error
                assert not isinstance(error, ToolCallTimeout)
                if replicas:
                    assert isinstance(error, NoResponders), error
                assert "No replica of frame 'calc'" in str(error)
                assert elapsed < AT_ONCE, f"{elapsed:.3f} s: not at once"


async def test_a_frame_whose_context_never_comes_ends_the_connection_after_context_timeout(
    nats_server: NATSServer,
) -> None:
    """Something takes the context requests and never answers: bounded by context_timeout."""
    async with nats_client(nats_server.url) as client:
        silent = await client.subscribe("frames.calc.context.get")  # reads, never answers
        try:
            started = time.perf_counter()
            with anyio.fail_after(10):
                async with NATSFrameHost("calc", nats=nats_server.url, context_timeout=0.3) as host:
                    entered = time.perf_counter() - started
                    with pytest.raises(FrameDisconnected, match=r"sent its context within 0\.3 s"):
                        await host.wait_for_context(10)
            waited = time.perf_counter() - started
        finally:
            await silent.unsubscribe()
    assert entered < 0.25, "entering does not wait for the context"
    assert 0.3 <= waited < 2.0, waited


# -- a replica killed, the server restarted ------------------------------------------------------


async def test_a_replica_killed_mid_call_fails_its_calls_promptly_and_never_retries(
    nats_server: NATSServer,
) -> None:
    with anyio.fail_after(60):
        async with (
            replica_process(nats_server.url, "calc") as one,
            replica_process(nats_server.url, "calc") as two,
            host_of(nats_server.url) as host,
            anyio.create_task_group() as group,
        ):
            outcomes: dict[str, Outcome] = {}

            def started(marker: str) -> bool:
                return marker in one.started("slow") + two.started("slow")

            # Calls one by one until both replicas run some (the queue group picks; bounded).
            for i in range(40):
                if len(outcomes) >= 6 and one.started("slow") and two.started("slow"):
                    break
                marker = f"s{i}"
                outcomes[marker] = Outcome()
                args = {"seconds": 2, "marker": marker}
                group.start_soon(outcomes[marker].run, host, "slow", args)
                await wait_until(functools.partial(started, marker))
            assert one.started("slow"), "the queue group never picked replica one"
            assert two.started("slow"), "the queue group never picked replica two"
            killed = set(one.started("slow"))
            one.kill()
            killed_at = time.perf_counter()
            lost_at: dict[str, float] = {}
            for marker in killed:
                await outcomes[marker].done.wait()
                lost_at[marker] = time.perf_counter() - killed_at
            for marker in killed:
                assert isinstance(outcomes[marker].error, ReplicaLost), outcomes[marker].error
                # Far below the call timeout: the liveness bound, plus a beat or two.
                assert lost_at[marker] < LIVENESS + 1.0, lost_at
            # The other replica's calls go on and end well; none of the lost calls ran again.
            for marker in set(outcomes) - killed:
                await outcomes[marker].done.wait()
                assert outcomes[marker].error is None
                assert outcomes[marker].result == marker
            assert not killed & set(two.started("slow")), "a lost call was run again"
            assert await one.wait() != 0
            answers = [await host.call_tool("whoami", {}) for _ in range(10)]
            assert {a["replica"] for a in answers} == {two.id}


async def test_the_server_restarted_under_load(nats_server: NATSServer) -> None:
    typed = (ReplicaLost, NoResponders, ToolCallTimeout)
    with anyio.fail_after(60):
        async with (
            replica_process(nats_server.url, "calc") as replica,
            host_of(nats_server.url) as host,
        ):
            log: list[tuple[float, BaseException | None]] = []
            stop = anyio.Event()

            async def load() -> None:
                for i in range(100_000):  # bounded; stopped long before
                    if stop.is_set():
                        return
                    try:
                        assert await host.call_tool("add", {"a": i, "b": 1}, timeout=2) == i + 1
                        log.append((time.perf_counter(), None))
                    except Exception as exc:
                        log.append((time.perf_counter(), exc))
                        await anyio.sleep(0.02)

            async with anyio.create_task_group() as group:
                for _ in range(4):
                    group.start_soon(load)
                await wait_until(lambda: len(log) > 40)
                nats_server.kill()
                down = time.perf_counter()
                # Longer than the attempts a client makes when first connecting: it keeps trying.
                await anyio.sleep(2.5)
                await anyio.to_thread.run_sync(nats_server.restart)
                up = time.perf_counter()
                # Bounded: the clients reconnect every 0.5 s, then calls succeed again.
                await wait_until(
                    lambda: sum(1 for at, error in log if at > up and error is None) >= 40,
                    timeout=20,
                )
                stop.set()
            errors = [error for _, error in log if error is not None]
            assert errors, "no call failed while the server was down"
            assert all(isinstance(error, typed) for error in errors), {
                type(e).__name__ for e in errors
            }
            assert all(down <= at for at, error in log if error is not None)
            assert host.connected
            assert replica.process.returncode is None
            assert await host.call_tool("whoami", {}) == {"replica": replica.id, "pid": replica.pid}


SIDE: contextvars.ContextVar[str] = contextvars.ContextVar("SIDE", default="unset")


async def test_a_hosts_calls_share_one_timer(nats_server: NATSServer) -> None:
    """A host's calls are timed by its one timer task, not by a timer each: the route
    tells the host that publishing a call does not wait (the host read that before its
    NATS route existed, and armed a cancel scope with a deadline per call)."""
    registry = calculator()
    gate = CountingGate()
    registry.add_tool("hold", gate)
    timeout = 300.0  # no other timer is due near this (nats-py pings every 120 s)

    def deadlines() -> int:
        loop = asyncio.get_running_loop()
        now = loop.time()
        return sum(
            1
            for timer in loop._scheduled  # type: ignore[attr-defined]  # asyncio's heap
            if not timer.cancelled() and now + 250 < timer.when() <= now + timeout
        )

    async with (
        service(registry, nats_server.url),
        host_of(nats_server.url, timeout=timeout) as host,
        anyio.create_task_group() as group,
    ):
        for _ in range(5):
            group.start_soon(host.call_tool, "hold", {})
        await wait_until(lambda: gate.calls == 5)
        assert deadlines() == 1  # one for the 5 calls (5 before)
        gate.release.set()


async def test_a_replicas_thread_limit_holds_for_calls_taken_on_arrival(
    nats_server: NATSServer,
) -> None:
    """``max_threads`` bounds a replica's sync tools however each call arrived: a call
    taken in nats-py's task starts its worker there, where the frame's own limit was
    not set (up to 4 ran at once with ``max_threads=1`` before)."""
    registry = ModelContextRegistry()
    lock = threading.Lock()
    running = [0, 0]  # now, most at once

    @registry.tool
    def crunch(n: int) -> int:
        """A sync tool that holds its thread a while."""
        with lock:
            running[0] += 1
            running[1] = max(running)
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        return n

    provider = AssistantFrameProvider(registry, max_threads=1)
    async with service(provider, nats_server.url), host_of(nats_server.url) as host:
        results: list[int] = []

        async def call(n: int) -> None:
            results.append(await host.call_tool("crunch", {"n": n}))

        with anyio.fail_after(10):
            for _ in range(3):  # calls arriving at once, then while others run
                async with anyio.create_task_group() as calls:
                    for n in range(6):
                        calls.start_soon(call, n)
        assert sorted(results) == sorted(list(range(6)) * 3)
        assert running[1] == 1
        assert provider.thread_limiter.running == 0


async def test_calls_taken_on_arrival_run_in_the_frames_context(nats_server: NATSServer) -> None:
    """A replica takes a call in nats-py's task when nothing waits before it, but runs
    it in the context the frame was entered in: a tool sees the frame's variables, not
    nats-py's nor the caller's."""
    registry = calculator()

    @registry.tool
    async def side() -> str:
        """Which context the tool runs in (after a pause: calls at once need new workers,
        started where the call was taken)."""
        await anyio.sleep(0.05)
        return SIDE.get()

    async with anyio.create_task_group() as group:
        entered = anyio.Event()

        async def serve() -> None:
            SIDE.set("frame")
            async with service(registry, nats_server.url):
                entered.set()
                await anyio.sleep_forever()

        group.start_soon(serve)
        with anyio.fail_after(10):
            await entered.wait()
            SIDE.set("host")
            async with host_of(nats_server.url) as host:
                seen: list[str] = []

                async def call() -> None:
                    seen.append(await host.call_tool("side", {}))

                async with anyio.create_task_group() as calls:
                    for _ in range(5):
                        calls.start_soon(call)
                assert seen == ["frame"] * 5
        group.cancel_scope.cancel()


async def test_a_burst_of_calls_is_answered_whole_where_arrival_and_queue_meet(
    nats_server: NATSServer,
) -> None:
    """300 calls in flight at once: some arrive with nothing queued (taken on arrival),
    others behind queued ones (read by the frame's reader). Each is answered once, with
    its own result."""
    calls = 300
    results: dict[int, Any] = {}
    with anyio.fail_after(30):
        async with service(calculator(), nats_server.url), host_of(nats_server.url) as host:

            async def one(i: int) -> None:
                results[i] = await host.call_tool("add", {"a": i, "b": 1})

            async with anyio.create_task_group() as group:
                for i in range(calls):
                    group.start_soon(one, i)
    assert results == {i: i + 1 for i in range(calls)}


# -- cancellation, a frame leaving ---------------------------------------------------------------


async def test_cancelling_a_call_reaches_the_replica_running_it(nats_server: NATSServer) -> None:
    gates = [CountingGate(), CountingGate()]
    registries = [calculator(), calculator()]
    for registry, gate in zip(registries, gates, strict=True):
        registry.add_tool("hold", gate)
    with anyio.fail_after(20):
        async with (
            service(registries[0], nats_server.url) as first,
            service(registries[1], nats_server.url) as second,
            host_of(nats_server.url) as host,
        ):
            replicas = [first, second]
            # A caller that times out.
            with pytest.raises(ToolCallTimeout):
                await host.call_tool("hold", {}, timeout=0.3)
            [running] = [i for i, gate in enumerate(gates) if gate.calls]
            await gates[running].cancelled.wait()
            await wait_until(lambda: replicas[running].running_calls == 0)
            assert gates[1 - running].calls == 0  # the call went to one replica only

            # A caller cancelled by its cancel scope.
            for gate in gates:
                gate.started, gate.cancelled = anyio.Event(), anyio.Event()
            before = [gate.calls for gate in gates]
            async with anyio.create_task_group() as group:
                group.start_soon(host.call_tool, "hold", {})
                await wait_until(lambda: [g.calls for g in gates] != before)
                group.cancel_scope.cancel()
            [running] = [i for i in range(2) if gates[i].calls != before[i]]
            await gates[running].cancelled.wait()
            await wait_until(lambda: replicas[running].running_calls == 0)
            assert not gates[1 - running].cancelled.is_set()
            assert await host.call_tool("add", {"a": 1, "b": 2}) == 3


async def test_cancelling_reaches_a_replica_in_another_process(nats_server: NATSServer) -> None:
    with anyio.fail_after(30):
        async with (
            replica_process(nats_server.url, "calc") as replica,
            host_of(nats_server.url) as host,
        ):
            with pytest.raises(ToolCallTimeout):
                await host.call_tool("slow", {"seconds": 20, "marker": "t"}, timeout=0.3)
            await wait_until(lambda: replica.has("cancelled t"))
            async with anyio.create_task_group() as group:
                group.start_soon(host.call_tool, "slow", {"seconds": 20, "marker": "c"})
                await wait_until(lambda: replica.started("slow") == ["t", "c"])
                group.cancel_scope.cancel()
            await wait_until(lambda: replica.has("cancelled c"))
            assert not replica.has("end t")
            assert not replica.has("end c")
            assert await host.call_tool("add", {"a": 1, "b": 2}) == 3


async def test_a_replica_stopping_mid_burst_loses_no_call_silently(nats_server: NATSServer) -> None:
    """Every call ends: with its result, or with ReplicaLost, and then it never ran.

    The stopping replica drains its call endpoint (the calls its client holds run), but
    core NATS delivers at most once: a call routed to it as it unsubscribes can vanish,
    and its caller hears ReplicaLost after ``liveness`` (docs/nats.md).
    """
    url = nats_server.url
    calls, in_flight = 3000, 300
    ran: set[int] = set()
    results: dict[int, Any] = {}
    failures: dict[int, BaseException] = {}

    def counted() -> ModelContextRegistry:
        registry = ModelContextRegistry()

        @registry.tool
        def add(a: int, b: int) -> int:
            """Add two numbers (and note that call ``a`` ran)."""
            ran.add(a)
            return a + b

        return registry

    with anyio.fail_after(60):
        async with (
            service(counted(), url),
            leavable(service(counted(), url, drain_timeout=10)) as leave,
            host_of(url) as host,
        ):
            limiter = anyio.CapacityLimiter(in_flight)

            async def one(i: int) -> None:
                async with limiter:
                    try:
                        results[i] = await host.call_tool("add", {"a": i, "b": 1})
                    except Exception as exc:
                        failures[i] = exc

            async with anyio.create_task_group() as group:
                for i in range(calls):
                    group.start_soon(one, i)
                    if i == calls // 3:
                        group.start_soon(leave)  # mid-burst
    assert len(results) + len(failures) == calls
    assert all(results[i] == i + 1 for i in results)
    assert all(isinstance(e, ReplicaLost) for e in failures.values()), failures
    assert not ran & set(failures), "a call that failed had run"
    assert ran == set(results)


async def test_a_frame_leaving_fails_its_running_calls_then_nobody_responds(
    nats_server: NATSServer,
) -> None:
    registry = calculator()
    gate = Gate()
    registry.add_tool("hold", gate)
    replica = service(registry, nats_server.url, drain_timeout=0.2)
    with anyio.fail_after(20):
        async with (
            leavable(replica) as leave,
            host_of(nats_server.url, liveness=30) as host,  # fails on a word, not silence
            anyio.create_task_group() as group,
        ):
            outcome = Outcome()
            group.start_soon(outcome.run, host, "hold", {})
            await gate.started.wait()
            assert replica.running_calls == 1
            leaving = time.perf_counter()
            await leave()
            await outcome.done.wait()
            took = time.perf_counter() - leaving
            assert isinstance(outcome.error, ReplicaLost), outcome.error
            assert took < 0.2 + 1.0, f"{took:.2f} s"
            assert gate.cancelled.is_set(), "the tool saw its replica stop"
            assert replica.running_calls == 0
            assert host.connected
            assert isinstance(await failure_of(host, "add", {"a": 1, "b": 1}), NoResponders)


@pytest.mark.parametrize("how", ["SIGTERM", "stdin EOF"])
async def test_a_replica_process_stopping_cleanly_fails_its_running_call(
    nats_server: NATSServer, how: str
) -> None:
    with anyio.fail_after(30):
        async with (
            replica_process(nats_server.url, "calc", "--drain", "0.2") as replica,
            host_of(nats_server.url, liveness=30) as host,
            anyio.create_task_group() as group,
        ):
            outcome = Outcome()
            group.start_soon(outcome.run, host, "slow", {"seconds": 20, "marker": "x"})
            await wait_until(lambda: replica.started("slow") == ["x"])
            if how == "SIGTERM":
                replica.terminate()
            else:
                await replica.close_stdin()
            assert await replica.wait() == 0
            await outcome.done.wait()
            assert isinstance(outcome.error, ReplicaLost), outcome.error
            assert replica.has("cancelled x")
            await wait_until(lambda: replica.ended.is_set())
            assert replica.lines[-1] == "stopped"
            assert isinstance(await failure_of(host, "add", {"a": 1, "b": 1}), NoResponders)


# -- hostile input ---------------------------------------------------------------------------------


async def test_bad_messages_on_our_subjects_are_ignored_or_refused(
    nats_server: NATSServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, LOGGER)
    subjects = "frames.calc"
    with anyio.fail_after(30):
        async with held_call(nats_server.url) as (replica, host, raw, gate, held, seen):
            reply = seen.reply
            call_id = json.loads(seen.data)["message"]["id"]

            # Calls that are no tool-call: refused with the service API's error.
            not_calls = [b"\xff\xfe garbage", b"[]", b'{"channel": 1}', _envelope({"type": "x"})]
            for payload in not_calls:
                answer = await raw.request(f"{subjects}.call", payload, timeout=5)
                assert (answer.headers or {}).get("Nats-Service-Error-Code") == "400", answer
            await raw.publish(f"{subjects}.call", b"no reply subject at all")
            # A real tool-call, but published: nobody to answer, so it must not run.
            published = {"type": "tool-call", "id": "p1", "toolName": "hold", "args": {}}
            await raw.publish(f"{subjects}.call", _envelope(published))
            # Cancels: garbage, without AF-Reply, for a call nobody runs.
            await raw.publish(f"{subjects}.cancel", b"\x00\x01")
            await raw.publish(f"{subjects}.cancel", _envelope({"type": "tool-cancel", "id": "1"}))
            await raw.publish(
                f"{subjects}.cancel",
                _envelope({"type": "tool-cancel", "id": call_id}),
                headers={"AF-Reply": "_INBOX.someone.else"},
            )
            # On the host's inbox for the held call: replies about other calls, garbage.
            forged = {"type": "tool-result", "id": "not-this-call", "result": "forged"}
            await raw.publish(reply, _envelope(forged))
            await raw.publish(reply, b"\xff not json")
            await raw.publish(reply, _envelope({"type": "tool-result"}))
            await raw.publish(f"{reply.rsplit('.', 1)[0]}.999", _envelope(forged))
            # A flood of garbage on the context subject.
            for i in range(3000):
                await raw.publish(f"{subjects}.context", b"\x00garbage" if i % 2 else b'{"x": 1}')
            await raw.publish(f"{subjects}.context.get", b"junk")
            await raw.flush(timeout=5)

            assert await host.call_tool("add", {"a": 20, "b": 22}) == 42
            assert not gate.cancelled.is_set(), "a stranger's cancel reached the call"
            assert replica.running_calls == 1
            gate.release.set()
            await held.done.wait()
            assert held.error is None
            assert held.result == "released"
            assert set(host.get_model_context().tools) == {"add", "hold"}
            assert replica._route is not None
            assert replica._route.malformed >= 7
            assert host.route.dropped >= 1500
            assert host.connected
            assert [await host.call_tool("add", {"a": i, "b": i}) for i in range(5)] == [
                0,
                2,
                4,
                6,
                8,
            ]


@asynccontextmanager
async def held_call(
    url: str,
) -> AsyncIterator[tuple[NATSFrameProvider, NATSFrameHost, Any, Gate, Outcome, Any]]:
    """A replica, its host, a raw client, and a ``hold`` call the gate keeps running:
    yields ``(replica, host, raw, gate, held, seen)``, ``seen`` being the call's message
    as a stranger on the bus saw it (not in the queue group: a copy)."""
    registry = calculator()
    gate = Gate()
    registry.add_tool("hold", gate)
    seen: list[Any] = []
    async with await connect_nats(url) as raw:
        spy = await raw.subscribe("frames.calc.call", cb=_collect(seen))
        await raw.flush(timeout=5)  # the server has the subscription
        async with (
            service(registry, url) as replica,
            host_of(url) as host,
            anyio.create_task_group() as group,
        ):
            held = Outcome()
            group.start_soon(held.run, host, "hold", {})
            await gate.started.wait()
            try:
                await wait_until(lambda: len(seen) == 1)
            except TimeoutError:
                raise AssertionError([(m.subject, m.reply, m.data[:200]) for m in seen]) from None
            await spy.unsubscribe()
            yield replica, host, raw, gate, held, seen[0]


def _envelope(message: Any) -> bytes:
    return json.dumps({"channel": "assistant-ui-frame", "message": message}).encode()


def _collect(into: list[Any]) -> Any:
    async def on(msg: Any) -> None:
        into.append(msg)

    return on


# -- tenants, tool sets, authentication ------------------------------------------------------------


async def test_a_frame_in_another_tenant_is_invisible(nats_server: NATSServer) -> None:
    tenants = {}
    for tenant in ("tenant-a", "tenant-b"):
        registry = ModelContextRegistry()
        registry.add_instruction(f"I am {tenant}.")
        registry.add_tool(f"only_{tenant.replace('-', '_')}", lambda t=tenant: t)
        tenants[tenant] = registry
    with anyio.fail_after(20):
        async with (
            service(tenants["tenant-a"], nats_server.url, prefix="tenant-a"),
            service(tenants["tenant-b"], nats_server.url, prefix="tenant-b"),
            host_of(nats_server.url, prefix="tenant-a") as a,
            host_of(nats_server.url, prefix="tenant-b") as b,
        ):
            assert set(a.get_model_context().tools) == {"only_tenant_a"}
            assert set(b.get_model_context().tools) == {"only_tenant_b"}
            for _ in range(10):
                assert await a.call_tool("only_tenant_a", {}) == "tenant-a"
                assert await b.call_tool("only_tenant_b", {}) == "tenant-b"
            # b's context changes; a never hears it.
            tenants["tenant-b"].add_instruction("More.")
            await wait_until(lambda: "More." in (b.get_model_context().system or ""))
            await anyio.sleep(0.2)
            assert a.get_model_context().system == "I am tenant-a."
            # Nobody serves calc under the default prefix.
            async with NATSFrameHost("calc", nats=nats_server.url) as other:
                assert isinstance(await failure_of(other, "only_tenant_a", {}), FrameDisconnected)


async def test_replicas_with_different_tool_sets_are_reported(
    nats_server: NATSServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    with anyio.fail_after(40):
        async with (
            replica_process(nats_server.url, "calc") as one,
            host_of(nats_server.url) as host,
        ):
            assert not host.route.mismatch_reported
            async with replica_process(nats_server.url, "calc", "--extra") as two:
                await wait_until(lambda: host.route.mismatch_reported, timeout=10)
                tools = host.route.replica_tools
                assert set(tools) == {one.id, two.id}
                assert tools[two.id] - tools[one.id] == {"extra"}
                warnings = [
                    r for r in caplog.records if r.name == LOGGER and "different tools" in r.message
                ]
                assert len(warnings) == 1, caplog.text
                assert "extra" in warnings[0].getMessage()


async def test_a_replica_reports_a_later_one_with_other_tools_with_no_host_around(
    nats_server: NATSServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    bigger = calculator_with_extra()

    url = nats_server.url
    async with NATSFrameProvider(calculator(), "calc", nats=url, heartbeat=HEARTBEAT) as first:
        async with NATSFrameProvider(calculator(), "calc", nats=url) as same:
            await anyio.sleep(0.3)  # it published its (equal) tools on starting
            assert first.mismatches == {}
            assert same.replica not in first.mismatches
            assert same.mismatches == {}  # it asked the running replica on starting
        async with NATSFrameProvider(bigger, "calc", nats=url) as other:
            await wait_until(lambda: other.replica in first.mismatches, timeout=5)
            assert "extra" in first.mismatches[other.replica]
            assert "publishes other tools" in caplog.text
            # The later replica asked the running one for its tools on starting.
            await wait_until(lambda: first.replica in other.mismatches, timeout=5)
            assert "extra" not in other.mismatches[first.replica]


async def test_a_host_joining_after_mismatched_replicas_reports_them_at_once(
    nats_server: NATSServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    bigger = calculator_with_extra()

    url = nats_server.url
    with anyio.fail_after(20):
        async with (
            NATSFrameProvider(calculator(), "calc", nats=url) as one,
            NATSFrameProvider(bigger, "calc", nats=url) as two,
        ):
            await anyio.sleep(0.2)  # both have published: a host joining now hears neither
            async with host_of(url) as host:
                # Every replica answers the host's context request.
                await wait_until(lambda: host.route.mismatch_reported, timeout=5)
                tools = host.route.replica_tools
                assert set(tools) == {one.replica, two.replica}
                assert tools[two.replica] - tools[one.replica] == {"extra"}
                # The first answer is the context; the other answer does not replace it.
                names = set(host.get_model_context().tools)
                assert names in (set(tools[one.replica]), set(tools[two.replica]))


async def test_a_matching_replica_is_not_reported(
    nats_server: NATSServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    with anyio.fail_after(40):
        async with (
            replica_process(nats_server.url, "calc") as one,
            host_of(nats_server.url) as host,
            replica_process(nats_server.url, "calc") as two,
        ):
            # The second replica published its (equal) tools on starting.
            await wait_until(lambda: set(host.route.replica_tools) == {one.id, two.id}, 10)
            assert not host.route.mismatch_reported
            assert "different tools" not in caplog.text


@pytest.mark.parametrize(
    ("args", "good", "bad"),
    [
        (["--auth", "s3cret-token"], {"token": "s3cret-token"}, {"token": "wrong"}),
        (
            ["--user", "frame", "--pass", "s3cret"],
            {"user": "frame", "password": "s3cret"},
            {"user": "frame", "password": "wrong"},
        ),
    ],
    ids=["token", "user-password"],
)
async def test_authentication_passes_through(
    tmp_path: Path, args: list[str], good: dict[str, Any], bad: dict[str, Any]
) -> None:
    server = NATSServer(tmp_path / "auth.log", args).start()
    try:
        with anyio.fail_after(30):
            nothing: dict[str, Any] = {}
            for options in [nothing, bad]:
                started = time.perf_counter()
                with pytest.raises(ConnectError, match="Authorization"):
                    await connect_nats(server.url, **options)  # a few attempts, bounded
                assert time.perf_counter() - started < 10
                # The same refusal reaches hosts and replicas (retrying sooner, to be quick).
                quick = {**options, "reconnect_time_wait": 0.05}
                with pytest.raises(ConnectError, match="Authorization"):
                    async with NATSFrameHost("calc", nats=server.url, nats_options=quick):
                        pass
                with pytest.raises(ConnectError, match="Authorization"):
                    async with service(calculator(), server.url, nats_options=quick):
                        pass
            async with (
                service(calculator(), server.url, nats_options=good),
                host_of(server.url, nats_options=good) as host,
            ):
                assert await host.call_tool("add", {"a": 1, "b": 2}) == 3
    finally:
        server.kill()


async def test_a_credentials_file_passes_through(tmp_path: Path) -> None:
    """A server in operator mode (JWTs): reached with a user's .creds file, as nsc makes it."""
    args, creds = make_credentials(tmp_path)
    server = NATSServer(tmp_path / "creds.log", args).start()
    with_creds = {"user_credentials": str(creds)}
    try:
        with anyio.fail_after(30):
            with pytest.raises(ConnectError, match="Authorization"):
                await connect_nats(server.url, connect_timeout=1.0)
            async with (
                service(calculator(), server.url, nats_options=with_creds),
                host_of(server.url, nats_options=with_creds) as host,
            ):
                assert await host.call_tool("add", {"a": 3, "b": 4}) == 7
    finally:
        server.kill()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_tls_passes_through(tmp_path: Path) -> None:
    """A server that requires TLS: reached over tls:// with the client's own SSL context."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    command = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    command += ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"]
    command += ["-addext", "subjectAltName=IP:127.0.0.1"]
    with anyio.fail_after(30):
        await anyio.run_process(command)
    args = ["--tls", "--tlscert", str(cert), "--tlskey", str(key)]
    server = NATSServer(tmp_path / "tls.log", args).start()
    url = server.url.replace("nats://", "tls://")
    trusting = {"tls": ssl.create_default_context(cafile=str(cert))}
    try:
        with anyio.fail_after(30):
            with pytest.raises(ConnectError, match="certificate verify failed"):
                # The system's CAs do not know this server: refused, within a bound.
                await connect_nats(url, tls=ssl.create_default_context(), connect_timeout=1.0)
            async with (
                service(calculator(), url, nats_options=trusting),
                host_of(url, nats_options=trusting) as host,
            ):
                assert await host.call_tool("add", {"a": 2, "b": 2}) == 4
    finally:
        server.kill()


# -- trio, and the library without nats ------------------------------------------------------------


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_the_library_works_on_trio_and_imports_nats_only_when_asked() -> None:
    with anyio.fail_after(10):
        async with serve_frame(AssistantFrameProvider(calculator())) as host:
            assert await host.call_tool("add", {"a": 2, "b": 3}) == 5
    probe = textwrap.dedent(
        """
        import sys
        import assistant_frames, assistant_frames.transports, assistant_frames.frames
        assert not [m for m in sys.modules if m == "nats" or m.startswith("nats.")], "early"
        import assistant_frames.nats
        assert "nats" in sys.modules and "nats.micro" in sys.modules
        print("ok")
        """
    )
    done = await anyio.run_process([sys.executable, "-c", probe], check=False, env=_env_with_path())
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "ok"


def _env_with_path() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


async def test_a_shared_client_closed_for_good_ends_the_host(nats_server: NATSServer) -> None:
    """The host notices a client closed under it (not reconnecting): its connection ends."""
    url = nats_server.url
    async with (
        NATSFrameProvider(calculator(), "calc", nats=url),
        nats_client(url) as client,
        NATSFrameHost("calc", nats=client, liveness=0.4) as host,
    ):
        await host.wait_for_context(5)
        await client.close()
        with anyio.fail_after(5):
            await host.wait_disconnected()
        assert host.state == "disconnected"
        with pytest.raises(FrameDisconnected, match="closed"):
            await host.call_tool("add", {"a": 1, "b": 2})


async def test_only_contexts_are_believed_on_the_context_subjects(
    nats_server: NATSServer, caplog: pytest.LogCaptureFixture
) -> None:
    # Anyone can publish on the context subject: a call's result there must not settle
    # the call, nor a request's reply there end a call it does not name.
    caplog.set_level(logging.WARNING, LOGGER)
    with anyio.fail_after(20):
        async with held_call(nats_server.url) as (replica, host, raw, gate, held, seen):
            call_id = json.loads(seen.data)["message"]["id"]
            forged = {"type": "tool-result", "id": call_id, "result": "forged"}
            await raw.publish("frames.calc.context", _envelope(forged))
            await raw.flush(timeout=5)
            await anyio.sleep(0.3)
            assert not held.done.is_set(), f"a forged result settled the call: {held.result!r}"
            assert "on the context subject that is no context" in caplog.text
            assert await host.call_tool("add", {"a": 1, "b": 2}) == 3
            gate.release.set()
            await held.done.wait()
            assert held.error is None
            assert held.result == "released"
            assert replica.running_calls == 0


async def test_replica_ids_on_the_context_subject_do_not_grow_memory_without_bound(
    nats_server: NATSServer,
) -> None:
    # Every restart is a new replica id, and anyone may publish with any id: what the
    # host and a replica remember of other replicas' tools has a bound.
    peers = 3000
    with anyio.fail_after(30):
        async with (
            service(calculator(), nats_server.url) as replica,
            host_of(nats_server.url) as host,
            await connect_nats(nats_server.url) as raw,
        ):
            context = {"type": "model-context-update", "context": {"tools": {}}}
            for i in range(peers):
                await raw.publish(
                    "frames.calc.context", _envelope(context), headers={"AF-Replica": f"r{i}"}
                )
            await raw.flush(timeout=5)
            await wait_until(lambda: f"r{peers - 1}" in host.route.replica_tools, timeout=10)
            await wait_until(lambda: f"r{peers - 1}" in replica.mismatches, timeout=10)
            assert len(host.route.replica_tools) <= 256
            assert len(replica.mismatches) <= 256
            assert host.route.mismatch_reported
            assert await host.call_tool("add", {"a": 1, "b": 2}) == 3


@pytest.mark.parametrize("piece", ["replica", "host", "discovery"])
async def test_leaving_while_the_server_is_down_is_quiet_and_prompt(
    nats_server: NATSServer, piece: str
) -> None:
    # Closing a client cut off from its server: nats-py's close() raises the lost
    # connection's error when it has messages buffered for the server.
    url = nats_server.url
    async with service(calculator(), url) as replica:
        pieces: dict[str, Any] = {
            "replica": lambda: service(calculator(), url),
            "host": lambda: NATSFrameHost("calc", nats=url, liveness=LIVENESS),
            "discovery": lambda: NATSDiscovery(nats=url, interval=0.2, window=0.1),
        }
        with anyio.fail_after(10):
            async with pieces[piece]():
                nats_server.kill()
                await anyio.sleep(0.3)  # its client knows, and buffers what it sends
                started = time.perf_counter()
            assert time.perf_counter() - started < 3
        assert replica.running_calls == 0


async def test_a_replica_leaving_while_its_server_hangs_is_bounded(
    nats_server: NATSServer,
) -> None:
    # The server hangs (SIGSTOP): no round trip completes, so neither the call endpoint's
    # drain nor nats.micro's stop() (10 s per subscription) can finish. Leaving is bounded
    # all the same, and once the server wakes nothing answers for the replica.
    assert nats_server.process is not None
    url = nats_server.url
    with anyio.fail_after(40):
        try:
            async with service(calculator(), url, drain_timeout=0.3):
                nats_server.process.send_signal(signal.SIGSTOP)
                leaving = time.perf_counter()
            assert time.perf_counter() - leaving < 8
        finally:
            nats_server.process.send_signal(signal.SIGCONT)
        async with nats_client(url) as other:
            for subject in ("frames.calc.context.get", "frames.calc.call", "$SRV.PING.calc"):
                with pytest.raises(nats.errors.NoRespondersError):
                    await other.request(subject, b"{}", timeout=2)


async def test_a_flood_of_contexts_never_costs_a_call_its_result(nats_server: NATSServer) -> None:
    # Contexts supersede each other, results do not: a host that cannot keep up drops
    # stale contexts, never the answer a caller waits for.
    registry = calculator()
    gate = Gate()
    registry.add_tool("hold", gate)
    with anyio.fail_after(30):
        async with (
            service(registry, nats_server.url),
            host_of(nats_server.url, liveness=60) as host,  # a busy host is no silent replica
            await connect_nats(nats_server.url) as raw,
            anyio.create_task_group() as group,
        ):
            held = Outcome()
            group.start_soon(functools.partial(held.run, host, "hold", {}, timeout=None))
            await gate.started.wait()
            tools = {f"t{i}": {"description": "x" * 200, "parameters": {}} for i in range(30)}
            update = _envelope({"type": "model-context-update", "context": {"tools": tools}})
            for _ in range(20000):
                await raw.publish("frames.calc.context", update)
            gate.release.set()
            await raw.flush(timeout=5)
            with anyio.fail_after(10):
                await held.done.wait()
            assert held.error is None, repr(held.error)
            assert held.result == "released"


async def test_a_host_blocked_while_awaiting_the_context_does_not_blame_the_replicas(
    nats_server: NATSServer,
) -> None:
    # As for a call's heartbeats: the context's answer waits unread while the host's own
    # loop is blocked, and that time is no silence of the replicas'.
    url = nats_server.url
    with anyio.fail_after(30):
        async with (
            replica_process(url, "calc"),
            NATSFrameHost("calc", nats=url, context_timeout=0.5, liveness=LIVENESS) as host,
        ):
            # One checkpoint: the context request goes out, and the answer waits unread.
            await anyio.lowlevel.checkpoint()
            time.sleep(1.5)  # noqa: ASYNC251  (blocks this loop, not the replica's)
            await host.wait_for_context(5)
            assert host.connected
            assert await host.call_tool("add", {"a": 1, "b": 2}) == 3


async def test_a_host_that_was_blocked_does_not_blame_the_replica(nats_server: NATSServer) -> None:
    # The host's own event loop stalled past liveness (a blocking call, a burst of work):
    # the replica's heartbeats wait unread, and the time the host did not listen is no
    # silence of the replica's.
    with anyio.fail_after(30):
        async with (
            replica_process(nats_server.url, "calc", "--heartbeat", "0.1") as replica,
            host_of(nats_server.url) as host,
            anyio.create_task_group() as group,
        ):
            outcome = Outcome()
            group.start_soon(outcome.run, host, "slow", {"seconds": 2, "marker": "m"})
            await wait_until(lambda: "m" in replica.started("slow"))
            time.sleep(3 * LIVENESS)  # noqa: ASYNC251  (blocks this loop, not the replica's)
            await outcome.done.wait()
            assert outcome.error is None, repr(outcome.error)
            assert outcome.result == "m"


@pytest.mark.parametrize("piece", ["replica", "host", "discovery"])
async def test_entering_on_a_closed_client_is_a_connect_error(
    nats_server: NATSServer, piece: str
) -> None:
    client = await connect_nats(nats_server.url)
    await client.close()
    pieces: dict[str, Any] = {
        "replica": lambda: NATSFrameProvider(calculator(), "calc", nats=client),
        "host": lambda: NATSFrameHost("calc", nats=client),
        "discovery": lambda: NATSDiscovery(nats=client),
    }
    with anyio.fail_after(10), pytest.raises(ConnectError, match="closed"):
        async with pieces[piece]():
            pass


async def test_a_replica_looks_again_when_its_own_tools_change(nats_server: NATSServer) -> None:
    # Its own change can end a mismatch (or make one) with replicas that did not change.
    mine = calculator()
    bigger = calculator_with_extra()

    url = nats_server.url
    with anyio.fail_after(20):
        async with (
            NATSFrameProvider(mine, "calc", nats=url) as one,
            NATSFrameProvider(bigger, "calc", nats=url) as two,
        ):
            await wait_until(lambda: two.replica in one.mismatches, timeout=5)
            handle = mine.add_tool("extra", extra)  # now the same tools as two's
            await wait_until(lambda: two.replica not in one.mismatches, timeout=5)
            handle.remove()  # and different again
            await wait_until(lambda: two.replica in one.mismatches, timeout=5)
            assert "extra" in one.mismatches[two.replica]


async def test_a_context_nats_could_not_buffer_while_the_server_was_down_goes_out_later(
    nats_server: NATSServer,
) -> None:
    # While cut off, nats-py buffers what a replica publishes, up to pending_size (2 MiB),
    # then refuses it. A refused context must not end the replica's context updates.
    registry = calculator()

    def big() -> str:
        return "big"

    with anyio.fail_after(40):
        async with service(registry, nats_server.url), host_of(nats_server.url) as host:
            assert set(host.get_model_context().tools) == {"add"}
            nats_server.kill()
            await anyio.sleep(0.3)  # the replica's client knows it is cut off
            for _ in range(2):  # 2 MB of contexts: nats-py holds them, it has no more room
                handle = registry.add_tool("big", big, description="x" * 600_000)
                await anyio.sleep(0.05)
                handle.remove()
                await anyio.sleep(0.05)
            registry.add_tool("big", big, description="x" * 800_000)
            await anyio.sleep(0.05)

            def small() -> str:
                """The last change while cut off: refused, no room left."""
                return "small"

            registry.add_tool("small", small)
            await anyio.sleep(0.05)
            assert "small" not in host.get_model_context().tools
            await anyio.to_thread.run_sync(nats_server.restart)
            # With no change since, the context refused while cut off still goes out.
            await wait_until(lambda: "small" in host.get_model_context().tools, timeout=15)

            def late() -> str:
                """Added once the server is back."""
                return "late"

            registry.add_tool("late", late)
            await wait_until(lambda: "late" in host.get_model_context().tools, timeout=15)
            assert await host.call_tool("late", {}) == "late"


async def test_progress_nats_could_not_send_while_cut_off_does_not_end_progress(
    nats_server: NATSServer,
) -> None:
    # pending_size=0: nats-py refuses whatever is published while cut off. A progress
    # message refused then is lost, not the progress of every later call.
    registry = calculator()
    release = anyio.Event()

    @registry.tool
    async def count(n: int, context: ToolCallContext) -> str:
        """Count to n, reporting each step, then wait to be released."""
        for i in range(1, n + 1):
            context.report_progress(i, n)
            await anyio.sleep(0.02)
        await release.wait()
        return f"counted to {n}"

    url = nats_server.url
    with anyio.fail_after(40):
        async with (
            await connect_nats(url, pending_size=0) as client,
            service(registry, client),
            anyio.create_task_group() as group,
        ):
            async with host_of(url, liveness=2.0) as host:
                cut = Outcome()
                heard: list[ToolEvent] = []
                group.start_soon(
                    functools.partial(cut.run, host, "count", {"n": 30}, on_event=heard.append)
                )
                await anyio.sleep(0.2)
                nats_server.kill()
                await cut.done.wait()  # lost with the server, as any running call
                await anyio.to_thread.run_sync(nats_server.restart)
            await wait_until(lambda: client.is_connected, timeout=10)
            async with host_of(url) as host:
                events: list[ToolEvent] = []
                later = Outcome()
                group.start_soon(
                    functools.partial(later.run, host, "count", {"n": 3}, on_event=events.append)
                )
                # While the call runs, not only along with its result.
                await wait_until(lambda: any(isinstance(e, ToolProgress) for e in events), 5)
                release.set()
                await later.done.wait()
                assert later.result == "counted to 3", later.error


async def test_a_call_nats_could_not_send_while_cut_off_fails_alone(
    nats_server: NATSServer,
) -> None:
    # pending_size=0: nats-py refuses whatever is published while cut off. That call
    # fails; the host stays, and calls go through again once the server is back.
    url = nats_server.url
    with anyio.fail_after(40):
        async with (
            service(calculator(), url),
            await connect_nats(url, pending_size=0) as client,
            NATSFrameHost("calc", nats=client, liveness=LIVENESS) as host,
        ):
            await host.wait_for_context(5)
            nats_server.kill()
            await wait_until(lambda: not client.is_connected)
            error = await failure_of(host, "add", {"a": 1, "b": 2})
            assert isinstance(error, FrameDisconnected), repr(error)
            assert "Not sent" in str(error)
            await anyio.to_thread.run_sync(nats_server.restart)
            await wait_until(lambda: client.is_connected, timeout=10)
            assert host.connected
            for _ in range(100):  # until the replica is back too (bounded)
                try:
                    assert await host.call_tool("add", {"a": 2, "b": 3}) == 5
                    break
                except NoResponders:
                    await anyio.sleep(0.1)
            else:
                raise AssertionError("the replica never came back")


async def test_a_context_too_large_for_nats_ends_the_connection_saying_so(
    nats_server: NATSServer,
) -> None:
    registry = calculator()

    def huge() -> str:
        return "huge"

    registry.add_tool("huge", huge, description="x" * 1_200_000)  # past max_payload (1 MiB)
    with anyio.fail_after(20):
        async with (
            service(registry, nats_server.url),
            NATSFrameHost("calc", nats=nats_server.url, context_timeout=10) as host,
        ):
            started = time.perf_counter()
            with pytest.raises(FrameDisconnected, match="could not send its context"):
                await host.wait_for_context(15)
            assert time.perf_counter() - started < 5  # at once, not after context_timeout
