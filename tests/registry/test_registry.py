"""ModelContextRegistry: handles, decorator, caching, subscriptions, conflicts, nesting."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from assistant_frames import (
    ModelContext,
    ModelContextProvider,
    ModelContextRegistry,
    Tool,
    ToolConflictError,
    ToolNotFoundError,
)

pytestmark = pytest.mark.anyio

REGISTRY_LOGGER = "assistant_frames.registry"


def _const(value: Any) -> Callable[[], Any]:
    def execute() -> Any:
        return value

    return execute


def _counter(registry: ModelContextRegistry) -> list[int]:
    calls: list[int] = []
    registry.subscribe(lambda: calls.append(1))
    return calls


class StaticProvider:
    """A minimal hand-written ModelContextProvider (not a registry)."""

    def __init__(self, context: ModelContext) -> None:
        self.context = context
        self.callbacks: list[Callable[[], None]] = []

    def get_model_context(self) -> ModelContext:
        return self.context

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        self.callbacks.append(callback)
        return lambda: self.callbacks.remove(callback)

    def set(self, context: ModelContext) -> None:
        self.context = context
        for callback in list(self.callbacks):
            callback()


def _registry_with_tool(name: str, value: Any, **kwargs: Any) -> ModelContextRegistry:
    registry = ModelContextRegistry(**kwargs)
    registry.add_tool(name, _const(value))
    return registry


# -- basics ----------------------------------------------------------------------------------


def test_empty_registry_context() -> None:
    ctx = ModelContextRegistry().get_model_context()
    assert ctx.system is None
    assert dict(ctx.tools) == {}
    assert ctx.conflicts == ()


def test_registry_is_a_model_context_provider() -> None:
    assert isinstance(ModelContextRegistry(), ModelContextProvider)


async def test_add_tool_with_tool_object() -> None:
    registry = ModelContextRegistry()
    tool = Tool("add", lambda a, b: a + b, description="Add")
    handle = registry.add_tool(tool)
    ctx = registry.get_model_context()
    assert ctx.tools["add"] is tool
    assert handle.tool is tool
    assert await ctx.call_tool("add", {"a": 1, "b": 2}) == 3


async def test_add_tool_with_name_execute_and_options() -> None:
    registry = ModelContextRegistry()

    def mul(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    registry.add_tool("times", mul, description="Times", disabled=False, type="backend")
    tool = registry.get_model_context().tools["times"]
    assert tool.name == "times"
    assert tool.description == "Times"
    assert tool.type == "backend"
    assert tool.parameters["properties"]["a"]["type"] == "integer"
    assert await registry.get_model_context().call_tool("times", {"a": 6, "b": 7}) == 42


def test_add_tool_object_with_extra_options_refused() -> None:
    registry = ModelContextRegistry()
    with pytest.raises(TypeError):
        registry.add_tool(Tool("t"), description="again")
    assert dict(registry.get_model_context().tools) == {}


async def test_tool_handle_update_fields_and_replace() -> None:
    registry = ModelContextRegistry()
    handle = registry.add_tool("t", _const(1), description="one")
    handle.update(description="uno")
    ctx = registry.get_model_context()
    assert ctx.tools["t"].description == "uno"
    assert await ctx.call_tool("t", {}) == 1

    handle.update(Tool("t", _const(2), description="two"))
    ctx = registry.get_model_context()
    assert ctx.tools["t"].description == "two"
    assert await ctx.call_tool("t", {}) == 2

    handle.update(name="renamed")
    ctx = registry.get_model_context()
    assert list(ctx.tools) == ["renamed"]
    assert await ctx.call_tool("renamed", {}) == 2
    # The old name is free again.
    registry.add_tool("t", _const(3))
    assert sorted(registry.get_model_context().tools) == ["renamed", "t"]


def test_tool_handle_remove_is_idempotent_and_update_after_remove_is_noop() -> None:
    registry = ModelContextRegistry()
    handle = registry.add_tool("t", _const(1))
    calls = _counter(registry)
    handle.remove()
    assert "t" not in registry.get_model_context().tools
    assert handle.tool is None
    assert calls == [1]
    handle.remove()
    assert calls == [1]
    handle.update(description="ghost")
    handle.update(Tool("t"))
    assert "t" not in registry.get_model_context().tools
    assert calls == [1]
    # The name can be reused after removal.
    registry.add_tool("t", _const(2))
    assert "t" in registry.get_model_context().tools


def test_instructions_join_update_and_remove() -> None:
    registry = ModelContextRegistry()
    first = registry.add_instruction("First.")
    second = registry.add_instruction("Second.")
    assert registry.get_model_context().system == "First.\n\nSecond."
    first.update("One.")
    assert registry.get_model_context().system == "One.\n\nSecond."
    first.remove()
    assert registry.get_model_context().system == "Second."
    calls = _counter(registry)
    first.remove()
    first.update("ghost")
    assert calls == []
    assert registry.get_model_context().system == "Second."
    second.remove()
    assert registry.get_model_context().system is None


def test_empty_instruction_is_skipped() -> None:
    registry = ModelContextRegistry()
    registry.add_instruction("")
    registry.add_instruction("Text.")
    assert registry.get_model_context().system == "Text."


def test_instruction_must_be_string() -> None:
    registry = ModelContextRegistry()
    with pytest.raises(TypeError):
        registry.add_instruction(None)  # type: ignore[arg-type]
    handle = registry.add_instruction("ok")
    with pytest.raises(TypeError):
        handle.update(3)  # type: ignore[arg-type]
    assert registry.get_model_context().system == "ok"


def test_provider_handle_remove_idempotent_and_update_after_remove_noop() -> None:
    registry = ModelContextRegistry()
    child = _registry_with_tool("c", 1)
    handle = registry.add_provider(child)
    assert "c" in registry.get_model_context().tools
    calls = _counter(registry)
    handle.remove()
    assert "c" not in registry.get_model_context().tools
    assert calls == [1]
    handle.remove()
    handle.update(priority=3, namespace="x")
    assert calls == [1]
    assert dict(registry.get_model_context().tools) == {}
    # It stopped listening to the child.
    child.add_tool("d", _const(2))
    assert calls == [1]
    assert dict(registry.get_model_context().tools) == {}


def test_add_provider_refuses_non_providers_and_self() -> None:
    registry = ModelContextRegistry()
    with pytest.raises(TypeError):
        registry.add_provider(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="itself"):
        registry.add_provider(registry)


def test_conflict_policy_error_refused_in_constructor() -> None:
    with pytest.raises(ValueError, match="strict"):
        ModelContextRegistry(conflict="error")


# -- decorator -------------------------------------------------------------------------------


async def test_tool_decorator_bare_returns_function_unchanged() -> None:
    registry = ModelContextRegistry()

    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: First.
            b: Second.
        """
        return a + b

    decorated = registry.tool(add)
    assert decorated is add
    assert add(2, 3) == 5
    tool = registry.get_model_context().tools["add"]
    assert tool.description == "Add two numbers."
    assert tool.parameters["properties"]["a"]["description"] == "First."
    assert await registry.get_model_context().call_tool("add", {"a": 2, "b": 3}) == 5


