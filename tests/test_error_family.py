"""One error family: every way a call fails is a ``ToolCallError`` that says why and where.

Each test here failed before the family existed: ``ToolCallTimeout`` and
``FrameDisconnected`` were not ``ToolCallError`` (so the documented ``except
ToolCallError`` loop let them kill a model's turn), ``connect_frame`` and ``own_stdio``
let a single error out inside an ``ExceptionGroup``, and a missing first context gave a
bare ``TimeoutError()`` or a plain "not found".
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ContextTimeout,
    FrameDisconnected,
    ModelContextRegistry,
    ReconnectingHost,
    ToolCallError,
    ToolCallTimeout,
    ToolNotFoundError,
    connect,
    memory_pair,
)
from assistant_frames.testing import connect_frame
from assistant_frames.transports import spawn_worker

from helpers import wait_until

pytestmark = pytest.mark.anyio

WORKER = textwrap.dedent(
    """
    import sys, time
    import anyio
    from assistant_frames import ModelContextRegistry
    from assistant_frames.frames import serve_stdio

    registry = ModelContextRegistry()

    @registry.tool
    def hang(marker: str) -> None:
        print(marker, file=sys.stderr, flush=True)
        time.sleep(60)

    anyio.run(serve_stdio, registry, backend=sys.argv[1])
    """
)


def slow_registry() -> ModelContextRegistry:
    registry = ModelContextRegistry()

    @registry.tool
    async def slow() -> str:
        await anyio.sleep(60)
        return "never"

    @registry.tool
    def boom() -> None:
        raise ToolCallError("no such thing")

    return registry


def the_documented_loop_catches(error: BaseException) -> str:
    """What docs/model-tools.md tells a user to write around a call."""
    try:
        raise error
    except ToolCallError as exc:
        return exc.message


async def test_a_timeout_is_a_tool_call_error_with_a_message() -> None:
    parent = ModelContextRegistry()
    with anyio.fail_after(10):
        async with connect_frame(slow_registry(), name="slowpoke", timeout=0.2) as host:
            parent.add_provider(host, namespace="s")
            with pytest.raises(ToolCallError) as caught:
                await parent.get_model_context().call_tool("s_slow", {})
    error = caught.value
    assert isinstance(error, ToolCallTimeout)
    assert isinstance(error, TimeoutError)  # still what it was
    assert error.message == 'Tool call "slow" timed out after 0.2 s'
    assert (error.tool_name, error.frame, error.timeout) == ("slow", "slowpoke", 0.2)
    assert error.tool_call_id is not None
    assert the_documented_loop_catches(error) == error.message


async def test_a_dead_worker_is_a_tool_call_error_with_exit_code(
    tmp_path: Path, anyio_backend: str
) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    with anyio.fail_after(20):
        async with (
            spawn_worker([sys.executable, str(script), anyio_backend], stderr="capture") as end,
            AssistantFrameHost(end, name="hanger", timeout=30) as host,
        ):
            await host.wait_for_context(timeout=15)
            errors: list[BaseException] = []

            async def call() -> None:
                try:
                    await host.call_tool("hang", {"marker": "hanging now"})
                except ToolCallError as exc:  # the one clause a loop needs
                    errors.append(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await wait_until(lambda: "hanging now" in end.stderr_tail())
                os.kill(end.pid, signal.SIGKILL)
            with pytest.raises(ToolCallError) as later:  # a new call, after the death
                await host.call_tool("hang", {"marker": "again"})
    (error,) = errors
    assert isinstance(error, FrameDisconnected)
    assert isinstance(error, ConnectionError)
    assert error.returncode == -signal.SIGKILL
    assert (error.tool_name, error.frame) == ("hang", "hanger")
    assert str(error) == f'Tool "hang": {error.message}'  # the message names the frame
    assert "hanging now" in error.message
    assert isinstance(later.value, FrameDisconnected)
    assert later.value is not error
    assert later.value.tool_name == "hang"
    assert later.value.returncode == -signal.SIGKILL


async def test_errors_come_out_of_connect_frame_unwrapped() -> None:
    with anyio.fail_after(10), pytest.raises(ToolCallError) as caught:
        async with connect_frame(slow_registry()) as host:
            await host.call_tool("boom", {})
    assert type(caught.value) is ToolCallError
    assert caught.value.message == "no such thing"


async def test_errors_come_out_of_every_connection_unwrapped() -> None:
    registry = slow_registry()

    async def raise_inside(connection: object) -> None:
        async with connection as entered:  # type: ignore[attr-defined]
            await entered.wait_for_context(timeout=5)
            await entered.call_tool("boom", {})

    for make in (
        lambda end: AssistantFrameHost(end),
        lambda end: ReconnectingHost(lambda: _ready(end), name="again"),
    ):
        host_end, frame_end = memory_pair()
        caught: BaseException | None = None
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(AssistantFrameProvider(registry).serve, frame_end)
                try:
                    await raise_inside(make(host_end))
                except BaseException as exc:
                    caught = exc
                tg.cancel_scope.cancel()
        assert type(caught) is ToolCallError, repr(caught)


class _ready:
    """An async context manager yielding an already-open transport (a Connector)."""

    def __init__(self, end: object) -> None:
        self.end = end

    async def __aenter__(self) -> object:
        return self.end

    async def __aexit__(self, *exc: object) -> None:
        return None


def test_errors_come_out_of_own_stdio_unwrapped() -> None:
    code = textwrap.dedent(
        """
        import anyio
        from assistant_frames import ToolCallError
        from assistant_frames.transports import own_stdio

        async def main():
            try:
                async with own_stdio():
                    raise ToolCallError("inside")
            except ToolCallError as exc:
                import sys
                print("caught", type(exc).__name__, exc.message, file=sys.stderr)

        anyio.run(main)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "caught ToolCallError inside" in done.stderr


