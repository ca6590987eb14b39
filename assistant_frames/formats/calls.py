"""Run the tool calls of a model's response; build the messages that answer them.

:func:`run_tool_calls` takes a response of OpenAI Chat Completions, the OpenAI Responses
API or the Anthropic Messages API as plain dicts (or the vendor SDK's objects), runs
every tool call in it against a model context, concurrently and each within a time
limit, and returns what the next request must carry, in that vendor's shape:

* OpenAI Chat Completions: one ``{"role": "tool", "tool_call_id", "content"}`` message
  per call (a failed call's content starts ``"Error: "``: the format has no error flag).
* OpenAI Responses: one ``{"type": "function_call_output", "call_id", "output"}`` item
  per call (a failed call's output starts ``"Error: "``).
* Anthropic Messages: one ``{"role": "user", "content": [tool_result, ...]}`` message
  with a ``tool_result`` block per call (``"is_error": True`` on the failed ones).

Every failure of a call is an answer the model can read, never an exception: an
unknown or disabled tool, arguments that are not JSON or do not fit the schema, an
error a frame reported, a timeout, a frame that went away, an exception of a local
tool. Only input that is not a response of any of these shapes raises
:class:`ToolCallFormatError`, before any call runs. No vendor SDK is imported.

Examples:
    >>> import anyio
    >>> from assistant_frames import ModelContextRegistry
    >>> registry = ModelContextRegistry()
    >>> @registry.tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> message = {"role": "assistant", "content": None, "tool_calls": [
    ...     {"id": "call_1", "type": "function",
    ...      "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]}
    >>> anyio.run(run_tool_calls, registry, message)
    [{'role': 'tool', 'tool_call_id': 'call_1', 'content': '5'}]
"""

# No ``from __future__ import annotations`` here: the TypedDicts need evaluated annotations
# for ``__required_keys__`` and ``__optional_keys__`` to honour ``NotRequired`` at runtime.

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, cast, overload

import anyio

# typing_extensions' TypedDict, so that Pydantic can validate these types on Python 3.11.
from typing_extensions import TypedDict

from .._anyio import task_group
from .._json import encode_json
from ..errors import (
    AssistantFramesError,
    FrameDisconnected,
    ToolCallError,
)
from ..registry.context import ModelContext, ModelContextProvider
from ..registry.ui import model_value

__all__ = [
    "AnthropicToolResult",
    "AnthropicToolResultMessage",
    "OpenAIChatToolMessage",
    "OpenAIFunctionCallOutput",
    "ToolCallFormat",
    "ToolCallFormatError",
    "run_tool_calls",
]

logger = logging.getLogger("assistant_frames.tool_calls")

#: The response formats :func:`run_tool_calls` reads and answers.
ToolCallFormat = Literal["openai_chat", "openai_responses", "anthropic"]
_FORMATS: tuple[ToolCallFormat, ...] = ("openai_chat", "openai_responses", "anthropic")


class ToolCallFormatError(AssistantFramesError, ValueError):
    """The input is not a model response of the format given (or of any format known).

    Raised before any call runs. A call that cannot be answered, such as one without an
    id, makes the whole response unreadable; a call that can be answered but not run
    (bad arguments, an unknown tool) is answered with an error instead.
    """


class OpenAIChatToolMessage(TypedDict):
    """An OpenAI Chat Completions ``tool`` message: the answer to one tool call."""

    role: Literal["tool"]
    tool_call_id: str
    content: str


class OpenAIFunctionCallOutput(TypedDict):
    """An OpenAI Responses API ``function_call_output`` input item."""

    type: Literal["function_call_output"]
    call_id: str
    output: str


