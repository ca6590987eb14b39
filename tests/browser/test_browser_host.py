"""A real @assistant-ui/core host in headless Chromium calls tools that live in Python.

The page ``/host.html`` embeds the shipped child relay (``child-relay.html``), whose
WebSocket reaches a Python ``AssistantFrameProvider`` served by ``websocket_server``; once
the relay says it is ready, the page creates a JS ``AssistantFrameHost`` on that iframe.
The pages, the bundle and the relay come from the same Python server: one origin.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from aui_pages import HOST_READY, TOKEN, host_files

from assistant_frames import (
    AssistantFrameProvider,
    ModelContextRegistry,
    ToolCallContext,
    ToolResult,
)
from assistant_frames.transports import WebSocketServer, websocket_server

from browser_support import AuiBundles, BrowserPage, RecordingTransport

pytestmark = pytest.mark.anyio

SYSTEM = "You can multiply numbers with the Python tools."

# A sibling iframe of the relay that tries to call a Python tool through it.
INTRUDER_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"></head><body><script>
  const relay = parent.document.getElementById("relay").contentWindow;
  relay.postMessage({
    channel: "assistant-ui-frame",
    message: { type: "tool-call", id: "intruder-1", toolName: "note", args: { text: "intruder" } },
  }, "*");
  parent.intruderSent = true;
</script></body></html>
"""

READY = HOST_READY


@dataclass
class PythonFrameSide:
    server: WebSocketServer
    registry: ModelContextRegistry
    notes: list[str]
    received: list[Any] = field(default_factory=list)
    connections: int = 0

    def url(self, token: str = TOKEN, **options: Any) -> str:
        fragment = "&".join(f"{k}={v}" for k, v in {"access_token": token, **options}.items())
        return f"http://{self.server.host}:{self.server.port}/host.html#{fragment}"


def python_registry(notes: list[str]) -> ModelContextRegistry:
    registry = ModelContextRegistry()
    registry.add_instruction(SYSTEM)

    @registry.tool
    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        return a * b

    @registry.tool
    def explode() -> str:
        """Always fails."""
        raise ValueError("kaboom from python")

    @registry.tool
    def note(text: str) -> int:
        """Remember a note; return how many there are."""
        notes.append(text)
        return len(notes)

    return registry


class AskingForEvents(RecordingTransport):
    """Records both ways, and adds ``events: true`` to every tool-call from the browser.

    The JS host never asks for progress; this makes the Python frame send its
    ``tool-progress`` and ``tool-log`` messages to the JS host anyway.
    """

    def __init__(self, inner: Any, log: list[Any], sent: list[Any]) -> None:
        super().__init__(inner, log, sent)

    async def receive(self) -> Any:
        message = await super().receive()
        inner = message.get("message") if isinstance(message, dict) else None
        if isinstance(inner, dict) and inner.get("type") == "tool-call":
            message = {**message, "message": {**inner, "events": True}}
        return message


@asynccontextmanager
async def python_frame(
    bundles: dict[str, bytes], *, sent: list[Any] | None = None
) -> AsyncIterator[PythonFrameSide]:
    """A Python frame behind websocket_server, which also serves the pages and the relay.

    With ``sent``, every call is made to ask for events and what the frame sends is kept.
    """
    files = host_files(bundles, intruder_html=INTRUDER_HTML)
    notes: list[str] = []
    registry = python_registry(notes)
    frame = AssistantFrameProvider(registry)
    side: PythonFrameSide

    async def serve(transport: Any) -> None:
        side.connections += 1
        if sent is None:
            await frame.serve(RecordingTransport(transport, side.received))
        else:
            await frame.serve(AskingForEvents(transport, side.received, sent))

    async with websocket_server(serve, token=TOKEN, http_files=files) as server:
        side = PythonFrameSide(server, registry, notes)
        yield side


async def open_host(page: BrowserPage, side: PythonFrameSide) -> None:
    await page.goto(side.url())
    await page.wait_for(READY)


async def test_js_host_sees_the_python_context(page: BrowserPage, aui_bundles: AuiBundles) -> None:
    async with python_frame(aui_bundles) as side:
        await open_host(page, side)
        context = await page.evaluate("hostTest.context()")
        assert context["system"] == SYSTEM
        assert sorted(context["tools"]) == ["explode", "multiply", "note"]
        multiply = context["tools"]["multiply"]
        assert multiply["description"] == "Multiply two numbers."
        parameters = multiply["parameters"]
        assert parameters["type"] == "object"
        assert parameters["properties"]["a"]["type"] == "number"
        assert parameters["required"] == ["a", "b"]
        events = await page.evaluate("hostTest.relayEvents()")
        assert events == [{"type": "ready"}]