async def test_a_call_before_the_first_context_says_what_is_missing() -> None:
    host_end, frame_end = memory_pair()
    parent = ModelContextRegistry()
    with anyio.fail_after(10):
        async with AssistantFrameHost(host_end, name="calculator") as host:
            parent.add_provider(host, namespace="calc")  # no wait_for_context(): forgotten
            with pytest.raises(ToolNotFoundError) as caught:
                await parent.get_model_context().call_tool("calc_add", {"a": 1, "b": 2})
            assert "no context from 'calculator' yet" in caught.value.message
            assert "wait_for_context()" in caught.value.message
            async with anyio.create_task_group() as tg:  # the frame turns up: no hint left
                tg.start_soon(AssistantFrameProvider(slow_registry()).serve, frame_end)
                await host.wait_for_context(timeout=5)
                assert parent.get_model_context().waiting == ()
                with pytest.raises(ToolNotFoundError) as later:
                    await parent.get_model_context().call_tool("calc_add", {})
                assert later.value.message == 'Tool "calc_add" not found'
                tg.cancel_scope.cancel()


async def test_no_context_is_a_library_timeout_with_a_message() -> None:
    host_end, _silent = memory_pair()
    with anyio.fail_after(10):
        async with AssistantFrameHost(host_end, name="mute") as host:
            with pytest.raises(ContextTimeout) as caught:
                await host.wait_for_context(timeout=0.1)
    error = caught.value
    assert isinstance(error, TimeoutError)
    assert error.frame == "mute"
    assert error.message.startswith("No model context from mute within 0.1 s")
    assert "frame" in error.message
    assert str(error) == error.message


async def test_an_mcp_frame_names_itself_in_its_errors(anyio_backend: str) -> None:
    from assistant_frames.mcp import MCPContextServer, MCPFrameHost

    server = MCPContextServer(slow_registry())
    with anyio.fail_after(15):
        async with (
            server.running(),
            MCPFrameHost(server.server, name="remote", timeout=0.2) as frame,
        ):
            with pytest.raises(ToolCallError) as timed_out:
                await frame.call_tool("slow", {})
            with pytest.raises(ToolCallError) as failed:
                await frame.call_tool("boom", {})
        with pytest.raises(ToolCallError) as closed:
            await frame.call_tool("boom", {})
    assert isinstance(timed_out.value, ToolCallTimeout)
    assert (timed_out.value.tool_name, timed_out.value.frame) == ("slow", "remote")
    assert (failed.value.message, failed.value.frame) == ("no such thing", "remote")
    assert isinstance(closed.value, FrameDisconnected)
    assert (closed.value.tool_name, closed.value.frame) == ("boom", "remote")


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        (ToolCallError("boom", tool_name="add", frame="calc"), 'Tool "add" of calc: boom'),
        (ToolCallError("boom", tool_name="add"), 'Tool "add": boom'),
        (ToolCallError("boom", frame="calc"), "calc: boom"),
        (ToolCallError("boom"), "boom"),
        (ToolNotFoundError("add"), 'Tool "add" not found'),  # named already
        (
            FrameDisconnected("calc disconnected", tool_name="add", frame="calc"),
            'Tool "add": calc disconnected',
        ),
    ],
)
def test_an_error_says_which_tool_of_which_frame(error: ToolCallError, shown: str) -> None:
    assert str(error) == shown
    assert error.message in shown  # what a model reads stays the bare message


WORKER_THAT_DIES = """
import os
import anyio
from assistant_frames import ModelContextRegistry
from assistant_frames.frames import serve_stdio

registry = ModelContextRegistry()
registry.add_tool("die", lambda: os._exit(3))
anyio.run(serve_stdio, registry)
"""


async def test_a_killed_worker_names_the_tool_and_the_frame_once_and_briefly(
    tmp_path: Path,
) -> None:
    script = tmp_path / "dies.py"
    script.write_text(WORKER_THAT_DIES)
    async with connect(str(script)) as frame:
        with pytest.raises(FrameDisconnected) as caught:
            await frame.call_tool("die")
    text = str(caught.value)
    assert text.startswith(f'Tool "die": worker `{os.path.basename(sys.executable)} {script}`')
    assert text.endswith("exited with code 3")
    assert os.path.dirname(sys.executable) not in text  # no interpreter path
    assert text.count(str(script)) == 1  # the command is written once
