"""The dev page's server (``DevPage``) through a real WebSocket client on 127.0.0.1.

A federation of an in-process registry and a worker script (written into ``tmp_path``)
is served; the tests read what the page would be pushed and send what it would send:
the token is required, the whole state comes first and again on every change, a call
streams its progress and logs then its result, a running call is cancelled, a failing
call's error is typed with its member and tool, and a member that cannot start shows
as failed with the reason. Every wait is bounded by ``WAIT``.
"""

from __future__ import annotations

import sys
import textwrap
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from dev_socket import WAIT, page_socket
from pydantic import BaseModel

from assistant_frames import (
    Federation,
    HandshakeRejected,
    ModelContextRegistry,
    ToolCallContext,
    ToolCallError,
)
from assistant_frames.dev import DevPage, describe_federation
from assistant_frames.transports.websocket import connect_websocket

pytestmark = pytest.mark.anyio


WORKER = """
import anyio

from assistant_frames import ModelContextRegistry
from assistant_frames.frames import serve_stdio

registry = ModelContextRegistry()
registry.add_instruction("Count words with the text tools.")


@registry.tool
def word_count(text: str) -> int:
    '''Count the words in a text.'''
    return len(text.split())


anyio.run(serve_stdio, registry)
"""


class Place(BaseModel):
    city: str
    nights: int = 1


def calc_registry() -> ModelContextRegistry:
    registry = ModelContextRegistry()
    registry.add_instruction("Use the calculator for arithmetic.")

    @registry.tool
    def add(a: float, b: float = 0.0) -> float:
        """Add two numbers."""
        return a + b

    @registry.tool
    def book(place: Place, guests: list[str]) -> str:
        """Book a stay."""
        return f"{place.nights} night(s) in {place.city} for {', '.join(guests)}"

    @registry.tool
    async def index(files: int, context: ToolCallContext) -> str:
        """Index some files, reporting progress."""
        for done in range(1, files + 1):
            context.report_progress(done, files, f"file {done}")
            await anyio.sleep(0.01)
        context.log("info", "index ready", data={"files": files})
        return f"indexed {files}"

    @registry.tool
    async def hang(context: ToolCallContext) -> str:
        """Never answer (until cancelled)."""
        context.report_progress(0, None, "waiting")
        await anyio.sleep_forever()
        return "never"

    @registry.tool
    def divide(a: float, b: float) -> float:
        """Divide a by b."""
        return a / b

    return registry


@pytest.fixture
def worker(tmp_path: Path) -> Path:
    path = tmp_path / "words_worker.py"
    path.write_text(textwrap.dedent(WORKER), encoding="utf-8")
    return path


@asynccontextmanager
async def dev_page(**federation_options: Any) -> AsyncIterator[DevPage]:
    async with Federation(**federation_options) as federation, DevPage(federation) as page:
        yield page


def members(state: dict[str, Any]) -> dict[str, str]:
    return {member["name"]: member["state"] for member in state["members"]}


