"""``WidgetHost`` against a widget that speaks the raw ``AUI_*`` wire over ``memory_pair``.

The widget side is written by hand, message by message, so each test says exactly what
crosses the wire. The server a widget's ``callTool`` reaches is a real ``mcp``
``MCPServer`` in this process, through an ``MCPFrameHost``; the durable store is a real
SQLite file.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from assistant_frames import FrameDisconnected
from assistant_frames.mcp import MCPFrameHost
from assistant_frames.transports import memory_pair
from assistant_frames.widgets import (
    MemoryWidgetStateStore,
    MethodError,
    SQLiteWidgetStateStore,
    WidgetHost,
    WidgetManifest,
    protocol,
)

pytestmark = pytest.mark.anyio

WAIT = 5.0
QUIET = 0.2  # how long negative checks watch for something that must not happen
GLOBALS = {"theme": "light", "locale": "en-US", "displayMode": "inline", "maxHeight": 800}


class RawWidget:
    """The iframe end of the pair: sends and receives ``AUI_*`` dicts, nothing more."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.next_id = 0

    async def send(self, message: Any) -> None:
        await self.transport.send(message)

    async def receive(self) -> dict[str, Any]:
        with anyio.fail_after(WAIT):
            message: dict[str, Any] = await self.transport.receive()
        return message

    async def nothing_within(self, seconds: float = QUIET) -> None:
        with anyio.move_on_after(seconds):
            message = await self.transport.receive()
            raise AssertionError(f"unexpected message: {message}")

    async def ready(self) -> dict[str, Any]:
        """Say ``ready``; return the globals the host pushes in answer."""
        await self.send({"type": "ready"})
        message = await self.receive()
        assert message["type"] == protocol.SET_GLOBALS, message
        globals_: dict[str, Any] = message["globals"]
        return globals_

    async def call(self, method: str, *args: Any) -> dict[str, Any]:
        """Call ``method``; return its ``AUI_METHOD_RESPONSE`` (nothing else may come first)."""
        self.next_id += 1
        call_id = f"call-{self.next_id}"
        await self.send(
            {"type": protocol.METHOD_CALL, "id": call_id, "method": method, "args": list(args)}
        )
        answer = await self.receive()
        assert answer["type"] == protocol.METHOD_RESPONSE, answer
        assert answer["id"] == call_id, answer
        return answer


@asynccontextmanager
async def pair(
    widget_id: str = "w1", **options: Any
) -> AsyncIterator[tuple[WidgetHost, RawWidget]]:
    host_side, widget_side = memory_pair()
    options.setdefault("globals", GLOBALS)
    async with WidgetHost(host_side, widget_id, **options) as host:
        yield host, RawWidget(widget_side)


def widget_server() -> MCPServer:
    server = MCPServer("widget-server")

    @server.tool(meta={"ui": {"resourceUri": "ui://weather/widget.html"}})
    def forecast(city: str) -> str:
        """Both the model and the widget may call it (the default)."""
        return f"Sunny in {city}"

    @server.tool(meta={"ui": {"visibility": ["app"]}})
    def refresh(city: str) -> dict[str, Any]:
        """Only the widget may call it."""
        return {"city": city, "temperature": 21}

    @server.tool(meta={"ui": {"visibility": ["model"]}})
    def delete_everything() -> str:
        """Only the model may call it: a widget asking is refused."""
        raise AssertionError("a widget must never reach this tool")

    return server


# -- globals -------------------------------------------------------------------------------------


async def test_globals_are_pushed_in_full_on_ready_then_only_their_changes() -> None:
    async with pair() as (host, widget):
        await host.update_globals(theme="dark")  # before ready: kept, not sent
        await widget.nothing_within()
        assert await widget.ready() == {**GLOBALS, "theme": "dark", "widgetState": None}
        await host.wait_ready(WAIT)
        await host.update_globals(theme="light", toolOutput={"temperature": 21})
        assert await widget.receive() == {
            "type": protocol.SET_GLOBALS,
            "globals": {"theme": "light", "toolOutput": {"temperature": 21}},
        }
        await host.update_globals(theme="light")  # no change: nothing sent
        await widget.nothing_within()
        # A re-render in the same frame says ready again: everything again.
        assert (await widget.ready())["toolOutput"] == {"temperature": 21}