async def test_tool_decorator_with_options() -> None:
    registry = ModelContextRegistry()

    @registry.tool(name="renamed", description="Explicit", type="frontend")
    async def original(x: str) -> str:
        """Docstring."""
        return x * 2

    assert original.__name__ == "original"
    assert await original("ab") == "abab"
    ctx = registry.get_model_context()
    assert "original" not in ctx.tools
    tool = ctx.tools["renamed"]
    assert tool.description == "Explicit"
    assert tool.type == "frontend"
    assert await ctx.call_tool("renamed", {"x": "ab"}) == "abab"

    @registry.tool(disabled=True)
    def off() -> None:
        return None

    assert registry.get_model_context().tools["off"].disabled is True
    assert list(registry.get_model_context().enabled_tools()) == ["renamed"]


def test_tool_decorator_duplicate_name_raises() -> None:
    registry = ModelContextRegistry()

    @registry.tool
    def same() -> int:
        return 1

    with pytest.raises(ToolConflictError):

        @registry.tool(name="same")
        def other() -> int:
            return 2


# -- caching and subscriptions ---------------------------------------------------------------


def test_context_cached_until_change() -> None:
    registry = ModelContextRegistry()
    registry.add_tool("a", _const(1))
    first = registry.get_model_context()
    assert registry.get_model_context() is first
    handle = registry.add_instruction("Hi.")
    second = registry.get_model_context()
    assert second is not first
    assert second.system == "Hi."
    assert registry.get_model_context() is second
    handle.update("Hello.")
    third = registry.get_model_context()
    assert third is not second
    assert third.system == "Hello."
    # The old snapshot is unchanged (contexts are immutable).
    assert second.system == "Hi."
    assert first.system is None


