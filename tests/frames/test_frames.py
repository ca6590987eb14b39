"""End-to-end tests: AssistantFrameProvider <-> AssistantFrameHost over memory_pair()."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from functools import partial
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    FrameDisconnected,
    MemoryTransport,
    ModelContextProvider,
    ModelContextRegistry,
    ToolCallContext,
    ToolCallError,
    ToolCallTimeout,
    memory_pair,
)

from helpers import (
    EMPTY_OBJECT,
    Outcome,
    Point,
    calculator,
    envelope,
    next_message,
    serve_frame,
)

pytestmark = pytest.mark.anyio

REQUEST = envelope({"type": "model-context-request"})
_GONE = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)


# -- helpers ---------------------------------------------------------------------------------


class Tap:
    """A relay between a host and a frame (two memory pairs) recording every message."""

    def __init__(self) -> None:
        self.host_end, self._host_side = memory_pair()
        self._frame_side, self.frame_end = memory_pair()
        self.to_frame: list[Any] = []
        self.to_host: list[Any] = []
        self._event = anyio.Event()

    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._pump, self._host_side, self._frame_side, self.to_frame)
            tg.start_soon(self._pump, self._frame_side, self._host_side, self.to_host)

    async def _pump(self, source: MemoryTransport, target: MemoryTransport, log: list[Any]) -> None:
        try:
            while True:
                message = await source.receive()
                log.append(message)
                self._event.set()
                self._event = anyio.Event()
                await target.send(message)
        except _GONE:
            pass
        finally:
            with anyio.CancelScope(shield=True), suppress(*_GONE):
                await target.aclose()

    def sent_to_frame(self, kind: str) -> list[dict[str, Any]]:
        return [m["message"] for m in self.to_frame if m["message"].get("type") == kind]

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            while not predicate():
                await self._event.wait()


@asynccontextmanager
async def tapped(
    frame: AssistantFrameProvider, *, timeout: float = 5.0
) -> AsyncIterator[tuple[AssistantFrameHost, Tap]]:
    """Like serve_frame, with a recording relay in the middle."""
    tap = Tap()
    async with anyio.create_task_group() as tg:
        tg.start_soon(tap.run)
        tg.start_soon(frame.serve, tap.frame_end)
        async with AssistantFrameHost(tap.host_end, timeout=timeout) as host:
            await host.wait_for_context(timeout=5)
            yield host, tap
        tg.cancel_scope.cancel()


class Notified:
    """Counts a provider's change notifications and waits for conditions on them."""

    def __init__(self, provider: ModelContextProvider) -> None:
        self.count = 0
        self._event = anyio.Event()
        self.unsubscribe = provider.subscribe(self._on_change)

    def _on_change(self) -> None:
        self.count += 1
        self._event.set()
        self._event = anyio.Event()

    async def until(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            while not predicate():
                await self._event.wait()


class Hang:
    """An async tool that never finishes on its own and records its cancellation."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = anyio.Event()

    async def __call__(self) -> str:
        self.started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise
        return "unreachable"  # pragma: no cover


# -- first context and calls -----------------------------------------------------------------


async def test_first_context_arrives() -> None:
    frame = AssistantFrameProvider(calculator())
    with anyio.fail_after(5):
        host_end, frame_end = memory_pair()
        async with anyio.create_task_group() as tg:
            tg.start_soon(frame.serve, frame_end)
            async with AssistantFrameHost(host_end, timeout=5) as host:
                assert host.state == "connected"
                context = await host.wait_for_context(timeout=5)
                assert context is host.get_model_context()
                assert context.system == "You can add numbers."
                assert list(context.tools) == ["add"]
                add = context.tools["add"]
                assert add.description == "Add two numbers."
                assert add.parameters["properties"]["a"]["type"] == "integer"
                assert add.parameters["required"] == ["a", "b"]
                assert frame.connection_count == 1
            assert host.state == "closed"  # type: ignore[comparison-overlap]
            tg.cancel_scope.cancel()


async def test_calls_run_with_validated_arguments() -> None:
    registry = ModelContextRegistry()
    seen: list[Any] = []

    @registry.tool
    def add(a: int, b: int) -> int:
        seen.append((a, b))
        return a + b

    @registry.tool
    def norm(p: Point) -> float:
        seen.append(p)
        return float((p.x**2 + p.y**2) ** 0.5)

    with anyio.fail_after(5):
        async with serve_frame(AssistantFrameProvider(registry)) as host:
            assert await host.call_tool("add", {"a": "2", "b": 3}) == 5
            assert seen[-1] == (2, 3)
            assert all(type(v) is int for v in seen[-1])
            assert await host.call_tool("norm", {"p": {"x": 3, "y": 4}}) == 5.0
            assert seen[-1] == Point(x=3, y=4)


async def test_raising_tool_gives_tool_call_error_with_its_message() -> None:
    registry = ModelContextRegistry()

    @registry.tool
    def fail() -> None:
        raise RuntimeError("boom from python")

    with anyio.fail_after(5):
        async with serve_frame(AssistantFrameProvider(registry)) as host:
            with pytest.raises(ToolCallError) as info:
                await host.call_tool("fail", {})
            assert info.value.message == "boom from python"
            assert info.value.tool_name == "fail"
            assert isinstance(info.value.tool_call_id, str)


async def test_unknown_tool() -> None:
    with anyio.fail_after(5):
        async with serve_frame(AssistantFrameProvider(calculator())) as host:
            with pytest.raises(ToolCallError) as info:
                await host.call_tool("nope", {})
            assert info.value.message == 'Tool "nope" not found'


async def test_disabled_tool() -> None:
    registry = ModelContextRegistry()
    calls: list[int] = []

    @registry.tool(disabled=True)
    def off() -> int:
        calls.append(1)
        return 1

    with anyio.fail_after(5):
        async with serve_frame(AssistantFrameProvider(registry)) as host:
            assert host.get_model_context().tools["off"].disabled
            with pytest.raises(ToolCallError) as info:
                await host.call_tool("off", {})
            assert info.value.message == 'Tool "off" is disabled'
            assert calls == []


async def test_bad_arguments() -> None:
    with anyio.fail_after(5):
        async with serve_frame(AssistantFrameProvider(calculator())) as host:
            for bad in ({"a": "x", "b": 1}, {"a": 1}, [1, 2], "text"):
                with pytest.raises(ToolCallError) as info:
                    await host.call_tool("add", bad)
                assert info.value.message.startswith('Invalid arguments for tool "add"')
            assert await host.call_tool("add", {"a": 1, "b": 1}) == 2


async def test_pydantic_model_results_arrive_as_dicts() -> None:
    registry = ModelContextRegistry()

    @registry.tool
    def origin() -> Point:
        return Point(x=0, y=1.5)

    @registry.tool
    def points() -> dict[str, list[Point]]:
        return {"all": [Point(x=1, y=2), Point(x=3, y=4)]}

    with anyio.fail_after(5):
        async with serve_frame(AssistantFrameProvider(registry)) as host:
            assert await host.call_tool("origin") == {"x": 0.0, "y": 1.5}
            assert await host.call_tool("points", {}) == {
                "all": [{"x": 1.0, "y": 2.0}, {"x": 3.0, "y": 4.0}]
            }


# -- live updates ---------------------------------------------------------------------------


async def test_live_updates_reach_host_subscribers_and_parent_registry() -> None:
    registry = ModelContextRegistry()

    def echo(text: str) -> str:
        return text

    with anyio.fail_after(5):
        async with serve_frame(AssistantFrameProvider(registry)) as host:
            assert host.get_model_context().tools == {}
            parent = ModelContextRegistry()
            parent.add_provider(host)
            on_host = Notified(host)
            on_parent = Notified(parent)

            def both(check: Callable[[Any], bool]) -> Callable[[], bool]:
                return lambda: check(host.get_model_context()) and check(parent.get_model_context())

            async def until(check: Callable[[Any], bool]) -> None:
                await on_host.until(both(check))
                await on_parent.until(both(check))

            tool = registry.add_tool("echo", echo, description="Echo")
            await until(lambda c: "echo" in c.tools)
            assert await parent.get_model_context().call_tool("echo", {"text": "hi"}) == "hi"

            tool.update(description="Echo it back")
            await until(lambda c: c.tools["echo"].description == "Echo it back")

            instruction = registry.add_instruction("Be brief.")
            await until(lambda c: c.system == "Be brief.")
            instruction.update("Be verbose.")
            await until(lambda c: c.system == "Be verbose.")
            instruction.remove()
            await until(lambda c: c.system is None)

            tool.remove()
            await until(lambda c: "echo" not in c.tools)
            assert on_host.count >= 6
            assert on_parent.count >= 6


async def test_burst_of_adds_is_coalesced_on_the_wire() -> None:
    registry = ModelContextRegistry()
    frame = AssistantFrameProvider(registry)
    with anyio.fail_after(10):
        host_end, frame_end = memory_pair()
        async with anyio.create_task_group() as tg:
            tg.start_soon(frame.serve, frame_end)
            await host_end.send(REQUEST)
            first = await next_message(host_end)
            assert first == {"type": "model-context-update", "context": {}}

            for i in range(1000):  # synchronously: no checkpoint in between
                registry.add_tool(f"t{i}", parameters=EMPTY_OBJECT)

            updates: list[dict[str, Any]] = []
            while not updates or len(updates[-1]["context"].get("tools", {})) < 1000:
                message = await next_message(host_end)
                assert message["type"] == "model-context-update"
                updates.append(message)
            with anyio.move_on_after(0.2):  # anything that would still follow the burst
                updates.append(await next_message(host_end))
            assert 1 <= len(updates) <= 2, [len(u["context"].get("tools", {})) for u in updates]
            assert list(updates[-1]["context"]["tools"]) == [f"t{i}" for i in range(1000)]
            tg.cancel_scope.cancel()


async def test_unchanged_context_from_the_frame_does_not_notify() -> None:
    registry = calculator()
    instruction = registry.add_instruction("Be brief.")
    with anyio.fail_after(5):
        async with serve_frame(AssistantFrameProvider(registry)) as host:
            notified = Notified(host)
            instruction.update("Be brief.")  # same text: the registry changes, the wire not
            registry.get_model_context()
            assert await host.call_tool("add", {"a": 1, "b": 1}) == 2  # round trip barrier
            assert notified.count == 0
            registry.add_tool("other", parameters=EMPTY_OBJECT)
            await notified.until(lambda: "other" in host.get_model_context().tools)
            assert notified.count == 1


async def test_identical_pushes_do_not_notify_host_subscribers() -> None:
    context = {"system": "S", "tools": {"t": {"parameters": EMPTY_OBJECT}}}
    update = envelope({"type": "model-context-update", "context": context})
    with anyio.fail_after(5):
        host_end, frame_end = memory_pair()
        async with AssistantFrameHost(host_end, timeout=5) as host:
            assert (await frame_end.receive())["message"]["type"] == "model-context-request"
            await frame_end.send(update)
            first = await host.wait_for_context()
            notified = Notified(host)
            await frame_end.send(update)
            await frame_end.send(update)
            await frame_end.send(envelope({"type": "model-context-update", "context": {}}))
            await notified.until(lambda: host.get_model_context().system is None)
            assert notified.count == 1
            assert first.tools["t"].parameters == EMPTY_OBJECT


async def test_one_provider_serves_several_hosts() -> None:
    registry = calculator()
    frame = AssistantFrameProvider(registry)
    with anyio.fail_after(5):
        async with (
            serve_frame(frame, name="one") as one,
            serve_frame(frame, name="two") as two,
            serve_frame(frame, name="three") as three,
        ):
            hosts = [one, two, three]
            assert frame.connection_count == 3
            watchers = [Notified(h) for h in hosts]

            @registry.tool
            def mul(a: int, b: int) -> int:
                return a * b

            def has_mul(host: AssistantFrameHost) -> Callable[[], bool]:
                return lambda: "mul" in host.get_model_context().tools

            for host, watcher in zip(hosts, watchers, strict=True):
                await watcher.until(has_mul(host))
            results = [await h.call_tool("mul", {"a": i, "b": 10}) for i, h in enumerate(hosts)]
            assert results == [0, 10, 20]
        assert frame.connection_count == 0


# -- cancellation and disconnection -----------------------------------------------------------


async def test_host_timeout_cancels_an_async_tool_on_the_frame() -> None:
    registry = ModelContextRegistry()
    hang = Hang()
    registry.add_tool("hang", hang)
    with anyio.fail_after(5):
        async with tapped(AssistantFrameProvider(registry), timeout=5) as (host, tap):
            with pytest.raises(ToolCallTimeout) as info:
                await host.call_tool("hang", {}, timeout=0.2)
            call_id = info.value.tool_call_id
            assert info.value.tool_name == "hang"
            await tap.wait_for(
                lambda: {"type": "tool-cancel", "id": call_id} in tap.sent_to_frame("tool-cancel")
            )
            await hang.cancelled.wait()
            assert host.state == "connected"


async def test_host_default_timeout_applies() -> None:
    registry = ModelContextRegistry()
    hang = Hang()
    registry.add_tool("hang", hang)
    with anyio.fail_after(5):
        async with tapped(AssistantFrameProvider(registry), timeout=0.2) as (host, tap):
            with pytest.raises(ToolCallTimeout):
                await host.call_tool("hang", {})
            await hang.cancelled.wait()
            await tap.wait_for(lambda: bool(tap.sent_to_frame("tool-cancel")))


async def test_host_timeout_flags_a_sync_tool_cancelled() -> None:
    registry = ModelContextRegistry()
    saw_cancel = threading.Event()
    contexts: list[ToolCallContext] = []

    def blocking(context: ToolCallContext) -> str:
        contexts.append(context)
        if context.wait_cancelled(5):
            saw_cancel.set()
        return "finished"

    registry.add_tool("blocking", blocking)
    registry.add_tool("ping", lambda: "pong")
    with anyio.fail_after(5):
        async with tapped(AssistantFrameProvider(registry)) as (host, tap):
            with pytest.raises(ToolCallTimeout) as info:
                await host.call_tool("blocking", {}, timeout=0.2)
            assert await anyio.to_thread.run_sync(saw_cancel.wait, 4)
            assert contexts[0].cancelled
            assert contexts[0].tool_call_id == info.value.tool_call_id
            assert contexts[0].tool_name == "blocking"
            await tap.wait_for(lambda: bool(tap.sent_to_frame("tool-cancel")))
            # the abandoned sync call never sends a result for the cancelled id
            assert await host.call_tool("ping", {}) == "pong"
            assert not tap_results_for(tap, info.value.tool_call_id)


def tap_results_for(tap: Tap, call_id: str | None) -> list[Any]:
    return [m for m in tap.to_host if m["message"].get("id") == call_id]


async def test_caller_cancellation_sends_tool_cancel() -> None:
    registry = ModelContextRegistry()
    hang = Hang()
    registry.add_tool("hang", hang)
    with anyio.fail_after(5):
        async with tapped(AssistantFrameProvider(registry)) as (host, tap):
            with anyio.move_on_after(0.2) as scope:
                await host.call_tool("hang", {})
            assert scope.cancelled_caught
            await tap.wait_for(lambda: bool(tap.sent_to_frame("tool-cancel")))
            (call,) = tap.sent_to_frame("tool-call")
            assert tap.sent_to_frame("tool-cancel") == [{"type": "tool-cancel", "id": call["id"]}]
            await hang.cancelled.wait()
            assert not tap_results_for(tap, call["id"])


async def test_closing_the_host_cancels_pending_calls() -> None:
    registry = ModelContextRegistry()
    hang = Hang()
    registry.add_tool("hang", hang)
    outcome = Outcome()
    with anyio.fail_after(5):
        async with (
            anyio.create_task_group() as tg,
            tapped(AssistantFrameProvider(registry)) as (host, tap),
        ):
            tg.start_soon(outcome.run, host, "hang", {})
            await hang.started.wait()
            await host.aclose()
            await outcome.done.wait()
            assert isinstance(outcome.error, FrameDisconnected)
            assert host.state == "closed"
            await tap.wait_for(lambda: bool(tap.sent_to_frame("tool-cancel")))
            (call,) = tap.sent_to_frame("tool-call")
            assert tap.sent_to_frame("tool-cancel") == [{"type": "tool-cancel", "id": call["id"]}]
            assert tap.sent_to_frame("model-context-unsubscribe")
            await hang.cancelled.wait()
            with pytest.raises(FrameDisconnected):
                await host.call_tool("hang", {})


async def test_frame_transport_closing_fails_pending_calls_at_once() -> None:
    registry = calculator()
    hang = Hang()
    registry.add_tool("hang", hang)
    frame = AssistantFrameProvider(registry)
    outcome = Outcome()
    with anyio.fail_after(5):
        host_end, frame_end = memory_pair()
        async with anyio.create_task_group() as tg:
            tg.start_soon(frame.serve, frame_end)
            async with AssistantFrameHost(host_end, timeout=30) as host:
                await host.wait_for_context()
                notified = Notified(host)
                tg.start_soon(outcome.run, host, "hang", {})
                await hang.started.wait()
                with anyio.fail_after(2):
                    await frame_end.aclose()
                    await outcome.done.wait()
                assert isinstance(outcome.error, FrameDisconnected), outcome.error
                assert host.state == "disconnected"
                assert not host.connected
                context = host.get_model_context()
                assert context.tools == {}
                assert context.system is None
                assert notified.count == 1
                await hang.cancelled.wait()  # serve ended, so the frame's call did too
                with anyio.fail_after(0.5), pytest.raises(FrameDisconnected):
                    await host.call_tool("add", {"a": 1, "b": 2})
                with anyio.fail_after(0.5), pytest.raises(FrameDisconnected):
                    await host.wait_for_context(timeout=30)
            assert host.state == "closed"  # type: ignore[comparison-overlap]
            tg.cancel_scope.cancel()


async def test_frame_that_never_answers_then_closes() -> None:
    with anyio.fail_after(5):
        host_end, frame_end = memory_pair()
        async with AssistantFrameHost(host_end, timeout=30) as host:
            assert (await frame_end.receive())["message"]["type"] == "model-context-request"
            await frame_end.aclose()
            with pytest.raises(FrameDisconnected):
                await host.wait_for_context(timeout=30)
            with pytest.raises(FrameDisconnected):
                await host.call_tool("anything", {})


# -- concurrency and federation ---------------------------------------------------------------


async def test_hundred_concurrent_calls() -> None:
    registry = ModelContextRegistry()
    arrived = 0
    all_in = anyio.Event()

    @registry.tool
    async def add(a: int, b: int) -> int:
        nonlocal arrived
        arrived += 1
        if arrived == 100:
            all_in.set()
        await all_in.wait()  # every call must be running at once for any to finish
        return a + b

    @registry.tool
    def sync_add(a: int, b: int) -> int:
        return a + b

    with anyio.fail_after(10):
        async with serve_frame(AssistantFrameProvider(registry)) as host:
            for round_ in range(3):  # later rounds find the frame warmed up
                results: dict[int, int] = {}
                arrived = 0
                all_in = anyio.Event()

                async def one(i: int, tool: str, results: dict[int, int] = results) -> None:
                    results[i] = await host.call_tool(tool, {"a": i, "b": 1000 * i})

                async with anyio.create_task_group() as tg:
                    for i in range(100):
                        tg.start_soon(one, i, "add" if round_ != 1 else "sync_add")
                assert results == {i: 1001 * i for i in range(100)}


async def test_a_slow_call_does_not_hold_up_later_ones() -> None:
    registry = calculator()
    hang = Hang()
    registry.add_tool("hang", hang)
    outcome = Outcome()
    with anyio.fail_after(5):
        async with serve_frame(AssistantFrameProvider(registry)) as host:
            for i in range(20):  # leave some idle workers behind
                assert await host.call_tool("add", {"a": i, "b": 1}) == i + 1
            async with anyio.create_task_group() as tg:
                tg.start_soon(outcome.run, host, "hang", {})
                await hang.started.wait()
                for i in range(20):
                    assert await host.call_tool("add", {"a": i, "b": 2}) == i + 2
                tg.cancel_scope.cancel()
            await hang.cancelled.wait()


async def test_default_timeouts_expire_each_call_on_time() -> None:
    registry = calculator()
    hang = Hang()
    registry.add_tool("hang", hang)
    first, second = Outcome(), Outcome()
    with anyio.fail_after(5):
        async with (
            anyio.create_task_group() as tg,
            tapped(AssistantFrameProvider(registry), timeout=0.3) as (host, tap),
        ):
            start = anyio.current_time()
            tg.start_soon(first.run, host, "hang", {})
            await hang.started.wait()
            tg.start_soon(second.run, host, "hang", {})
            assert await host.call_tool("add", {"a": 1, "b": 2}) == 3
            await first.done.wait()
            await second.done.wait()
            assert isinstance(first.error, ToolCallTimeout)
            assert isinstance(second.error, ToolCallTimeout)
            assert first.error.timeout == 0.3
            assert 0.25 <= anyio.current_time() - start < 2
            await tap.wait_for(lambda: len(tap.sent_to_frame("tool-cancel")) == 2)
            assert host.connected
            assert await host.call_tool("add", {"a": 2, "b": 2}) == 4


async def test_a_per_call_timeout_overrides_the_host_default() -> None:
    registry = calculator()
    release = anyio.Event()

    @registry.tool
    async def wait_release() -> str:
        await release.wait()
        return "released"

    hang = Hang()
    registry.add_tool("hang", hang)
    outcome = Outcome()
    with anyio.fail_after(5):
        async with (
            anyio.create_task_group() as tg,
            serve_frame(AssistantFrameProvider(registry), timeout=0.1) as host,
        ):
            tg.start_soon(partial(outcome.run, host, "wait_release", {}, timeout=3))
            await anyio.sleep(0.3)  # well past the host's default timeout
            assert not outcome.done.is_set()
            release.set()
            await outcome.done.wait()
            assert outcome.error is None
            assert outcome.result == "released"
            with pytest.raises(ToolCallTimeout) as info:
                await host.call_tool("hang", {}, timeout=0.05)
            assert info.value.timeout == 0.05


async def test_parent_registry_routes_namespaced_calls_to_the_frame() -> None:
    registry = calculator()
    with anyio.fail_after(5):
        async with tapped(AssistantFrameProvider(registry)) as (host, tap):
            parent = ModelContextRegistry()
            parent.add_instruction("Parent.")
            parent.add_provider(host, namespace="calc")
            context = parent.get_model_context()
            assert set(context.tools) == {"calc_add"}
            assert context.system == "Parent.\n\nYou can add numbers."
            assert (
                context.tools["calc_add"].parameters
                == host.get_model_context().tools["add"].parameters
            )
            assert await context.call_tool("calc_add", {"a": 40, "b": 2}) == 42
            (call,) = tap.sent_to_frame("tool-call")
            assert call["toolName"] == "add"
            assert call["args"] == {"a": 40, "b": 2}
            with pytest.raises(ToolCallError) as info:
                await context.call_tool("calc_add", {"a": "x"})
            assert 'Invalid arguments for tool "add"' in info.value.message


async def test_nested_federation() -> None:
    registry_b = ModelContextRegistry()
    registry_b.add_instruction("B.")

    @registry_b.tool
    def mul(a: int, b: int) -> int:
        return a * b

    @registry_b.tool
    def explode() -> None:
        raise ValueError("deep failure")

    registry_a = ModelContextRegistry()
    registry_a.add_instruction("A.")

    @registry_a.tool
    def hello(name: str) -> str:
        return f"hello {name}"

    with anyio.fail_after(5):
        async with serve_frame(AssistantFrameProvider(registry_b), name="b") as host_b:
            registry_a.add_provider(host_b, namespace="b")
            async with serve_frame(AssistantFrameProvider(registry_a), name="a") as host_a:
                context = host_a.get_model_context()
                assert set(context.tools) == {"hello", "b_mul", "b_explode"}
                assert context.system == "A.\n\nB."
                assert await host_a.call_tool("hello", {"name": "x"}) == "hello x"
                assert await host_a.call_tool("b_mul", {"a": 6, "b": 7}) == 42
                with pytest.raises(ToolCallError) as info:
                    await host_a.call_tool("b_explode", {})
                assert info.value.message == "deep failure"

                notified = Notified(host_a)
                registry_b.add_tool("neg", lambda args: -args["x"], parameters=EMPTY_OBJECT)
                await notified.until(lambda: "b_neg" in host_a.get_model_context().tools)
                assert await host_a.call_tool("b_neg", {"x": 5}) == -5