async def test_full_updates_push_every_global_each_time() -> None:
    async with pair(full_updates=True) as (host, widget):
        await widget.ready()
        await host.update_globals(theme="dark")
        assert (await widget.receive())["globals"] == {
            **GLOBALS,
            "theme": "dark",
            "widgetState": None,
        }


async def test_wait_ready_is_bounded_and_fails_when_the_widget_goes() -> None:
    async with pair() as (host, widget):
        with pytest.raises(TimeoutError):
            await host.wait_ready(QUIET)
        await widget.transport.aclose()
        with pytest.raises(FrameDisconnected):
            await host.wait_ready(WAIT)


# -- methods ------------------------------------------------------------------------------------


async def test_call_tool_reaches_app_visible_tools_of_the_server_only() -> None:
    server = widget_server()
    async with (
        MCPFrameHost(server, name="weather") as frame,
        pair(server=frame, manifest=WidgetManifest.all()) as (_host, widget),
    ):
        answer = await widget.call("callTool", "forecast", {"city": "Paris"})
        assert answer["result"]["content"][0]["text"] == "Sunny in Paris"
        answer = await widget.call("callTool", "refresh", {"city": "Oslo"})
        assert answer["result"]["structuredContent"] == {"city": "Oslo", "temperature": 21}
        answer = await widget.call("callTool", "delete_everything", {})
        assert "not visible to apps" in answer["error"]
        answer = await widget.call("callTool", "nothing", {})
        assert "not a tool of the widget's server" in answer["error"]
        answer = await widget.call("callTool", 42, {})
        assert "invalid argument" in answer["error"]


async def test_call_tool_without_a_server_goes_to_the_handler() -> None:
    calls: list[tuple[str, dict[str, Any]]] = []

    async def on_call_tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
        calls.append((name, args))
        return {"structuredContent": {"ok": True}}

    manifest = WidgetManifest.from_permissions({"callTools": True})
    async with pair(manifest=manifest, on_call_tool=on_call_tool) as (_host, widget):
        answer = await widget.call("callTool", "search", {"q": "x"})
        assert answer == {
            "type": protocol.METHOD_RESPONSE,
            "id": "call-1",
            "result": {"structuredContent": {"ok": True}},
        }
        assert calls == [("search", {"q": "x"})]


async def test_every_other_method_reaches_its_handler() -> None:
    seen: list[tuple[str, Any]] = []

    def record(name: str, result: Any = None) -> Any:
        def handler(*args: Any) -> Any:
            seen.append((name, args))
            return result

        return handler

    async with pair(
        manifest=WidgetManifest.all(extra=["uploadFile"]),
        on_follow_up=record("follow_up"),
        on_request_display_mode=record("display_mode", "pip"),
        on_request_modal=record("modal"),
        on_request_close=record("close"),
        on_open_external=record("open"),
        on_intrinsic_height=record("height"),
        methods={"uploadFile": record("upload", {"fileId": "f1"})},
    ) as (host, widget):
        await widget.ready()
        answer = await widget.call("sendFollowUpMessage", {"prompt": "More, please"})
        assert answer["result"] is None
        await widget.send(
            {
                "type": protocol.METHOD_CALL,
                "id": "mode",
                "method": "requestDisplayMode",
                "args": [{"mode": "fullscreen"}],
            }
        )
        # The widget is told of the new mode (a change of the displayMode global) before
        # its promise resolves with what the host granted.
        assert await widget.receive() == {
            "type": protocol.SET_GLOBALS,
            "globals": {"displayMode": "pip"},
        }
        assert await widget.receive() == {
            "type": protocol.METHOD_RESPONSE,
            "id": "mode",
            "result": {"mode": "pip"},
        }
        assert host.globals["displayMode"] == "pip"
        assert "error" not in await widget.call("requestModal", {"title": "Pick"})
        assert "error" not in await widget.call("requestClose")
        assert "error" not in await widget.call("openExternal", {"href": "https://example.com"})
        assert "error" not in await widget.call("notifyIntrinsicHeight", 420)
        assert (await widget.call("uploadFile", "data"))["result"] == {"fileId": "f1"}
        assert seen == [
            ("follow_up", ({"prompt": "More, please"},)),
            ("display_mode", ("fullscreen",)),
            ("modal", ({"title": "Pick"},)),
            ("close", ()),
            ("open", ("https://example.com",)),
            ("height", (420,)),
            ("upload", ("data",)),
        ]