def test_cache_with_providers_rebuilt_when_provider_changes() -> None:
    registry = ModelContextRegistry()
    child = _registry_with_tool("c", 1)
    registry.add_provider(child)
    first = registry.get_model_context()
    assert registry.get_model_context() is first
    child.add_tool("d", _const(2))
    second = registry.get_model_context()
    assert second is not first
    assert sorted(second.tools) == ["c", "d"]
    assert sorted(first.tools) == ["c"]


def test_subscribers_called_on_every_change_and_unsubscribe() -> None:
    registry = ModelContextRegistry()
    a: list[str] = []
    b: list[str] = []
    unsubscribe_a = registry.subscribe(lambda: a.append("a"))
    registry.subscribe(lambda: b.append("b"))

    tool = registry.add_tool("t", _const(1))  # 1
    instruction = registry.add_instruction("x")  # 2
    tool.update(description="d")  # 3
    instruction.update("y")  # 4
    provider = registry.add_provider(ModelContextRegistry())  # 5
    provider.update(priority=2)  # 6
    assert len(a) == 6
    assert len(b) == 6

    unsubscribe_a()
    unsubscribe_a()  # idempotent
    tool.remove()
    instruction.remove()
    provider.remove()
    assert len(a) == 6
    assert len(b) == 9


def test_subscriber_sees_new_context_when_called() -> None:
    registry = ModelContextRegistry()
    seen: list[list[str]] = []
    registry.subscribe(lambda: seen.append(sorted(registry.get_model_context().tools)))
    registry.add_tool("a", _const(1))
    registry.add_tool("b", _const(2))
    assert seen == [["a"], ["a", "b"]]


def test_raising_subscriber_is_logged_and_others_still_called(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ModelContextRegistry()
    calls: list[str] = []

    def bad() -> None:
        calls.append("bad")
        raise RuntimeError("subscriber exploded")

    registry.subscribe(lambda: calls.append("before"))
    registry.subscribe(bad)
    registry.subscribe(lambda: calls.append("after"))
    with caplog.at_level(logging.ERROR, logger=REGISTRY_LOGGER):
        registry.add_instruction("x")
    assert calls == ["before", "bad", "after"]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].exc_info is not None
    assert "subscriber exploded" in str(errors[0].exc_info[1])
    # The change itself went through, and the raising subscriber stays subscribed.
    assert registry.get_model_context().system == "x"
    registry.add_instruction("y")
    assert calls.count("bad") == 2


def test_subscribe_needs_callable() -> None:
    with pytest.raises(TypeError):
        ModelContextRegistry().subscribe(42)  # type: ignore[arg-type]


# -- own-tool conflicts ----------------------------------------------------------------------