class AnthropicToolResult(TypedDict):
    """An Anthropic Messages API ``tool_result`` content block."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: str
    is_error: NotRequired[bool]


class AnthropicToolResultMessage(TypedDict):
    """The ``user`` message carrying the ``tool_result`` blocks of one assistant turn."""

    role: Literal["user"]
    content: list[AnthropicToolResult]


@overload
async def run_tool_calls(
    context: ModelContext | ModelContextProvider,
    response: Any,
    *,
    format: Literal["openai_chat"],
    timeout: float | None = 30.0,
    max_concurrency: int | None = None,
) -> list[OpenAIChatToolMessage]: ...


@overload
async def run_tool_calls(
    context: ModelContext | ModelContextProvider,
    response: Any,
    *,
    format: Literal["openai_responses"],
    timeout: float | None = 30.0,
    max_concurrency: int | None = None,
) -> list[OpenAIFunctionCallOutput]: ...


@overload
async def run_tool_calls(
    context: ModelContext | ModelContextProvider,
    response: Any,
    *,
    format: Literal["anthropic"],
    timeout: float | None = 30.0,
    max_concurrency: int | None = None,
) -> list[AnthropicToolResultMessage]: ...


@overload
async def run_tool_calls(
    context: ModelContext | ModelContextProvider,
    response: Any,
    *,
    format: None = None,
    timeout: float | None = 30.0,
    max_concurrency: int | None = None,
) -> list[dict[str, Any]]: ...


async def run_tool_calls(
    context: ModelContext | ModelContextProvider,
    response: Any,
    *,
    format: ToolCallFormat | None = None,
    timeout: float | None = 30.0,
    max_concurrency: int | None = None,
) -> Any:
    """Run the tool calls in a model's ``response``; return the messages answering them.

    Args:
        context: The model context whose tools the model was offered, or a provider
            (a registry, a host) whose current context is used for the whole turn.
        response: What the model returned, as plain dicts (or the vendor SDK's
            objects, which are read with their ``model_dump()``):

            * OpenAI Chat Completions: the completion (exactly one choice), a choice,
              the assistant message, or its ``tool_calls`` list.
            * OpenAI Responses: the response, or its ``output`` list. Only
              ``function_call`` items are run; other items are skipped.
            * Anthropic Messages: the message, or its ``content`` list. Only
              ``tool_use`` blocks are run; other blocks are skipped.
        format: ``"openai_chat"``, ``"openai_responses"`` or ``"anthropic"``; ``None``
            (the default) tells by shape: a mapping with ``choices``, ``message``,
            ``tool_calls`` or a string or null ``content`` is Chat Completions, one
            with ``output`` is Responses, one with a list ``content`` is Anthropic; a
            list is judged by its first item that has a ``function`` key (Chat), or
            the type ``function_call`` (Responses) or ``tool_use`` (Anthropic). A list
            with none of those holds no call of any format.
        timeout: Seconds each call may take once it starts (``None``: no limit of
            this function's; a frame's host still applies its own).
        max_concurrency: How many calls run at once (``None``: all of them).

    Returns:
        The answers in the order of the calls, in the response's format: Chat
        Completions ``tool`` messages, Responses ``function_call_output`` items, or
        one Anthropic ``user`` message of ``tool_result`` blocks. An empty list when
        the response has no tool call: the model's turn is over.

        A result that is a string is sent as it is; any other result as JSON. A
        failed call is answered with the error's message, which the model can act
        on; Anthropic's ``tool_result`` also gets ``"is_error": True``.

    Raises:
        ToolCallFormatError: ``response`` is not of the format given or of any
            format known, or a call in it has no id. Nothing has run.
        ValueError: ``format``, ``timeout`` or ``max_concurrency`` is invalid.
        TypeError: ``context`` is neither a model context nor a provider.

    Cancelling the caller cancels every call still running (frames are sent a
    ``tool-cancel``) and propagates.
    """
    if format is not None and format not in _FORMATS:
        raise ValueError(f"format must be one of {', '.join(_FORMATS)} or None, not {format!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be positive or None, not {timeout!r}")
    if max_concurrency is not None and (
        isinstance(max_concurrency, bool)
        or not isinstance(max_concurrency, int)
        or max_concurrency < 1
    ):
        raise ValueError(
            f"max_concurrency must be a positive integer or None, not {max_concurrency!r}"
        )
    current = _context(context)
    kind, calls = _read(response, format)
    _unique_ids(calls)
    outcomes: list[_Outcome] = [_Outcome("", False)] * len(calls)
    limiter = anyio.CapacityLimiter(max_concurrency) if max_concurrency is not None else None

    async def run(index: int, call: _Call) -> None:
        outcomes[index] = await _run(current, call, timeout, limiter)

    async with task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(run, index, call)
    return _answers(kind, calls, outcomes)


# -- reading a response -------------------------------------------------------------------


@dataclass
class _Call:
    """One tool call as read from a response: ``error`` set if it cannot be run."""

    id: str
    name: str
    arguments: Any = None
    error: str | None = None
    run_id: str | None = None  # the id the call runs under (None: a duplicate, a fresh one)


@dataclass(frozen=True)
class _Outcome:
    content: str
    is_error: bool


def _context(source: ModelContext | ModelContextProvider) -> ModelContext:
    if isinstance(source, ModelContext):
        return source
    get = getattr(source, "get_model_context", None)
    if callable(get):
        context = get()
        if isinstance(context, ModelContext):
            return context
    raise TypeError(f"Expected a ModelContext or a ModelContextProvider, not {source!r}")


def _plain(value: Any) -> Any:
    """A vendor SDK's object (a Pydantic model) as plain JSON data; anything else as is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, Mapping):
        return dump(mode="json")
    return value


