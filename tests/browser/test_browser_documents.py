"""Frame documents (``@assistant-ui/core`` 0.3.35) against the real JS, both directions.

Each test runs against the newest release and the oldest supported one (``aui_bundles``):
0.3.35 frames say which document they are and that they were disposed, and 0.3.35 hosts
ask a reloaded frame for its context; 0.3.20 does none of it, and everything must keep
working with it exactly as before.

- A Python host hosts a JS frame through the parent relay: the frame reloads mid-call,
  is disposed mid-call, and the relay's iframe goes to a page without a frame and back.
- A JS host uses a Python frame through the child relay: ``frameLoaded()``, and the
  Python frame stopping while the JS host waits on a call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from aui_pages import FRAME, HOST_READY, TOKEN, frame_files, host_files

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    DocumentChanged,
    ModelContextRegistry,
    ProviderDisposed,
    ToolCallTimeout,
)
from assistant_frames.transports import WebSocketServer, websocket_server

from browser_support import AuiBundles, BrowserPage, RecordingTransport
from helpers import Outcome

pytestmark = pytest.mark.anyio

WAIT = 10.0
#: Far below every call's timeout: what "failed at once" means here.
AT_ONCE = 3.0
DOCUMENT = f"{FRAME}.documentId()"

# A page in the relay's iframe that runs no frame at all.
BLANK_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>no frame</title></head><body></body></html>
"""
PARENT_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>parent relay</title></head>
<body>
<script src="/assistant-frames/parent-relay.js"></script>
<script>
  window.relay = AssistantFramesRelay.parent({
    url: `ws://${location.host}/frames/js`,
    token: new URLSearchParams(location.hash.slice(1)).get("token"),
    src: "/frame.html",
  });
</script>
</body></html>
"""


# -- a Python host, a JS frame ------------------------------------------------------------------


@dataclass
class JSFrameSide:
    server: WebSocketServer
    hosts: anyio.abc.ObjectReceiveStream[AssistantFrameHost]
    received: list[Any] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://{self.server.host}:{self.server.port}"

    def received_documents(self) -> list[str]:
        """The distinct documentIds the frame sent, in order."""
        seen: list[str] = []
        for raw in self.received:
            document = raw.get("message", {}).get("documentId") if isinstance(raw, dict) else None
            if document is not None and document not in seen:
                seen.append(document)
        return seen


@asynccontextmanager
async def js_frame(
    page: BrowserPage, bundles: AuiBundles, sent: list[Any]
) -> AsyncIterator[tuple[JSFrameSide, AssistantFrameHost]]:
    """The parent relay's page, its JS frame loaded, and the Python host of it."""
    files = frame_files(bundles, blank_html=BLANK_HTML, parent_html=PARENT_HTML)
    send, receive = anyio.create_memory_object_stream[AssistantFrameHost](4)
    side: JSFrameSide

    async def accept(transport: Any) -> None:
        recorder = RecordingTransport(transport, side.received, sent)
        async with AssistantFrameHost(recorder, name="js", timeout=WAIT) as host:
            await send.send(host)
            await host.wait_disconnected()

    async with send, receive, websocket_server(accept, token=TOKEN, http_files=files) as server:
        side = JSFrameSide(server, receive)
        await page.goto(f"{side.base}/parent.html#token={TOKEN}")
        with anyio.fail_after(WAIT):
            host = await receive.receive()
            await host.wait_for_context(timeout=WAIT)
        yield side, host


async def until(host: AssistantFrameHost, predicate: Any, what: str) -> None:
    """Wait (bounded) until ``predicate()`` holds, checking at each change of the host."""
    with anyio.move_on_after(WAIT):
        while not predicate():
            changed = anyio.Event()
            unsubscribe = host.subscribe(changed.set)
            try:
                if not predicate():
                    with anyio.move_on_after(0.2):  # the document may change silently
                        await changed.wait()
            finally:
                unsubscribe()
        return
    raise AssertionError(f"not within {WAIT} s: {what}")


async def slow_call(
    page: BrowserPage, host: AssistantFrameHost, tg: anyio.abc.TaskGroup, timeout: float
) -> tuple[Outcome, float]:
    """Start the JS frame's ``slow`` tool and wait until the frame runs it."""
    outcome = Outcome()
    tg.start_soon(lambda: outcome.run(host, "slow", {}, timeout=timeout))
    await page.wait_for(f"{FRAME}.started().length === 1")
    return outcome, anyio.current_time()


def tool_calls(sent: list[Any]) -> list[dict[str, Any]]:
    return [m["message"] for m in sent if m["message"]["type"] == "tool-call"]


