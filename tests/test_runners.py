"""Every public entry point, run as a real program under each runner a user picks.

Each scenario in ``tests/runners/`` is a standalone script whose ``async def main()``
``tests/runners/launch.py`` runs with exactly ``asyncio.run``, ``uvloop.run`` or
``trio.run`` (never ``anyio.run``, and it checks that nothing set up what anyio's runner
would), in a subprocess: pytest's anyio plugin cannot be what makes them pass. A script
prints ``RESULT <name> = <json>`` for each thing it checked; the test compares every one
of them with what it expects. The FastAPI app in ``uvicorn_app.py`` is served by the
uvicorn command line, on its asyncio and its uvloop loop, and driven over real HTTP.

Every subprocess is bounded: one that hangs is killed with all of its children, and the
test fails with what it printed so far.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from nats_support import NATSServer

RUNNERS_DIR = Path(__file__).with_name("runners")
LAUNCH = RUNNERS_DIR / "launch.py"
RUNNERS = ("asyncio", "uvloop", "trio")
SCENARIO_TIMEOUT = 60.0  # each takes 2-7 s alone; two at once on a busy 2-core machine
STOP_TIMEOUT = 15.0  # uvicorn's graceful shutdown, the federation's members included


#: How the interpreter shows in a worker's name: its file name (``python`` under
#: ``python -m pytest``, ``python3`` under a venv's ``pytest`` script).
PYTHON = Path(sys.executable).name


def worker_command(runner: str) -> str:
    """How a worker started by launched("worker_frame.py") shows in error messages."""
    return f"{PYTHON} {LAUNCH} {runner} {RUNNERS_DIR / 'worker_frame.py'}"


# -- running a scenario ------------------------------------------------------------------


class Finished:
    """What a scenario printed, and how it ended."""

    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
        self.results: dict[str, Any] = {}
        for line in stdout.splitlines():
            if line.startswith("RESULT "):
                name, value = _split_result(line[len("RESULT ") :])
                assert name not in self.results, f"{name!r} reported twice"
                self.results[name] = value

    def __repr__(self) -> str:
        return f"exit code {self.code}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def _split_result(text: str) -> tuple[str, Any]:
    """``"<name> = <json>"``."""
    name, equals, value = text.partition(" = ")
    assert equals, f"not a result line: {text!r}"
    return name, json.loads(value)


def _output_so_far(process: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        return process.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a grandchild holds the pipes open
        return "", ""


@contextmanager
def _session(command: list[str], cwd: Path, **options: Any) -> Iterator[subprocess.Popen[str]]:
    """Run ``command`` in a session of its own; whatever is left of it (its workers
    too) is killed on the way out."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **options,
    )
    try:
        yield process
    finally:
        with suppress(ProcessLookupError):  # the session has ended
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def run_scenario(script: str, runner: str, cwd: Path, *args: str) -> Finished:
    """Run ``tests/runners/<script>`` under ``runner``; fail if it takes too long."""
    command = [sys.executable, str(LAUNCH), runner, str(RUNNERS_DIR / script), *args]
    with _session(command, cwd) as process:
        try:
            stdout, stderr = process.communicate(timeout=SCENARIO_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = _output_so_far(process)
            pytest.fail(
                f"{script} under {runner} did not finish in {SCENARIO_TIMEOUT:g} s\n"
                f"--- stdout\n{stdout}\n--- stderr\n{stderr}"
            )
    return Finished(process.returncode, stdout, stderr)


def check(finished: Finished, expected: dict[str, Any]) -> None:
    """It ended well, reported exactly ``expected``, and nothing failed on the side
    (a callback's traceback in a log, a coroutine never awaited)."""
    assert finished.code == 0, finished
    assert finished.results == expected, finished
    assert "Traceback" not in finished.stderr, finished
    assert "never awaited" not in finished.stderr, finished


# -- the scenarios -------------------------------------------------------------------------

CALC_TOOLS = ["add", "count", "fail", "nap", "pause", "pid"]


def frames_expected(runner: str) -> dict[str, Any]:
    return {
        "memory add": 5,
        "memory count": 3,
        "memory count events": [[3, 3], True, []],
        "ws http file": [200, "hello from the frame server"],
        "ws http missing": 404,
        "ws system": "ws: use add for sums.",
        "ws add": 42,
        "ws pause": ["slept 0.01", [[1, 1], True, [["info", "done sleeping"]]]],
        "ws count": [2, [[2, 2], True, []]],
        "ws fail": ["ToolCallError", "no reason", "fail", "ws"],
        "ws timeout": "ToolCallTimeout",
        "connect_websocket add": 2,
        "live tool added": 42,
        "live changes as patches": 2,
        "live burst as patches": [True, 15, True],
        "frame loaded": [32, True, "ws: use add for sums.", 4],
        "ws wrong token": "HandshakeRejected",
        "nap timeout": "ToolCallTimeout",
        "after an abandoned thread": [2, 0],
        "listener add": 7,
        "worker add": 11,
        "worker count": [3, [[3, 3], True, []]],
        "script worker": ["script: use add for sums.", 10],
        "command string worker": "string: use add for sums.",
        "federation tools": sorted(
            f"{member}_{tool}" for member in ("local", "worker", "ws") for tool in CALC_TOOLS
        ),
        "federation ws add": 3,
        "federation local add": 4,
        "federation worker restarted": True,
        "federation worker add": 8,
        "federation states": ["connected", "connected", "connected"],
        "done": True,
    }


def workers_expected(runner: str) -> dict[str, Any]:
    workers = {
        f"worker on {worker}": [f"{worker}: use add for sums.", 3, 2, [[2, 2], True, []]]
        for worker in RUNNERS
    }
    return {
        **workers,
        "killed mid-call": [
            "FrameDisconnected",
            f"doomed disconnected: worker process PID (`{worker_command(runner)}`) was "
            "killed by SIGKILL (exit code -9)",
            "pause",
            "doomed",
        ],
        "not a frame": (
            "chatty sent no model context within 1 s (it wrote 1 line that is not JSON, "
            "the first: 'hello'): is it an assistant-frames frame?"
        ),
        "dies at once": (
            f"dies sent no model context: worker process PID (`{PYTHON} -c 'import sys; "
            "sys.stderr.write('\"'\"'no config\\n'\"'\"'); sys.exit(3)'`) exited with "
            "code 3; the end of its stderr:\nno config"
        ),
        "done": True,
    }


def mcp_expected(runner: str) -> dict[str, Any]:
    expected: dict[str, Any] = {
        "stdio tools": CALC_TOOLS,
        "stdio add": 7,
        "stdio count": [2, [[2, 2], True, []]],
        "stdio fail": ["ToolCallError", "on purpose", "fail", "stdio"],
        "http without token": 401,
        "http add": 8,
        # MCP sends log messages only at the levels the client asked for (none here).
        "http pause": ["slept 0.01", [[1, 1], True, []]],
        "http count": [2, [[2, 2], True, []]],
        "sdk shout": {"result": "HI"},
        "federation mcp member": 10,
        "federation over mcp": [2 * len(CALC_TOOLS), True, True],
        "federation over mcp add": 2,
        "done": True,
    }
    if runner == "trio":  # uvicorn runs on asyncio only; the server is another process
        del expected["federation over mcp"], expected["federation over mcp add"]
        expected["run_http under trio"] = (
            "RuntimeError: MCPContextServer.run_http needs asyncio (uvicorn runs on asyncio "
            "only), not trio: serve http_app() with an ASGI server that runs on trio (such "
            "as Hypercorn), or run this under asyncio"
        )
    return expected


def apps_expected(runner: str) -> dict[str, Any]:
    oslo = {"city": "Oslo", "time": "12:00"}
    return {
        "connect_app": [
            "dark",
            {"city": "Paris"},
            "Oslo selected",
            "The user is looking at Oslo.",
        ],
        "bridge over websocket": [
            "dark",
            {"city": "Oslo"},
            oslo,
            {"city": "Oslo", "time": "12:01"},
        ],
        "bridge over websocket ended": ["disconnected"],
        "view resolved": ["loading", True, True],
        "view": ["fullscreen", "Noon in Oslo.", True, True, True],
        "view closed": ["closed", ["https://time.example/oslo"]],
        "page html": [200, True],
        "page view": [oslo, True],
        "page closed": ["closed", ["ui/initialize"]],
        "done": True,
    }


def preview_expected(runner: str) -> dict[str, Any]:
    return {
        "preview page": [200, True],
        "preview hello": ["hello", "state", ["clock", "refresh"]],  # refresh: the app's own
        "preview view": {"city": "Rome", "time": "12:00"},
        "preview view html": [200, True],
        "preview exit": 0,
        "done": True,
    }


def widgets_expected(runner: str) -> dict[str, Any]:
    return {
        "globals": ["AUI_SET_GLOBALS", "dark", {"city": "Oslo"}],
        "callTool": {"city": "Oslo", "time": "12:01"},
        "setWidgetState": {"id": "2", "result": None, "type": "AUI_METHOD_RESPONSE"},
        "follow up": {"id": "3", "result": None, "type": "AUI_METHOD_RESPONSE"},
        "not granted": {
            "error": "Method not granted to this widget by its manifest: requestModal",
            "id": "4",
            "type": "AUI_METHOD_RESPONSE",
        },
        "changed globals": {"theme": "light"},
        "follow ups": [{"prompt": "More"}],
        "state after restart": {"hour": 12},
        "done": True,
    }


def dev_expected(runner: str) -> dict[str, Any]:
    return {
        "dev tools": ["calc_add", "worker_add"],
        "dev page html": [200, True],
        "dev members": ["calc", "worker"],
        "dev call": ["result", 2, True],
        "preview --call started": ["p1", "clock"],
        "preview --call view": {"city": "Lima", "time": "12:00"},
        "preview --call exit": 0,
        "done": True,
    }


SCENARIOS = {
    "frames.py": frames_expected,
    "workers.py": workers_expected,
    "mcp_frames.py": mcp_expected,
    "apps_views.py": apps_expected,
    "apps_preview.py": preview_expected,
    "widget_host.py": widgets_expected,
    "dev_page.py": dev_expected,
}


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("script", list(SCENARIOS))
def test_scenario(script: str, runner: str, tmp_path: Path) -> None:
    check(run_scenario(script, runner, tmp_path), SCENARIOS[script](runner))


NATS_ASYNCIO_ONLY = "NATS needs asyncio (nats-py runs on asyncio only), not trio"


@pytest.mark.parametrize("runner", RUNNERS)
def test_nats(runner: str, tmp_path: Path) -> None:
    """NATS under asyncio and uvloop; under trio, every piece says it needs asyncio."""
    server = NATSServer(tmp_path / "nats-server.log").start()
    try:
        finished = run_scenario("nats_frames.py", runner, tmp_path, server.url)
    finally:
        server.kill()
    if runner == "trio":
        expected: dict[str, Any] = {
            f"trio {piece}": NATS_ASYNCIO_ONLY
            for piece in ("NATSFrameProvider", "NATSFrameHost", "NATSDiscovery", "connect")
        }
        expected["trio Federation.add"] = f"RuntimeError: {NATS_ASYNCIO_ONLY}"
        expected["done"] = True
    else:
        expected = {
            "replica process": "serving",
            "host add": 42,
            "host count": [2, [[2, 2], True, []]],
            "host pause": ["slept 0.01", [[1, 1], True, [["info", "done sleeping"]]]],
            "calls spread over replicas": 2,  # 20 calls, 2 replicas: all on one is 1 in 500,000
            "discovery frames": ["calc"],
            "discovery add": 2,
            "connect frame add": 6,
            "connect bus add": 8,
            "federation add": 10,
            "replica exit": 0,
            "done": True,
        }
    check(finished, expected)


# -- a program that serves until Ctrl-C -----------------------------------------------------


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The first line ``process`` prints, read in a thread so that the wait is bounded."""
    stdout = process.stdout
    assert stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stdout.readline()))
    reader.start()
    reader.join(timeout)
    if not lines or not lines[0]:
        os.killpg(process.pid, signal.SIGKILL)
        reader.join(5)
        pytest.fail(f"no first line within {timeout:g} s\n" + "".join(_output_so_far(process)))
    return lines[0]


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_server_stops_on_ctrl_c(runner: str, tmp_path: Path) -> None:
    """A program that serves a ws frame beside a Federation with a worker answers a
    client (the command line), then stops promptly on SIGINT, its worker with it."""
    command = [sys.executable, str(LAUNCH), runner, str(RUNNERS_DIR / "serve_forever.py")]
    with _session(command, tmp_path) as server:
        info = json.loads(_first_line(server, SCENARIO_TIMEOUT))
        call = [sys.executable, "-m", "assistant_frames", "call", info["url"], "add"]
        call += ["--token", "forever", "--args", '{"a": 1, "b": 2}']
        called = subprocess.run(
            call, capture_output=True, text=True, timeout=SCENARIO_TIMEOUT, check=False
        )
        assert (called.returncode, called.stdout.strip()) == (0, "3"), called.stderr
        server.send_signal(signal.SIGINT)
        try:
            _, stderr = server.communicate(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            pytest.fail(
                f"still running {STOP_TIMEOUT:g} s after SIGINT\n"
                + "\n--- stderr\n".join(_output_so_far(server))
            )
        assert (server.returncode, stderr) == (130, "interrupted\n")
        with pytest.raises(ProcessLookupError):  # the federation stopped its worker
            os.kill(info["worker"], 0)


# -- a FastAPI app under uvicorn -------------------------------------------------------------


def _http(port: int, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status), json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return int(error.code), json.loads(error.read())


def _poll(what: str, check: Any, process: subprocess.Popen[str], timeout: float = 20.0) -> Any:
    """Call ``check()`` until it returns something true; fail saying ``what`` if not
    within ``timeout`` or if the server exits meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"uvicorn exited ({process.returncode}) before {what}:\n"
                + "".join(_output_so_far(process))
            )
        try:
            value = check()
        except OSError:  # not listening yet
            value = None
        if value:
            return value
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    pytest.fail(
        f"not within {timeout:g} s: {what}\n" + "\n--- stderr\n".join(_output_so_far(process))
    )


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_uvicorn_app(loop: str, tmp_path: Path) -> None:
    """``python -m uvicorn uvicorn_app:app --loop LOOP``: the lifespan's Federation of
    a ws frame and a worker answers tool calls from request handlers and over the MCP
    server mounted in the app, gets a killed worker back, and closes cleanly (its worker
    stopped) on SIGTERM."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        port = sock.getsockname()[1]
        command = [sys.executable, "-m", "uvicorn", "uvicorn_app:app"]
        command += ["--app-dir", str(RUNNERS_DIR), "--loop", loop, "--fd", str(sock.fileno())]
        with _session(command, tmp_path, pass_fds=[sock.fileno()]) as server:
            sock.close()  # uvicorn has its own copy
            _, tools = _poll("the app answers", lambda: _http(port, "/tools"), server)
            assert tools == {
                "system": "ws: use add for sums.\n\nworker: use add for sums.",
                "tools": sorted(f"{m}_{t}" for m in ("worker", "ws") for t in CALC_TOOLS),
            }
            assert _http(port, "/call/ws_add", {"a": 20, "b": 22}) == (
                200,
                {"result": 42, "events": [None, True, []]},
            )
            # Progress from sync tools' threads, in the worker and in this process.
            for member in ("worker", "ws"):
                assert _http(port, f"/call/{member}_count", {"n": 3}) == (
                    200,
                    {"result": 3, "events": [[3, 3], True, []]},
                )
            assert _http(port, "/call/ws_pause", {"seconds": 0.01}) == (
                200,
                {"result": "slept 0.01", "events": [[1, 1], True, [["info", "done sleeping"]]]},
            )
            assert _http(port, "/call/worker_fail", {"why": "nope"}) == (
                422,
                {"error": ["ToolCallError", "nope", "fail", "worker"]},
            )
            assert _http(port, "/call/nothing", {}) == (
                422,
                {"error": ["ToolNotFoundError", 'Tool "nothing" not found', "nothing", None]},
            )

            # Connections a request opens for itself.
            for kind in ("ws", "worker"):
                assert _http(port, f"/once/{kind}/add", {"a": 2, "b": 2}) == (200, {"result": 4})

            # The federation is also an MCP server mounted in the app (its sessions run
            # in the lifespan's MCPContextServer.running()): the command line calls a
            # tool through it; without the token, a request is refused.
            status, refused = _http(port, "/agent/mcp", {})
            assert (status, refused["error"]["message"]) == (401, "Unauthorized (HTTP 401)")
            url = f"http://127.0.0.1:{port}/agent/mcp"
            command = [sys.executable, "-m", "assistant_frames", "call", url, "ws_add"]
            command += ["--mcp", "--token", "uvicorn-token", "--args", '{"a": 2, "b": 3}']
            called = subprocess.run(
                command, capture_output=True, text=True, timeout=SCENARIO_TIMEOUT, check=False
            )
            assert (called.returncode, called.stdout.strip()) == (0, "5"), called.stderr

            # A worker killed under the app comes back; its calls work again.
            _, first = _http(port, "/call/worker_pid", {})
            os.kill(first["result"], signal.SIGKILL)

            def back() -> Any:
                _, statuses = _http(port, "/status")
                worker = next(s for s in statuses if s["name"] == "worker")
                if worker["connections"] < 2:
                    return None
                status, answer = _http(port, "/call/worker_pid", {})
                return answer["result"] if status == 200 else None

            second = _poll("the killed worker is back", back, server)
            assert second != first["result"]
            assert _http(port, "/call/worker_add", {"a": 1, "b": 2}) == (
                200,
                {"result": 3, "events": [None, True, []]},
            )

            server.send_signal(signal.SIGTERM)
            try:
                stdout, stderr = server.communicate(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                pytest.fail(
                    f"uvicorn did not stop within {STOP_TIMEOUT:g} s of SIGTERM\n"
                    + "\n--- stderr\n".join(_output_so_far(server))
                )
            with pytest.raises(ProcessLookupError):  # the federation stopped its worker
                os.kill(second, 0)
    # uvicorn shuts down gracefully, then re-raises the signal it was stopped by.
    assert server.returncode == -signal.SIGTERM, stderr
    assert [line for line in stdout.splitlines() if line.startswith("lifespan:")] == [
        "lifespan: federation ready",
        "lifespan: closing the federation",
        "lifespan: closed",
    ], stderr
    assert "Application shutdown complete." in stderr
    assert "Traceback" not in stderr, stderr
    assert "never awaited" not in stderr, stderr
