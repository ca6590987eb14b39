"""run_tool_calls: the vendors' documented tool-call JSON, run against a federated context.

The responses below are the examples of the vendors' own guides, verbatim: OpenAI's
function-calling guide (Chat Completions and the Responses API: "Sample response with
multiple function calls", and the send_email example, whose two calls share one id) and
Anthropic's tool-use guide (the get_weather ``tool_use`` response). The tools they call
live in a frame served over a memory pair; other tests add a worker subprocess that is
killed mid-call, tools that time out, and tools that only finish when run concurrently.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import TypeAdapter

from assistant_frames import (
    AnthropicToolResult,
    AnthropicToolResultMessage,
    AssistantFrameHost,
    AssistantFramesError,
    ModelContextRegistry,
    OpenAIChatToolMessage,
    OpenAIFunctionCallOutput,
    ToolCallFormatError,
    run_tool_calls,
)
from assistant_frames.testing import connect_frame
from assistant_frames.transports import WorkerTransport, spawn_worker

from helpers import wait_until

pytestmark = pytest.mark.anyio

# -- the vendors' documented payloads ------------------------------------------------------

# OpenAI function-calling guide, Chat Completions: "Sample response with multiple function
# calls" (the assistant message's tool_calls).
CHAT_TOOL_CALLS: list[dict[str, Any]] = [
    {
        "id": "call_12345xyz",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"location":"Paris, France"}'},
    },
    {
        "id": "call_67890abc",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"location":"Bogotá, Colombia"}'},
    },
    {
        "id": "call_99999def",
        "type": "function",
        "function": {"name": "send_email", "arguments": '{"to":"bob@email.com","body":"Hi bob"}'},
    },
]

# The same guide's send_email example output: two calls with the same id.
CHAT_SAME_ID_CALLS: list[dict[str, Any]] = [
    {
        "id": "call_9876abc",
        "type": "function",
        "function": {
            "name": "send_email",
            "arguments": '{"to":"ilan@example.com","subject":"Hello!",'
            '"body":"Just wanted to say hi"}',
        },
    },
    {
        "id": "call_9876abc",
        "type": "function",
        "function": {
            "name": "send_email",
            "arguments": '{"to":"katia@example.com","subject":"Hello!",'
            '"body":"Just wanted to say hi"}',
        },
    },
]

# OpenAI function-calling guide, Responses API: "Sample response with multiple function
# calls" (the response's output).
RESPONSES_OUTPUT: list[dict[str, Any]] = [
    {
        "id": "fc_12345xyz",
        "call_id": "call_12345xyz",
        "type": "function_call",
        "name": "get_weather",
        "arguments": '{"location":"Paris, France"}',
    },
    {
        "id": "fc_67890abc",
        "call_id": "call_67890abc",
        "type": "function_call",
        "name": "get_weather",
        "arguments": '{"location":"Bogotá, Colombia"}',
    },
    {
        "id": "fc_99999def",
        "call_id": "call_99999def",
        "type": "function_call",
        "name": "send_email",
        "arguments": '{"to":"bob@email.com","body":"Hi bob"}',
    },
]

# Anthropic tool-use guide: the response with a get_weather tool_use block.
ANTHROPIC_MESSAGE: dict[str, Any] = {
    "id": "msg_01Aq9w938a90dw8q",
    "model": "claude-opus-4-7",
    "stop_reason": "tool_use",
    "role": "assistant",
    "content": [
        {"type": "text", "text": "I'll check the current weather."},
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "get_weather",
            "input": {"location": "San Francisco, CA", "unit": "celsius"},
        },
    ],
}

PARIS = '{"location":"Paris, France","temperature":14,"unit":"celsius"}'
BOGOTA = '{"location":"Bogotá, Colombia","temperature":14,"unit":"celsius"}'


def weather_frame(sent: list[dict[str, Any]] | None = None) -> ModelContextRegistry:
    """A frame with the tools the documented responses call."""
    registry = ModelContextRegistry()

    @registry.tool
    def get_weather(location: str, unit: str = "celsius") -> dict[str, Any]:
        """Get current temperature for a given location."""
        return {"location": location, "temperature": 14, "unit": unit}

    @registry.tool
    def send_email(to: str, body: str, subject: str = "") -> str:
        """Send an email to a given recipient with a subject and message."""
        if sent is not None:
            sent.append({"to": to, "subject": subject, "body": body})
        return f"sent to {to}"

    return registry


@asynccontextmanager
async def federated(frame: ModelContextRegistry) -> AsyncIterator[ModelContextRegistry]:
    """A parent registry with ``frame`` connected over a memory pair."""
    async with connect_frame(frame, timeout=10) as host:
        parent = ModelContextRegistry()
        parent.add_provider(host)
        yield parent


def chat_completion(tool_calls: list[dict[str, Any]]) -> dict[str, Any]:
    """A whole Chat Completions response carrying ``tool_calls``."""
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": tool_calls,
                    "refusal": None,
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
    }


# -- the documented responses, in every shape a user passes them -----------------------------


def _chat_shapes() -> list[Any]:
    completion = chat_completion(CHAT_TOOL_CALLS)
    choice = completion["choices"][0]
    shapes = [completion, choice, choice["message"], CHAT_TOOL_CALLS]
    openai = pytest.importorskip("openai")
    sdk = openai.types.chat.ChatCompletion.model_validate(completion)
    return [*shapes, sdk, sdk.choices[0], sdk.choices[0].message, sdk.choices[0].message.tool_calls]


async def test_openai_chat_documented_calls() -> None:
    sent: list[dict[str, Any]] = []
    async with federated(weather_frame(sent)) as parent:
        for shape in _chat_shapes():
            with anyio.fail_after(10):
                answers = await run_tool_calls(parent, shape)
            assert answers == [
                {"role": "tool", "tool_call_id": "call_12345xyz", "content": PARIS},
                {"role": "tool", "tool_call_id": "call_67890abc", "content": BOGOTA},
                {
                    "role": "tool",
                    "tool_call_id": "call_99999def",
                    "content": "sent to bob@email.com",
                },
            ], shape
            typed = await run_tool_calls(parent, shape, format="openai_chat")
            assert typed == answers
    assert len(sent) == len(_chat_shapes()) * 2
    assert sent[0] == {"to": "bob@email.com", "subject": "", "body": "Hi bob"}


async def test_openai_responses_documented_calls() -> None:
    openai = pytest.importorskip("openai")
    item_type = openai.types.responses.ResponseFunctionToolCall
    response = {"id": "resp_1", "object": "response", "status": "completed"}
    shapes: list[Any] = [
        {**response, "output": RESPONSES_OUTPUT},
        RESPONSES_OUTPUT,
        [item_type.model_validate(item) for item in RESPONSES_OUTPUT],
        # What the API also returns around function calls is skipped.
        [
            {"id": "rs_1", "type": "reasoning", "summary": []},
            *RESPONSES_OUTPUT,
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        ],
    ]
    async with federated(weather_frame()) as parent:
        for shape in shapes:
            with anyio.fail_after(10):
                answers = await run_tool_calls(parent, shape)
            assert answers == [
                {"type": "function_call_output", "call_id": "call_12345xyz", "output": PARIS},
                {"type": "function_call_output", "call_id": "call_67890abc", "output": BOGOTA},
                {
                    "type": "function_call_output",
                    "call_id": "call_99999def",
                    "output": "sent to bob@email.com",
                },
            ], shape
            assert await run_tool_calls(parent, shape, format="openai_responses") == answers


async def test_anthropic_documented_call() -> None:
    anthropic = pytest.importorskip("anthropic")
    sdk = anthropic.types.Message.model_validate(
        {**ANTHROPIC_MESSAGE, "type": "message", "stop_sequence": None, "usage": _USAGE}
    )
    shapes = [ANTHROPIC_MESSAGE, ANTHROPIC_MESSAGE["content"], sdk, sdk.content]
    async with federated(weather_frame()) as parent:
        for shape in shapes:
            with anyio.fail_after(10):
                answers = await run_tool_calls(parent, shape)
            assert answers == [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                            "content": '{"location":"San Francisco, CA","temperature":14,'
                            '"unit":"celsius"}',
                        }
                    ],
                }
            ], shape
            assert await run_tool_calls(parent, shape, format="anthropic") == answers


_USAGE = {"input_tokens": 10, "output_tokens": 20}


async def test_repeated_ids_each_run_and_are_each_answered() -> None:
    # A frame refuses a second pending call with the same id; the runner gives it a new one.
    sent: list[dict[str, Any]] = []
    async with federated(weather_frame(sent)) as parent:
        with anyio.fail_after(10):
            answers = await run_tool_calls(parent, {"tool_calls": CHAT_SAME_ID_CALLS})
    assert [answer["content"] for answer in answers] == [
        "sent to ilan@example.com",
        "sent to katia@example.com",
    ]
    assert [answer["tool_call_id"] for answer in answers] == ["call_9876abc"] * 2
    assert sorted(email["to"] for email in sent) == ["ilan@example.com", "katia@example.com"]


# -- the answers fit the vendors' own types -------------------------------------------------


def _check_vendor(typed_dict: Any, entry: Mapping[str, Any]) -> None:
    """Validate with the vendor's TypedDict, and check the keys, which Pydantic ignores."""
    TypeAdapter(typed_dict).validate_python(entry)
    schema = TypeAdapter(typed_dict).json_schema()
    required, known = set(schema.get("required", [])), set(schema["properties"])
    assert required <= set(entry) <= known, (entry, required, known)


