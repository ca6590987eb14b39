"""merge_model_contexts and namespaced: assistant-ui's merge rules plus federation options."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from assistant_frames import (
    ModelContext,
    ModelContextRegistry,
    Tool,
    ToolCallContext,
    ToolConflictError,
    ToolNotFoundError,
    merge_model_contexts,
)
from assistant_frames.registry import ToolConflict, namespaced

pytestmark = pytest.mark.anyio


def _tool(name: str, value: Any = None) -> Tool:
    def execute() -> Any:
        return value

    return Tool(name, execute, description=f"{name}={value!r}")


def _ctx(priority: int = 0, system: str | None = None, *tools: Tool, **kwargs: Any) -> ModelContext:
    return ModelContext(
        system=system, tools={t.name: t for t in tools}, priority=priority, **kwargs
    )


# -- ordering and systems --------------------------------------------------------------------


def test_merge_of_nothing_is_empty() -> None:
    merged = merge_model_contexts()
    assert merged.system is None
    assert dict(merged.tools) == {}
    assert merged.conflicts == ()
    assert merged.call_settings is None
    assert merged.config is None


def test_systems_joined_by_priority_highest_first_and_stable() -> None:
    merged = merge_model_contexts(
        _ctx(0, "zero-a"),
        _ctx(5, "five-a"),
        _ctx(-1, "minus"),
        _ctx(0, "zero-b"),
        _ctx(5, "five-b"),
    )
    assert merged.system == "five-a\n\nfive-b\n\nzero-a\n\nzero-b\n\nminus"


def test_empty_and_none_systems_skipped() -> None:
    merged = merge_model_contexts(_ctx(0, ""), _ctx(0, "A"), _ctx(1, None), _ctx(0, "B"))
    assert merged.system == "A\n\nB"
    assert merge_model_contexts(_ctx(0, ""), _ctx(0, None)).system is None


def test_tool_order_follows_priority() -> None:
    merged = merge_model_contexts(
        _ctx(0, None, _tool("low")), _ctx(3, None, _tool("high")), _ctx(1, None, _tool("mid"))
    )
    assert list(merged.tools) == ["high", "mid", "low"]


def test_inputs_not_mutated() -> None:
    a = _ctx(0, "a", _tool("x", 1))
    b = _ctx(0, "b", _tool("x", 2))
    merge_model_contexts(a, b)
    assert list(a.tools) == ["x"]
    assert a.tools["x"].description == "x=1"
    assert b.tools["x"].description == "x=2"


# -- tool-name resolution --------------------------------------------------------------------


async def test_higher_priority_tool_wins_without_conflict() -> None:
    low = _tool("t", "low")
    high = _tool("t", "high")
    for order in ((low, high), (high, low)):
        contexts = [_ctx(0 if tool is low else 7, None, tool) for tool in order]
        merged = merge_model_contexts(*contexts)
        assert merged.tools["t"] is high
        assert merged.conflicts == ()
        assert await merged.call_tool("t", {}) == "high"


def test_higher_priority_wins_even_with_error_policy() -> None:
    low = _tool("t", "low")
    high = _tool("t", "high")
    merged = merge_model_contexts(_ctx(0, None, low), _ctx(1, None, high), conflict="error")
    assert merged.tools["t"] is high


def test_same_priority_policy_first_records_conflict() -> None:
    a_ctx = _ctx(2, None, _tool("t", "a"))
    b_ctx = _ctx(2, None, _tool("t", "b"))
    merged = merge_model_contexts(a_ctx, b_ctx)  # "first" is the default
    assert merged.tools["t"] is a_ctx.tools["t"]
    assert merged.conflicts == (
        ToolConflict(
            name="t",
            priority=2,
            kept=a_ctx.tools["t"],
            dropped=b_ctx.tools["t"],
            kept_source=a_ctx,
            dropped_source=b_ctx,
        ),
    )


def test_same_priority_policy_last_records_conflict() -> None:
    a_ctx = _ctx(0, None, _tool("t", "a"))
    b_ctx = _ctx(0, None, _tool("t", "b"))
    merged = merge_model_contexts(a_ctx, b_ctx, conflict="last")
    assert merged.tools["t"] is b_ctx.tools["t"]
    (conflict,) = merged.conflicts
    assert conflict.name == "t"
    assert conflict.priority == 0
    assert conflict.kept is b_ctx.tools["t"]
    assert conflict.dropped is a_ctx.tools["t"]
    assert conflict.kept_source is b_ctx
    assert conflict.dropped_source is a_ctx


def test_three_way_conflict_records_each_loser() -> None:
    contexts = [_ctx(0, None, _tool("t", i)) for i in range(3)]
    first = merge_model_contexts(*contexts, conflict="first")
    assert first.tools["t"] is contexts[0].tools["t"]
    assert [c.dropped for c in first.conflicts] == [contexts[1].tools["t"], contexts[2].tools["t"]]
    last = merge_model_contexts(*contexts, conflict="last")
    assert last.tools["t"] is contexts[2].tools["t"]
    assert len(last.conflicts) == 2
    assert last.conflicts[-1].kept is contexts[2].tools["t"]


def test_same_priority_policy_error_raises() -> None:
    with pytest.raises(ToolConflictError) as info:
        merge_model_contexts(
            _ctx(0, None, _tool("t", "a")), _ctx(0, None, _tool("t", "b")), conflict="error"
        )
    assert info.value.tool_name == "t"
    assert "'t'" in str(info.value)


def test_unknown_policy_refused() -> None:
    with pytest.raises(ValueError, match="conflict"):
        merge_model_contexts(_ctx(0), conflict="middle")  # type: ignore[arg-type]


def test_same_tool_object_twice_is_not_a_conflict() -> None:
    shared = _tool("t", "shared")
    merged = merge_model_contexts(_ctx(0, None, shared), _ctx(0, None, shared), conflict="error")
    assert merged.tools["t"] is shared
    assert merged.conflicts == ()


def test_conflict_only_for_clashing_names() -> None:
    merged = merge_model_contexts(
        _ctx(0, None, _tool("a"), _tool("shared", 1)),
        _ctx(0, None, _tool("b"), _tool("shared", 2)),
    )
    assert sorted(merged.tools) == ["a", "b", "shared"]
    assert [c.name for c in merged.conflicts] == ["shared"]


# -- call settings and config ----------------------------------------------------------------


def test_call_settings_and_config_merged_key_by_key() -> None:
    low = _ctx(
        0,
        call_settings={"temperature": 0.1, "max_tokens": 100},
        config={"model": "small", "region": "eu"},
    )
    high = _ctx(
        5,
        call_settings={"temperature": 0.9},
        config={"model": "large"},
    )
    for order in ((low, high), (high, low)):
        merged = merge_model_contexts(*order)
        assert merged.call_settings == {"temperature": 0.9, "max_tokens": 100}
        assert merged.config == {"model": "large", "region": "eu"}


def test_call_settings_same_priority_first_listed_wins() -> None:
    merged = merge_model_contexts(
        _ctx(0, call_settings={"temperature": 0.2}), _ctx(0, call_settings={"temperature": 0.8})
    )
    assert merged.call_settings == {"temperature": 0.2}


def test_call_settings_none_when_nobody_sets_them() -> None:
    merged = merge_model_contexts(_ctx(0, "a"), _ctx(1, "b"))
    assert merged.call_settings is None
    assert merged.config is None


# -- sources: providers, contexts, iterables -------------------------------------------------


async def test_accepts_providers_contexts_and_iterables() -> None:
    registry = ModelContextRegistry(priority=1)
    registry.add_instruction("From the registry.")
    registry.add_tool("r", lambda: "r")
    plain = _ctx(0, "Plain.", _tool("p", "p"))
    listed = [_ctx(2, "Listed.", _tool("l", "l")), _ctx(-1, "Last.")]

    merged = merge_model_contexts(registry, plain, listed)
    assert merged.system == "Listed.\n\nFrom the registry.\n\nPlain.\n\nLast."
    assert list(merged.tools) == ["l", "r", "p"]
    assert await merged.call_tool("r", {}) == "r"

    from_generator = merge_model_contexts(c for c in [plain, *listed])
    assert from_generator.system == "Listed.\n\nPlain.\n\nLast."

    only_iterable = merge_model_contexts([registry, plain])
    assert only_iterable.system == "From the registry.\n\nPlain."


def test_provider_source_recorded_in_conflict() -> None:
    a = ModelContextRegistry()
    a.add_tool("t", lambda: "a")
    b = ModelContextRegistry()
    b.add_tool("t", lambda: "b")
    merged = merge_model_contexts([a, b])
    (conflict,) = merged.conflicts
    assert conflict.kept_source is a
    assert conflict.dropped_source is b


# -- namespaced ------------------------------------------------------------------------------


async def test_namespaced_renames_and_calls_reach_original() -> None:
    calls: list[tuple[int, int]] = []

    def add(a: int, b: int) -> int:
        calls.append((a, b))
        return a + b

    original = Tool("add", add, description="Add")
    context = ModelContext(
        system="Calc.",
        tools={"add": original, "noop": _tool("noop")},
        priority=3,
        call_settings={"temperature": 0},
        config={"k": "v"},
    )
    renamed = namespaced(context, "calc")
    assert list(renamed.tools) == ["calc_add", "calc_noop"]
    tool = renamed.tools["calc_add"]
    assert tool.name == "calc_add"
    assert tool.description == "Add"
    assert tool.parameters == original.parameters
    assert (renamed.system, renamed.priority) == ("Calc.", 3)
    assert renamed.call_settings == {"temperature": 0}
    assert renamed.config == {"k": "v"}
    assert await renamed.call_tool("calc_add", {"a": 1, "b": 2}) == 3
    assert calls == [(1, 2)]
    with pytest.raises(ToolNotFoundError):
        await renamed.call_tool("add", {"a": 1, "b": 2})
    # The original context is untouched.
    assert list(context.tools) == ["add", "noop"]
    assert original.name == "add"


async def test_namespaced_custom_separator() -> None:
    renamed = namespaced(_ctx(0, None, _tool("x", 1)), "ns", separator=".")
    assert list(renamed.tools) == ["ns.x"]
    assert await renamed.call_tool("ns.x", {}) == 1


async def test_namespaced_remote_style_tool_still_sees_its_own_name() -> None:
    seen: list[str] = []

    def make_invoke(remote_name: str) -> Callable[[Any, ToolCallContext], Any]:
        async def invoke(args: Any, ctx: ToolCallContext) -> Any:
            seen.append(remote_name)
            return args

        return invoke

    remote = Tool.from_parts("lookup", make_invoke("lookup"))
    renamed = namespaced(_ctx(0, None, remote), "frame")
    assert await renamed.call_tool("frame_lookup", {"q": 1}) == {"q": 1}
    assert seen == ["lookup"]


def test_namespacing_avoids_conflicts_in_merge() -> None:
    a = _ctx(0, None, _tool("t", "a"))
    b = _ctx(0, None, _tool("t", "b"))
    merged = merge_model_contexts(namespaced(a, "a"), namespaced(b, "b"), conflict="error")
    assert sorted(merged.tools) == ["a_t", "b_t"]
    assert merged.conflicts == ()
