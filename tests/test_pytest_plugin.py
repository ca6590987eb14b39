"""The pytest plugin as a user gets it: a user's test files run by a real pytest
(``pytester``, in a subprocess so that plugins load from their entry points), outside
this repository's own conftest.py and its ``anyio_backend`` fixture."""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)

pytest.importorskip("pydantic_ai")

# A user's test of a pydantic-ai agent that uses a frame through ``frame_host``.
AGENT_TEST = """
import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel

from assistant_frames import ModelContextRegistry
from assistant_frames.integrations.pydantic_ai import ContextToolset

pytestmark = pytest.mark.anyio


@pytest.fixture
def frame():
    registry = ModelContextRegistry()

    @registry.tool
    def add(a: int, b: int) -> int:
        return a + b

    return registry


async def test_agent_calls_the_frame(frame_host):
    def model(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": 3})])
        return ModelResponse(parts=[TextPart(f"sum: {messages[-1].parts[0].content}")])

    agent = Agent(FunctionModel(model), toolsets=[ContextToolset(frame_host)])
    result = await agent.run("What is 2 + 3?")
    assert result.output == "sum: 5"
"""

# The pin docs/testing.md shows.
PIN = """
import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"
"""

TIMEOUT = 120  # a whole inner pytest run, pydantic-ai's import included


def test_every_installed_backend_runs_by_default(pytester: pytest.Pytester) -> None:
    # What docs/testing.md says: anyio's own anyio_backend runs each test on every
    # installed backend, so trio too; an asyncio-only library then fails there, and the
    # plugin says why and how to pin.
    pytest.importorskip("trio")
    pytester.makepyfile(test_agent=AGENT_TEST)
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider", timeout=TIMEOUT)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_agent_calls_the_frame?asyncio? PASSED*",
            "*test_agent_calls_the_frame?trio? FAILED*",
            "*assistant-frames: asyncio only?*",
            "*This test ran under trio*",
            '*return "asyncio"*',
        ]
    )


def test_the_documented_pin_runs_on_asyncio_only(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PIN)
    pytester.makepyfile(test_agent=AGENT_TEST)
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider", timeout=TIMEOUT)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_agent_calls_the_frame PASSED*"])
    result.stdout.no_fnmatch_line("*trio*")
    result.stdout.no_fnmatch_line("*asyncio only?*")


def test_the_hint_is_only_for_trio_failures(pytester: pytest.Pytester) -> None:
    # A plain failure of a test that uses frame_host gets no hint, on either backend.
    pytester.makepyfile(
        test_plain="""
import pytest

from assistant_frames import ModelContextRegistry

pytestmark = pytest.mark.anyio


@pytest.fixture
def frame():
    return ModelContextRegistry()


async def test_fails(frame_host):
    raise RuntimeError("no running event loop, but on purpose")
"""
    )
    pytester.makeconftest(PIN)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=TIMEOUT)
    result.assert_outcomes(failed=1)
    result.stdout.no_fnmatch_line("*asyncio only?*")