async def test_bad_arguments_and_failing_handlers_reject_the_call_only() -> None:
    def refuse(href: str) -> None:
        raise MethodError(f"Blocked by policy: {href}")

    def crash(_options: Any) -> None:
        raise RuntimeError("boom")

    async with pair(
        manifest=WidgetManifest.all(), on_open_external=refuse, on_request_modal=crash
    ) as (_host, widget):
        answer = await widget.call("openExternal", {"href": "javascript:alert(1)"})
        assert "not an http(s) URL" in answer["error"]
        answer = await widget.call("openExternal", {"href": "https://evil.example"})
        assert answer["error"] == "Blocked by policy: https://evil.example"
        answer = await widget.call("requestModal", {})
        assert answer["error"] == "requestModal failed: boom"
        answer = await widget.call("requestDisplayMode", {"mode": "sideways"})
        assert "unknown mode" in answer["error"]
        answer = await widget.call("sendFollowUpMessage", {"text": "no prompt"})
        assert "prompt must be a string" in answer["error"]
        # The host still answers.
        assert "error" not in await widget.call("setWidgetState", {"n": 1})


async def test_a_granted_method_the_host_lacks_and_an_unknown_one_reject_at_once() -> None:
    async with pair(manifest=WidgetManifest.all()) as (_host, widget):
        with anyio.fail_after(1):
            answer = await widget.call("requestModal", {})
        assert answer["error"] == "This host does not support requestModal"
        answer = await widget.call("selfDestruct")
        assert answer["error"] == "Unknown method: selfDestruct"


async def test_a_slow_handler_times_out_without_holding_up_other_calls() -> None:
    release = anyio.Event()

    async def slow(_args: Any) -> None:
        await release.wait()

    manifest = WidgetManifest.all()
    async with pair(manifest=manifest, timeout=0.3, on_follow_up=slow) as (_host, widget):
        await widget.send(
            {
                "type": protocol.METHOD_CALL,
                "id": "slow",
                "method": "sendFollowUpMessage",
                "args": [{"prompt": "hi"}],
            }
        )
        answer = await widget.call("setWidgetState", {"n": 1})  # answered meanwhile
        assert answer["result"] is None
        late = await widget.receive()
        assert late == {
            "type": protocol.METHOD_RESPONSE,
            "id": "slow",
            "error": "sendFollowUpMessage timed out after 0.3 s on the host",
        }


# -- the manifest ---------------------------------------------------------------------------------


async def test_a_method_the_manifest_does_not_grant_is_refused() -> None:
    reached: list[Any] = []
    async with pair(on_follow_up=reached.append, on_call_tool=reached.append) as (_host, widget):
        answer = await widget.call("sendFollowUpMessage", {"prompt": "hi"})
        assert answer["error"] == (
            "Method not granted to this widget by its manifest: sendFollowUpMessage"
        )
        answer = await widget.call("callTool", "search", {})
        assert "not granted" in answer["error"]
        assert reached == []
        # The base methods need no permission.
        assert "error" not in await widget.call("setWidgetState", {"n": 1})


def test_manifest_permissions_map_to_methods() -> None:
    manifest = WidgetManifest.from_permissions(
        {"callTools": True, "modals": True, "displayMode": False, "network": True}
    )
    assert manifest.grants("callTool")
    assert manifest.grants("requestModal")
    assert not manifest.grants("requestDisplayMode")
    assert not manifest.grants("sendFollowUpMessage")
    assert manifest.grants("setWidgetState")


# -- widget state ---------------------------------------------------------------------------------


async def test_widget_state_is_saved_reported_and_back_after_a_re_render() -> None:
    store = MemoryWidgetStateStore()
    reported: list[Any] = []
    async with pair(store=store, on_widget_state=reported.append) as (host, widget):
        assert (await widget.ready())["widgetState"] is None
        assert (await widget.call("setWidgetState", {"selected": 3}))["result"] is None
        assert reported == [{"selected": 3}]
        assert host.globals["widgetState"] == {"selected": 3}
        await host.update_globals(theme="dark")  # the state is not sent back as a change
        assert (await widget.receive())["globals"] == {"theme": "dark"}
    # A new iframe for the same widget instance: its state comes back; another's does not.
    async with pair(store=store) as (_host, widget):
        assert (await widget.ready())["widgetState"] == {"selected": 3}
    async with pair("w2", store=store) as (_host, widget):
        assert (await widget.ready())["widgetState"] is None


