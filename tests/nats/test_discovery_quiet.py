"""``NATSDiscovery``'s rounds end on the answers, not on the clock, when that is safe.

A round collects ``$SRV.INFO`` answers for up to ``window`` seconds. It ends sooner once
every frame already in the federation has answered (one at least) and ``quiet`` seconds
passed with no answer. A known frame that is silent, or a round no frame answers, keeps
the round open for the whole window: that silence is what removes a frame, so a slow
answer must not pass for it. Against the real ``nats-server``; asyncio only (``nats-py``).
"""

from __future__ import annotations

import math
import os
import signal
from contextlib import AsyncExitStack

import anyio
import anyio.abc
import pytest

from assistant_frames.nats import NATSDiscovery, NATSFrameProvider

from nats_support import NATSServer, nats_server, replica_process
from nats_support import greeting_frame as frame

pytestmark = pytest.mark.anyio

__all__ = ["nats_server"]  # a fixture, used by name


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def timed_discover(bus: NATSDiscovery) -> tuple[list[str], float]:
    """One round now: the frames that answered, and the seconds it took (the clock the
    discovery's window is on)."""
    started = anyio.current_time()
    answered = await bus.discover()
    return answered, anyio.current_time() - started


async def serve_until(
    name: str,
    url: str,
    stop: anyio.Event,
    stopped: anyio.Event,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the frame ``name`` (in a task of its own) until ``stop`` is set."""
    try:
        async with NATSFrameProvider(frame(name), name, nats=url):
            task_status.started()
            await stop.wait()
    finally:
        stopped.set()


async def test_a_first_discovery_ends_soon_after_the_answers(nats_server: NATSServer) -> None:
    """Frames already running are found on entering, well before a long window ends; the
    rounds after (every known frame answering) end as soon."""
    url = nats_server.url
    names = [f"f{i}" for i in range(5)]
    async with AsyncExitStack() as stack:
        for name in names:
            await stack.enter_async_context(NATSFrameProvider(frame(name), name, nats=url))
        with anyio.fail_after(15):
            bus = NATSDiscovery(nats=url, interval=5.0, window=2.0)
            started = anyio.current_time()
            async with bus:
                entered = anyio.current_time() - started
                assert bus.frames == names
                assert sorted(bus.get_model_context().tools) == [f"{n}_hello" for n in names]
                assert entered < 1.0  # not the 2 s window: the answers came long before
                answered, took = await timed_discover(bus)
                assert answered == names
                assert took < 1.0


async def test_a_known_frame_that_is_silent_keeps_the_round_open(
    nats_server: NATSServer,
) -> None:
    """A frame that left is counted absent only after whole windows: the other frame's
    answer does not end the round, though answers went quiet long before."""
    url = nats_server.url
    window = 0.5
    with anyio.fail_after(20):
        async with (
            anyio.create_task_group() as group,
            NATSFrameProvider(frame("a"), "a", nats=url),
        ):
            stop, stopped = anyio.Event(), anyio.Event()
            await group.start(serve_until, "b", url, stop, stopped)
            async with NATSDiscovery(nats=url, interval=5.0, window=window, missed=2) as bus:
                assert bus.frames == ["a", "b"]
                answered, took = await timed_discover(bus)
                assert answered == ["a", "b"]
                assert took < window  # every known frame answered: no need to wait
                stop.set()  # b stops
                await stopped.wait()
                # Each round now waits the whole window for b before counting it absent.
                answered, took = await timed_discover(bus)
                assert answered == ["a"]
                assert took >= window
                assert bus.frames == ["a", "b"]  # one silent round of `missed` (2)
                assert bus._absent == {"b": 1}
                answered, took = await timed_discover(bus)
                assert answered == ["a"]
                assert took >= window
                assert bus.frames == ["a"]  # two silent (whole) rounds: it left


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP and SIGCONT")
async def test_a_known_frame_that_answers_late_is_waited_for(nats_server: NATSServer) -> None:
    """A slow frame (its process paused, then resumed: as a slow link would delay it)
    answers long after the others went quiet, within the window: it stays, even with
    ``missed=1``, and the round ends on its answer, not on the window."""
    url = nats_server.url
    window = 2.0
    with anyio.fail_after(30):
        async with (
            replica_process(url, "slow") as slow,
            NATSFrameProvider(frame("quick"), "quick", nats=url),
            NATSDiscovery(nats=url, interval=5.0, window=window, missed=1) as bus,
        ):
            await bus.wait_for("quick", "slow", timeout=10)
            os.kill(slow.pid, signal.SIGSTOP)
            try:
                async with anyio.create_task_group() as group:
                    rounds: list[tuple[list[str], float]] = []

                    async def run_round() -> None:
                        rounds.append(await timed_discover(bus))

                    group.start_soon(run_round)
                    await anyio.sleep(0.3)  # far past the quiet gap after quick's answer
                    assert rounds == []  # still waiting for slow
                    os.kill(slow.pid, signal.SIGCONT)
            finally:
                os.kill(slow.pid, signal.SIGCONT)
            [(answered, took)] = rounds
            assert answered == ["quick", "slow"]
            assert bus.frames == ["quick", "slow"]
            assert 0.3 <= took < window  # ended on slow's answer, not on the window


async def test_a_round_nobody_answers_lasts_the_window(nats_server: NATSServer) -> None:
    """Nothing found: the whole window, even when services of another prefix answer."""
    url = nats_server.url
    window = 0.4
    with anyio.fail_after(20):
        async with NATSFrameProvider(frame("other"), "other", nats=url, prefix="elsewhere"):
            bus = NATSDiscovery(nats=url, interval=5.0, window=window)
            started = anyio.current_time()
            async with bus:
                assert anyio.current_time() - started >= window  # the first round
                assert bus.frames == []
                answered, took = await timed_discover(bus)
                assert answered == []
                assert took >= window


async def test_a_quiet_gap_of_the_window_keeps_every_round_whole(
    nats_server: NATSServer,
) -> None:
    """``quiet=window``: every round lasts the window, every frame answering or not."""
    url = nats_server.url
    window = 0.3
    with anyio.fail_after(20):
        async with (
            NATSFrameProvider(frame("a"), "a", nats=url),
            NATSDiscovery(nats=url, interval=5.0, window=window, quiet=window) as bus,
        ):
            answered, took = await timed_discover(bus)
            assert answered == ["a"]
            assert took >= window


def test_the_quiet_gap_is_checked() -> None:
    for quiet in [0.0, -0.01, math.nan]:
        with pytest.raises(ValueError, match="quiet"):
            NATSDiscovery(nats="nats://127.0.0.1:1", quiet=quiet)
    # Longer than the window is allowed: the window bounds every round anyway.
    assert NATSDiscovery(nats="nats://127.0.0.1:1", window=0.1, quiet=1.0).quiet == 1.0
    assert NATSDiscovery(nats="nats://127.0.0.1:1").quiet == 0.025
