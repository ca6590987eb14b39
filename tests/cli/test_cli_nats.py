"""``assistant-frames serve --nats`` and ``inspect``/``call`` on ``nats://`` URLs, for real.

A real ``nats-server`` on a loopback port, two replicas started with the CLI, and the
CLI's own ``call`` and ``inspect`` as clients, each in its own process.
"""

from __future__ import annotations

import json
import queue
import time
from pathlib import Path

import pytest
from test_cli import Server, assert_error, frame_dir, run_cli

from nats_support import NATSServer, nats_server

__all__ = ["frame_dir", "nats_server"]  # fixtures, used by name


def serving(server: Server, timeout: float = 10.0) -> str:
    """Wait (bounded) until ``serve --nats`` says it serves; the line it printed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and server.process.poll() is None:
        try:
            line = server.lines.get(timeout=0.5)
        except queue.Empty:
            continue
        if "on NATS" in line:
            return line
    raise AssertionError(f"serve --nats did not start: {''.join(server.stderr)!r}")


def test_replicas_served_by_the_cli_answer_call_and_inspect(
    nats_server: NATSServer, frame_dir: Path
) -> None:
    url = nats_server.url
    replicas = [
        Server("--nats", url, "--name", "calc", "calc:registry", cwd=frame_dir) for _ in range(2)
    ]
    try:
        for replica in replicas:
            line = serving(replica)
            assert "as frame 'calc'" in line
            assert "subjects frames.calc.*" in line
        result = run_cli("call", f"{url}/calc", "add", "--args", '{"a": 2, "b": 3}', cwd=frame_dir)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == 5
        # The whole bus: every frame, namespaced.
        result = run_cli("call", url, "calc_add", "--args", '{"a": 1}', cwd=frame_dir)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == 1
        result = run_cli("inspect", "--json", f"{url}/calc", cwd=frame_dir)
        assert result.returncode == 0, result.stderr
        assert "add" in json.loads(result.stdout)["tools"]
        # A frame nobody serves: one clear line, exit status 1.
        missing = run_cli("call", f"{url}/nope", "add", cwd=frame_dir)
        assert_error(missing, 1, "nope")
    finally:
        statuses = [replica.stop() for replica in replicas]
    assert statuses == [0, 0]  # SIGTERM stops a replica cleanly


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["serve", "--stdio", "--prefix", "t1", "calc:registry"], "--prefix is for --nats"),
        (
            ["serve", "--nats", "nats://127.0.0.1:1", "--name", "a.b", "calc:registry"],
            "letters, digits",
        ),
        (["call", "nats://127.0.0.1:1/calc", "add"], "Could not connect to NATS"),
    ],
)
def test_nats_usage_errors_are_one_clear_line(
    frame_dir: Path, args: list[str], needle: str
) -> None:
    result = run_cli(*args, cwd=frame_dir)
    assert_error(result, 1 if args[0] == "call" else 2, needle)


@pytest.mark.parametrize(
    "url",
    [
        "nats://user:s3cret-pw@127.0.0.1:1/calc/more",
        "nats://user:s3cret-pw@127.0.0.1:1/calc?bogus=1",
        "tls://s3cret-pw@127.0.0.1:1",
    ],
)
def test_a_nats_url_refused_never_shows_its_credentials(frame_dir: Path, url: str) -> None:
    result = run_cli("call", url, "add", cwd=frame_dir)
    assert result.returncode != 0
    assert "s3cret-pw" not in result.stdout + result.stderr, result.stderr
    assert "127.0.0.1:1" in result.stderr  # it still says which URL


def test_nats_targets_never_show_credentials() -> None:
    """Where a target is shown: its repr, a federation member's name, and errors."""
    from assistant_frames.federation.targets import FrameTarget
    from assistant_frames.nats import NATSFrameTarget
    from assistant_frames.nats.targets import parse_nats_url

    url = "nats://user:s3cret-pw@127.0.0.1:4222/calc"
    shown = [
        repr(parse_nats_url(url)),
        repr(parse_nats_url("tls://s3cret-pw@127.0.0.1:4222")),
        repr(
            NATSFrameTarget(
                "calc", [url, "nats://127.0.0.1:4223"], nats_options={"token": "s3cret-pw"}
            )
        ),
        FrameTarget(url).name,
    ]
    for text in shown:
        assert "s3cret-pw" not in text
        assert "127.0.0.1:4222" in text  # it still says which server


def test_nats_target_objects_are_described_by_their_servers() -> None:
    """A target object is described as its URL would be: its servers, never the type's
    name, and never credentials; a prefix other than the default is said."""
    from assistant_frames.federation.targets import FrameTarget
    from assistant_frames.nats import NATSBusTarget, NATSFrameTarget

    url = "nats://user:s3cret-pw@127.0.0.1:4222"
    bus = FrameTarget(NATSBusTarget(url, interval=0.25))
    assert bus.description == "the frames on NATS (nats://127.0.0.1:4222)"
    frame = FrameTarget(
        NATSFrameTarget("calc", [url, "nats://127.0.0.1:4223"], prefix="acme.frames")
    )
    assert frame.description == (
        "frame 'calc' on NATS (nats://127.0.0.1:4222, nats://127.0.0.1:4223, prefix 'acme.frames')"
    )
