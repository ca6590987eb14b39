"""``Federation``: members added and removed at run time, their status when a worker is
killed (reconnecting, then connected again; or failed, and why), and closing in order.

Members are real: registries in this process and worker subprocesses (``WORKER``, a
script written into ``tmp_path`` that refuses to start while a ``broken`` file exists).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

from assistant_frames import (
    ConnectError,
    ContextTimeout,
    Federation,
    MemberStatus,
    ModelContextRegistry,
    ToolNotFoundError,
)

from helpers import calculator, wait_until

pytestmark = pytest.mark.anyio

WAIT = 20.0  # bound of every block that should succeed (workers start slowly)

WORKER = """
import os
import sys
from pathlib import Path

import anyio

from assistant_frames import ModelContextRegistry
from assistant_frames.frames import serve_stdio

if Path(sys.argv[1], "broken").exists():
    print("refusing to start: broken", file=sys.stderr)
    sys.exit(3)

registry = ModelContextRegistry()


@registry.tool
def pid() -> int:
    \"\"\"This worker's process id.\"\"\"
    return os.getpid()


anyio.run(serve_stdio, registry)
"""


@pytest.fixture
def worker(tmp_path: Path) -> list[str]:
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    return [sys.executable, str(script), str(tmp_path)]


def tools(federation: Federation) -> list[str]:
    return sorted(federation.get_model_context().tools)


async def test_members_added_and_removed_at_run_time(worker: list[str]) -> None:
    parent = ModelContextRegistry()
    parent.add_instruction("The parent's own instruction.")
    with anyio.fail_after(WAIT):
        async with Federation(parent) as federation:
            assert federation.registry is parent
            await federation.add("calc", calculator())
            assert tools(federation) == ["calc_add"]
            assert await federation.call_tool("calc_add", {"a": 2, "b": 3}) == 5

            await federation.add("w", worker)
            assert tools(federation) == ["calc_add", "w_pid"]
            assert await federation.call_tool("w_pid") != os.getpid()
            assert list(federation) == ["calc", "w"]
            assert "w" in federation
            assert len(federation) == 2
            status = federation.status("w")
            assert status == MemberStatus(
                name="w", target=status.target, state="connected", error=None, connections=1
            )
            # The command as people read it: no interpreter path, long ones shortened.
            assert status.target.startswith(f"worker `{os.path.basename(sys.executable)} ")
            assert os.path.dirname(sys.executable) not in status.target
            assert len(status.target) <= len("worker ``") + 120

            calc = federation.connection("calc")
            await federation.remove("calc")
            assert tools(federation) == ["w_pid"]
            assert calc.state == "closed"
            assert "calc" not in federation
            with pytest.raises(KeyError):
                federation.status("calc")
            with pytest.raises(ToolNotFoundError):
                await federation.call_tool("calc_add", {"a": 1, "b": 1})

            # The name is free again; a second member of the same name is not.
            await federation.add("calc", calculator(), namespaced=False)
            assert tools(federation) == ["add", "w_pid"]
            with pytest.raises(ValueError, match="already has a member named 'calc'"):
                await federation.add("calc", calculator())
            assert "The parent's own instruction." in (federation.get_model_context().system or "")
        assert federation.statuses() == []
        assert parent.get_model_context().tools == {}


async def test_a_killed_worker_is_reconnecting_then_back(worker: list[str]) -> None:
    with anyio.fail_after(WAIT):
        async with Federation(initial_delay=0.2) as federation:
            await federation.add("w", worker)
            first = await federation.call_tool("w_pid")
            seen: list[MemberStatus] = []
            federation.subscribe(lambda: seen.append(federation.status("w")))

            os.kill(first, signal.SIGKILL)
            await wait_until(lambda: federation.status("w").state == "reconnecting", WAIT)
            await wait_until(lambda: federation.status("w").error is not None, WAIT)
            status = federation.status("w")
            assert "killed by SIGKILL" in (status.error or "")
            assert "w_pid" not in federation.get_model_context().tools

            # Started again: the tools come back, from a new process.
            await wait_until(lambda: "w_pid" in federation.get_model_context().tools, WAIT)
            assert federation.status("w").state == "connected"
            assert federation.status("w").connections == 2
            assert federation.status("w").error is None
            assert await federation.call_tool("w_pid") not in (first, os.getpid())
            assert [s.state for s in seen][:1] == ["reconnecting"]


async def test_a_worker_that_cannot_come_back_fails_and_says_why(
    worker: list[str], tmp_path: Path
) -> None:
    with anyio.fail_after(WAIT):
        async with Federation(initial_delay=0.05, max_attempts=2) as federation:
            await federation.add("w", worker)
            pid = await federation.call_tool("w_pid")
            (tmp_path / "broken").touch()  # from now on the worker exits at start
            os.kill(pid, signal.SIGKILL)
            await wait_until(lambda: federation.status("w").state == "failed", WAIT)
            status = federation.status("w")
            assert status.error is not None
            assert "exited with code 3" in status.error
            assert "refusing to start: broken" in status.error
            assert federation.get_model_context().tools == {}


async def test_adding_something_that_is_not_a_frame_fails_and_leaves_nothing() -> None:
    not_a_frame = [sys.executable, "-c", "print('hello'); import time; time.sleep(30)"]
    with anyio.fail_after(WAIT):
        async with Federation(connect_timeout=1.0) as federation:
            with pytest.raises(ContextTimeout, match="the first: 'hello'"):
                await federation.add("x", not_a_frame)
            exits = [sys.executable, "-c", "import sys; sys.exit(4)"]
            with pytest.raises(ConnectError, match="exited with code 4"):
                await federation.add("y", exits)
            assert list(federation) == []
            assert federation.get_model_context().tools == {}


async def test_members_added_without_waiting_are_waited_for_side_by_side(
    worker: list[str],
) -> None:
    with anyio.fail_after(WAIT):
        async with Federation(connect_timeout=5.0) as federation:
            await federation.add("w", worker, wait=False)
            await federation.add("a", calculator(), wait=False)
            exits = [sys.executable, "-c", "import sys; sys.exit(4)"]
            await federation.add("y", exits, wait=False)
            assert list(federation) == ["w", "a", "y"]
            failed: list[BaseException] = []

            async def joined(name: str) -> None:
                try:
                    await federation.wait_joined(name)
                except ConnectError as exc:
                    failed.append(exc)

            async with anyio.create_task_group() as tg:
                for name in federation:
                    tg.start_soon(joined, name)
            # The one that failed is gone, and said why; the others joined, in order.
            assert len(failed) == 1
            assert "exited with code 4" in str(failed[0])
            assert list(federation) == ["w", "a"]
            assert list(federation.get_model_context().tools) == ["w_pid", "a_add"]
            with pytest.raises(KeyError, match="no member named 'y'"):
                await federation.wait_joined("y")
            await federation.wait_joined("w")  # joined already: at once


async def test_closing_goes_member_by_member_the_last_added_first(worker: list[str]) -> None:
    order: list[tuple[list[str], dict[str, str]]] = []
    with anyio.fail_after(WAIT):
        async with Federation() as federation:
            await federation.add("a", calculator())
            await federation.add("w", worker)
            await federation.add("c", calculator())
            connections = [federation.connection(name) for name in ("a", "w", "c")]

            def changed() -> None:
                states = {c.name: c.state for c in connections}
                order.append((tools(federation), states))

            federation.subscribe(changed)
        assert [c.state for c in connections] == ["closed"] * 3
    # Each member's tools leave while the ones added before it are still connected.
    assert order == [
        (["a_add", "w_pid"], {"a": "connected", "w": "connected", "c": "connected"}),
        (["a_add"], {"a": "connected", "w": "connected", "c": "closed"}),
        ([], {"a": "connected", "w": "closed", "c": "closed"}),
    ]


async def test_an_mcp_server_member_joins_without_a_tool_change() -> None:
    # An MCPFrameHost holds its tools once entered and may never announce a change: the
    # reconnecting member must still tell the parent registry that they arrived.
    command = [sys.executable, "-m", "assistant_frames", "serve"]
    command += ["--mcp-stdio", "assistant_frames._demo_worker:registry"]
    with anyio.fail_after(WAIT):
        async with Federation() as federation:
            await federation.add("m", command, mcp=True)
            assert federation.status("m").state == "connected"
            assert set(federation.get_model_context().tools) == {"m_fibonacci", "m_slow_report"}
            assert await federation.call_tool("m_fibonacci", {"n": 10}) == 55