def test_duplicate_own_tool_name_raises_and_leaves_registry_unchanged() -> None:
    registry = ModelContextRegistry()
    registry.add_tool("t", _const(1), description="original")
    before = registry.get_model_context()
    calls = _counter(registry)
    with pytest.raises(ToolConflictError) as info:
        registry.add_tool("t", _const(2))
    assert info.value.tool_name == "t"
    assert isinstance(info.value, ValueError)
    assert calls == []
    after = registry.get_model_context()
    assert after is before
    assert after.tools["t"].description == "original"
    with pytest.raises(ToolConflictError):
        registry.add_tool(Tool("t"))
    assert registry.get_model_context().tools["t"].description == "original"


async def test_rename_via_update_to_existing_name_raises_and_rolls_back() -> None:
    registry = ModelContextRegistry()
    registry.add_tool("a", _const("A"))
    handle_b = registry.add_tool("b", _const("B"))
    calls = _counter(registry)
    with pytest.raises(ToolConflictError):
        handle_b.update(name="a")
    with pytest.raises(ToolConflictError):
        handle_b.update(Tool("a", _const("other")))
    assert calls == []
    ctx = registry.get_model_context()
    assert sorted(ctx.tools) == ["a", "b"]
    assert await ctx.call_tool("a", {}) == "A"
    assert await ctx.call_tool("b", {}) == "B"
    assert handle_b.tool is not None
    assert handle_b.tool.name == "b"
    # Handle still works afterwards.
    handle_b.update(name="c")
    assert sorted(registry.get_model_context().tools) == ["a", "c"]


def test_update_keeping_same_name_is_not_a_conflict() -> None:
    registry = ModelContextRegistry()
    handle = registry.add_tool("t", _const(1))
    handle.update(Tool("t", _const(2), description="v2"))
    handle.update(name="t")
    assert registry.get_model_context().tools["t"].description == "v2"


# -- nesting, namespaces, priorities ---------------------------------------------------------


async def test_nested_registry_changes_propagate() -> None:
    parent = ModelContextRegistry()
    child = ModelContextRegistry()
    grandchild = ModelContextRegistry()
    child.add_provider(grandchild)
    parent.add_provider(child)
    parent_calls = _counter(parent)

    grandchild.add_tool("deep", _const("deep"))
    assert parent_calls == [1]
    ctx = parent.get_model_context()
    assert "deep" in ctx.tools
    assert await ctx.call_tool("deep", {}) == "deep"

    handle = child.add_instruction("Child says hi.")
    assert parent_calls == [1, 1]
    assert parent.get_model_context().system == "Child says hi."
    handle.remove()
    assert parent_calls == [1, 1, 1]
    assert parent.get_model_context().system is None


def test_parent_own_instructions_come_first() -> None:
    parent = ModelContextRegistry()
    child = ModelContextRegistry()
    child.add_instruction("Child.")
    parent.add_provider(child)
    parent.add_instruction("Parent.")
    assert parent.get_model_context().system == "Parent.\n\nChild."


def test_hand_written_provider_changes_propagate() -> None:
    registry = ModelContextRegistry()
    provider = StaticProvider(ModelContext(system="v1"))
    handle = registry.add_provider(provider)
    calls = _counter(registry)
    assert registry.get_model_context().system == "v1"
    provider.set(ModelContext(system="v2"))
    assert calls == [1]
    assert registry.get_model_context().system == "v2"
    handle.remove()
    assert provider.callbacks == []


async def test_namespace_on_add_provider_and_update() -> None:
    registry = ModelContextRegistry()
    calc = _registry_with_tool("add", "added")
    handle = registry.add_provider(calc, namespace="calc")
    ctx = registry.get_model_context()
    assert list(ctx.tools) == ["calc_add"]
    assert ctx.tools["calc_add"].name == "calc_add"
    assert await ctx.call_tool("calc_add", {}) == "added"
    with pytest.raises(ToolNotFoundError):
        await ctx.call_tool("add", {})
    # The child still sees its own name.
    assert list(calc.get_model_context().tools) == ["add"]

    handle.update(namespace="math")
    assert list(registry.get_model_context().tools) == ["math_add"]
    handle.update(namespace=None)
    assert list(registry.get_model_context().tools) == ["add"]