async def test_js_execute_resolves_with_the_python_result(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_frame(aui_bundles) as side:
        await open_host(page, side)
        outcome = await page.evaluate("hostTest.call('multiply', {a: 6, b: 7})")
        assert outcome == {"result": 42}
        outcome = await page.evaluate("hostTest.call('note', {text: 'from js'})")
        assert outcome == {"result": 1}
        assert side.notes == ["from js"]


async def test_python_error_rejects_in_js_with_the_same_message(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_frame(aui_bundles) as side:
        await open_host(page, side)
        assert await page.evaluate("hostTest.call('explode', {})") == {
            "error": "kaboom from python"
        }
        outcome = await page.evaluate("hostTest.call('multiply', {a: 'x', b: 2})")
        assert outcome["error"].startswith('Invalid arguments for tool "multiply"')


async def test_a_js_host_ignores_progress_and_logs_and_gets_the_result(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    sent: list[Any] = []
    async with python_frame(aui_bundles, sent=sent) as side:

        @side.registry.tool
        async def count(n: int, context: ToolCallContext) -> str:
            """Count to n, reporting each step."""
            for i in range(1, n + 1):
                context.report_progress(i, n, f"step {i}")
                context.log("info", f"counted {i}")
                await anyio.sleep(0.01)
            return f"counted to {n}"

        await open_host(page, side)
        await page.wait_for("'count' in hostTest.context().tools")
        assert await page.evaluate("hostTest.call('count', {n: 3})") == {"result": "counted to 3"}
        # The JS host did not ask; the messages it got anyway were ignored.
        calls = [m["message"] for m in side.received if m["message"]["type"] == "tool-call"]
        assert [call.get("events") for call in calls] == [None]
        kinds = [m["message"]["type"] for m in sent if m["message"].get("id") == calls[0]["id"]]
        assert "tool-progress" in kinds
        assert "tool-log" in kinds
        assert kinds[-1] == "tool-result"
        # And the host still works afterwards.
        assert await page.evaluate("hostTest.call('multiply', {a: 6, b: 7})") == {"result": 42}


async def test_a_js_host_ignores_the_mcp_apps_fields(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    sent: list[Any] = []
    async with python_frame(aui_bundles, sent=sent) as side:
        side.registry.add_ui_resource("ui://weather/view", html="<p>weather</p>")

        @side.registry.tool(ui="ui://weather/view")
        def forecast(city: str) -> ToolResult:
            """The forecast for a city."""
            return ToolResult(
                content=f"Sunny in {city}",
                structured_content={"city": city, "sky": "sunny"},
                meta={"viewState": "for the view only"},
            )

        await open_host(page, side)
        await page.wait_for("'forecast' in hostTest.context().tools")
        # The context had uiResources and the tool _meta; the JS host kept what it knows.
        contexts = [m["message"]["context"] for m in sent if "context" in m["message"]]
        assert any("uiResources" in context for context in contexts)
        tool = await page.evaluate("hostTest.context().tools.forecast")
        assert tool["description"] == "The forecast for a city."
        # The result the JS host resolves with is the model's value, without the view's _meta.
        outcome = await page.evaluate("hostTest.call('forecast', {city: 'Lima'})")
        assert outcome == {"result": {"city": "Lima", "sky": "sunny"}}
        results = [m["message"] for m in sent if m["message"]["type"] == "tool-result"]
        assert results[-1]["_meta"] == {"viewState": "for the view only"}  # it was sent
        assert await page.evaluate("hostTest.call('multiply', {a: 6, b: 7})") == {"result": 42}


async def test_python_registry_changes_reach_the_js_host(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_frame(aui_bundles) as side:
        await open_host(page, side)
        await page.evaluate("window.nextChange = hostTest.nextChange(); true")
        handle = side.registry.add_tool(
            "shout", lambda text: text.upper(), description="Upper-case text."
        )
        changed = await page.evaluate("window.nextChange")
        assert sorted(changed["tools"]) == ["explode", "multiply", "note", "shout"]
        assert changed["tools"]["shout"]["description"] == "Upper-case text."
        assert await page.evaluate("hostTest.call('shout', {text: 'hi'})") == {"result": "HI"}

        await page.evaluate("window.nextChange = hostTest.nextChange(); true")
        handle.remove()
        instruction = side.registry.add_instruction("Be brief.")
        await page.wait_for("!('shout' in hostTest.context().tools)")
        await page.wait_for("hostTest.context().system.endsWith('Be brief.')")
        instruction.remove()
        await page.wait_for(f"hostTest.context().system === {json.dumps(SYSTEM)}")


async def test_child_relay_ignores_other_windows(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_frame(aui_bundles) as side:
        await open_host(page, side)
        await page.evaluate(
            """() => {
              const other = document.createElement("iframe");
              other.src = "/intruder.html";
              document.body.appendChild(other);
            }"""
        )
        await page.wait_for("window.intruderSent === true")
        # The relay's own window posting to itself is not its parent either.
        await page.evaluate(
            """() => {
              const relay = document.getElementById("relay").contentWindow;
              relay.eval(`window.postMessage({channel: "assistant-ui-frame", message: {
                type: "tool-call", id: "intruder-2", toolName: "note",
                args: {text: "intruder"}}}, "*")`);
            }"""
        )
        assert await page.evaluate("hostTest.call('note', {text: 'legit'})") == {"result": 1}
        await anyio.sleep(0.2)
        assert side.notes == ["legit"]
        assert "intruder" not in json.dumps(side.received)
        assert side.connections == 1


async def test_child_relay_with_a_wrong_token_fails_after_bounded_retries(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with python_frame(bundles) as side:
        await page.goto(side.url(token="wrong", max_attempts=3, initial_delay=50))
        events = await page.wait_for(
            "hostTest.relayEvents().some((e) => e.type === 'failed') && hostTest.relayEvents()"
        )
        assert [event["type"] for event in events] == ["failed"]
        assert "after 3 attempts" in events[0]["reason"]
        status = await page.evaluate(
            "document.getElementById('relay').contentDocument.documentElement.dataset.relayStatus"
        )
        assert status == "failed"
        assert await page.evaluate("hostTest.ready()") is False
        assert side.connections == 0  # the Python frame never served anything
        assert side.received == []
        assert side.notes == []
