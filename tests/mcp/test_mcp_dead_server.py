"""A stdio MCP server that dies says how: its exit code and the end of its stderr.

The server is the ``mcp`` SDK's ``MCPServer`` in a real subprocess (``SERVER``, written into
``tmp_path``): at connect (it exits before answering), while listing its tools, and in the
middle of a call (it exits on its own, or is SIGKILLed). The error that pending and new
calls raise, the frame's ``disconnect_error`` and the ``ConnectError`` all carry
``returncode`` and ``stderr_tail``, and say both in their message. Every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from assistant_frames import ConnectError, FrameDisconnected
from assistant_frames.mcp import MCPFrameHost

from helpers import wait_until

pytestmark = pytest.mark.anyio

WAIT = 15.0
GONE_WITHIN = 3.0  # a dead server's pending call fails within this

SERVER = """
import os
import sys
import time

from mcp.server.mcpserver import MCPServer

if os.environ.get("CRASH_AT_START"):
    print("config error: no such database", file=sys.stderr, flush=True)
    sys.exit(3)

server = MCPServer("mortal")


@server.tool()
def pid() -> int:
    return os.getpid()


@server.tool()
def crash(code: int) -> str:
    print(f"fatal: giving up with {code}", file=sys.stderr, flush=True)
    os._exit(code)


@server.tool()
def sleep(seconds: float) -> str:
    print("sleeping", file=sys.stderr, flush=True)
    open("started", "w").close()
    time.sleep(seconds)
    return "slept"


server.run("stdio")
"""


@pytest.fixture
def server(tmp_path: Path) -> list[str]:
    (tmp_path / "server.py").write_text(SERVER, encoding="utf-8")
    return [sys.executable, str(tmp_path / "server.py")]


def assert_says_why(error: FrameDisconnected | ConnectError, code: int, stderr: str) -> None:
    assert error.returncode == code
    assert error.stderr_tail is not None
    assert stderr in error.stderr_tail
    assert f"code {code}" in str(error)
    assert stderr in str(error)


async def test_a_server_that_exits_mid_call(server: list[str]) -> None:
    async with MCPFrameHost(server, name="mortal", timeout=WAIT) as frame:
        started = time.monotonic()
        with anyio.fail_after(WAIT), pytest.raises(FrameDisconnected) as pending:
            await frame.call_tool("crash", {"code": 7})
        assert time.monotonic() - started < GONE_WITHIN
        assert_says_why(pending.value, 7, "fatal: giving up with 7")
        assert "The MCP server mortal went away: it exited with code 7" in str(pending.value)

        assert frame.state == "disconnected"
        assert frame.disconnect_error is not None
        assert_says_why(frame.disconnect_error, 7, "fatal: giving up with 7")
        assert dict(frame.get_model_context().tools) == {}
        with pytest.raises(FrameDisconnected) as later:  # new calls: the same story
            await frame.call_tool("pid")
        assert_says_why(later.value, 7, "fatal: giving up with 7")
        with pytest.raises(FrameDisconnected) as waited:
            await frame.wait_for_context()
        assert waited.value.returncode == 7


async def test_a_server_killed_mid_call(server: list[str], tmp_path: Path) -> None:
    started = tmp_path / "started"
    async with MCPFrameHost(server, cwd=tmp_path, timeout=WAIT) as frame:
        pid = (await frame.call_tool("pid"))["result"]  # MCPServer wraps an int
        failure: list[FrameDisconnected] = []

        async def call() -> None:
            with pytest.raises(FrameDisconnected) as info:
                await frame.call_tool("sleep", {"seconds": 60})
            failure.append(info.value)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:
                group.start_soon(call)
                await wait_until(started.exists, WAIT)
                os.kill(pid, signal.SIGKILL)
        (error,) = failure
        assert error.returncode == -signal.SIGKILL
        assert "killed by SIGKILL" in str(error)
        assert error.stderr_tail is not None
        assert "sleeping" in error.stderr_tail
        assert frame.disconnect_error is not None
        assert frame.disconnect_error.returncode == -signal.SIGKILL


async def test_a_server_that_exits_before_answering(server: list[str]) -> None:
    frame = MCPFrameHost(server, name="`broken`", env={"CRASH_AT_START": "1"})
    with anyio.fail_after(WAIT), pytest.raises(ConnectError) as info:
        async with frame:
            pytest.fail("entered")
    assert_says_why(info.value, 3, "config error: no such database")
    message = str(info.value)
    assert message.startswith("Cannot connect to the MCP server `broken`: it exited with code 3")
    assert "Connection closed" not in message
    assert frame.state == "closed"


async def test_a_command_that_is_not_a_server(tmp_path: Path) -> None:
    code = "import sys; print('usage: nothing here', file=sys.stderr); sys.exit(2)"
    with anyio.fail_after(WAIT), pytest.raises(ConnectError) as info:
        async with MCPFrameHost([sys.executable, "-c", code]):
            pytest.fail("entered")
    assert_says_why(info.value, 2, "usage: nothing here")


def test_the_cli_names_a_dead_mcp_server_once(tmp_path: Path) -> None:
    code = "import sys; sys.exit('config error: no such database')"  # exit code 1
    server = [sys.executable, "-c", code]
    result = subprocess.run(
        [sys.executable, "-m", "assistant_frames", "inspect", "--mcp", "--", *server],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "MCP server MCP server" not in result.stderr
    assert "Cannot connect to the MCP server `" in result.stderr
    assert "it exited with code 1" in result.stderr
    assert "config error: no such database" in result.stderr


WRAPPER = """
import subprocess
import sys

# Like npx: start the real server with our stdio, and a helper of its own that ignores
# SIGTERM and stdin; write the helper's pid down; wait for the server.
helper = subprocess.Popen(
    [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
     "signal.SIG_IGN); time.sleep(60)"],
    stdin=subprocess.DEVNULL,
)
with open("helper.pid", "w") as file:
    file.write(str(helper.pid))
sys.exit(subprocess.call([sys.executable, sys.argv[1]]))
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie counts as gone: it has exited, only its parent has not reaped it yet.
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().split(") ")[-1][0] != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
async def test_what_a_wrapper_started_goes_with_the_server(
    server: list[str], tmp_path: Path
) -> None:
    (tmp_path / "wrapper.py").write_text(WRAPPER, encoding="utf-8")
    command = [sys.executable, str(tmp_path / "wrapper.py"), server[1]]
    with anyio.fail_after(WAIT):
        async with MCPFrameHost(command, name="wrapped", timeout=WAIT, cwd=tmp_path) as frame:
            assert await frame.call_tool("pid")
            pid_file = tmp_path / "helper.pid"
            await wait_until(lambda: pid_file.exists() and pid_file.read_text() != "", WAIT)
            helper = int(pid_file.read_text())
            assert _alive(helper)
        await wait_until(lambda: not _alive(helper), 5.0)
