"""A parent assistant federates an MCP server with a worker frame, and serves the whole
federation as one MCP server.

1. ``mcp-server-time``, an MCP server we did not write, runs as a subprocess and joins
   the parent's context through an ``MCPFrameHost`` under the namespace ``time``.
2. A worker subprocess (this file, started with ``--worker``) is a frame over stdio and
   joins under ``notes``.
3. The parent's context is served over MCP by ``MCPContextServer``; the official
   ``mcp.Client`` connects to it, lists the namespaced tools, calls one of each, and is
   told when the worker adds a tool.
4. The parent offers the same context to a model as OpenAI Chat tool definitions.

Run it with ``python examples/mcp_bridge.py`` (needs ``pip install 'assistant-frames[mcp]'
mcp-server-time``).
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client

from assistant_frames import AssistantFrameHost, ModelContextRegistry, to_openai_chat_tools
from assistant_frames.frames import serve_stdio
from assistant_frames.mcp import MCPContextServer, MCPFrameHost
from assistant_frames.transports import spawn_worker

# -- the worker: a frame over stdio ------------------------------------------------------

notes = ModelContextRegistry()
NOTES = ["deploys moved to Thursdays", "the cache warms slowly after a deploy"]


@notes.tool
def search_notes(query: str) -> list[str]:
    """Search the team notes for a word."""
    return [note for note in NOTES if query.lower() in note.lower()]


@notes.tool
def enable_summaries() -> str:
    """Turn on the summarize tool."""

    @notes.tool
    def summarize() -> str:
        """Summarize every note in one line."""
        return "; ".join(NOTES)

    return "summaries on"


# -- the parent ----------------------------------------------------------------------------


async def main() -> None:
    parent = ModelContextRegistry()
    parent.add_instruction("You are the team assistant.")
    time_command = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
    async with (
        MCPFrameHost(time_command, name="time") as time_server,
        spawn_worker([sys.executable, __file__, "--worker"]) as worker,
        AssistantFrameHost(worker, name="notes") as notes_host,
    ):
        await notes_host.wait_for_context(timeout=10)
        parent.add_provider(time_server, namespace="time")
        parent.add_provider(notes_host, namespace="notes")

        server = MCPContextServer(parent, name="team-assistant")
        changed = anyio.Event()

        async def on_message(message: object) -> None:
            if type(message).__name__ == "ToolListChangedNotification":
                changed.set()

        async with (
            server.running(),
            Client(server.server, mode="legacy", message_handler=on_message) as client,
        ):
            tools = [tool.name for tool in (await client.list_tools()).tools]
            print("MCP client sees:", ", ".join(tools))

            now = await client.call_tool("time_get_current_time", {"timezone": "UTC"})
            print("time_get_current_time ->", now.structured_content["day_of_week"])
            found = await client.call_tool("notes_search_notes", {"query": "deploy"})
            print("notes_search_notes    ->", found.content[0].text)  # a list: JSON text

            await client.call_tool("notes_enable_summaries", {})
            with anyio.fail_after(10):
                await changed.wait()
            tools = [tool.name for tool in (await client.list_tools()).tools]
            print("after the worker added a tool:", ", ".join(tools))
            assert "notes_summarize" in tools

        chat_tools = to_openai_chat_tools(parent)
        print("as OpenAI tools:", json.dumps([tool["function"]["name"] for tool in chat_tools]))


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        anyio.run(serve_stdio, notes)
    else:
        anyio.run(main)
