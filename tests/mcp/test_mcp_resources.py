"""``MCPFrameHost``'s resources and prompts, against real servers.

- The ``mcp`` SDK's ``MCPServer`` in this process (``library()``), on both protocol eras
  (``legacy``: list-changed notifications; ``auto``: 2026-07-28 ``subscriptions/listen``)
  and both anyio backends: listings, reads, prompts, the cache and its invalidation, the
  opt-in ``read_resource`` tool.
- ``@modelcontextprotocol/server-everything`` over stdio (tests/mcp_peers): its resources,
  templates and prompts, and a resource it registers at run time.

Every wait is bounded; sleeps only bound negative checks.
"""

from __future__ import annotations

import base64
import gzip
import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.mcpserver.resources import TextResource
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from assistant_frames import FrameDisconnected, ModelContextRegistry
from assistant_frames.mcp import MCPFrameHost

from helpers import installed, wait_until

pytestmark = pytest.mark.anyio

WAIT = 15.0
QUIET = 0.3
MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])


def library() -> MCPServer:
    """A server with a resource, a template, a prompt, and tools that add more of each."""
    server = MCPServer("library")

    @server.resource("note://readme", name="readme", description="Start here.")
    def readme() -> str:
        return "Read me first."

    @server.resource("note://{name}", name="note", description="A note by name.")
    def note(name: str) -> str:
        return f"The note called {name}."

    @server.prompt(description="Greet someone.")
    def greet(name: str) -> str:
        return f"Say hello to {name}."

    @server.tool()
    async def add_note(name: str, text: str, ctx: Context) -> str:
        server.add_resource(TextResource(uri=f"note://added/{name}", name=name, text=text))
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await ctx.notify_resources_changed()
        else:
            await ctx.session.send_resource_list_changed()
        return "added"

    @server.tool()
    async def add_prompt(name: str, ctx: Context) -> str:
        server.add_prompt(Prompt.from_function(lambda: f"The {name} prompt.", name=name))
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await ctx.notify_prompts_changed()
        else:
            await ctx.session.send_prompt_list_changed()
        return "added"

    return server


class Counter:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


@MODES
async def test_resources_and_prompts(mode: str) -> None:
    async with MCPFrameHost(library(), mode=mode, timeout=WAIT) as frame:
        # Not in the model context unless asked.
        assert set(frame.get_model_context().tools) == {"add_note", "add_prompt"}

        resources = await frame.list_resources()
        assert [(r.uri, r.name, r.description) for r in resources] == [
            ("note://readme", "readme", "Start here.")
        ]
        templates = await frame.list_resource_templates()
        assert [t.uri_template for t in templates] == ["note://{name}"]
        read = await frame.read_resource("note://readme")
        assert [c.text for c in read.contents] == ["Read me first."]  # type: ignore[union-attr]
        filled = await frame.read_resource("note://shopping")
        assert filled.contents[0].text == "The note called shopping."  # type: ignore[union-attr]
        with pytest.raises(MCPError):
            await frame.read_resource("other://nothing")

        prompts = await frame.list_prompts()
        assert [(p.name, p.description) for p in prompts] == [("greet", "Greet someone.")]
        assert [a.name for a in prompts[0].arguments or []] == ["name"]
        got = await frame.get_prompt("greet", {"name": "Ada"})
        assert got.messages[0].content.text == "Say hello to Ada."  # type: ignore[union-attr]
        with pytest.raises(MCPError):
            await frame.get_prompt("nope")
    with pytest.raises(FrameDisconnected):
        await frame.list_resources()
    with pytest.raises(FrameDisconnected):
        await frame.read_resource("note://readme")


@MODES
async def test_listings_are_cached_until_the_server_says_they_changed(mode: str) -> None:
    server = library()
    async with MCPFrameHost(server, mode=mode, timeout=WAIT) as frame:
        resources_changed, prompts_changed, tools_changed = Counter(), Counter(), Counter()
        frame.subscribe_resources(resources_changed)
        frame.subscribe_prompts(prompts_changed)
        frame.subscribe(tools_changed)
        assert [r.uri for r in await frame.list_resources()] == ["note://readme"]
        assert [p.name for p in await frame.list_prompts()] == ["greet"]

        # Changed without a word: the cached listings stand.
        server.add_resource(TextResource(uri="note://quiet", name="quiet", text="shh"))
        server.add_prompt(Prompt.from_function(lambda: "quiet", name="quiet"))
        assert [r.uri for r in await frame.list_resources()] == ["note://readme"]
        assert [p.name for p in await frame.list_prompts()] == ["greet"]

        # Changed and announced: subscribers hear it, and the next listing is fresh.
        assert await frame.call_tool("add_note", {"name": "a", "text": "A"}) == {
            "result": "added"
        }  # MCPServer wraps a str
        await wait_until(lambda: resources_changed.count >= 1, WAIT)
        uris = {r.uri for r in await frame.list_resources()}
        assert uris == {"note://readme", "note://quiet", "note://added/a"}
        assert prompts_changed.count == 0
        assert [p.name for p in await frame.list_prompts()] == ["greet"]  # still cached

        assert await frame.call_tool("add_prompt", {"name": "later"}) == {
            "result": "added"
        }  # MCPServer wraps a str
        await wait_until(lambda: prompts_changed.count >= 1, WAIT)
        assert {p.name for p in await frame.list_prompts()} == {"greet", "quiet", "later"}
        got = await frame.get_prompt("later")
        assert got.messages[0].content.text == "The later prompt."  # type: ignore[union-attr]
        await anyio.sleep(QUIET)
        assert resources_changed.count == 1
        assert tools_changed.count == 0  # the model context did not change