async def test_widget_state_survives_a_host_restart_with_the_sqlite_store(tmp_path: Path) -> None:
    path = tmp_path / "widgets.sqlite3"
    async with pair(store=SQLiteWidgetStateStore(path)) as (_host, widget):
        await widget.ready()
        assert "error" not in await widget.call("setWidgetState", {"cart": ["tea"]})
    async with pair("other", store=SQLiteWidgetStateStore(path)) as (_host, widget):
        await widget.call("setWidgetState", {"cart": []})
    # A new store on the same file: what a restarted process would open.
    store = SQLiteWidgetStateStore(path)
    async with pair(store=store) as (_host, widget):
        assert (await widget.ready())["widgetState"] == {"cart": ["tea"]}
        assert "error" not in await widget.call("setWidgetState", None)  # forgets it
    assert await SQLiteWidgetStateStore(path).load("w1") is None
    assert await SQLiteWidgetStateStore(path).load("other") == {"cart": []}


async def test_the_state_set_last_wins_when_many_calls_race(tmp_path: Path) -> None:
    path = tmp_path / "widgets.sqlite3"
    async with pair(store=SQLiteWidgetStateStore(path)) as (_host, widget):
        for n in range(20):
            await widget.send(
                {
                    "type": protocol.METHOD_CALL,
                    "id": n,
                    "method": "setWidgetState",
                    "args": [{"n": n}],
                }
            )
        answers = [await widget.receive() for _ in range(20)]
        assert sorted(a["id"] for a in answers) == list(range(20))
        assert all(a["result"] is None for a in answers)
    assert await SQLiteWidgetStateStore(path).load("w1") == {"n": 19}


async def test_a_widget_state_that_is_too_large_or_not_an_object_is_refused() -> None:
    store = MemoryWidgetStateStore()
    async with pair(store=store, max_state_bytes=100) as (_host, widget):
        answer = await widget.call("setWidgetState", {"blob": "x" * 200})
        assert "over the host's limit of 100" in answer["error"]
        answer = await widget.call("setWidgetState", [1, 2])
        assert "must be an object or null" in answer["error"]
    assert await store.load("w1") is None


# -- legacy and malformed messages ----------------------------------------------------------------


async def test_legacy_messages_reach_their_callbacks() -> None:
    seen: list[tuple[str, Any]] = []
    last = anyio.Event()
    async with pair(
        on_ready=lambda: seen.append(("ready", None)),
        on_resize=lambda h: seen.append(("resize", h)),
        on_intrinsic_height=lambda h: seen.append(("height", h)),
        on_action=lambda p: seen.append(("action", p)),
        on_add_result=lambda p: seen.append(("addResult", p)),
        on_widget_error=lambda p: (seen.append(("error", p)), last.set()),
    ) as (host, widget):
        await widget.ready()
        await widget.send({"type": "resize", "payload": 512})
        await widget.send({"type": "action", "payload": "approve"})
        await widget.send({"type": "addResult", "payload": {"approved": True}})
        await widget.send({"type": "error", "payload": "render failed"})
        with anyio.fail_after(WAIT):
            await last.wait()  # legacy messages are handled in order: the rest came first
        assert seen == [
            ("ready", None),
            ("resize", 512),
            ("height", 512),
            ("action", "approve"),
            ("addResult", {"approved": True}),
            ("error", "render failed"),
        ]
        assert host.ready


async def test_malformed_messages_are_ignored_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    resized: list[Any] = []
    caplog.set_level(logging.DEBUG, logger="assistant_frames.widgets")
    async with pair(on_resize=resized.append) as (host, widget):
        for junk in [
            "not a dict",
            42,
            None,
            {"no": "type"},
            {"type": "AUI_EXPLODE"},
            {"type": protocol.METHOD_CALL, "method": "requestClose", "args": []},  # no id
            {"type": protocol.METHOD_CALL, "id": True, "method": "requestClose"},
            {"type": protocol.METHOD_CALL, "id": "x", "method": 7, "args": []},
            {"type": protocol.METHOD_CALL, "id": "y", "method": "requestClose", "args": "no"},
            {"type": "resize", "payload": "tall"},
        ]:
            await widget.send(junk)
        await widget.nothing_within()  # nothing answered
        assert resized == []
        # ... and the host still works.
        assert (await widget.ready())["theme"] == "light"
        assert (await widget.call("setWidgetState", {"ok": 1}))["result"] is None
        assert host.ignored == 10
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "ignored a malformed message" in warnings[0].getMessage()


