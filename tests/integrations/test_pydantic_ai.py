"""ContextToolset: a model context as a pydantic-ai toolset, driven by a scripted model."""

from __future__ import annotations

import importlib
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

import anyio
from pydantic_ai import Agent
from pydantic_ai.capabilities import IncludeToolReturnSchemas
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    FrameDisconnected,
    ModelContextRegistry,
    ToolCallTimeout,
    memory_pair,
)
from assistant_frames.integrations.pydantic_ai import ContextToolset

pytestmark = pytest.mark.anyio

Step = Callable[[ModelRequest], list[ModelResponsePart]]
SEARCH_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
}


@pytest.fixture
def anyio_backend() -> str:
    # pydantic-ai runs on asyncio only: Agent.run calls asyncio.create_task, so no trio.
    return "asyncio"


def scripted(*steps: Step) -> tuple[FunctionModel, list[AgentInfo]]:
    """A model that plays ``steps`` in order, each given the last request; and what it saw."""
    seen: list[AgentInfo] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        return ModelResponse(parts=steps[len(seen) - 1](last))

    return FunctionModel(reply), seen


def call(name: str, **args: Any) -> Step:
    return lambda _: [ToolCallPart(name, args, tool_call_id=f"call-{name}")]


def tool_result(request: ModelRequest) -> tuple[str, str]:
    """``(outcome, content)`` of the request's one tool result.

    pydantic-ai 2.0 sent a retry as a ``RetryPromptPart``; later versions send the call's
    ``ToolReturnPart`` with ``outcome="retried"``.
    """
    (part,) = request.parts
    if part.part_kind == "retry-prompt":
        return "retried", str(part.content)
    assert isinstance(part, ToolReturnPart)
    return part.outcome, str(part.content)


def echo_result(request: ModelRequest) -> list[ModelResponsePart]:
    """Answer with the outcome and content of the request's tool result."""
    outcome, content = tool_result(request)
    return [TextPart(f"{outcome}: {content}")]


def tool_names(info: AgentInfo) -> list[str]:
    return [tool.name for tool in info.function_tools]


@asynccontextmanager
async def federation() -> AsyncIterator[tuple[ModelContextRegistry, ModelContextRegistry]]:
    """A calculator frame over ``memory_pair()``, federated into a parent as ``calc``."""
    frame = ModelContextRegistry()
    frame.add_instruction("Use the calculator for arithmetic.")

    @frame.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    frame.add_tool("search", lambda args: args, description="Search.", parameters=SEARCH_SCHEMA)
    frame.add_tool("secret", lambda: "hidden", disabled=True)

    parent = ModelContextRegistry()
    parent.add_instruction("You are a helpful assistant.")
    host_end, frame_end = memory_pair()
    async with anyio.create_task_group() as tg:
        tg.start_soon(AssistantFrameProvider(frame).serve, frame_end)
        async with AssistantFrameHost(host_end, name="calculator") as host:
            await host.wait_for_context(timeout=5)
            parent.add_provider(host, namespace="calc")
            yield parent, frame
        tg.cancel_scope.cancel()


async def test_model_sees_tools_and_instructions() -> None:
    async with federation() as (parent, _):
        model, seen = scripted(lambda _: [TextPart("hi")])
        await Agent(model, toolsets=[ContextToolset(parent)]).run("Hello")

    (info,) = seen
    assert info.instructions == (
        "You are a helpful assistant.\n\nUse the calculator for arithmetic."
    )
    add_schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    assert info.function_tools == [  # calc_secret is disabled; $schema is gone
        ToolDefinition(
            name="calc_add", description="Add two integers.", parameters_json_schema=add_schema
        ),
        ToolDefinition(
            name="calc_search",
            description="Search.",
            parameters_json_schema={k: v for k, v in SEARCH_SCHEMA.items() if k != "$schema"},
        ),
    ]


async def test_frame_tool_result_reaches_the_model() -> None:
    async with federation() as (parent, _):
        model, seen = scripted(call("calc_add", a=2, b=3), echo_result)
        result = await Agent(model, toolsets=[ContextToolset(parent)]).run("2 + 3?")
    assert result.output == "success: 5"
    assert len(seen) == 2


async def test_bad_arguments_are_a_retry_prompt_then_the_model_corrects() -> None:
    retry_prompts: list[str] = []

    def check_retry(request: ModelRequest) -> list[ModelResponsePart]:
        outcome, content = tool_result(request)
        assert outcome == "retried"
        retry_prompts.append(content)
        return call("calc_add", a=2, b=3)(request)

    async with federation() as (parent, _):
        model, _seen = scripted(call("calc_add", a="two"), check_retry, echo_result)
        result = await Agent(model, toolsets=[ContextToolset(parent)]).run("2 + 3?")
    assert result.output == "success: 5"
    # The frame's own message, naming the tool as the frame knows it.
    assert retry_prompts[0].startswith('Invalid arguments for tool "add": a: Input should be')


