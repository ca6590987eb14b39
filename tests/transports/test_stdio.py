"""Worker subprocesses over stdio: real ``sys.executable`` children speaking newline-delimited JSON.

The worker scripts are written into ``tmp_path``. A real worker serves a registry with
``anyio.run(serve_stdio, ...)`` on the same anyio backend as the test; a *raw* worker speaks
the wire protocol by hand, so it can put garbage on its stdout.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from assistant_frames import AssistantFrameHost, FrameDisconnected
from assistant_frames.transports import WorkerTransport, spawn_worker

from helpers import Outcome, wait_until

pytestmark = pytest.mark.anyio

TRANSPORT_LOGGER = "assistant_frames.transports"
CALL_TIMEOUT = 30.0  # far above every bound the tests assert on

WORKER = r'''
"""A stdio worker: python worker.py BACKEND [print-at-import] [partial-at-import]
[fd-write-at-import] [max-line=N]."""
import functools
import os
import subprocess
import sys

import anyio

from assistant_frames import ModelContextRegistry
from assistant_frames.frames import serve_stdio

backend, options = sys.argv[1], sys.argv[2:]
if "print-at-import" in options:
    print("printed at import")
if "partial-at-import" in options:
    sys.stdout.write("written at import without a newline")
if "fd-write-at-import" in options:
    os.write(1, b"os.write at import without a newline")
max_line = 16 * 1024 * 1024
for option in options:
    if option.startswith("max-line="):
        max_line = int(option.split("=")[1])

registry = ModelContextRegistry()
registry.add_instruction("A worker.")


@registry.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@registry.tool
def noisy(text: str) -> str:
    """Write to stdout in every way there is, then return the text."""
    print("print from a tool:", text)
    sys.stdout.flush()
    os.write(1, b"os.write to fd 1 from a tool\n")
    subprocess.run(["echo", "echo from a child process"], check=True)
    print("stderr from a tool", file=sys.stderr, flush=True)
    return text


@registry.tool
async def hang(marker: str) -> None:
    """Say so on stderr, then never return."""
    print(marker, file=sys.stderr, flush=True)
    await anyio.sleep_forever()


@registry.tool
def pid() -> int:
    """The worker's process id."""
    return os.getpid()


@registry.tool
def where() -> dict:
    """The worker's WORKER_MARK variable and working directory."""
    return {"mark": os.environ.get("WORKER_MARK"), "cwd": os.getcwd()}


anyio.run(functools.partial(serve_stdio, registry, max_message_bytes=max_line), backend=backend)
print("worker finished", file=sys.stderr, flush=True)
'''

RAW_WORKER = r'''
"""A frame written by hand: python raw_worker.py MODE. Puts garbage on its stdout."""
import json
import sys

CHANNEL = "assistant-ui-frame"
out = sys.stdout


def send(message):
    out.write(json.dumps({"channel": CHANNEL, "message": message}) + "\n")
    out.flush()


def receive():
    line = sys.stdin.readline()
    return json.loads(line)["message"] if line else None


mode = sys.argv[1]
assert receive()["type"] == "model-context-request"
context = {"tools": {"ping": {"description": "Ping.", "parameters": {"type": "object"}}}}
if mode == "garbage":
    out.write("not json at all\n")
    out.write('{"channel": "assistant-ui-frame", "message": \n')  # truncated JSON
    out.write("\n")
    out.write("[1, 2, 3]\n")  # JSON, but not a frame message: ignored silently
    out.write("x" * 200_000 + "\n")  # longer than the host's max_message_bytes, across reads
    too_long = {"type": "model-context-update", "context": {"system": "y" * 150_000}}
    out.write(json.dumps({"channel": CHANNEL, "message": too_long}) + "\n")
    out.write("\xff\xfe not utf-8\n")
    out.flush()
send({"type": "model-context-update", "context": context})
if mode == "partial":
    assert receive()["type"] == "model-context-subscribe"
    out.write('{"channel": "assistant-ui-frame", "message": {"type": "model-con')
    out.flush()
    sys.exit(0)
while True:
    message = receive()
    if message is None:
        break
    if message["type"] == "tool-call":
        out.write("noise before a result\n")
        send({"type": "tool-result", "id": message["id"], "result": "pong"})