async def test_answers_fit_the_vendor_sdk_types() -> None:
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    from anthropic.types import MessageParam, ToolResultBlockParam

    try:  # newer SDKs make MessageParam a union of one type per role
        from anthropic.types.user_message_param import UserMessageParam as UserMessage
    except ImportError:  # pragma: no cover
        UserMessage = MessageParam
    from openai.types.chat import ChatCompletionToolMessageParam
    from openai.types.responses.response_input_param import FunctionCallOutput

    failing = {**ANTHROPIC_MESSAGE["content"][1], "id": "toolu_2", "name": "nope"}
    async with federated(weather_frame()) as parent:
        with anyio.fail_after(10):
            chat = await run_tool_calls(parent, CHAT_TOOL_CALLS, format="openai_chat")
            responses = await run_tool_calls(parent, RESPONSES_OUTPUT, format="openai_responses")
            anthropic = await run_tool_calls(
                parent, [*ANTHROPIC_MESSAGE["content"], failing], format="anthropic"
            )
    for message in chat:
        _check_vendor(ChatCompletionToolMessageParam, message)
        TypeAdapter(OpenAIChatToolMessage).validate_python(message, strict=True)
    for item in responses:
        _check_vendor(FunctionCallOutput, item)
        TypeAdapter(OpenAIFunctionCallOutput).validate_python(item, strict=True)
    (message,) = anthropic
    _check_vendor(UserMessage, message)
    TypeAdapter(MessageParam).validate_python(message)
    TypeAdapter(AnthropicToolResultMessage).validate_python(message, strict=True)
    assert [block.get("is_error") for block in message["content"]] == [None, True]
    for block in message["content"]:
        _check_vendor(ToolResultBlockParam, block)
        TypeAdapter(AnthropicToolResult).validate_python(block, strict=True)
    # The check can fail: a misnamed key is caught.
    with pytest.raises((AssertionError, ValueError)):
        _check_vendor(FunctionCallOutput, {**responses[0], "content": "x"})