async def test_a_tool_added_between_steps_is_offered_next_step() -> None:
    async with federation() as (parent, frame):
        arrived = anyio.Event()

        def on_change() -> None:
            if "calc_sub" in parent.get_model_context().tools:
                arrived.set()

        parent.subscribe(on_change)

        @frame.tool
        async def grow() -> str:
            """Add a subtract tool."""
            frame.add_tool("sub", lambda a, b: a - b, description="a - b")
            with anyio.fail_after(5):  # the update crosses the transport before we answer
                await arrived.wait()
            return "grown"

        model, seen = scripted(call("calc_grow"), call("calc_sub", a=5, b=3), echo_result)
        result = await Agent(model, toolsets=[ContextToolset(parent)]).run("Grow.")
    assert result.output == "success: 2"
    assert "calc_sub" not in tool_names(seen[0])
    assert "calc_sub" in tool_names(seen[1])


async def test_a_local_tool_exception_propagates() -> None:
    registry = ModelContextRegistry()

    @registry.tool
    def explode() -> None:
        """Fail."""
        raise LookupError("boom")

    model, _seen = scripted(call("explode"), echo_result)
    with pytest.raises(LookupError, match="boom"):
        await Agent(model, toolsets=[ContextToolset(registry)]).run("Go.")


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (ToolCallTimeout("fetch", 30), 'Tool call "fetch" timed out after 30 s and was cancelled'),
        (FrameDisconnected("worker is gone"), 'Tool "fetch" is unavailable: worker is gone'),
    ],
)
async def test_timeouts_and_lost_frames_are_retry_prompts(error: Exception, message: str) -> None:
    registry = ModelContextRegistry()

    @registry.tool
    def fetch() -> None:
        """Fetch something from a frame (as a host's call_tool would)."""
        raise error

    model, _seen = scripted(call("fetch"), echo_result)
    result = await Agent(model, toolsets=[ContextToolset(registry)]).run("Go.")
    assert result.output == f"retried: {message}"


async def test_mcp_frame() -> None:
    pytest.importorskip("mcp")
    from assistant_frames.mcp import MCPContextServer, MCPFrameHost

    registry = ModelContextRegistry()
    registry.add_instruction("Shout when asked.")
    registry.add_tool("shout", lambda text: text.upper() + "!", description="Shout a text.")
    server = MCPContextServer(registry, name="shouter")
    model, seen = scripted(call("shout", text="hi"), echo_result)
    async with server.running(), MCPFrameHost(server.server) as frame:
        result = await Agent(model, toolsets=[ContextToolset(frame)]).run("Shout hi.")
    assert result.output == "success: HI!"
    assert tool_names(seen[0]) == ["shout"]
    assert seen[0].instructions == "Shout when asked."


def test_import_without_pydantic_ai_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "assistant_frames.integrations.pydantic_ai")
    with pytest.raises(ImportError, match=r"pip install 'assistant-frames\[pydantic-ai\]'"):
        importlib.import_module("assistant_frames.integrations.pydantic_ai")


async def test_tool_metadata_reaches_the_tool_definitions() -> None:
    """A tool's meta and annotations are pydantic-ai's metadata (keyed as its own MCP
    toolset keys them) and its output schema the return schema; plain tools have none."""
    registry = ModelContextRegistry()
    output = {"type": "object", "properties": {"n": {"type": "integer"}}}
    registry.add_tool(
        "count",
        lambda: {"n": 1},
        annotations={"readOnlyHint": True},
        meta={"com.example/k": "v"},
        output_schema=output,
    )
    registry.add_tool("plain", lambda: None)
    model, seen = scripted(lambda _: [TextPart("hi")])
    # Return schemas reach a model only when asked for.
    capabilities = [IncludeToolReturnSchemas(tools=["count"])]
    await Agent(model, toolsets=[ContextToolset(registry)], capabilities=capabilities).run("Hi")
    (info,) = seen
    count, plain = info.function_tools
    assert count.metadata == {"meta": {"com.example/k": "v"}, "annotations": {"readOnlyHint": True}}
    # FunctionModel has no native return schemas: pydantic-ai puts it in the description.
    assert count.description is not None
    assert "Return schema" in count.description
    assert '"integer"' in count.description
    assert plain.description is None
    assert (plain.metadata, plain.return_schema) == (None, None)