def test_namespace_follows_provider_changes() -> None:
    registry = ModelContextRegistry()
    calc = ModelContextRegistry()
    registry.add_provider(calc, namespace="calc")
    calc.add_tool("sub", _const(0))
    assert list(registry.get_model_context().tools) == ["calc_sub"]


async def test_priority_on_add_provider_decides_winner() -> None:
    registry = ModelContextRegistry()
    low = _registry_with_tool("t", "low")
    high = _registry_with_tool("t", "high")
    registry.add_provider(low, priority=1)
    high_handle = registry.add_provider(high, priority=5)
    ctx = registry.get_model_context()
    assert ctx.conflicts == ()
    assert await ctx.call_tool("t", {}) == "high"

    high_handle.update(priority=0)
    ctx = registry.get_model_context()
    assert ctx.conflicts == ()
    assert await ctx.call_tool("t", {}) == "low"


async def test_provider_own_priority_used_when_not_overridden() -> None:
    registry = ModelContextRegistry()
    registry.add_provider(_registry_with_tool("t", "zero"))
    registry.add_provider(_registry_with_tool("t", "ten", priority=10))
    ctx = registry.get_model_context()
    assert ctx.conflicts == ()
    assert await ctx.call_tool("t", {}) == "ten"


async def test_registry_priority_survives_having_providers() -> None:
    # A registry's own priority is the priority of the context it offers, whether or not
    # it has providers of its own; otherwise nesting it changes how its parent ranks it.
    child = ModelContextRegistry(priority=5)
    child.add_tool("t", _const("child"))
    assert child.get_model_context().priority == 5
    child.add_provider(ModelContextRegistry())
    assert child.get_model_context().priority == 5

    parent = ModelContextRegistry()
    parent.add_tool("t", _const("parent"))
    parent.add_provider(child)
    ctx = parent.get_model_context()
    assert ctx.conflicts == ()
    assert await ctx.call_tool("t", {}) == "child"


async def test_own_tools_vs_provider_tools_priority() -> None:
    registry = ModelContextRegistry(priority=1)
    registry.add_tool("t", _const("own"))
    registry.add_provider(_registry_with_tool("t", "provider"), priority=0)
    ctx = registry.get_model_context()
    assert ctx.conflicts == ()
    assert await ctx.call_tool("t", {}) == "own"


# -- conflicts between providers -------------------------------------------------------------


async def test_provider_conflict_reported_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ModelContextRegistry()
    first = _registry_with_tool("t", "first")
    second = _registry_with_tool("t", "second")
    with caplog.at_level(logging.WARNING, logger=REGISTRY_LOGGER):
        registry.add_provider(first)
        registry.add_provider(second)
        ctx = registry.get_model_context()
        assert len(ctx.conflicts) == 1
        conflict = ctx.conflicts[0]
        assert conflict.name == "t"
        assert conflict.priority == 0
        assert conflict.kept_source is first
        assert conflict.dropped_source is second
        assert conflict.kept is first.get_model_context().tools["t"]
        assert conflict.dropped is second.get_model_context().tools["t"]
        assert await ctx.call_tool("t", {}) == "first"

        # Rebuilding after unrelated changes does not log the same conflict again.
        registry.add_instruction("x")
        assert len(registry.get_model_context().conflicts) == 1
        registry.get_model_context()
    warnings = [
        r for r in caplog.records if r.levelno == logging.WARNING and r.name == REGISTRY_LOGGER
    ]
    assert len(warnings) == 1
    assert "'t'" in warnings[0].getMessage()