# -- every failure is an answer, and the other calls still succeed ----------------------------


def chat_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


async def test_failures_become_answers_the_model_can_read() -> None:
    async with federated(weather_frame()) as parent:

        @parent.tool
        def divide(a: float, b: float) -> float:
            """Divide a by b (a local tool that raises its own error)."""
            return a / b

        @parent.tool
        def opaque() -> object:
            """Return something with no JSON form."""
            return object()

        @parent.tool
        def nothing() -> None:
            """Return nothing."""

        calls = [
            chat_call("c1", "get_weather", {"location": "Paris, France"}),
            chat_call("c2", "get_wether", {"location": "Paris"}),  # unknown tool
            chat_call("c3", "get_weather", '{"location": "Paris'),  # not JSON
            chat_call("c4", "get_weather", {"place": "Paris"}),  # the frame refuses it
            chat_call("c5", "divide", {"a": 1, "b": 0}),
            chat_call("c6", "opaque", {}),
            chat_call("c7", "nothing", ""),  # "" as no arguments
            {"id": "c8", "type": "custom", "custom": {"name": "x", "input": "y"}},
            chat_call("c9", "divide", {"a": 1, "b": 4}),
        ]
        with anyio.fail_after(10):
            answers = await run_tool_calls(parent, {"role": "assistant", "tool_calls": calls})
    content = {answer["tool_call_id"]: answer["content"] for answer in answers}
    assert [answer["tool_call_id"] for answer in answers] == [f"c{i}" for i in range(1, 10)]
    assert content["c1"] == '{"location":"Paris, France","temperature":14,"unit":"celsius"}'
    assert content["c2"] == 'Error: Tool "get_wether" not found'
    assert content["c3"].startswith(
        'Error: The arguments for tool "get_weather" are not valid JSON: '
    )
    assert content["c4"].startswith('Error: Invalid arguments for tool "get_weather"')
    assert content["c5"] == "Error: float division by zero"
    assert content["c6"].startswith('Error: The result of tool "opaque" has no JSON form')
    assert content["c7"] == "null"
    assert content["c8"] == "Error: Only function tool calls can be run, not 'custom'"
    assert content["c9"] == "0.25"