'''


# -- helpers -----------------------------------------------------------------------------------


@pytest.fixture
def worker(tmp_path: Path, anyio_backend: str) -> Callable[..., list[str]]:
    """``worker(*options)``: the command line of a real worker on the test's backend."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)

    def command(*options: str) -> list[str]:
        return [sys.executable, str(script), anyio_backend, *options]

    return command


@pytest.fixture
def raw_worker(tmp_path: Path) -> Callable[[str], list[str]]:
    """``raw_worker(mode)``: the command line of a hand-written frame."""
    script = tmp_path / "raw_worker.py"
    script.write_text(RAW_WORKER)
    return lambda mode: [sys.executable, str(script), mode]


def script(tmp_path: Path, name: str, source: str) -> list[str]:
    path = tmp_path / name
    path.write_text(source)
    return [sys.executable, str(path)]


@asynccontextmanager
async def worker_host(
    command: list[str], **options: Any
) -> AsyncIterator[tuple[AssistantFrameHost, WorkerTransport]]:
    """A host on a spawned worker (stderr captured unless told otherwise)."""
    options.setdefault("stderr", "capture")
    async with (
        spawn_worker(command, **options) as transport,
        AssistantFrameHost(transport, timeout=CALL_TIMEOUT, name="worker") as host,
    ):
        yield host, transport


def assert_reaped(pid: int) -> None:
    """The child has exited and been waited for: no zombie is left behind."""
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert not Path(f"/proc/{pid}").exists()


# -- a worker serving a registry ---------------------------------------------------------------


async def test_context_and_calls(worker: Callable[..., list[str]]) -> None:
    with anyio.fail_after(15):
        async with worker_host(worker()) as (host, transport):
            context = await host.wait_for_context(timeout=10)
            assert context.system == "A worker."
            assert set(context.tools) == {"add", "noisy", "hang", "pid", "where"}
            assert context.tools["add"].description == "Add two numbers."
            assert await host.call_tool("add", {"a": 2, "b": 3}) == 5
            assert await context.call_tool("add", {"a": 40, "b": 2}) == 42
            assert await host.call_tool("pid", {}) == transport.pid
            results = {}

            async def call(i: int) -> None:
                results[i] = await host.call_tool("add", {"a": i, "b": i})

            async with anyio.create_task_group() as tg:
                for i in range(100):
                    tg.start_soon(call, i)
            assert results == {i: 2 * i for i in range(100)}
            assert transport.returncode is None
        pid = transport.pid
    assert transport.returncode == 0  # stdin closed: the worker finished on its own
    assert "worker finished" in transport.stderr_tail()
    assert_reaped(pid)


async def test_env_and_cwd(worker: Callable[..., list[str]], tmp_path: Path) -> None:
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    env = {**os.environ, "WORKER_MARK": "marked"}
    with anyio.fail_after(15):
        async with worker_host(worker(), env=env, cwd=workdir) as (host, _):
            await host.wait_for_context(timeout=10)
            where = await host.call_tool("where", {})
            assert where == {"mark": "marked", "cwd": str(workdir)}


async def test_stdout_writes_in_a_tool_do_not_corrupt_the_channel(
    worker: Callable[..., list[str]],
) -> None:
    with anyio.fail_after(15):
        async with worker_host(worker()) as (host, transport):
            await host.wait_for_context(timeout=10)
            for i in range(3):
                assert await host.call_tool("noisy", {"text": f"hi {i}"}) == f"hi {i}"
            assert await host.call_tool("add", {"a": 1, "b": 2}) == 3
            tail = transport.stderr_tail()
            # everything written to stdout went to stderr instead
            assert "print from a tool: hi 2" in tail
            assert "os.write to fd 1 from a tool" in tail
            assert "echo from a child process" in tail
            assert "stderr from a tool" in tail


async def test_print_at_import_is_dropped_with_a_warning(
    worker: Callable[..., list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=TRANSPORT_LOGGER)
    with anyio.fail_after(15):
        async with worker_host(worker("print-at-import")) as (host, _):
            await host.wait_for_context(timeout=10)
            assert await host.call_tool("add", {"a": 1, "b": 2}) == 3
    drops = [r.getMessage() for r in caplog.records if r.name == TRANSPORT_LOGGER]
    assert len(drops) == 1
    assert "printed at import" in drops[0]


@pytest.mark.parametrize("option", ["partial-at-import", "fd-write-at-import"])
async def test_stdout_write_without_newline_before_serving_does_not_eat_the_first_message(
    worker: Callable[..., list[str]], option: str
) -> None:
    """Text left on stdout before ``serve_stdio`` must not glue onto the first JSON line."""
    with anyio.fail_after(15):
        async with worker_host(worker(option)) as (host, _):
            context = await host.wait_for_context(timeout=2)
            assert "add" in context.tools


async def test_stderr_is_passed_through(
    worker: Callable[..., list[str]], capfd: pytest.CaptureFixture[str]
) -> None:
    with anyio.fail_after(15):
        async with worker_host(worker(), stderr="inherit") as (host, transport):
            await host.wait_for_context(timeout=10)
            assert await host.call_tool("noisy", {"text": "pass me"}) == "pass me"
            await wait_until(lambda: "stderr from a tool" in transport.stderr_tail())
    err = capfd.readouterr().err
    assert "print from a tool: pass me" in err
    assert "stderr from a tool" in err
    assert "worker finished" in err


# -- workers that die, hang or never start -----------------------------------------------------


async def test_sigkill_mid_call_fails_the_call_at_once(worker: Callable[..., list[str]]) -> None:
    with anyio.fail_after(15):
        async with worker_host(worker()) as (host, transport):
            await host.wait_for_context(timeout=10)
            pid = transport.pid
            outcomes = [Outcome(), Outcome()]
            async with anyio.create_task_group() as tg:
                tg.start_soon(outcomes[0].run, host, "hang", {"marker": "hanging now"})
                tg.start_soon(outcomes[1].run, host, "hang", {"marker": "me too"})
                await wait_until(
                    lambda: (
                        "hanging now" in transport.stderr_tail()
                        and "me too" in transport.stderr_tail()
                    )
                )
                started = anyio.current_time()
                os.kill(pid, signal.SIGKILL)
                with anyio.fail_after(5):
                    for outcome in outcomes:
                        await outcome.done.wait()
            assert anyio.current_time() - started < 2.5  # the call timeout is 30 s
            for outcome in outcomes:
                error = outcome.error
                assert isinstance(error, FrameDisconnected), error
                message = error.message
                assert message.startswith("worker disconnected: ")
                assert re.search(
                    rf"worker process {pid} \(`python\S* \S+ \w+`\) was killed by SIGKILL", message
                )
                assert "hanging now" in message  # the end of its stderr
                assert error.returncode == -signal.SIGKILL
                assert error.stderr_tail is not None
                assert "hanging now" in error.stderr_tail
            assert outcomes[0].error is not outcomes[1].error  # each caller its own
            assert transport.returncode == -signal.SIGKILL
            assert host.state == "disconnected"
            assert host.get_model_context().tools == {}
    assert_reaped(pid)


async def test_worker_that_exits_at_once(tmp_path: Path) -> None:
    command = script(
        tmp_path, "exit3.py", "import sys\nprint('bad config', file=sys.stderr)\nsys.exit(3)\n"
    )
    with anyio.fail_after(15):
        async with worker_host(command) as (host, transport):
            started = anyio.current_time()
            with pytest.raises(FrameDisconnected) as info:
                await host.wait_for_context(timeout=10)
            assert anyio.current_time() - started < 5
            message = str(info.value)
            shown = f"`{Path(command[0]).name} {command[1]}`"  # the program's name, not its path
            assert f"worker process {transport.pid} ({shown})" in message
            assert "exited with code 3" in message
            assert "bad config" in message
            assert transport.returncode == 3
            with pytest.raises(FrameDisconnected, match="code 3"):
                await host.call_tool("add", {"a": 1, "b": 2})
    assert_reaped(transport.pid)


async def test_worker_that_never_answers_times_out_and_is_shut_down(tmp_path: Path) -> None:
    command = script(tmp_path, "mute.py", "import sys\nfor line in sys.stdin:\n    pass\n")
    with anyio.fail_after(15):
        async with spawn_worker(command, stderr="capture") as transport:
            async with AssistantFrameHost(transport, timeout=CALL_TIMEOUT) as host:
                started = anyio.current_time()
                with pytest.raises(TimeoutError):
                    await host.wait_for_context(timeout=0.3)
                assert 0.25 <= anyio.current_time() - started < 3
            # closing the host closed the worker's stdin: it finishes by itself
            with anyio.fail_after(5):
                await transport.process.wait()
            assert transport.returncode == 0
    assert_reaped(transport.pid)


async def test_worker_that_ignores_stdin_eof_gets_sigterm(tmp_path: Path) -> None:
    command = script(
        tmp_path,
        "sleeper.py",
        "import sys, time\nprint('ready', file=sys.stderr, flush=True)\ntime.sleep(60)\n",
    )
    with anyio.fail_after(15):
        async with spawn_worker(command, stderr="capture", grace_period=0.2) as transport:
            await wait_until(lambda: "ready" in transport.stderr_tail())
            started = anyio.current_time()
        assert anyio.current_time() - started < 3
    assert transport.returncode == -signal.SIGTERM
    assert_reaped(transport.pid)


async def test_worker_that_ignores_sigterm_gets_sigkill(tmp_path: Path) -> None:
    command = script(
        tmp_path,
        "stubborn.py",
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', file=sys.stderr, flush=True)\n"
        "for _ in range(600):\n"
        "    time.sleep(0.1)\n",
    )
    with anyio.fail_after(15):
        async with spawn_worker(command, stderr="capture", grace_period=0.2) as transport:
            await wait_until(lambda: "ready" in transport.stderr_tail())
            started = anyio.current_time()
        elapsed = anyio.current_time() - started
    assert 0.3 <= elapsed < 3  # two grace periods, then SIGKILL
    assert transport.returncode == -signal.SIGKILL
    assert_reaped(transport.pid)


async def test_body_that_raises_still_reaps_the_worker(tmp_path: Path) -> None:
    command = script(tmp_path, "sleeper.py", "import time\ntime.sleep(60)\n")
    pids: list[int] = []
    raised = False
    with anyio.fail_after(15):
        try:
            async with spawn_worker(command, stderr="capture", grace_period=0.2) as transport:
                pids.append(transport.pid)
                raise KeyError("boom")
        except* KeyError:
            raised = True
    assert raised
    assert transport.returncode == -signal.SIGTERM
    assert_reaped(pids[0])


async def test_command_not_found() -> None:
    missing = "/nonexistent/assistant-frames-worker"
    with anyio.fail_after(5), pytest.raises(FileNotFoundError) as info:
        async with spawn_worker([missing]):
            pytest.fail("the command does not exist")
    assert isinstance(info.value, OSError)
    assert missing in str(info.value)


async def test_command_must_be_a_sequence() -> None:
    with pytest.raises(TypeError, match="sequence of arguments"):
        async with spawn_worker("python worker.py"):  # type: ignore[arg-type]
            pytest.fail("a string is not a command line")


# -- garbage -----------------------------------------------------------------------------------


async def test_garbage_on_the_workers_stdout_is_dropped(
    raw_worker: Callable[[str], list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=TRANSPORT_LOGGER)
    with anyio.fail_after(15):
        async with worker_host(raw_worker("garbage"), max_message_bytes=100_000) as (host, _):
            context = await host.wait_for_context(timeout=10)
            assert set(context.tools) == {"ping"}
            assert context.system is None  # the over-long update was dropped
            for _ in range(3):
                assert await host.call_tool("ping", {}) == "pong"
    drops = [r for r in caplog.records if r.name == TRANSPORT_LOGGER and "Dropped" in r.message]
    assert [r.levelno for r in drops if r.levelno >= logging.WARNING] == [logging.WARNING]
    assert "not json at all" in drops[0].getMessage()
    messages = [r.getMessage() for r in drops]
    assert sum("longer than 100000 bytes" in m for m in messages) == 2
    assert sum("not JSON" in m for m in messages) >= 3 + 3  # + 3 noise lines


async def test_partial_line_at_exit_is_dropped_with_a_warning(
    raw_worker: Callable[[str], list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=TRANSPORT_LOGGER)
    with anyio.fail_after(15):
        async with worker_host(raw_worker("partial")) as (host, transport):
            await host.wait_for_context(timeout=10)
            with anyio.fail_after(5):
                await host.wait_disconnected()
            assert host.state == "disconnected"
            assert transport.returncode == 0
            with pytest.raises(FrameDisconnected, match="exited with code 0"):
                await host.call_tool("ping", {})
    drops = [r.getMessage() for r in caplog.records if r.name == TRANSPORT_LOGGER]
    assert any("partial line" in m for m in drops), drops


async def test_garbage_on_the_workers_stdin_is_dropped(worker: Callable[..., list[str]]) -> None:
    with anyio.fail_after(15):
        async with spawn_worker(worker("max-line=1000"), stderr="capture") as transport:
            # The worker's stdin: process.stdin, or under trio the transport's own pipe.
            stdin = transport.process.stdin or transport._send_stream
            await stdin.send(
                b"not json\n"
                b"\xff\xfe\x00 binary\n"
                b"\n"
                b'{"channel": "assistant-ui-frame", "message": {"type": "bogus"}}\n'
                b'{"channel": "assistant-ui-frame", "message": {"type": "tool-call", "id": 5}}\n'
                + b"z" * 5000
                + b"\n"
            )
            async with AssistantFrameHost(transport, timeout=CALL_TIMEOUT) as host:
                await host.wait_for_context(timeout=10)
                assert await host.call_tool("add", {"a": 20, "b": 22}) == 42
                # a long line, even split over many writes, is skipped to its end
                await stdin.send(b"[" + b"1," * 2000)
                await stdin.send(b"1]\n")
                assert await host.call_tool("add", {"a": 1, "b": 1}) == 2
            tail = transport.stderr_tail()
            assert "Dropped a line that is not JSON: b'not json'" in tail
        assert transport.returncode == 0  # it kept serving until its stdin closed


def test_serve_stdio_from_its_former_home_warns_and_is_the_same_function() -> None:
    import assistant_frames.transports as transports
    from assistant_frames.frames import serve_stdio

    moved = r"import serve_stdio from assistant_frames\.frames"
    with pytest.warns(DeprecationWarning, match=moved):
        assert transports.serve_stdio is serve_stdio
    with pytest.warns(DeprecationWarning, match=moved):  # on every use, not only the first
        from assistant_frames.transports import serve_stdio as again
    assert again is serve_stdio
    assert "serve_stdio" in transports.__all__
    assert not hasattr(importlib.import_module("assistant_frames.transports.stdio"), "serve_stdio")


@pytest.mark.parametrize(
    ("stdin", "stdout", "said"),
    [
        ("devnull", "pipe", "stdin is a device that is not a terminal"),
        ("file", "pipe", "stdin is a regular file"),
        ("pipe", "file", "stdout is a regular file"),
    ],
)
async def test_a_worker_whose_stdio_is_no_pipe_says_so_and_exits(
    worker: Callable[..., list[str]], tmp_path: Path, stdin: str, stdout: str, said: str
) -> None:
    """An event loop cannot wait on a regular file or /dev/null: the worker fails at once
    saying why, instead of waiting for ever on a read that is never woken."""
    import subprocess

    requests = tmp_path / "requests.ndjson"
    requests.write_text('{"type": "ping"}\n')
    with requests.open("rb") as file_in, (tmp_path / "out.ndjson").open("wb") as file_out:
        streams = {"devnull": subprocess.DEVNULL, "file_in": file_in, "pipe": subprocess.PIPE}
        with anyio.fail_after(20):  # without the check, the /dev/null worker never ends
            process = await anyio.run_process(
                worker(),
                stdin=streams["file_in" if stdin == "file" else stdin],
                stdout=file_out if stdout == "file" else subprocess.PIPE,
                check=False,
            )
    assert process.returncode == 1
    assert f"ConnectError: The worker's {said}" in process.stderr.decode()
