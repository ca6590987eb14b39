"""The pinned npm MCP servers of ``tests/mcp_peers``: skip (fail in CI) when they cannot
run, and ``npm ci`` them once, under a lock, when they are missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

import pytest

from helpers import one_process_at_a_time

PEERS_DIR = Path(__file__).resolve().parent / "mcp_peers"
NPM_TIMEOUT = 300


def peers_required() -> bool:
    """In CI (``CI`` set) or with ``ASSISTANT_FRAMES_REQUIRE_PEERS=1``, never skip."""
    return bool(os.environ.get("CI")) or os.environ.get("ASSISTANT_FRAMES_REQUIRE_PEERS") == "1"


def unavailable(reason: str) -> NoReturn:
    """Skip or, in CI or when required, fail: a third-party MCP peer cannot run."""
    if peers_required():
        pytest.fail(
            f"MCP peer tests cannot run: {reason} "
            "(CI or ASSISTANT_FRAMES_REQUIRE_PEERS=1 is set, so this fails instead of skipping)",
            pytrace=False,
        )
    pytest.skip(f"MCP peer tests skipped: {reason}")


def node_with(entry_points: Iterable[Path]) -> str:
    """Node, once every one of ``entry_points`` is installed (``npm ci`` first when one
    is missing; pytest-xdist workers take turns, so it runs once)."""
    found = shutil.which("node")
    if found is None:
        unavailable("node is not installed (needed for the npm MCP peers)")
    with one_process_at_a_time(PEERS_DIR):
        if not all(path.exists() for path in entry_points):
            npm = shutil.which("npm")
            if npm is None:
                unavailable(f"{PEERS_DIR}/node_modules is incomplete and npm is not installed")
            try:
                done = subprocess.run(
                    [npm, "ci", "--no-audit", "--no-fund"],
                    cwd=PEERS_DIR,
                    capture_output=True,
                    text=True,
                    timeout=NPM_TIMEOUT,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                unavailable(f"npm ci in {PEERS_DIR} failed: {exc}")
            if done.returncode != 0:
                unavailable(f"npm ci in {PEERS_DIR} exited with {done.returncode}: {done.stderr}")
    return found
