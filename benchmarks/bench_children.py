"""Child processes: the scripts next to the runner, their environment, and
starting and reaping them."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

BENCH_DIR = Path(__file__).resolve().parent
STDIO_WORKER = BENCH_DIR / "_stdio_worker.py"
MCP_STDIO_SERVER = BENCH_DIR / "_mcp_stdio_server.py"
ECHO_CHILD = BENCH_DIR / "_echo_child.py"
SECTION_TIMEOUT_SECONDS = 300.0  # a whole cross-process section; well above a full run's
REAP_SECONDS = 5.0  # for a child to exit once its stdin is closed, before it is killed


@dataclass(frozen=True)
class Children:
    """How the runner starts its child processes."""

    backend: str  # the event loop our worker and the mcp server run on
    env: dict[str, str]  # for our children (see ``children``)

    def script(self, path: Path) -> list[str]:
        """The command for one of our scripts, told which event loop to run on."""
        return [sys.executable, str(path), self.backend]

    def mcp_parameters(self) -> Any:
        """The mcp server as ``mcp.Client`` starts it (with mcp's own minimal environment,
        in which installed packages use their ``.pyc`` files)."""
        from mcp import StdioServerParameters

        return StdioServerParameters(
            command=sys.executable, args=[str(MCP_STDIO_SERVER), self.backend]
        )


@contextlib.contextmanager
def children(backend: str) -> Iterator[Children]:
    """Our children get our environment with bytecode cached in a temporary directory
    (``PYTHONPYCACHEPREFIX``): a checkout without ``__pycache__`` run under
    ``PYTHONDONTWRITEBYTECODE`` would otherwise compile the library at every start,
    which no installed package does. The warm-ups fill the cache."""
    with tempfile.TemporaryDirectory(prefix="assistant-frames-benchmark-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        yield Children(backend, env)


@asynccontextmanager
async def child_process(command: Sequence[str], env: dict[str, str]) -> AsyncIterator[Process]:
    """A child with pipes for stdin and stdout (stderr is ours), always reaped: on the way
    out its stdin is closed, then it gets ``REAP_SECONDS`` to exit before SIGKILL."""
    process = await anyio.open_process(list(command), stderr=None, env=env)
    try:
        yield process
    finally:
        with anyio.CancelScope(shield=True):
            if process.stdin is not None:
                with contextlib.suppress(anyio.BrokenResourceError, OSError):
                    await process.stdin.aclose()
            with anyio.move_on_after(REAP_SECONDS):
                await process.wait()
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
            await process.aclose()  # waits for the exit, closes the pipes
