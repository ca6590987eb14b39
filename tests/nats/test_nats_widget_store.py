"""``NATSWidgetStateStore`` against the real ``nats-server -js``: widget state shared by hosts.

Two web servers (here: two processes running ``tests/nats_widget_host.py``) write one
widget's state at once, and no write is lost; a host that starts later reads the latest
state; a bucket with a TTL forgets; a NATS failure is a typed error, never a hang.
asyncio only: ``nats-py`` runs on asyncio.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from assistant_frames.nats import (
    NATSWidgetStateStore,
    WidgetStateConflict,
    WidgetStateStoreError,
    WidgetStateTooLarge,
    nats_client,
    widget_key,
)
from assistant_frames.widgets import WidgetStateKeeper

from nats_support import NATSServer, nats_js_server, nats_server

pytestmark = pytest.mark.anyio

__all__ = ["nats_js_server", "nats_server"]  # fixtures, used by name

HOST_SCRIPT = Path(__file__).resolve().parent.parent / "nats_widget_host.py"
VALID_KEY = re.compile(r"^[-/_=.a-zA-Z0-9]+$")  # nats-py's own check of a key


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- one host ------------------------------------------------------------------------------------


async def test_load_save_delete_round_trip(nats_js_server: NATSServer) -> None:
    async with NATSWidgetStateStore(nats_js_server.url) as store:
        assert await store.load("message-7/pizza") is None
        await store.save("message-7/pizza", {"count": 1, "toppings": ["olives"]})
        assert await store.load("message-7/pizza") == {"count": 1, "toppings": ["olives"]}
        await store.save("message-7/pizza", {"count": 2})  # replaced, not merged
        assert await store.load("message-7/pizza") == {"count": 2}
        await store.save("message-7/pizza", None)  # deleted
        assert await store.load("message-7/pizza") is None
        await store.save("message-7/pizza", None)  # deleting nothing is fine
        await store.save("message-7/pizza", {"count": 3})  # and back after a delete
        assert await store.load("message-7/pizza") == {"count": 3}
        assert await store.load("message-8/other") is None

        # update() is read-modify-write; None from the change deletes.
        assert await store.update("message-7/pizza", lambda s: {"count": s["count"] + 1}) == {
            "count": 4
        }
        assert await store.update("message-7/pizza", lambda s: None) is None
        assert await store.load("message-7/pizza") is None
        seen: list[Any] = []
        assert await store.update("fresh", lambda s: seen.append(s) or {"n": 1}) == {"n": 1}
        assert seen == [None]

        # The state handed out is a copy: changing it changes nothing stored.
        loaded = await store.load("fresh")
        assert loaded is not None
        loaded["n"] = 99
        assert await store.load("fresh") == {"n": 1}


async def test_a_state_over_the_bound_is_refused_and_nothing_is_written(
    nats_js_server: NATSServer,
) -> None:
    async with NATSWidgetStateStore(nats_js_server.url, max_value_bytes=100) as store:
        at_limit = {"text": "x" * (100 - len('{"text":""}'))}  # 100 bytes, compact JSON
        await store.save("w", at_limit)
        assert await store.load("w") == at_limit

        with pytest.raises(WidgetStateTooLarge) as refused:
            await store.save("w", {"text": "x" * 200})
        assert isinstance(refused.value, ValueError)
        assert (refused.value.size, refused.value.limit) == (211, 100)
        message = str(refused.value)
        assert "'w'" in message
        assert "211 bytes" in message
        assert "100" in message
        with pytest.raises(WidgetStateTooLarge):
            await store.update("w", lambda s: {"text": "é" * 60})  # 120 bytes as UTF-8
        assert await store.load("w") == at_limit  # untouched

        with pytest.raises(ValueError, match="JSON object"):
            await store.save("w", ["not", "an", "object"])  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="not JSON"):
            await store.save("w", {"n": float("nan")})


async def test_odd_widget_ids_get_valid_distinct_keys(nats_js_server: NATSServer) -> None:
    ids = [
        "",
        "message-7/pizza",
        "message-7.pizza",
        ".",
        "a b",
        "*",
        ">",
        "$KV.x.y",
        "ünïcødé ✓",
        "line\nbreak",
        "x" * 150,  # still base64url (200 characters)
        "x" * 151,  # hashed
        "y" * 10_000,  # hashed
    ]
    keys = [widget_key(widget_id) for widget_id in ids]
    assert all(VALID_KEY.match(key) and not key.endswith(".") for key in keys), keys
    assert len(set(keys)) == len(ids)
    assert keys == [widget_key(widget_id) for widget_id in ids]  # deterministic
    assert widget_key("message-7/pizza") == "w_bWVzc2FnZS03L3Bpenph"
    assert keys[-3].startswith("w_")
    assert keys[-2].startswith("h_")
    assert len(keys[-1]) == 66

    async with NATSWidgetStateStore(nats_js_server.url) as store:
        for number, widget_id in enumerate(ids):
            await store.save(widget_id, {"number": number})
        assert [await store.load(widget_id) for widget_id in ids] == [
            {"number": number} for number in range(len(ids))
        ]


async def test_a_restarted_host_reads_the_latest_state(nats_js_server: NATSServer) -> None:
    async with NATSWidgetStateStore(nats_js_server.url, bucket="restart") as store:
        await store.save("message-1/cart", {"items": ["tea"]})
        await store.save("message-1/cart", {"items": ["tea", "cake"]})
    # A new store, with a connection of its own: a web server that restarted.
    async with NATSWidgetStateStore(nats_js_server.url, bucket="restart") as store:
        assert await store.load("message-1/cart") == {"items": ["tea", "cake"]}


async def test_the_widget_hosts_use_it_through_the_store_protocol(
    nats_js_server: NATSServer,
) -> None:
    # WidgetStateKeeper (in WidgetHost, AppView and beside an AppBridge) as it is.
    async with nats_client(nats_js_server.url) as client:
        async with NATSWidgetStateStore(client) as store:  # a shared client, left open
            keeper = WidgetStateKeeper(store, "message-3/poll")
            assert await keeper.load() is None
            assert await keeper.save({"votes": 2})
        assert not client.is_closed
        async with NATSWidgetStateStore(client) as store:
            assert await WidgetStateKeeper(store, "message-3/poll").load() == {"votes": 2}


async def test_an_existing_bucket_is_used_as_it_is(
    nats_js_server: NATSServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="assistant_frames.nats")
    async with nats_client(nats_js_server.url) as client:
        await client.jetstream().create_key_value(bucket="theirs", history=5)
        async with NATSWidgetStateStore(client, bucket="theirs") as theirs:
            await theirs.save("w", {"a": 1})
            assert await theirs.load("w") == {"a": 1}

        # Two hosts that find no bucket create it at the same moment, with different
        # settings: one creates it, the other uses it.
        one = NATSWidgetStateStore(client, bucket="new", ttl=60)
        other = NATSWidgetStateStore(client, bucket="new", ttl=30)
        async with AsyncExitStack() as stack:
            async with anyio.create_task_group() as group:
                for store in (one, other):
                    group.start_soon(stack.enter_async_context, store)
            await one.save("w", {"b": 1})
            assert await other.load("w") == {"b": 1}
        said = [record.getMessage() for record in caplog.records]
        assert sum("created the widget state bucket 'new'" in line for line in said) == 1
        info = await client.jetstream().stream_info("KV_new")
        assert info.config.max_age in (30, 60)


async def test_one_host_loses_a_compare_and_set_and_nothing_is_lost(
    nats_js_server: NATSServer,
) -> None:
    # One attempt each, all at once: some lose (WidgetStateConflict, nothing written), and
    # the count is exactly the number that won.
    async with NATSWidgetStateStore(nats_js_server.url, attempts=1) as store:
        won: list[int] = []
        lost: list[WidgetStateConflict] = []

        async def add_one() -> None:
            try:
                await store.update("w", lambda s: {"count": (s or {"count": 0})["count"] + 1})
                won.append(1)
            except WidgetStateConflict as exc:
                lost.append(exc)

        async with anyio.create_task_group() as group:
            for _ in range(10):
                group.start_soon(add_one)
        assert lost, "no compare-and-set lost: the writes did not overlap"
        assert (lost[0].bucket, lost[0].widget_id) == ("assistant_frames_widget_state", "w")
        assert await store.load("w") == {"count": len(won)}


# -- two host processes --------------------------------------------------------------------------


async def read_line(stream: BufferedByteReceiveStream, timeout: float = 15.0) -> str:
    with anyio.fail_after(timeout):
        return (await stream.receive_until(b"\n", 1 << 20)).decode()


@asynccontextmanager
async def host_process(
    url: str, *args: str
) -> AsyncIterator[tuple[Process, BufferedByteReceiveStream]]:
    """``nats_widget_host.py URL BUCKET WIDGET_ID ARGS...``, killed if still running after."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, str(HOST_SCRIPT), url, "shared", "message-9/counter", *args]
    async with await anyio.open_process(command, env=env, stderr=None) as process:
        assert process.stdout is not None
        try:
            yield process, BufferedByteReceiveStream(process.stdout)
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.kill()
                await process.wait()