async def test_a_failing_legacy_callback_does_not_end_the_connection() -> None:
    def explode(_payload: Any) -> None:
        raise RuntimeError("host bug")

    async with pair(on_action=explode) as (_host, widget):
        await widget.send({"type": "action", "payload": "x"})
        assert (await widget.call("setWidgetState", {"ok": 1}))["result"] is None


async def test_calls_beyond_the_limit_wait_until_one_is_answered() -> None:
    """At max_calls in flight the host reads no more: the next call waits, then runs."""
    release = anyio.Event()

    async def wait(_args: Any) -> None:
        await release.wait()

    manifest = WidgetManifest.all()
    async with pair(manifest=manifest, max_calls=1, on_follow_up=wait) as (_host, widget):
        first = {"type": protocol.METHOD_CALL, "id": "a", "method": "sendFollowUpMessage"}
        await widget.send({**first, "args": [{"prompt": "1"}]})
        await widget.send({"type": protocol.METHOD_CALL, "id": "b", "method": "requestClose"})
        await widget.nothing_within()  # "b" is not read while "a" runs
        release.set()
        assert await widget.receive() == {
            "type": protocol.METHOD_RESPONSE,
            "id": "a",
            "result": None,
        }
        answer = await widget.receive()
        assert answer["id"] == "b"
        assert "does not support requestClose" in answer["error"]


def call(number: int) -> dict[str, Any]:
    return {"type": protocol.METHOD_CALL, "id": number, "method": "requestClose", "args": []}


async def test_a_flooding_widget_that_reads_nothing_grows_nothing_and_loses_nothing() -> None:
    """Before: a task per call and per refusal (18k tasks, +90 MB in 4 s), then answers
    dropped. Now the host stops reading at max_calls, and every call sent is answered."""
    host_side, widget_side = memory_pair(max_buffer_size=16)
    async with WidgetHost(host_side, "w", max_calls=8, send_timeout=30) as host:
        sent = 0
        with anyio.move_on_after(0.5):  # the widget's sends block once the host stops
            while True:
                await widget_side.send(call(sent))
                sent += 1
        assert sent <= 8 + 16 + 16 + 2  # in flight, answers queued, calls queued
        assert host._machine.in_flight <= host.max_calls
        answered: set[int] = set()
        with anyio.fail_after(WAIT):
            while len(answered) < sent:
                answer = await widget_side.receive()
                assert answer["type"] == protocol.METHOD_RESPONSE
                answered.add(answer["id"])
        assert answered == set(range(sent))
        assert host.close_reason is None


async def test_a_widget_that_does_not_read_is_disconnected_with_a_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    host_side, widget_side = memory_pair(max_buffer_size=2)
    async with WidgetHost(host_side, "w", max_calls=4, send_timeout=0.2) as host:
        with anyio.move_on_after(2):
            with suppress(anyio.BrokenResourceError):
                for number in range(100):
                    await widget_side.send(call(number))
        with anyio.fail_after(WAIT):
            await host.wait_disconnected()
        assert host.close_reason is not None
        assert "send_timeout (0.2 s)" in host.close_reason
    assert any("disconnected" in r.getMessage() for r in caplog.records)


# -- the sans-I/O layer ---------------------------------------------------------------------------


def test_decode_and_encode() -> None:
    call = protocol.decode(
        {"type": "AUI_METHOD_CALL", "id": 3, "method": "callTool", "args": ["a", {}]}
    )
    assert call == protocol.MethodCall(3, "callTool", ("a", {}))
    assert protocol.decode({"type": "ready"}) == protocol.LegacyMessage("ready")
    assert isinstance(protocol.decode({"type": "render"}), str)
    assert protocol.encode_error("i", "no") == {
        "type": "AUI_METHOD_RESPONSE",
        "id": "i",
        "error": "no",
    }
    assert protocol.changed_globals({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": None}) == {
        "b": 3,
        "c": None,
    }