@MODES
async def test_the_read_resource_tool_is_opt_in(mode: str) -> None:
    async with MCPFrameHost(library(), mode=mode, resource_tool=True, timeout=WAIT) as frame:
        parent = ModelContextRegistry()
        parent.add_provider(frame, namespace="lib")
        context = parent.get_model_context()
        tool = context.tools["lib_read_resource"]
        assert tool.parameters["required"] == ["uri"]
        assert tool.description is not None
        assert "- note://readme (readme): Start here." in tool.description
        assert "- note://{name} (note): A note by name." in tool.description
        result = await context.call_tool("lib_read_resource", {"uri": "note://readme"})
        assert result == "Read me first."
        assert await context.call_tool("lib_read_resource", {"uri": "note://x"}) == (
            "The note called x."
        )

        changed = Counter()
        frame.subscribe(changed)  # the tool's description is part of the model context
        await frame.call_tool("add_note", {"name": "b", "text": "Bee"})
        await wait_until(lambda: changed.count >= 1, WAIT)
        description = frame.get_model_context().tools["read_resource"].description
        assert description is not None
        assert "note://added/b" in description
        merged = parent.get_model_context()
        assert await merged.call_tool("lib_read_resource", {"uri": "note://added/b"}) == "Bee"


@MODES
async def test_a_server_without_resources_or_prompts(mode: str) -> None:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    bare = Server("bare", on_list_tools=list_tools)
    async with MCPFrameHost(bare, mode=mode, resource_tool=True) as frame:
        assert frame.client.server_capabilities.resources is None
        assert await frame.list_resources() == []
        assert await frame.list_resource_templates() == []
        assert await frame.list_prompts() == []
        assert dict(frame.get_model_context().tools) == {}  # no read_resource: nothing to read


# -- server-everything -------------------------------------------------------------------------

PEERS = Path(__file__).resolve().parents[1] / "mcp_peers"
EVERYTHING_JS = PEERS / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"


@pytest.fixture
def everything() -> list[str]:
    node = shutil.which("node")
    if node is None or not installed(EVERYTHING_JS, PEERS):
        reason = "node or tests/mcp_peers/node_modules (npm ci) is missing"
        if os.environ.get("CI") or os.environ.get("ASSISTANT_FRAMES_REQUIRE_PEERS") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return [node, str(EVERYTHING_JS), "stdio"]


async def test_everything_server_resources_and_prompts(everything: list[str]) -> None:
    async with MCPFrameHost(everything, name="every", timeout=WAIT, resource_tool=True) as frame:
        uris = [r.uri for r in await frame.list_resources()]
        assert any(uri.startswith("demo://resource/static/document/") for uri in uris)
        templates = {t.uri_template for t in await frame.list_resource_templates()}
        assert "demo://resource/dynamic/text/{resourceId}" in templates
        text = await frame.read_resource("demo://resource/dynamic/text/3")
        assert isinstance(text.contents[0], types.TextResourceContents)

        prompts = {p.name for p in await frame.list_prompts()}
        assert {"simple-prompt", "args-prompt"} <= prompts
        got = await frame.get_prompt("args-prompt", {"city": "Lyon"})
        assert "Lyon" in got.messages[0].content.text  # type: ignore[union-attr]

        # A tool that registers a resource: the server announces it.
        changed = Counter()
        frame.subscribe_resources(changed)
        data = "data:text/plain;base64," + base64.b64encode(b"hello resources").decode()
        await frame.call_tool("gzip-file-as-resource", {"name": "hello.gz", "data": data})
        await wait_until(lambda: changed.count >= 1, WAIT)
        uri = "demo://resource/session/hello.gz"
        assert uri in [r.uri for r in await frame.list_resources()]
        blob = (await frame.read_resource(uri)).contents[0]
        assert isinstance(blob, types.BlobResourceContents)
        assert gzip.decompress(base64.b64decode(blob.blob)) == b"hello resources"
        await wait_until(
            lambda: uri in (frame.get_model_context().tools["read_resource"].description or ""),
            WAIT,
        )