async def test_anthropic_marks_only_the_failed_results() -> None:
    blocks = [
        {"type": "text", "text": "Let me check both."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "X"}},
        {"type": "tool_use", "id": "toolu_2", "name": "subtract", "input": {}},
        {"type": "tool_use", "id": "toolu_3", "name": "get_weather", "input": {"unit": 3}},
        {
            "type": "tool_use",
            "id": "toolu_4",
            "name": "send_email",
            "input": {"to": "a", "body": "b"},
        },
    ]
    async with federated(weather_frame()) as parent:
        with anyio.fail_after(10):
            (message,) = await run_tool_calls(parent, {"role": "assistant", "content": blocks})
    assert message["role"] == "user"
    results = message["content"]
    assert [block["tool_use_id"] for block in results] == [
        "toolu_1",
        "toolu_2",
        "toolu_3",
        "toolu_4",
    ]
    assert [block.get("is_error", False) for block in results] == [False, True, True, False]
    assert results[1]["content"] == 'Tool "subtract" not found'
    assert results[3]["content"] == "sent to a"


# -- concurrency, timeouts, lost frames, cancellation ---------------------------------------


def waiting_pair(
    frame: ModelContextRegistry, first: str, second: str, events: dict[str, anyio.Event]
) -> None:
    """Two tools that each finish only once the other has started."""

    @frame.tool(name=first)
    async def one() -> str:
        events[first].set()
        await events[second].wait()
        return first

    @frame.tool(name=second)
    async def other() -> str:
        events[second].set()
        await events[first].wait()
        return second


async def test_calls_run_concurrently() -> None:
    frame = weather_frame()
    events = {"ping": anyio.Event(), "pong": anyio.Event()}
    waiting_pair(frame, "ping", "pong", events)
    async with federated(frame) as parent:
        calls = [chat_call("a", "ping", {}), chat_call("b", "pong", {})]
        # Run one after the other, each would wait for the other until the time limit.
        with anyio.fail_after(5):
            answers = await run_tool_calls(parent, calls, timeout=30)
    assert [answer["content"] for answer in answers] == ["ping", "pong"]


async def test_max_concurrency_bounds_the_calls_running_at_once() -> None:
    frame = weather_frame()
    running: list[int] = [0, 0]  # now, most

    @frame.tool
    async def step() -> str:
        running[0] += 1
        running[1] = max(running)
        await anyio.sleep(0.2)  # long enough for the others to start, if they may
        running[0] -= 1
        return "done"

    async with federated(frame) as parent:
        calls = [chat_call(f"c{i}", "step", {}) for i in range(5)]
        with anyio.fail_after(10):
            answers = await run_tool_calls(parent, calls, max_concurrency=2)
        assert [answer["content"] for answer in answers] == ["done"] * 5
        assert running[1] == 2
        with anyio.fail_after(10):
            await run_tool_calls(parent, calls)
        assert running[1] == 5