async def test_provider_conflict_policy_last() -> None:
    registry = ModelContextRegistry(conflict="last")
    first = _registry_with_tool("t", "first")
    second = _registry_with_tool("t", "second")
    registry.add_provider(first)
    registry.add_provider(second)
    ctx = registry.get_model_context()
    assert await ctx.call_tool("t", {}) == "second"
    assert len(ctx.conflicts) == 1
    assert ctx.conflicts[0].kept_source is second
    assert ctx.conflicts[0].dropped_source is first


async def test_own_tool_vs_provider_same_priority_own_wins_by_default() -> None:
    registry = ModelContextRegistry()
    provider = _registry_with_tool("t", "provider")
    registry.add_provider(provider)
    registry.add_tool("t", _const("own"))
    ctx = registry.get_model_context()
    assert await ctx.call_tool("t", {}) == "own"
    assert len(ctx.conflicts) == 1
    assert ctx.conflicts[0].kept_source is registry
    assert ctx.conflicts[0].dropped_source is provider


def test_strict_add_provider_raises_and_rolls_back() -> None:
    registry = ModelContextRegistry(strict=True)
    registry.add_tool("t", _const("own"))
    calls = _counter(registry)
    before = registry.get_model_context()
    clashing = _registry_with_tool("t", "other")
    with pytest.raises(ToolConflictError) as info:
        registry.add_provider(clashing)
    assert info.value.tool_name == "t"
    assert calls == []
    assert registry.get_model_context() is before
    # Rolled back: it does not listen to the refused provider.
    clashing.add_tool("u", _const(1))
    assert calls == []
    assert "u" not in registry.get_model_context().tools
    # At another priority, or under a namespace, there is no clash.
    registry.add_provider(clashing, priority=-1)
    registry.add_provider(_registry_with_tool("t", "ns"), namespace="ns")
    assert sorted(registry.get_model_context().tools) == ["ns_t", "t", "u"]


def test_strict_provider_update_raises_and_rolls_back() -> None:
    registry = ModelContextRegistry(strict=True)
    registry.add_tool("t", _const("own"))
    handle = registry.add_provider(_registry_with_tool("t", "other"), priority=1)
    ctx = registry.get_model_context()
    with pytest.raises(ToolConflictError):
        handle.update(priority=0)
    with pytest.raises(ToolConflictError):
        handle.update(priority=0, namespace=None)
    assert registry.get_model_context() is ctx
    handle.update(namespace="o", priority=0)
    assert sorted(registry.get_model_context().tools) == ["o_t", "t"]


def test_strict_add_tool_clashing_with_provider_rolls_back() -> None:
    registry = ModelContextRegistry(strict=True)
    registry.add_provider(_registry_with_tool("t", "provider"))
    with pytest.raises(ToolConflictError):
        registry.add_tool("t", _const("own"))
    ctx = registry.get_model_context()
    assert list(ctx.tools) == ["t"]
    assert ctx.conflicts == ()
    # The name is not left reserved by the failed add.
    handle = registry.add_tool("u", _const(1))
    with pytest.raises(ToolConflictError):
        handle.update(name="t")
    assert sorted(registry.get_model_context().tools) == ["t", "u"]
    assert handle.tool is not None
    assert handle.tool.name == "u"


# -- calling through the merged context ------------------------------------------------------


async def test_call_tool_on_merged_context() -> None:
    parent = ModelContextRegistry()

    @parent.tool
    def double(n: int) -> int:
        return n * 2

    child = ModelContextRegistry()

    @child.tool
    async def triple(n: int) -> int:
        return n * 3

    parent.add_provider(child, namespace="child")
    ctx = parent.get_model_context()
    assert await ctx.call_tool("double", {"n": 4}) == 8
    assert await ctx.call_tool("child_triple", {"n": 4}) == 12


async def test_call_unknown_tool_raises_not_found() -> None:
    registry = _registry_with_tool("t", 1)
    with pytest.raises(ToolNotFoundError, match='Tool "nope" not found') as info:
        await registry.get_model_context().call_tool("nope", {}, tool_call_id="call-5")
    assert info.value.tool_name == "nope"
    assert info.value.tool_call_id == "call-5"
