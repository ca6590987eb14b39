"""``wait_for_tools``: a registry, a host over a real transport and a federation each
wait, woken by their own change notices, until tools are there; a wait that times out
says what is missing and leaves no subscription behind."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ContextTimeout,
    Federation,
    ModelContextRegistry,
    memory_pair,
)

pytestmark = pytest.mark.anyio
WAIT = 10


def ping() -> str:
    """Answer."""
    return "pong"


async def test_a_registry_waits_until_a_later_tool_is_added() -> None:
    registry = ModelContextRegistry()
    registry.add_tool("a", ping)

    async def add_later() -> None:
        await anyio.sleep(0.01)
        registry.add_tool("b", ping)
        registry.add_tool("c", ping)

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(add_later)
            context = await registry.wait_for_tools("a", "c", timeout=5)
    assert {"a", "c"} <= set(context.tools)
    assert not registry._subscribers._callbacks  # unsubscribed once done


async def test_a_predicate_is_waited_for_and_what_is_there_returns_at_once() -> None:
    registry = ModelContextRegistry()
    registry.add_tool("a", ping)
    assert set((await registry.wait_for_tools("a")).tools) == {"a"}

    async def add_more() -> None:
        for index in range(5):
            await anyio.lowlevel.checkpoint()
            registry.add_tool(f"t{index}", ping)

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(add_more)
            context = await registry.wait_for_tools(lambda c: len(c.tools) >= 4, "t2")
    assert len(context.tools) >= 4
    assert "t2" in context.tools


async def test_a_wait_that_times_out_says_what_is_missing() -> None:
    registry = ModelContextRegistry()
    registry.add_tool("here", ping)
    with pytest.raises(ContextTimeout) as caught:
        await registry.wait_for_tools("here", "absent", lambda c: False, timeout=0.05)
    message = str(caught.value)
    assert "['absent']" in message
    assert "the condition asked for" in message
    assert "it has 1 tools: here" in message
    assert isinstance(caught.value, TimeoutError)
    assert not registry._subscribers._callbacks


async def test_anything_but_names_and_predicates_is_refused() -> None:
    registry = ModelContextRegistry()
    with pytest.raises(TypeError, match="tool names and predicates"):
        await registry.wait_for_tools("a", 3)  # type: ignore[arg-type]


async def test_a_host_waits_for_a_frame_s_tool_over_a_transport() -> None:
    registry = ModelContextRegistry()
    host_end, frame_end = memory_pair()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(AssistantFrameProvider(registry).serve, frame_end)
            async with AssistantFrameHost(host_end, name="calc") as host:
                await host.wait_for_context()
                registry.add_tool("late", ping)
                context = await host.wait_for_tools("late")
                assert await context.call_tool("late") == "pong"
                with pytest.raises(ContextTimeout, match="of calc still lacked") as caught:
                    await host.wait_for_tools("never", timeout=0.05)
                assert caught.value.frame == "calc"
            tasks.cancel_scope.cancel()


async def test_a_federation_waits_for_a_member_s_namespaced_tool() -> None:
    calc = ModelContextRegistry()
    calc.add_tool("ping", ping)
    with anyio.fail_after(WAIT):
        async with Federation() as federation:
            async with anyio.create_task_group() as tasks:

                async def join() -> None:
                    await anyio.sleep(0.01)
                    await federation.add("calc", calc)

                tasks.start_soon(join)
                context = await federation.wait_for_tools("calc_ping")
            assert await context.call_tool("calc_ping") == "pong"
