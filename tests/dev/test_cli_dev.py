"""``assistant-frames dev``: its members as given on the command line, and the command run
for real (``python -m assistant_frames dev ...`` in a subprocess, killed in a ``finally``):
it prints the page's URL, serves the page, pushes the federation's state to a client
with the token, and stops on Ctrl-C."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import textwrap
import threading
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest

from assistant_frames.cli import main
from assistant_frames.cli.dev_command import DevMember, default_name, parse_dev_members
from assistant_frames.transports.websocket import connect_websocket

TIMEOUT = 30.0

CALC = '''
from assistant_frames import ModelContextRegistry

registry = ModelContextRegistry()


@registry.tool
def add(a: float, b: float = 0.0) -> float:
    """Add two numbers."""
    return a + b
'''

WORKER = """
import anyio

from assistant_frames import ModelContextRegistry
from assistant_frames.frames import serve_stdio

registry = ModelContextRegistry()


@registry.tool
def shout(text: str) -> str:
    '''Shout a text.'''
    return text.upper()


anyio.run(serve_stdio, registry)
"""


@pytest.mark.parametrize(
    ("target", "name"),
    [
        ("myapp.tools:registry", "tools"),
        ("calc:registry", "calc"),
        ("worker.py", "worker"),
        ("python notes_worker.py", "notes_worker"),
        ("uvx mcp-server-time", "mcp-server-time"),
        ("npx -y @modelcontextprotocol/server-everything", "server-everything"),
        ("ws://127.0.0.1:8765", "ws-8765"),
        ("ws://127.0.0.1:8765/search", "search"),
        ("http://127.0.0.1:8000/mcp", "mcp-8000"),
        ("https://tools.example.com/mcp", "tools"),
        ("nats://127.0.0.1:4222/calc", "calc"),
        ("nats://127.0.0.1:4222", "nats-4222"),
        (("python", "/some/where/shop.py"), "shop"),
    ],
)
def test_default_names_come_from_the_target(target: Any, name: str) -> None:
    assert default_name(target) == name


def test_members_named_or_not_each_name_once() -> None:
    members = parse_dev_members(
        ["calc:registry", "calc:registry", "s=ws://h:1/x?a=b", "ws://h:2/?a=b"],
        ["time=uvx mcp-server-time"],
        ["python", "w.py"],
    )
    assert members == [
        DevMember("calc", "calc:registry"),
        DevMember("calc-2", "calc:registry"),
        DevMember("s", "ws://h:1/x?a=b"),
        DevMember("h", "ws://h:2/?a=b"),  # a URL's own '=' names nothing
        DevMember("time", "uvx mcp-server-time", mcp=True),
        DevMember("w", ("python", "w.py")),
    ]
    assert [m.spec for m in members] == ["calc:registry", "calc:registry", None, None, None, None]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["dev"], "give at least one TARGET"),
        (["dev", "a=x.py", "a=y.py"], "each name once: a given twice"),
        (["dev", "a="], "a= names nothing"),
        (["dev", "--token", "nobody=t", "x.py"], "no member is named 'nobody'"),
        (["dev", "--token", "t", "x.py"], "--token takes NAME=TOKEN"),
        (["dev", "--host", "0.0.0.0", "x.py"], "loopback only"),
        (["dev", "no_such_module_here:registry"], "no module named 'no_such_module_here'"),
        (["dev", "x.py", "--"], "nothing after '--'"),
    ],
)
def test_usage_errors(args: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    assert needle in capsys.readouterr().err


def test_dev_serves_the_page_of_a_registry_and_a_worker_and_stops_on_ctrl_c(
    tmp_path: Path,
) -> None:
    (tmp_path / "calc.py").write_text(textwrap.dedent(CALC), encoding="utf-8")
    (tmp_path / "loud_worker.py").write_text(textwrap.dedent(WORKER), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "ASSISTANT_FRAMES_TOKEN"}
    process = subprocess.Popen(
        [sys.executable, "-m", "assistant_frames", "dev", "calc:registry", "loud_worker.py"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        lines: queue.Queue[str] = queue.Queue()
        assert process.stdout is not None
        stdout = process.stdout
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        url = lines.get(timeout=TIMEOUT).strip()
        match = re.fullmatch(r"(http://127\.0\.0\.1:(\d+))/#token=([\w-]{20,})", url)
        assert match, url
        origin, token = match.group(1), match.group(3)
        with urllib.request.urlopen(origin + "/", timeout=TIMEOUT) as answer:
            assert answer.status == 200
            assert b"dev-page.js" in answer.read()

        async def members_and_tools() -> tuple[dict[str, str], list[str]]:
            socket = origin.replace("http://", "ws://") + "/socket"
            async with connect_websocket(socket, token=token, open_timeout=TIMEOUT) as ws:
                with anyio.fail_after(TIMEOUT):
                    while True:
                        message = await ws.receive()
                        if message["type"] != "state":
                            continue
                        states = {m["name"]: m["state"] for m in message["members"]}
                        if set(states.values()) == {"connected"} and len(message["tools"]) == 2:
                            return states, [t["name"] for t in message["tools"]]

        states, tools = anyio.run(members_and_tools)
        assert states == {"calc": "connected", "loud_worker": "connected"}
        assert sorted(tools) == ["calc_add", "loud_worker_shout"]
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "loud_worker: worker `" in stderr
    assert "calc: calc:registry in this process" in stderr