async def test_two_host_processes_updating_at_once_lose_nothing(
    nats_js_server: NATSServer,
) -> None:
    url, n = nats_js_server.url, 50
    async with (
        host_process(url, "increment", "a", str(n)) as (a, a_out),
        host_process(url, "increment", "b", str(n)) as (b, b_out),
    ):
        assert await read_line(a_out) == "ready"
        assert await read_line(b_out) == "ready"
        for process in (a, b):  # both start writing now
            assert process.stdin is not None
            await process.stdin.send(b"go\n")
        done = [await read_line(a_out), await read_line(b_out)]
        with anyio.fail_after(10):
            assert (await a.wait(), await b.wait()) == (0, 0)
    runs = [int(line.split()[1]) for line in done]
    assert all(run >= n for run in runs), done

    # A host that starts now (a restart, a third server) reads every write of both.
    async with host_process(url, "load") as (loader, out):
        state = json.loads(await read_line(out))
        with anyio.fail_after(10):
            assert await loader.wait() == 0
    assert state == {"count": 2 * n, "by": {"a": n, "b": n}}, (state, runs)


# -- TTL and failures ----------------------------------------------------------------------------


async def test_a_bucket_with_a_ttl_forgets_the_state(nats_js_server: NATSServer) -> None:
    async with NATSWidgetStateStore(nats_js_server.url, bucket="short", ttl=1) as store:
        await store.save("w", {"n": 1})
        saved = time.monotonic()
        assert await store.load("w") == {"n": 1}
        with anyio.fail_after(5):  # polled: JetStream says nothing when a key expires
            while True:
                if await store.load("w") is None:
                    break
                await anyio.sleep(0.05)
        forgot_after = time.monotonic() - saved
        assert forgot_after > 0.5, forgot_after
        await store.save("w", {"n": 2})  # a key that expired is written again
        assert await store.load("w") == {"n": 2}