def tool(state: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [t for t in state["tools"] if t["name"] == name]
    return found


async def test_the_page_and_its_files_are_served_but_the_socket_needs_the_token() -> None:
    async with dev_page() as page:
        assert page.url.startswith("http://127.0.0.1:")
        assert "#token=" in page.url
        assert page.token in page.url

        def fetch(path: str) -> bytes:
            with urllib.request.urlopen(page.origin + path, timeout=WAIT) as answer:
                assert answer.status == 200
                return bytes(answer.read())

        html = await anyio.to_thread.run_sync(fetch, "/")
        assert b"dev-page.js" in html
        assert b"dev-page.css" in html
        assert b"http" not in html.replace(b"http-equiv", b"")  # nothing from the network
        assert b"socket" in await anyio.to_thread.run_sync(fetch, "/dev-page.js")
        for wrong in (None, "not-the-token"):
            with pytest.raises(HandshakeRejected) as refused:
                async with page_socket(page, token=wrong):
                    pass
            assert refused.value.status == 401
        # A browser sends the token in the URL, and its page's origin.
        url = page.origin.replace("http://", "ws://") + f"/socket?access_token={page.token}"
        async with connect_websocket(url, origin=page.origin, open_timeout=WAIT) as transport:
            hello = await transport.receive()
            assert hello == {"type": "hello", "title": "assistant-frames dev", "theme": "light"}
        # ... and a page of another origin is hung up on.
        async with connect_websocket(
            url, origin="http://evil.example", open_timeout=WAIT
        ) as transport:
            with anyio.fail_after(WAIT), pytest.raises(anyio.EndOfStream):
                await transport.receive()


async def test_members_their_state_and_the_merged_context_are_pushed(worker: Path) -> None:
    async with dev_page() as page, page_socket(page) as socket:
        first = await socket.state(lambda state: True)
        assert first["members"] == []
        assert first["tools"] == []
        await page.add("calc", calc_registry(), described="calc:registry in this process")
        await page.add("words", [sys.executable, str(worker)])
        state = await socket.state(
            lambda s: (
                members(s) == {"calc": "connected", "words": "connected"} and len(s["tools"]) == 6
            )
        )
        names = [t["name"] for t in state["tools"]]
        assert "calc_add" in names
        assert "words_word_count" in names
        assert tool(state, "words_word_count")["owner"] == "words"
        add = tool(state, "calc_add")
        assert add["owner"] == "calc"
        assert add["description"] == "Add two numbers."
        assert add["inputSchema"]["required"] == ["a"]
        assert add["visibility"] == ["model", "app"]
        book = tool(state, "calc_book")["inputSchema"]
        assert book["properties"]["place"]["properties"]["city"]["type"] == "string"
        by_name = {m["name"]: m for m in state["members"]}
        assert by_name["words"]["instructions"] == "Count words with the text tools."
        assert by_name["calc"]["instructions"] == "Use the calculator for arithmetic."
        assert "Count words" in state["instructions"]
        assert "calculator" in state["instructions"]
        assert by_name["words"]["target"].startswith("worker `")
        assert by_name["calc"]["target"] == "calc:registry in this process"
        # The model's view: the exporters' output.
        exports = state["exports"]
        assert {t["function"]["name"] for t in exports["openai-chat"]} == set(names)
        assert {t["name"] for t in exports["anthropic"]} == set(names)
        assert {t["name"] for t in exports["openai-responses"]} == set(names)
        assert {t["name"] for t in exports["mcp"]} == set(names)
        # A member leaving takes its tools; the page hears it.
        await page.remove("words")
        state = await socket.state(lambda s: "words" not in members(s))
        assert not any(t["owner"] == "words" for t in state["tools"])
        assert state == {"type": "state", **page.state}
        assert describe_federation(page.federation)["tools"] == state["tools"]


async def test_a_call_streams_its_progress_and_logs_then_its_result() -> None:
    async with dev_page() as page, page_socket(page) as socket:
        await page.add("calc", calc_registry())
        await socket.state(lambda s: members(s) == {"calc": "connected"})
        await socket.send(
            {"type": "call", "call": "c1", "tool": "calc_index", "arguments": {"files": 3}}
        )
        result = await socket.until(lambda m: m["type"] == "result")
        assert result["result"] == "indexed 3"
        assert result["call"] == "c1"
        mine = [m for m in socket.received if m.get("call") == "c1"]
        assert mine[0] == {
            "type": "started",
            "call": "c1",
            "tool": "calc_index",
            "member": "calc",
            "arguments": {"files": 3},
        }
        progress = [m for m in mine if m["type"] == "progress"]
        assert progress, mine
        assert progress[-1] == {
            "type": "progress",
            "call": "c1",
            "progress": 3,
            "total": 3,
            "message": "file 3",
        }
        (log,) = [m for m in mine if m["type"] == "log"]
        assert log["level"] == "info"
        assert log["data"] == {"files": 3}
        # Nested objects and arrays of the form's arguments cross as they are.
        arguments = {"place": {"city": "Oslo", "nights": 2}, "guests": ["Ann", "Bo"]}
        await socket.send(
            {"type": "call", "call": "c2", "tool": "calc_book", "arguments": arguments}
        )
        result = await socket.until(lambda m: m["type"] == "result")
        assert result["result"] == "2 night(s) in Oslo for Ann, Bo"


async def test_a_failing_call_is_a_typed_error_naming_its_member_and_tool() -> None:
    async with dev_page() as page, page_socket(page) as socket:
        await page.add("calc", calc_registry())
        await socket.state(lambda s: members(s) == {"calc": "connected"})
        calls = {
            "zero": ("calc_divide", {"a": 1, "b": 0}),
            "bad": ("calc_add", {"a": "not a number"}),
            "none": ("calc_nothing", {}),
        }
        for call, (name, arguments) in calls.items():
            await socket.send({"type": "call", "call": call, "tool": name, "arguments": arguments})
        errors = {}
        while len(errors) < len(calls):
            message = await socket.until(lambda m: m["type"] in ("error", "result"))
            assert message["type"] == "error", message
            errors[message["call"]] = message["error"]
        assert errors["zero"]["tool"] == "calc_divide"
        assert errors["zero"]["memberTool"] == "divide"
        assert errors["zero"]["member"] == "calc"
        assert "division by zero" in errors["zero"]["message"]
        assert errors["bad"]["type"] == "ToolArgumentsError"
        assert errors["bad"]["code"] == "invalid_arguments"
        assert errors["none"]["type"] == "ToolNotFoundError"
        assert errors["none"]["tool"] == "calc_nothing"


async def test_a_running_call_is_cancelled() -> None:
    async with dev_page() as page, page_socket(page) as socket:
        await page.add("calc", calc_registry())
        await socket.state(lambda s: members(s) == {"calc": "connected"})
        await socket.send({"type": "call", "call": "h", "tool": "calc_hang", "arguments": {}})
        await socket.until(lambda m: m["type"] == "progress" and m["call"] == "h")
        await socket.send({"type": "cancel", "call": "h"})
        ended = await socket.until(lambda m: m.get("call") == "h" and m["type"] != "progress")
        assert ended["type"] == "cancelled", ended
        # The page goes on: another call works.
        await socket.send({"type": "call", "call": "a", "tool": "calc_add", "arguments": {"a": 2}})
        assert (await socket.until(lambda m: m["type"] == "result"))["result"] == 2


async def test_a_member_that_cannot_start_shows_failed_with_the_reason(tmp_path: Path) -> None:
    crash = tmp_path / "crash.py"
    crash.write_text("import sys\nprint('no frame here', file=sys.stderr)\nsys.exit(3)\n")
    async with dev_page(max_attempts=1, initial_delay=0.01) as page, page_socket(page) as socket:
        await page.add("crash", [sys.executable, str(crash)])
        state = await socket.state(lambda s: members(s).get("crash") == "failed")
        (member,) = state["members"]
        assert member["error"], member
        assert "3" in member["error"] or "exit" in member["error"], member["error"]
        # Its tools are not there, and a call to one is a typed error.
        await socket.send({"type": "call", "call": "x", "tool": "crash_any", "arguments": {}})
        error = await socket.until(lambda m: m["type"] == "error")
        assert error["error"]["type"] == "ToolNotFoundError"


async def test_bad_messages_are_answered_not_fatal() -> None:
    async with dev_page() as page, page_socket(page) as socket:
        await socket.state(lambda s: True)
        await socket.send({"type": "call", "tool": "x"})  # no call id
        assert (await socket.until(lambda m: m["type"] == "notice"))["level"] == "error"
        await socket.send({"type": "call", "call": "y", "tool": "x", "arguments": [1]})
        error = await socket.until(lambda m: m["type"] == "error")
        assert error["error"]["type"] == "ValueError"
        await socket.send({"type": "dance", "call": "z"})
        assert "dance" in (await socket.until(lambda m: m["type"] == "notice"))["text"]


# -- the program's calls and the theme ----------------------------------------------------


async def test_a_call_of_the_program_is_shown_to_every_page_and_replayed_to_later_ones() -> None:
    async with dev_page() as page:
        await page.add("calc", calc_registry(), wait=True)
        async with page_socket(page) as first:
            await first.state(lambda s: len(s["tools"]) == 5)
            assert await page.call_tool("calc_index", {"files": 2}) == "indexed 2"
            result = await first.until(lambda m: m["type"] == "result")
            assert (result["call"], result["result"]) == ("p1", "indexed 2")
            told = [m for m in first.received if m.get("call") == "p1"]
            assert told[0] == {
                "type": "started",
                "call": "p1",
                "tool": "calc_index",
                "member": "calc",
                "arguments": {"files": 2},
            }
            assert [m["progress"] for m in told if m["type"] == "progress"] == [1, 2]

            # A failure is told, and raised to the program.
            with pytest.raises(ToolCallError, match="division by zero"):
                await page.call_tool("calc_divide", {"a": 1, "b": 0})
            error = await first.until(lambda m: m["type"] == "error")
            assert (error["call"], error["error"]["tool"]) == ("p2", "calc_divide")

        # A page opened later is told both calls, in order, after the state.
        async with page_socket(page) as later:
            await later.until(lambda m: m.get("call") == "p2" and m["type"] == "error")
            kinds = [(m["type"], m.get("call")) for m in later.received]
            assert kinds[:2] == [("hello", None), ("state", None)]
            assert kinds.index(("started", "p1")) < kinds.index(("result", "p1"))
            assert kinds.index(("result", "p1")) < kinds.index(("started", "p2"))


async def test_a_page_cancels_a_call_of_the_program() -> None:
    async with dev_page() as page:
        await page.add("calc", calc_registry(), wait=True)
        async with page_socket(page) as socket, anyio.create_task_group() as tasks:
            await socket.state(lambda s: len(s["tools"]) == 5)
            outcome: list[str] = []

            async def program() -> None:
                with pytest.raises(ToolCallError, match="cancelled in the dev page") as raised:
                    await page.call_tool("calc_hang")
                outcome.append(raised.value.tool_name or "")

            tasks.start_soon(program)
            await socket.until(lambda m: m["type"] == "progress" and m["call"] == "p1")
            await socket.send({"type": "cancel", "call": "p1"})
            cancelled = await socket.until(lambda m: m["type"] == "cancelled")
            assert cancelled["call"] == "p1"
        assert outcome == ["calc_hang"]


async def test_the_theme_is_switched_for_every_page() -> None:
    with pytest.raises(ValueError, match="theme"):
        DevPage(Federation(), theme="blue")  # type: ignore[arg-type]
    async with (
        Federation() as federation,
        DevPage(federation, theme="dark") as page,
        page_socket(page) as one,
        page_socket(page) as two,
    ):
        hello = await one.until(lambda m: m["type"] == "hello")
        assert hello["theme"] == "dark"
        await two.until(lambda m: m["type"] == "state")
        await one.send({"type": "theme", "theme": "light"})
        for socket in (one, two):
            assert (await socket.until(lambda m: m["type"] == "theme"))["theme"] == "light"
        assert page.theme == "light"
        assert page.views is not None
        assert page.views.app_page.theme == "light"  # the views are told too
        await one.send({"type": "theme", "theme": "neon"})
        notice = await one.until(lambda m: m["type"] == "notice")
        assert "neon" in notice["text"]
        assert page.theme == "light"


async def test_a_member_under_its_own_names_owns_its_tools() -> None:
    async with Federation() as federation:
        await federation.add("calc", calc_registry(), namespaced=False)
        assert federation.status("calc").namespaced is False
        state = describe_federation(federation)
        assert tool(state, "add")["owner"] == "calc"
        assert {t["owner"] for t in state["tools"]} == {"calc"}


async def test_a_page_opened_after_many_program_calls_gets_their_last_messages() -> None:
    """The replay fits a new page's queue: it is not taken for a page that stopped
    reading (the replay is the last 500 messages; a page's queue holds 1,000)."""
    registry = ModelContextRegistry()

    @registry.tool
    def chatty(context: ToolCallContext) -> str:
        """Log a hundred lines (logs are not coalesced, as progress is)."""
        for step in range(100):
            context.log("info", f"line {step}")
        return "done"

    async with dev_page() as page:
        await page.add("talk", registry, wait=True)
        for _ in range(12):  # 1,224 messages of the program's calls
            assert await page.call_tool("talk_chatty") == "done"
        async with page_socket(page) as later:
            last = await later.until(lambda m: m["type"] == "result" and m["call"] == "p12")
            assert last["result"] == "done"
            replayed = [m for m in later.received if m.get("call", "").startswith("p")]
            assert len(replayed) == 500
            assert (await later.call("c1", "talk_chatty", {}))["result"] == "done"  # still open
