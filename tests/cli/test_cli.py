"""The command line, run for real: ``python -m assistant_frames ...`` in subprocesses.

Every subprocess has a timeout and is killed in a ``finally``. Frames under test are
small modules written into ``tmp_path``: ``calc.py`` (a registry) and ``worker.py``
(that registry served over stdio).
"""

from __future__ import annotations

import datetime
import json
import os
import queue
import re
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import free_port

TIMEOUT = 30.0  # for any one command
ERROR = "assistant-frames: error: "
TOKEN = "s3cret-token"

CALC = '''
"""A calculator frame for the CLI tests."""

import anyio

from assistant_frames import ModelContextRegistry

registry = ModelContextRegistry()
registry.add_instruction("Use the calculator tools for arithmetic.")


@registry.tool
def add(a: float, b: float = 0.0) -> float:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


@registry.tool
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


@registry.tool
async def slow(seconds: float = 30.0) -> str:
    """Answer after a while."""
    await anyio.sleep(seconds)
    return "done"


def make_registry() -> ModelContextRegistry:
    return registry


not_a_frame = 42
'''

WORKER = """
import anyio

from assistant_frames.frames import serve_stdio
from calc import registry

anyio.run(serve_stdio, registry)
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ASSISTANT_FRAMES_TOKEN"}
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def run_cli(
    *args: str, cwd: Path, timeout: float = TIMEOUT, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m assistant_frames *args``; kill it if it outlives ``timeout``."""
    command = [sys.executable, "-m", "assistant_frames", *args]
    process = subprocess.Popen(
        command,
        cwd=cwd,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        stdout, stderr = process.communicate(input, timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def assert_error(result: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    """The command failed with ``code`` and ended with one clear error line, no traceback."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines, "no error message"
    errors = [line for line in lines if line.startswith(ERROR)]
    assert errors == [lines[-1]], result.stderr
    for needle in needles:
        assert needle in lines[-1], (needle, lines[-1])
    return lines[-1]


@pytest.fixture
def frame_dir(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text(textwrap.dedent(CALC), encoding="utf-8")
    (tmp_path / "worker.py").write_text(textwrap.dedent(WORKER), encoding="utf-8")
    return tmp_path


class Server:
    """``assistant-frames serve --ws ...`` running in the background."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "assistant_frames", "serve", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            self.lines.put(line)

    def url(self, timeout: float = TIMEOUT) -> str:
        """The URL the server printed to stderr once listening."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.process.poll() is not None:
                raise AssertionError(f"the server printed no URL: {''.join(self.stderr)!r}")
            try:
                line = self.lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            match = re.search(r"ws://\S+", line)
            if match:
                return match.group(0)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Send ``sig``, wait for the exit (killing after a timeout); the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=5)
            self._reader.join(timeout=5)


@pytest.fixture
def server(frame_dir: Path) -> Iterator[Server]:
    running = Server("--ws", "127.0.0.1:0", "--token", TOKEN, "calc:registry", cwd=frame_dir)
    try:
        yield running
    finally:
        running.stop()


# -- help and version -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command", [[], ["serve"], ["inspect"], ["call"], ["demo"], ["apps"], ["apps", "preview"]]
)
def test_help(command: list[str], tmp_path: Path) -> None:
    result = run_cli(*command, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {' '.join(['assistant-frames', *command])}")
    assert "examples:" in result.stdout
    assert result.stderr == ""


def test_version(tmp_path: Path) -> None:
    result = run_cli("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert re.match(r"assistant-frames \d+\.\d+", result.stdout)


def test_no_command_prints_help(tmp_path: Path) -> None:
    result = run_cli(cwd=tmp_path)
    assert result.returncode == 2
    assert "usage: assistant-frames" in result.stderr


# -- demo ------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_demo(backend: str, tmp_path: Path) -> None:
    started, started_on = time.monotonic(), datetime.date.today()
    result = run_cli("demo", "--backend", backend, cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    out = result.stdout
    assert time.monotonic() - started < 30
    for tool in ("today", "notes_search", "worker_fibonacci", "weather_forecast"):
        assert re.search(rf"^  {tool} ", out, re.MULTILINE), tool
    # the parent's own tool: the real date (read around the run, in case midnight passed)
    today = re.search(r'^  today \{\}\n.*\n    result: "(\d{4}-\d\d-\d\d)"$', out, re.MULTILINE)
    assert today, out
    assert today.group(1) in {started_on.isoformat(), datetime.date.today().isoformat()}
    # one call on each frame, routed to it
    assert '"planning: ship the frame protocol before the MCP bridge."' in out
    assert "result: 2880067194370816120" in out
    assert '{"city": "Oslo", "sky": "snow", "high_c": 1, "low_c": -4}' in out
    # the live update
    assert "+ weather_alerts" in out
    assert '["Icy roads until 10:00"]' in out
    # the killed worker
    assert re.search(
        r'FrameDisconnected: Tool "slow_report": worker disconnected: worker process \d+ '
        r"\(`\S+ -m assistant_frames._demo_worker`\) was killed by SIGKILL",
        out,
    )
    assert "(exit code -9)" in out
    assert "[worker] slow_report started" in out
    assert 'Tool "worker_fibonacci" not found' in out
    # the rest still works afterwards
    after = out.split("The other frames still work", 1)[1]
    assert '"deploy: the release train moved to Thursdays."' in after
    assert '"sky": "overcast"' in after


# -- inspect and call on a worker ------------------------------------------------------------


def test_inspect_worker(frame_dir: Path) -> None:
    result = run_cli("inspect", "--", sys.executable, "worker.py", cwd=frame_dir)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Use the calculator tools for arithmetic." in out
    assert "Tools (3):" in out
    assert re.search(r"^  add\n +Add two numbers\.", out, re.MULTILINE)
    assert re.search(r"PARAMETER +TYPE +REQUIRED +DEFAULT +DESCRIPTION", out)
    assert re.search(r"^ +a +number +required +- +The first number\.$", out, re.MULTILINE)
    assert re.search(r"^ +b +number +optional +0\.0 +The second number\.$", out, re.MULTILINE)
    assert re.search(r"^ +seconds +number +optional +30\.0$", out, re.MULTILINE)


PEOPLE = """
from pydantic import BaseModel

from assistant_frames import ModelContextRegistry


class Address(BaseModel):
    street: str
    city: str = "Oslo"


class Person(BaseModel):
    name: str
    address: Address
    previous: list[Address] = []


registry = ModelContextRegistry()


@registry.tool
def save(person: Person, scores: dict[str, int] | None = None) -> str:
    \"\"\"Save a person.\"\"\"
    return person.name
"""


def test_inspect_shows_the_fields_of_nested_models(frame_dir: Path) -> None:
    (frame_dir / "people.py").write_text(PEOPLE, encoding="utf-8")
    worker = [sys.executable, "-m", "assistant_frames", "serve", "--stdio", "people:registry"]
    result = run_cli("inspect", "--", *worker, cwd=frame_dir)
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("      ")]
    table = rows[rows.index(["PARAMETER", "TYPE", "REQUIRED", "DEFAULT", "DESCRIPTION"]) + 1 :]
    assert table == [
        ["person", "object", "(Person)", "required", "-"],
        ["person.name", "string", "required", "-"],
        ["person.address", "object", "(Address)", "required", "-"],
        ["person.address.street", "string", "required", "-"],
        ["person.address.city", "string", "optional", '"Oslo"'],
        ["person.previous", "array", "of", "object", "(Address)", "optional", "[]"],
        ["person.previous[].street", "string", "required", "-"],
        ["person.previous[].city", "string", "optional", '"Oslo"'],
        ["scores", "object", "of", "integer", "|", "null", "optional", "null"],
    ]


def test_inspect_json_of_served_registry(frame_dir: Path) -> None:
    worker = [sys.executable, "-m", "assistant_frames", "serve", "--stdio", "calc:make_registry"]
    result = run_cli("inspect", "--json", "--", *worker, cwd=frame_dir)
    assert result.returncode == 0, result.stderr
    context = json.loads(result.stdout)
    assert context["system"] == "Use the calculator tools for arithmetic."
    assert list(context["tools"]) == ["add", "divide", "slow"]
    add = context["tools"]["add"]
    assert add["description"] == "Add two numbers."
    assert add["parameters"]["required"] == ["a"]
    assert add["parameters"]["properties"]["b"]["default"] == 0.0


def test_call_worker(frame_dir: Path) -> None:
    result = run_cli(
        "call",
        "add",
        "--args",
        '{"a": 2, "b": 3}',
        "--",
        sys.executable,
        "worker.py",
        cwd=frame_dir,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == 5.0


MCP_SERVER = [sys.executable, "-m", "assistant_frames", "serve", "--mcp-stdio", "calc:registry"]


def test_inspect_and_call_an_mcp_server(frame_dir: Path) -> None:
    # The MCP server is our own serve --mcp-stdio: the same registry, seen through MCP.
    inspected = run_cli("inspect", "--mcp", "--", *MCP_SERVER, cwd=frame_dir)
    assert inspected.returncode == 0, inspected.stderr
    out = inspected.stdout
    assert re.search(
        r"^Frame: MCP server `.*` \(assistant-frames [\d.]+\), MCP 2026-07-28$", out, re.M
    )
    assert "Use the calculator tools for arithmetic." in out
    assert re.search(r"^ +a +number +required +- +The first number\.$", out, re.MULTILINE)

    as_json = run_cli("inspect", "--mcp", "--json", "--", *MCP_SERVER, cwd=frame_dir)
    assert list(json.loads(as_json.stdout)["tools"]) == ["add", "divide", "slow"]

    args = '{"a": 2, "b": 3}'
    called = run_cli("call", "--mcp", "add", "--args", args, "--", *MCP_SERVER, cwd=frame_dir)
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout) == 5.0

    failed = run_cli(
        "call", "--mcp", "divide", "--args", '{"a": 1, "b": 0}', "--", *MCP_SERVER, cwd=frame_dir
    )
    assert_error(failed, 1, 'tool "divide" failed')


def test_mcp_targets_are_urls_or_commands(frame_dir: Path) -> None:
    # An http(s):// URL is an MCP server, as connect() takes it: --mcp or not.
    for mcp in ((), ("--mcp",)):
        refused = run_cli("inspect", *mcp, f"http://127.0.0.1:{free_port()}/mcp", cwd=frame_dir)
        assert_error(refused, 1, "Cannot connect to the MCP server")
    wrong = run_cli("inspect", "--mcp", "ws://127.0.0.1:9", cwd=frame_dir)
    assert_error(wrong, 2, "with --mcp, give an http:// or https:// URL")


def test_every_target_connect_takes(frame_dir: Path) -> None:
    """A registry MODULE:OBJECT, a worker script and a command in one argument, as
    connect() takes them, besides URLs and '-- COMMAND'."""
    for target in ("calc:registry", "calc:make_registry", "worker.py"):
        result = run_cli("inspect", target, cwd=frame_dir)
        assert result.returncode == 0, (target, result.stderr)
        assert "Tools (3):" in result.stdout
        assert re.search(r"^  add\n +Add two numbers\.", result.stdout, re.MULTILINE)
    described = run_cli("inspect", "calc:registry", cwd=frame_dir).stdout
    assert described.startswith("Frame: calc:registry")
    command = f"{shlex.quote(sys.executable)} worker.py"
    called = run_cli("call", command, "add", "--args", '{"a": 2, "b": 3}', cwd=frame_dir)
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout) == 5.0
    called = run_cli("call", "calc:registry", "add", "--args", '{"a": 4}', cwd=frame_dir)
    assert json.loads(called.stdout) == 4.0
    missing = run_cli("inspect", "calc:nope", cwd=frame_dir)
    assert_error(missing, 2, "module 'calc' has no attribute 'nope'")
    unknown = run_cli("inspect", "ftp://example.com", cwd=frame_dir)
    assert_error(unknown, 2, "use ws://, wss://, nats://, http:// or https://")
    unclosed = run_cli("inspect", "python 'worker.py", cwd=frame_dir)
    assert_error(unclosed, 2, "cannot read the command")


def test_call_reads_arguments_from_stdin(frame_dir: Path) -> None:
    result = run_cli(
        "call",
        "add",
        "--args",
        "-",
        "--",
        sys.executable,
        "worker.py",
        cwd=frame_dir,
        input='{"a": 4}',
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == 4.0


def test_call_unknown_tool(frame_dir: Path) -> None:
    result = run_cli("call", "x", "--", sys.executable, "worker.py", cwd=frame_dir)
    assert_error(result, 1, 'Tool "x" not found')


def test_call_tool_error(frame_dir: Path) -> None:
    result = run_cli(
        "call",
        "divide",
        "--args",
        '{"a": 1, "b": 0}',
        "--",
        sys.executable,
        "worker.py",
        cwd=frame_dir,
    )
    assert_error(result, 1, 'tool "divide" failed: float division by zero')


def test_call_invalid_arguments(frame_dir: Path) -> None:
    result = run_cli(
        "call", "add", "--args", '{"a": "many"}', "--", sys.executable, "worker.py", cwd=frame_dir
    )
    assert_error(result, 1, 'Invalid arguments for tool "add"')


def test_call_bad_json_is_a_usage_error(frame_dir: Path) -> None:
    result = run_cli(
        "call", "add", "--args", '{"a": ', "--", sys.executable, "worker.py", cwd=frame_dir
    )
    assert_error(result, 2, "--args is not valid JSON")


def test_call_timeout(frame_dir: Path) -> None:
    started = time.monotonic()
    result = run_cli(
        "call",
        "slow",
        "--args",
        '{"seconds": 60}',
        "--timeout",
        "3",  # also bounds the worker's start: leave a slow machine time for that
        "--",
        sys.executable,
        "worker.py",
        cwd=frame_dir,
    )
    assert_error(result, 1, 'Tool call "slow" timed out after 3 s')
    assert time.monotonic() - started < 15


def test_worker_that_cannot_start(frame_dir: Path) -> None:
    result = run_cli("inspect", "--", str(frame_dir / "no-such-program"), cwd=frame_dir)
    assert_error(result, 1, "cannot start the worker")


def test_worker_that_exits(frame_dir: Path) -> None:
    code = "import sys; print('oo' + 'ps', file=sys.stderr); sys.exit(3)"  # the line names it
    result = run_cli("inspect", "--", sys.executable, "-c", code, cwd=frame_dir)
    line = assert_error(result, 1, "worker process ", " (`", " -c ", "`) exited with code 3")
    assert "oops" in result.stderr  # the worker's stderr passes through
    assert "oops" not in line


# -- MODULE:OBJECT -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "needle"),
    [
        ("no_such_module:registry", "no module named 'no_such_module'"),
        ("calc:no_such_object", "has no attribute 'no_such_object'"),
        ("calc:not_a_frame", "calc:not_a_frame is a int, not a ModelContextRegistry"),
        ("calc", "expected MODULE:OBJECT"),
    ],
)
def test_serve_object_that_does_not_exist(target: str, needle: str, frame_dir: Path) -> None:
    result = run_cli("serve", "--stdio", target, cwd=frame_dir, timeout=15)
    assert_error(result, 2, needle)


def test_inspect_worker_that_cannot_load_its_object(frame_dir: Path) -> None:
    worker = [sys.executable, "-m", "assistant_frames", "serve", "--stdio", "calc:nope"]
    result = run_cli("inspect", "--", *worker, cwd=frame_dir)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    worker_line, line = result.stderr.strip().splitlines()  # the worker's stderr passes through
    assert worker_line == f"{ERROR}cannot load calc:nope: module 'calc' has no attribute 'nope'"
    assert line.startswith(ERROR)
    assert re.search(
        r"worker process \d+ \(`.*calc:nope`\) exited with code 2 \(its stderr is above\)$", line
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["inspect"], "give the frame"),
        (["inspect", "gopher://example.com"], "cannot connect to 'gopher://example.com'"),
        (["call", "add"], "give the frame"),
        (["call"], "required: TOOL"),
        (
            ["serve", "calc:registry"],
            "one of the arguments --stdio --ws --mcp-stdio --mcp-http --nats is required",
        ),
        (["serve", "--mcp-stdio"], "give what to serve: MODULE:OBJECT, or --frame / --mcp"),
        (["serve", "--mcp-stdio", "--frame", "calc"], "expected NAME=..."),
        (["serve", "--mcp-stdio", "--mcp", "a.b=x"], "a namespace is a letter or digit"),
        (["serve", "--mcp-http", ":0", "--allow-origin", "x", "calc:registry"], "is for --ws"),
        (
            ["serve", "--mcp-stdio", "--frame", "a=x", "--mcp", "a=y"],
            "each namespace once: a given twice",
        ),
        (["serve", "--ws", "here", "calc:registry"], "expected HOST:PORT"),
        (["serve", "--stdio", "--token", "t", "calc:registry"], "--token is for --ws"),
        (["demo", "--", "x"], "'-- COMMAND' is for inspect, call, dev and apps preview"),
        (["inspect", "--timeout", "0", "ws://127.0.0.1:1"], "must be a positive number"),
        (["apps"], "the following arguments are required: COMMAND"),
        (["apps", "preview"], "give the MCP server: an http(s):// URL, or '-- COMMAND"),
        (["apps", "preview", "ws://127.0.0.1:1"], "is an http:// or https:// URL"),
        (["apps", "preview", "http://127.0.0.1:1/mcp", "--", "x"], "give the frame once"),
        (["apps", "preview", "--allow-link", "ftp://x", "--", "x"], "ftp://x"),
        (["apps", "preview", "--host", "0.0.0.0", "--", "x"], "loopback only"),
        (["apps", "preview", "--args", "{}", "--", "x"], "--args goes with --call TOOL"),
        (["apps", "preview", "--call", "t", "--args", "[1]", "--", "x"], "a JSON object, not list"),
    ],
)
def test_usage_errors(args: list[str], needle: str, frame_dir: Path) -> None:
    assert_error(run_cli(*args, cwd=frame_dir, timeout=15), 2, needle)


# -- WebSockets --------------------------------------------------------------------------------


def test_inspect_and_call_over_websocket(server: Server, frame_dir: Path) -> None:
    url = server.url()
    assert re.fullmatch(r"ws://127\.0\.0\.1:\d+", url)

    inspected = run_cli("inspect", url, "--token", TOKEN, cwd=frame_dir)
    assert inspected.returncode == 0, inspected.stderr
    assert f"Frame: {url}" in inspected.stdout
    assert re.search(r"^ +a +number +required +- +The first number\.$", inspected.stdout, re.M)

    as_json = run_cli("inspect", url, "--json", "--token", TOKEN, cwd=frame_dir)
    assert json.loads(as_json.stdout)["system"] == "Use the calculator tools for arithmetic."

    called = run_cli(
        "call", url, "add", "--args", '{"a": 1.5, "b": 2}', "--token", TOKEN, cwd=frame_dir
    )
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout) == 3.5

    unknown = run_cli("call", url, "x", "--token", TOKEN, cwd=frame_dir)
    assert_error(unknown, 1, 'Tool "x" not found')


@pytest.mark.parametrize("token", [None, "wrong"])
def test_refused_token(token: str | None, server: Server, frame_dir: Path) -> None:
    url = server.url()
    options = [] if token is None else ["--token", token]
    result = run_cli("call", url, "add", "--args", '{"a": 1}', *options, cwd=frame_dir)
    assert_error(result, 1, "401")
    inspected = run_cli("inspect", url, *options, cwd=frame_dir)
    assert_error(inspected, 1, "401")


def test_token_from_the_environment(server: Server, frame_dir: Path) -> None:
    url = server.url()
    command = [sys.executable, "-m", "assistant_frames", "call", url, "add", "--args", '{"a": 1}']
    process = subprocess.Popen(
        command,
        cwd=frame_dir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**_env(), "ASSISTANT_FRAMES_TOKEN": TOKEN},
    )
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
    assert process.returncode == 0, stderr
    assert json.loads(stdout) == 1.0


# --timeout is one limit for connecting and receiving the context together, cleanup
# included. It is timed inside the CLI's process, from main() being called to its return
# (starting the interpreter and importing is not what it bounds: seconds on a loaded
# machine); the slack is for a loaded machine's scheduling. Neither peer below ever
# answers, so the deadline need not leave time for one to start.
DEADLINE, SLACK = 1.0, 1.6
TIMED_MAIN = """
import sys, time
from assistant_frames.cli import main
started = time.monotonic()
try:
    code = main(sys.argv[2:])
finally:
    with open(sys.argv[1], "w") as out:
        out.write(repr(time.monotonic() - started))
sys.exit(code)
"""


def run_timed_cli(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    """:func:`run_cli`'s result, and the seconds ``main()`` took in the CLI's process."""
    seconds = cwd / "main-seconds"
    command = [sys.executable, "-c", TIMED_MAIN, str(seconds), *args]
    completed = subprocess.run(
        command,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=TIMEOUT,
        check=False,
    )
    return completed, float(seconds.read_text())


def test_timeout_bounds_a_worker_that_never_becomes_a_frame(frame_dir: Path) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]  # ignores stdin's end
    result, elapsed = run_timed_cli(
        "inspect", "--timeout", str(DEADLINE), "--", *sleeper, cwd=frame_dir
    )
    assert_error(result, 1, f"sent no model context within {DEADLINE:g} s")
    assert DEADLINE <= elapsed < DEADLINE + SLACK


def test_timeout_bounds_a_url_that_accepts_but_never_speaks(frame_dir: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:  # the kernel accepts for it
        url = f"ws://127.0.0.1:{listener.getsockname()[1]}"
        result, elapsed = run_timed_cli("inspect", "--timeout", str(DEADLINE), url, cwd=frame_dir)
    assert_error(result, 1, f"Cannot connect to {url}: no answer in {DEADLINE:g} s")
    assert DEADLINE <= elapsed < DEADLINE + SLACK


def test_unreachable_frame(frame_dir: Path) -> None:
    url = f"ws://127.0.0.1:{free_port()}"
    assert_error(run_cli("inspect", url, cwd=frame_dir), 1, "Cannot connect")
    assert_error(run_cli("call", url, "add", cwd=frame_dir), 1, "Cannot connect")


def test_serve_on_a_port_binds_loopback_and_stops_on_sigterm(frame_dir: Path) -> None:
    port = free_port()
    running = Server("--ws", f":{port}", "calc:registry", cwd=frame_dir)
    try:
        assert running.url() == f"ws://127.0.0.1:{port}"
        result = run_cli(
            "call", f"ws://127.0.0.1:{port}", "add", "--args", '{"a": 7}', cwd=frame_dir
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == 7.0
    finally:
        code = running.stop(signal.SIGTERM)
    assert code == 0, running.stderr
    assert "Traceback" not in "".join(running.stderr)


def test_serve_interrupted(frame_dir: Path) -> None:
    running = Server("--ws", "127.0.0.1:0", "calc:registry", cwd=frame_dir)
    try:
        running.url()
    finally:
        code = running.stop(signal.SIGINT)
    assert code == 130
    assert "Traceback" not in "".join(running.stderr)


def test_serve_port_in_use(frame_dir: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("serve", "--ws", f"127.0.0.1:{port}", "calc:registry", cwd=frame_dir)
    assert_error(result, 1, f"Cannot listen on 127.0.0.1:{port}")


# -- apps preview ------------------------------------------------------------------------------


def test_apps_preview_prints_a_loopback_url_serves_the_page_and_stops_on_ctrl_c(
    tmp_path: Path,
) -> None:
    import urllib.request

    example = Path(__file__).resolve().parents[2] / "examples" / "weather_app.py"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "assistant_frames",
            "apps",
            "preview",
            "--",
            sys.executable,
            str(example),
        ],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        lines: queue.Queue[str] = queue.Queue()
        assert process.stdout is not None
        threading.Thread(target=lambda: lines.put(process.stdout.readline()), daemon=True).start()
        url = lines.get(timeout=TIMEOUT).strip()
        match = re.fullmatch(r"(http://127\.0\.0\.1:\d+)/#token=[\w-]{20,}", url)
        assert match, url
        with urllib.request.urlopen(match.group(1) + "/", timeout=TIMEOUT) as answer:
            assert answer.status == 200
            assert b"dev-page.js" in answer.read()  # the preview is the dev page
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "previewing" in stderr
    assert "weather" in stderr


def test_apps_preview_of_a_server_that_does_not_answer_is_an_error(tmp_path: Path) -> None:
    """Unlike dev, which retries a member, preview waits for its one server: no page."""
    result = run_cli("apps", "preview", f"http://127.0.0.1:{free_port()}/mcp", cwd=tmp_path)
    assert_error(result, 1, "Cannot connect to the MCP server")
    assert result.stdout == ""  # no URL announced


def test_apps_preview_refuses_a_call_of_no_ui_tool(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "weather_app.py"
    result = run_cli(
        "apps", "preview", "--call", "nope", "--", sys.executable, str(example), cwd=tmp_path
    )
    assert_error(result, 2, "--call nope: not a UI tool of the server (its UI tools: forecast)")
    assert result.stdout == ""  # no URL announced
