"""MCP tools pass through assistant-frames exactly as their server declared them.

A proxy must be transparent: a client that lists a server through ``serve --mcp-stdio``
must see each tool as it would see it listing the server itself, with only the name
namespaced. Compared field by field with the official ``mcp`` client:

- three real npm servers (``@modelcontextprotocol/server-filesystem``,
  ``server-memory`` and ``server-everything``, pinned in ``tests/mcp_peers``), and
  ``tests/mcp_declared_server.py`` (the SDK's own server, declaring a top-level title and
  a different ``annotations.title``, icons, ``_meta``, an output schema, empty
  annotations...), each a real subprocess;
- through two chains: ``serve --mcp-stdio --mcp NAME=SERVER`` (MCPFrameHost -> registry ->
  MCPContextServer), and ``serve --mcp-stdio --frame wire=WORKER`` where the worker is
  ``serve --stdio --mcp NAME=SERVER`` (the same, with the frame wire and an
  AssistantFrameHost between them);
- and the other way: a Python tool served by MCPContextServer, read back by MCPFrameHost.

``execution`` (task support, 2025-11-25) is the one field not passed on: it says how the
*server* runs calls, and calls through assistant-frames are never tasks.

A missing peer skips these tests, unless ``CI`` or ``ASSISTANT_FRAMES_REQUIRE_PEERS=1``
is set: then they fail, as in ``test_mcp_peers.py``.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from npm_peers import PEERS_DIR, node_with

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContextRegistry,
    Tool,
    ToolAnnotations,
)

from helpers import memory_pair

try:
    import mcp_types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from assistant_frames.mcp import MCPContextServer, MCPFrameHost
except ImportError as exc:  # pragma: no cover - depends on the environment
    pytest.skip(f"MCP pass-through tests skipped: {exc}", allow_module_level=True)

pytestmark = pytest.mark.anyio

TESTS = Path(__file__).resolve().parents[1]
NODE_MODULES = PEERS_DIR / "node_modules" / "@modelcontextprotocol"
SERVERS_JS = {
    "fs": NODE_MODULES / "server-filesystem" / "dist" / "index.js",
    "mem": NODE_MODULES / "server-memory" / "dist" / "index.js",
    "every": NODE_MODULES / "server-everything" / "dist" / "index.js",
}
DECLARED_SERVER = TESTS / "mcp_declared_server.py"
TIMEOUT = 30.0

# Every field of an MCP Tool, as the SDK has them: the name (namespaced), ``execution``
# (never passed on), and the descriptive fields that must come out exactly as they went in.
FIELDS = ("title", "description", "input_schema", "output_schema", "annotations", "icons", "meta")


def test_the_sdk_has_no_tool_field_this_test_does_not_compare() -> None:
    assert set(mcp_types.Tool.model_fields) == {"name", "execution", *FIELDS}


# -- the peers ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Each server's command, by the namespace it joins under."""
    node = node_with(SERVERS_JS.values())
    allowed = tmp_path_factory.mktemp("allowed")
    return {
        "fs": [node, str(SERVERS_JS["fs"]), str(allowed)],
        "mem": [node, str(SERVERS_JS["mem"])],
        "every": [node, str(SERVERS_JS["every"]), "stdio"],
        "decl": [sys.executable, str(DECLARED_SERVER)],
    }


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Ours, with the memory server's graph in a temporary file."""
    graph = tmp_path_factory.mktemp("memory") / "graph.jsonl"
    return {**os.environ, "MEMORY_FILE_PATH": str(graph)}


async def listing(command: list[str], env: dict[str, str], cwd: Path) -> list[mcp_types.Tool]:
    """The tools an official ``mcp.Client`` lists from ``command`` over stdio."""
    server = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=cwd)
    async with Client(stdio_client(server)) as client:
        return list((await client.list_tools()).tools)


def serve_command(*members: str) -> list[str]:
    # Its members' connections get the test's whole bound: a loaded machine starts
    # eleven servers here at once, and slowly.
    timeout = f"--timeout={TIMEOUT:g}"
    return [sys.executable, "-m", "assistant_frames", "serve", timeout, *members]


def fields(tool: mcp_types.Tool) -> dict[str, Any]:
    return {field: getattr(tool, field) for field in FIELDS}


def assert_passed_through(
    direct: list[mcp_types.Tool], proxied: Mapping[str, mcp_types.Tool], prefix: str
) -> list[str]:
    """Each of the server's tools, as listed through us under ``prefix``, is exactly the
    tool the server declared; returns the names compared."""
    compared = []
    for tool in direct:
        through = proxied.get(prefix + tool.name)
        if through is None:
            continue
        assert fields(through) == fields(tool), tool.name
        # And in the wire shape a client receives: no key added, none dropped.
        assert through.model_dump(by_alias=True, exclude_unset=True, exclude={"name"}) == (
            tool.model_dump(by_alias=True, exclude_unset=True, exclude={"name", "execution"})
        ), tool.name
        assert through.execution is None  # calls through us are never tasks
        compared.append(tool.name)
    return compared