async def test_a_slow_call_times_out_while_the_others_succeed() -> None:
    frame = weather_frame()
    cancelled = anyio.Event()

    @frame.tool
    async def slow() -> str:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()  # the frame was sent a tool-cancel
        return "never"  # pragma: no cover

    async with federated(frame) as parent:

        @parent.tool
        async def local_slow() -> str:
            """A local tool that never finishes."""
            await anyio.sleep_forever()
            return "never"  # pragma: no cover

        calls = [
            chat_call("a", "slow", {}),
            chat_call("b", "get_weather", {"location": "Paris, France"}),
            chat_call("c", "local_slow", {}),
        ]
        started = anyio.current_time()
        with anyio.fail_after(10):
            answers = await run_tool_calls(parent, calls, timeout=0.5)
            await cancelled.wait()
        assert anyio.current_time() - started < 5
    assert [answer["content"] for answer in answers] == [
        'Error: Tool call "slow" timed out after 0.5 s',
        '{"location":"Paris, France","temperature":14,"unit":"celsius"}',
        'Error: Tool call "local_slow" timed out after 0.5 s',
    ]


async def test_the_hosts_own_timeout_is_an_answer_too() -> None:
    frame = weather_frame()

    @frame.tool
    async def slow() -> str:
        await anyio.sleep_forever()
        return "never"  # pragma: no cover

    async with connect_frame(frame, timeout=10) as host:
        host.timeout = 0.3
        with anyio.fail_after(10):
            answers = await run_tool_calls(host, [chat_call("a", "slow", {})], timeout=None)
    assert answers == [
        {
            "role": "tool",
            "tool_call_id": "a",
            "content": 'Error: Tool call "slow" timed out after 0.3 s',
        }
    ]


WORKER = r'''
"""A worker frame: python worker.py BACKEND."""
import sys

import anyio

from assistant_frames import ModelContextRegistry
from assistant_frames.frames import serve_stdio

registry = ModelContextRegistry()


@registry.tool
async def hang(marker: str) -> None:
    """Say so on stderr, then never return."""
    print(marker, file=sys.stderr, flush=True)
    await anyio.sleep_forever()


anyio.run(serve_stdio, registry, backend=sys.argv[1])
'''


@asynccontextmanager
async def worker_host(
    tmp_path: Path, backend: str
) -> AsyncIterator[tuple[AssistantFrameHost, WorkerTransport]]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    command = [sys.executable, str(script), backend]
    async with (
        spawn_worker(command, stderr="capture") as transport,
        AssistantFrameHost(transport, timeout=30, name="worker") as host,
    ):
        yield host, transport


async def test_a_worker_killed_mid_call_is_an_answer(tmp_path: Path, anyio_backend: str) -> None:
    async with (
        worker_host(tmp_path, anyio_backend) as (worker, transport),
        connect_frame(weather_frame(), timeout=10) as weather,
    ):
        with anyio.fail_after(15):
            await worker.wait_for_context(timeout=10)
        parent = ModelContextRegistry()
        parent.add_provider(worker, namespace="worker")
        parent.add_provider(weather)
        answers: list[Any] = []

        async def turn() -> None:
            calls = [
                chat_call("a", "worker_hang", {"marker": "hanging now"}),
                chat_call("b", "get_weather", {"location": "Paris, France"}),
            ]
            answers.extend(await run_tool_calls(parent, calls, timeout=30))

        with anyio.fail_after(15):
            async with anyio.create_task_group() as group:
                group.start_soon(turn)
                await wait_until(lambda: "hanging now" in transport.stderr_tail(), timeout=10)
                started = anyio.current_time()
                os.kill(transport.pid, signal.SIGKILL)
        assert anyio.current_time() - started < 5  # not the 30 s time limit
    hang, weather_answer = answers
    assert hang["tool_call_id"] == "a"
    assert hang["content"].startswith('Error: Tool "worker_hang" is unavailable: ')
    assert "killed by SIGKILL" in hang["content"]
    assert weather_answer == {"role": "tool", "tool_call_id": "b", "content": PARIS}


async def test_cancelling_the_turn_cancels_the_calls_and_propagates() -> None:
    frame = weather_frame()
    started, cancelled = anyio.Event(), anyio.Event()

    @frame.tool
    async def slow() -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"  # pragma: no cover

    async with federated(frame) as parent:
        finished = False
        with anyio.fail_after(10):
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:

                    async def turn() -> None:
                        nonlocal finished
                        await run_tool_calls(parent, [chat_call("a", "slow", {})])
                        finished = True

                    group.start_soon(turn)
                    await started.wait()
                    scope.cancel()
            await cancelled.wait()  # the frame was sent a tool-cancel
        assert scope.cancelled_caught
        assert not finished