async def test_a_server_without_jetstream_is_a_typed_error_at_once(
    nats_server: NATSServer,
) -> None:
    started = time.monotonic()
    with pytest.raises(WidgetStateStoreError) as failed:
        async with NATSWidgetStateStore(nats_server.url, bucket="nope", timeout=2):
            pass
    assert time.monotonic() - started < 5
    assert failed.value.bucket == "nope"
    assert failed.value.widget_id is None
    assert "'nope'" in str(failed.value)
    assert "JetStream" in str(failed.value)


async def test_a_lost_server_is_a_typed_error_within_the_timeout(
    nats_js_server: NATSServer,
) -> None:
    async with NATSWidgetStateStore(nats_js_server.url, timeout=0.5) as store:
        await store.save("message-5/map", {"zoom": 3})
        nats_js_server.kill()
        for operation in (store.load("message-5/map"), store.save("message-5/map", {"zoom": 4})):
            started = time.monotonic()
            with pytest.raises(WidgetStateStoreError) as failed:
                await operation
            assert time.monotonic() - started < 3
            assert failed.value.widget_id == "message-5/map"
            message = str(failed.value)
            assert "'message-5/map'" in message
            assert "'assistant_frames_widget_state'" in message


async def test_the_store_is_used_inside_async_with(nats_js_server: NATSServer) -> None:
    store = NATSWidgetStateStore(nats_js_server.url)
    with pytest.raises(RuntimeError, match="async with"):
        await store.load("w")
    with pytest.raises(ValueError, match="bucket"):
        NATSWidgetStateStore(nats_js_server.url, bucket="not.valid")