# -- the servers' tools, through serve --mcp-stdio ---------------------------------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # subprocesses: one run is enough
async def test_mcp_servers_tools_pass_through_serve_exactly(
    servers: dict[str, list[str]], environment: dict[str, str], tmp_path: Path
) -> None:
    members = [f"--mcp={name}={shlex.join(command)}" for name, command in servers.items()]
    federation = serve_command("--mcp-stdio", *members)
    worker = serve_command("--stdio", *members)
    over_the_wire = serve_command("--mcp-stdio", f"--frame=wire={shlex.join(worker)}")
    direct: dict[str, list[mcp_types.Tool]] = {}
    through: dict[str, dict[str, mcp_types.Tool]] = {}

    async def list_directly(name: str) -> None:
        direct[name] = await listing(servers[name], environment, tmp_path)

    async def list_through(chain: str, command: list[str]) -> None:
        through[chain] = {t.name: t for t in await listing(command, environment, tmp_path)}

    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            for name in servers:
                tg.start_soon(list_directly, name)
            tg.start_soon(list_through, "federation", federation)
            tg.start_soon(list_through, "wire", over_the_wire)

    # What the declared server is there for: the two titles differ, and the rest is set.
    forecast = next(tool for tool in direct["decl"] if tool.name == "forecast")
    assert forecast.title == "Weather forecast"
    assert forecast.annotations is not None
    assert forecast.annotations.title == "Forecast (from the annotations)"
    assert forecast.icons
    assert forecast.meta
    assert forecast.output_schema
    assert forecast.input_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    hintless = next(tool for tool in direct["decl"] if tool.name == "hintless")
    assert hintless.annotations == mcp_types.ToolAnnotations()
    # The npm servers declare titles at the top level only, and $schema in their schemas.
    read_file = next(tool for tool in direct["fs"] if tool.name == "read_text_file")
    assert read_file.title
    assert read_file.annotations
    assert read_file.annotations.title is None
    assert "$schema" in read_file.input_schema

    for chain, prefix in (("federation", ""), ("wire", "wire_")):
        for name, tools in direct.items():
            compared = assert_passed_through(tools, through[chain], f"{prefix}{name}_")
            if name == "every":
                # server-everything registers some tools after initialization, depending
                # on the client's capabilities: its other tools are there in any case.
                assert len(compared) >= 10, (chain, compared)
            else:
                assert sorted(compared) == sorted(tool.name for tool in tools), (chain, name)
        namespaces = tuple(f"{prefix}{name}_" for name in servers)
        assert all(name.startswith(namespaces) for name in through[chain]), chain


# -- a Python tool, served by MCPContextServer and read back by MCPFrameHost -------------------


def declared_registry() -> ModelContextRegistry:
    registry = ModelContextRegistry()
    registry.add_tool(
        "forecast",
        lambda args: {"city": args["city"], "celsius": 3.0},
        parameters={
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        description="Tomorrow's weather.",
        title="Weather forecast",
        annotations=ToolAnnotations(title="Forecast", read_only_hint=True),
        icons=[{"src": "https://example.com/sun.png", "sizes": ["48x48"], "theme": "light"}],
        meta={"com.example/cache": "1h"},
        output_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
        },
    )
    # A Python tool whose only title is in its annotations takes it as its title too.
    registry.add_tool(
        "wipe", lambda: "wiped", annotations={"title": "Wipe", "destructiveHint": True}
    )
    registry.add_tool("noop", lambda: None, annotations={})
    return registry


def descriptive(tool: Tool) -> dict[str, Any]:
    return {
        "title": tool.title,
        "description": tool.description,
        "parameters": tool.parameters,
        "output_schema": tool.output_schema,
        "annotations": tool.annotations,
        "icons": tool.icons,
        "meta": tool.meta,
    }


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_python_tool_comes_back_through_mcp_exactly(mode: str) -> None:
    """registry -> frame wire -> host -> MCPContextServer -> MCPFrameHost, and the tool
    arrives as the registry declared it."""
    registry = declared_registry()
    sent = registry.get_model_context().tools
    assert sent["wipe"].title == "Wipe"
    host_end, frame_end = memory_pair()
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(AssistantFrameProvider(registry).serve, frame_end)
            async with AssistantFrameHost(host_end, timeout=TIMEOUT) as host:
                await host.wait_for_context(timeout=TIMEOUT)
                hosted = host.get_model_context().tools
                assert {name: descriptive(tool) for name, tool in hosted.items()} == {
                    name: descriptive(tool) for name, tool in sent.items()
                }
                server = MCPContextServer(host)
                async with server.running(), MCPFrameHost(server.server, mode=mode) as frame:
                    received = frame.get_model_context().tools
                    assert received.keys() == sent.keys()
                    for name, tool in sent.items():
                        assert descriptive(received[name]) == descriptive(tool), name
                    forecast = received["forecast"]
                    assert forecast.title == "Weather forecast"
                    assert forecast.annotations == ToolAnnotations(
                        title="Forecast", read_only_hint=True
                    )
                    assert await forecast.invoke({"city": "Oslo"}) == {
                        "city": "Oslo",
                        "celsius": 3.0,
                    }
            tg.cancel_scope.cancel()