def _read(response: Any, format: ToolCallFormat | None) -> tuple[ToolCallFormat, list[_Call]]:
    """The response's format and its calls, in order."""
    response = _plain(response)
    if isinstance(response, Mapping):
        kind, items = _unwrap(response, format)
    elif isinstance(response, Sequence) and not isinstance(response, (str, bytes)):
        items = [_plain(item) for item in response]
        for item in items:
            if not isinstance(item, Mapping):
                raise ToolCallFormatError(f"Expected a list of mappings, found {item!r}")
        detected = _list_format(items)
        if format is not None and detected not in (None, format):
            raise ToolCallFormatError(f"Expected calls of format {format!r}, found {detected!r}")
        if format is None and detected is None:
            return "openai_chat", []  # no call of any format: nothing to answer
        kind = format or cast("ToolCallFormat", detected)
    else:
        raise ToolCallFormatError(
            f"Expected a model response (a mapping or a list), not {type(response).__name__}"
        )
    return kind, _READERS[kind](items)


def _unwrap(
    response: Mapping[str, Any], format: ToolCallFormat | None
) -> tuple[ToolCallFormat, list[Any]]:
    """The list of calls (or items) that a response mapping holds, and its format."""
    if "choices" in response and format in (None, "openai_chat"):
        choices = _plain_list(response["choices"], "choices")
        if len(choices) != 1:
            raise ToolCallFormatError(
                f"The completion has {len(choices)} choices: pass the one to continue with"
            )
        return _unwrap(_mapping(choices[0], "choice"), "openai_chat")
    if isinstance(response.get("message"), Mapping) and format in (None, "openai_chat"):
        return _unwrap(response["message"], "openai_chat")
    if "output" in response and format in (None, "openai_responses"):
        return "openai_responses", _plain_list(response["output"], "output")
    if "tool_calls" in response and format in (None, "openai_chat"):
        calls = response["tool_calls"]
        return "openai_chat", [] if calls is None else _plain_list(calls, "tool_calls")
    content = response.get("content", ...)
    if isinstance(content, list) and format in (None, "anthropic"):
        return "anthropic", [_plain(block) for block in content]
    if (content is None or isinstance(content, str)) and format in (None, "openai_chat"):
        return "openai_chat", []  # an assistant message without tool calls
    expected = "a model response" if format is None else f"a response of format {format!r}"
    raise ToolCallFormatError(f"Expected {expected}; found keys {sorted(map(str, response))}")


def _plain_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ToolCallFormatError(f"Expected {what} to be a list, not {type(value).__name__}")
    return [_plain(item) for item in value]


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    value = _plain(value)
    if not isinstance(value, Mapping):
        raise ToolCallFormatError(f"Expected {what} to be a mapping, not {type(value).__name__}")
    return value


def _list_format(items: list[Mapping[str, Any]]) -> ToolCallFormat | None:
    for item in items:
        if "function" in item:
            return "openai_chat"
        if item.get("type") == "function_call":
            return "openai_responses"
        if item.get("type") == "tool_use":
            return "anthropic"
    return None


def _read_chat(items: list[Any]) -> list[_Call]:
    calls = []
    for item in items:
        item = _mapping(item, "a tool call")
        call_id = _call_id(item, "id", "a Chat Completions tool call")
        function = _plain(item.get("function"))
        kind = item.get("type", "function")
        if kind != "function" or not isinstance(function, Mapping):
            error = f"Only function tool calls can be run, not {kind!r}"
            calls.append(_Call(call_id, "", error=error))
            continue
        calls.append(_function_call(call_id, function.get("name"), function.get("arguments")))
    return calls


def _read_responses(items: list[Any]) -> list[_Call]:
    calls = []
    for item in items:
        item = _mapping(item, "an output item")
        if item.get("type") != "function_call":
            continue  # a message, reasoning, a built-in tool's call the API ran itself...
        call_id = _call_id(item, "call_id", "a function_call item")
        calls.append(_function_call(call_id, item.get("name"), item.get("arguments")))
    return calls


def _read_anthropic(items: list[Any]) -> list[_Call]:
    calls = []
    for block in items:
        block = _mapping(block, "a content block")
        if block.get("type") != "tool_use":
            continue  # text, thinking, a server tool's use the API ran itself...
        call_id = _call_id(block, "id", "a tool_use block")
        name = block.get("name")
        if not isinstance(name, str) or not name:
            calls.append(_Call(call_id, "", error="The tool call names no tool"))
        else:
            calls.append(_Call(call_id, name, block.get("input")))
    return calls


_READERS = {
    "openai_chat": _read_chat,
    "openai_responses": _read_responses,
    "anthropic": _read_anthropic,
}