async def test_a_js_frame_that_reloads_mid_call_is_a_new_document(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    sent: list[Any] = []
    async with js_frame(page, aui_bundles, sent) as (side, host):
        first = host.document_id
        assert first == await page.evaluate(DOCUMENT)  # None for both, before 0.3.35
        assert (first is not None) is aui_bundles.documents
        async with anyio.create_task_group() as tg:
            # 0.3.20 cannot tell the call is gone: it waits out a short timeout instead.
            timeout = WAIT if aui_bundles.documents else 1.5
            outcome, started = await slow_call(page, host, tg, timeout)
            assert tool_calls(sent)[-1].get("documentId") == first
            await page.evaluate("window.relay.iframe.contentWindow.location.reload()")
            with anyio.fail_after(WAIT):
                await outcome.done.wait()
            elapsed = anyio.current_time() - started
        if aui_bundles.documents:
            assert isinstance(outcome.error, DocumentChanged), outcome.error
            assert outcome.error.message == "AssistantFrame document has changed"
            assert elapsed < AT_ONCE, elapsed
            await until(host, lambda: host.document_id not in (None, first), "a new document")
            second = host.document_id
            assert second == await page.evaluate(DOCUMENT)
        else:
            assert isinstance(outcome.error, ToolCallTimeout), outcome.error
            assert host.document_id is None
        await page.wait_for(f"{FRAME} && {FRAME}.started().length === 0")  # the new page
        await until(host, lambda: "add" in host.get_model_context().tools, "the new context")
        with anyio.fail_after(WAIT):
            assert await host.call_tool("add", {"a": 2, "b": 3}) == 5
        assert tool_calls(sent)[-1].get("documentId") == host.document_id
        if aui_bundles.documents:
            assert side.received_documents() == [first, host.document_id]


async def test_a_relay_carries_one_document_then_another(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    """The relay's iframe goes to a page without a frame (the host asks, nobody answers,
    the old document's context goes after the grace period), then to a frame again."""
    sent: list[Any] = []
    async with js_frame(page, aui_bundles, sent) as (side, host):
        first = host.document_id
        requests_before = sum(1 for m in sent if m["message"]["type"] == "model-context-request")
        async with anyio.create_task_group() as tg:
            outcome, started = await slow_call(page, host, tg, WAIT)
            await page.evaluate("window.relay.iframe.src = '/blank.html'")
            with anyio.fail_after(WAIT):
                await outcome.done.wait()
            elapsed = anyio.current_time() - started
        # Nobody answered the frame-loaded request: after its 2 s grace period the old
        # document's call failed and its tools went, whichever release the frame was.
        assert isinstance(outcome.error, DocumentChanged), outcome.error
        assert 1.5 < elapsed < 2 + AT_ONCE, elapsed
        assert host.get_model_context().tools == {}
        requests = [m["message"] for m in sent if m["message"]["type"] == "model-context-request"]
        assert len(requests) > requests_before
        assert isinstance(requests[-1]["requestId"], str)
        with anyio.fail_after(WAIT), pytest.raises(DocumentChanged):
            await host.call_tool("add", {"a": 1, "b": 1})  # refused until a context comes

        await page.evaluate("window.relay.iframe.src = '/frame.html'")
        await until(host, lambda: "add" in host.get_model_context().tools, "the next frame")
        with anyio.fail_after(WAIT):
            assert await host.call_tool("add", {"a": 20, "b": 22}) == 42
        if aui_bundles.documents:
            second = host.document_id
            assert second not in (None, first)
            assert side.received_documents() == [first, second]
            assert tool_calls(sent)[-1]["documentId"] == second

            def answers() -> list[dict[str, Any]]:
                """Answers to the last request (the relay's notice of the new load)."""
                requests = [m["message"] for m in sent if "requestId" in m["message"]]
                last = requests[-1]["requestId"]
                return [
                    r["message"] for r in side.received if r["message"].get("requestId") == last
                ]

            await until(host, answers, "the new document's answer to the load request")
            assert [a["documentId"] for a in answers()] == [second]


async def test_a_js_frame_disposed_mid_call(page: BrowserPage, aui_bundles: AuiBundles) -> None:
    sent: list[Any] = []
    async with js_frame(page, aui_bundles, sent) as (side, host):
        async with anyio.create_task_group() as tg:
            outcome, started = await slow_call(page, host, tg, WAIT)
            await page.evaluate(f"{FRAME}.dispose()")
            with anyio.fail_after(WAIT):
                await outcome.done.wait()
            elapsed = anyio.current_time() - started
        # Both releases answer a running call when disposed; the text comes back typed.
        assert isinstance(outcome.error, ProviderDisposed), outcome.error
        assert outcome.error.message == "AssistantFrameProvider has been disposed"
        assert elapsed < AT_ONCE, elapsed

        def kinds() -> list[str]:
            return [raw["message"]["type"] for raw in side.received]

        if aui_bundles.documents:
            await until(host, lambda: kinds()[-1] == "provider-disposed", "provider-disposed")
            assert kinds()[-3:] == ["model-context-update", "tool-result", "provider-disposed"]
            assert side.received[-3]["message"]["context"] == {}
            assert host.get_model_context().tools == {}
            started = anyio.current_time()
            with anyio.fail_after(WAIT), pytest.raises(ProviderDisposed):
                await host.call_tool("add", {"a": 1, "b": 1})
            assert anyio.current_time() - started < 0.5  # at once: nobody will answer
        else:
            assert "provider-disposed" not in kinds()
            with anyio.fail_after(WAIT), pytest.raises(ToolCallTimeout):
                await host.call_tool("add", {"a": 1, "b": 1}, timeout=1.0)


# -- a JS host, a Python frame ------------------------------------------------------------------


@dataclass
class PythonFrameSide:
    stop: anyio.Event  # set it to shut the Python side down (the page stays)
    received: list[Any] = field(default_factory=list)
    sent: list[Any] = field(default_factory=list)


@asynccontextmanager
async def python_frame(page: BrowserPage, bundles: AuiBundles) -> AsyncIterator[PythonFrameSide]:
    """A Python frame behind the child relay, and the JS host page using it."""
    registry = ModelContextRegistry()
    release = anyio.Event()

    @registry.tool
    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        return a * b

    @registry.tool
    async def wait() -> str:
        """Wait until the test releases it."""
        await release.wait()
        return "released"

    frame = AssistantFrameProvider(registry)
    files = host_files(bundles)
    side = PythonFrameSide(anyio.Event())

    async def serve(transport: Any) -> None:
        await frame.serve(RecordingTransport(transport, side.received, side.sent))

    async def run(*, task_status: anyio.abc.TaskStatus[WebSocketServer]) -> None:
        async with websocket_server(serve, token=TOKEN, http_files=files) as server:
            task_status.started(server)
            await side.stop.wait()

    async with anyio.create_task_group() as tg:
        server = await tg.start(run)
        await page.goto(f"http://{server.host}:{server.port}/host.html#access_token={TOKEN}")
        await page.wait_for(HOST_READY)
        try:
            yield side
        finally:
            release.set()
            side.stop.set()


async def test_frame_loaded_in_a_js_host_keeps_a_python_frame(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_frame(page, aui_bundles) as side:
        changes = await page.evaluate("hostTest.changes()")
        loaded = await page.evaluate("hostTest.frameLoaded()")
        assert loaded is aui_bundles.documents  # 0.3.20 has no frameLoaded()
        if loaded:
            await anyio.sleep(2.5)  # past the JS host's grace period
            # Our frame echoed the requestId: the JS host kept the context.
            assert await page.evaluate("hostTest.changes()") == changes + 1  # the answer only
            request = next(
                m["message"]
                for m in side.received
                if m["message"]["type"] == "model-context-request" and "requestId" in m["message"]
            )
            answers = [m["message"] for m in side.sent if m["message"].get("requestId")]
            assert [a["requestId"] for a in answers] == [request["requestId"]]
            assert answers[0]["type"] == "model-context-update"
        tools = (await page.evaluate("hostTest.context()"))["tools"]
        assert sorted(tools) == ["multiply", "wait"]
        result = await page.evaluate("hostTest.call('multiply', {a: 6, b: 7})")
        assert result == {"result": 42}
        # Every message our frame sent carries its one document (a 0.3.20 host ignores
        # it); a 0.3.35 host's tool-call addresses that document.
        documents = {m["message"].get("documentId") for m in side.sent}
        assert len(documents) == 1
        assert None not in documents
        calls = [m["message"] for m in side.received if m["message"]["type"] == "tool-call"]
        expected = list(documents) if aui_bundles.documents else [None]
        assert [c.get("documentId") for c in calls] == expected


async def test_a_python_frame_that_stops_while_a_js_host_waits(
    page: BrowserPage, aui_bundles: AuiBundles
) -> None:
    async with python_frame(page, aui_bundles) as side:
        assert await page.evaluate("hostTest.keep('multiply')") is True
        running = await page.evaluate("hostTest.begin('wait', {})")
        await anyio.sleep(0.3)  # the call reaches the frame
        assert await page.evaluate(f"hostTest.outcome({running})") is None
        side.stop.set()  # the Python side shuts down; the page stays
        outcome = await page.wait_for(f"hostTest.outcome({running})")
        # Both releases reject the running call with the frame's answer, at once.
        assert outcome["error"] == "AssistantFrameProvider has been disposed"
        assert outcome["ms"] < AT_ONCE * 1000
        kinds = [m["message"]["type"] for m in side.sent]
        assert kinds[-3:] == ["model-context-update", "tool-result", "provider-disposed"]
        # A call made after that: a 0.3.35 host fails it at once; a 0.3.20 host, which
        # knows no provider-disposed, waits out its (here 1 s) timeout.
        after = await page.evaluate("hostTest.begin('multiply', {a: 1, b: 2}, 1000, true)")
        outcome = await page.wait_for(f"hostTest.outcome({after})")
        if aui_bundles.documents:
            assert outcome["error"] == "AssistantFrameProvider has been disposed"
            assert outcome["ms"] < 500
        else:
            assert "error" in outcome
            assert outcome["ms"] >= 900