# -- responses without calls, and input that is no response ---------------------------------


async def test_a_response_without_calls_needs_no_answer() -> None:
    parent = weather_frame()
    no_calls: list[Any] = [
        {"role": "assistant", "content": "The weather in Paris is 14°C."},
        {"role": "assistant", "content": "Done.", "tool_calls": None, "refusal": None},
        chat_completion([]),
        {
            **ANTHROPIC_MESSAGE,
            "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "Hi"}],
        },
        {"id": "resp_1", "output": [{"type": "message", "role": "assistant", "content": []}]},
        [],
        [{"type": "text", "text": "Hi"}],
    ]
    for response in no_calls:
        assert await run_tool_calls(parent, response) == [], response


async def test_input_that_is_no_response_raises_before_any_call_runs() -> None:
    sent: list[dict[str, Any]] = []
    parent = weather_frame(sent)
    email = chat_call("c1", "send_email", {"to": "a", "body": "b"})
    no_id = {"type": "function", "function": {"name": "send_email", "arguments": "{}"}}
    two_choices = chat_completion([email])
    two_choices["choices"].append(two_choices["choices"][0])
    bad: list[tuple[Any, str | None, str]] = [
        ("call the tools", None, "not str"),
        (42, None, "not int"),
        ({"role": "assistant"}, None, "found keys ['role']"),
        ({"tool_calls": [email, no_id]}, None, "has no 'id'"),
        (two_choices, None, "has 2 choices"),
        ([email, "text"], None, "list of mappings"),
        ({"tool_calls": "call"}, None, "tool_calls to be a list"),
        ([{"type": "function_call", "name": "send_email", "arguments": "{}"}], None, "call_id"),
        ([{"type": "tool_use", "name": "send_email", "input": {}}], None, "has no 'id'"),
        ({"role": "assistant", "tool_calls": [email]}, "anthropic", "format 'anthropic'"),
        (ANTHROPIC_MESSAGE, "openai_responses", "format 'openai_responses'"),
        (RESPONSES_OUTPUT, "openai_chat", "format 'openai_chat', found 'openai_responses'"),
        (CHAT_TOOL_CALLS, "anthropic", "format 'anthropic', found 'openai_chat'"),
    ]
    for response, format, message in bad:
        with pytest.raises(ToolCallFormatError, match=re.escape(message)):
            await run_tool_calls(parent, response, format=format)  # type: ignore[call-overload]
    assert sent == []
    assert issubclass(ToolCallFormatError, ValueError)
    assert issubclass(ToolCallFormatError, AssistantFramesError)


async def test_invalid_options_raise() -> None:
    parent = weather_frame()
    for options in (
        {"format": "gemini"},
        {"timeout": 0},
        {"timeout": -1.0},
        {"max_concurrency": 0},
        {"max_concurrency": 1.5},
        {"max_concurrency": True},
    ):
        with pytest.raises(ValueError, match=next(iter(options))):
            await run_tool_calls(parent, [], **options)
    with pytest.raises(TypeError, match="ModelContext"):
        await run_tool_calls(object(), [])  # type: ignore[call-overload]


async def test_a_provider_is_read_once_per_turn() -> None:
    # The whole turn runs against the context the call started with.
    parent = weather_frame()
    handle: list[Any] = []

    @parent.tool
    def remove_extra() -> str:
        """Remove the tool "extra" from the registry."""
        handle[0].remove()
        return "removed"

    handle.append(parent.add_tool("extra", lambda: "extra"))
    calls = [chat_call("a", "remove_extra", {}), chat_call("b", "extra", {})]
    with anyio.fail_after(10):
        answers = await run_tool_calls(parent, calls, max_concurrency=1)
        assert [answer["content"] for answer in answers] == ["removed", "extra"]
        again = await run_tool_calls(parent, [chat_call("c", "extra", {})])
    assert again[0]["content"] == 'Error: Tool "extra" not found'