def _call_id(item: Mapping[str, Any], key: str, what: str) -> str:
    call_id = item.get(key)
    if not isinstance(call_id, str) or not call_id:
        raise ToolCallFormatError(f"{what[0].upper()}{what[1:]} has no {key!r}: {dict(item)!r}")
    return call_id


def _function_call(call_id: str, name: Any, arguments: Any) -> _Call:
    """An OpenAI function call, whose arguments are a JSON string."""
    if not isinstance(name, str) or not name:
        return _Call(call_id, "", error="The tool call names no tool")
    if isinstance(arguments, str):
        if not arguments.strip():
            return _Call(call_id, name, {})  # some servers send "" for no arguments
        try:
            return _Call(call_id, name, json.loads(arguments))
        except (ValueError, RecursionError) as exc:
            error = f'The arguments for tool "{name}" are not valid JSON: {exc}'
            return _Call(call_id, name, error=error)
    if arguments is None or isinstance(arguments, Mapping):
        return _Call(call_id, name, arguments)  # already decoded, as some servers send it
    error = f'The arguments for tool "{name}" must be a JSON string, not {type(arguments).__name__}'
    return _Call(call_id, name, error=error)


def _unique_ids(calls: list[_Call]) -> None:
    """Run each call under its own id; a repeated id (models repeat them) runs under a new one.

    A frame refuses a second pending call with the same id, and the calls of one turn
    run at once.
    """
    seen: set[str] = set()
    for call in calls:
        if call.id not in seen:
            seen.add(call.id)
            call.run_id = call.id


# -- running the calls ----------------------------------------------------------------------


async def _run(
    context: ModelContext,
    call: _Call,
    timeout: float | None,
    limiter: anyio.CapacityLimiter | None,
) -> _Outcome:
    if call.error is not None:
        return _failed(call.name, call.error)
    if limiter is None:
        return await _call(context, call, timeout)
    async with limiter:  # the time limit starts once the call does
        return await _call(context, call, timeout)


async def _call(context: ModelContext, call: _Call, timeout: float | None) -> _Outcome:
    name = call.name
    tool = context.tools.get(name)
    if tool is not None and tool.ui is not None and "model" not in tool.ui.visibility:
        # Never offered to a model (model_tools() leaves it out): a model naming it anyway
        # is refused, as MCP Apps hosts must.
        return _failed(name, f'Tool "{name}" is not available to the model (it is for its app)')
    try:
        with anyio.move_on_after(math.inf if timeout is None else timeout) as scope:
            result = model_value(
                await context.call_tool(name, call.arguments, tool_call_id=call.run_id)
            )  # a ToolResult's _meta is for an app's view, never for the model
    except FrameDisconnected as exc:  # a ToolCallError: said so the model may do without
        return _failed(name, f'Tool "{name}" is unavailable: {exc.message}')
    except ToolCallError as exc:  # refusals, failures, timeouts
        return _failed(name, exc.message)
    except Exception as exc:  # a local tool's own error: the model hears it, as from a frame
        logger.debug("Tool %r raised", name, exc_info=True)
        return _failed(name, str(exc) or type(exc).__name__)
    if scope.cancelled_caught:
        return _failed(name, f'Tool call "{name}" timed out after {timeout:g} s')
    if isinstance(result, str):
        return _Outcome(result, False)
    try:
        return _Outcome(encode_json(result).decode(), False)
    except TypeError as exc:
        return _failed(name, f'The result of tool "{name}" has no JSON form: {exc}')


def _failed(name: str, message: str) -> _Outcome:
    # Anthropic refuses an error result without content.
    return _Outcome(message or f'Tool "{name}" failed', True)


def _flagged(outcome: _Outcome) -> str:
    # OpenAI's formats have no error flag: say it, or "division by zero" reads as a result.
    return f"Error: {outcome.content}" if outcome.is_error else outcome.content


def _answers(kind: ToolCallFormat, calls: list[_Call], outcomes: list[_Outcome]) -> list[Any]:
    if kind == "openai_chat":
        return [
            OpenAIChatToolMessage(role="tool", tool_call_id=call.id, content=_flagged(outcome))
            for call, outcome in zip(calls, outcomes, strict=True)
        ]
    if kind == "openai_responses":
        return [
            OpenAIFunctionCallOutput(
                type="function_call_output", call_id=call.id, output=_flagged(outcome)
            )
            for call, outcome in zip(calls, outcomes, strict=True)
        ]
    if not calls:
        return []
    blocks: list[AnthropicToolResult] = []
    for call, outcome in zip(calls, outcomes, strict=True):
        block = AnthropicToolResult(
            type="tool_result", tool_use_id=call.id, content=outcome.content
        )
        if outcome.is_error:
            block["is_error"] = True
        blocks.append(block)
    return [AnthropicToolResultMessage(role="user", content=blocks)]
