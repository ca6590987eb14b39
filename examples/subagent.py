"""A parent assistant federates a sub-agent's tools with its own.

The sub-agent is a frame: it owns a registry of tools and instructions and serves it.
The parent connects a host to it, adds the host to its own registry under a namespace,
and sees one merged, live model context. Every call goes to the frame that owns the
tool, in both directions: the sub-agent also connects back to the parent's frame and
uses a parent tool inside one of its own.

Run it with ``python examples/subagent.py``.
"""

from __future__ import annotations

import datetime as dt

import anyio
from pydantic import BaseModel

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContextRegistry,
    ToolCallError,
    memory_pair,
)

# -- the parent assistant's own tools ---------------------------------------------------

parent = ModelContextRegistry()
parent.add_instruction("You are the team assistant. Answer briefly.")


@parent.tool
def today() -> str:
    """Today's date (ISO 8601)."""
    return dt.date(2026, 11, 22).isoformat()  # fixed, so the output is reproducible


# -- the sub-agent: a research helper ------------------------------------------------------

NOTES = [
    "2026-11-20 deploy: the release train moved to Thursdays.",
    "2026-11-21 incident: the cache warmed slowly after the deploy.",
    "2026-11-22 planning: ship the frame protocol before the MCP bridge.",
]

research = ModelContextRegistry()
research.add_instruction("Use research tools to look things up in the team notes.")


class Note(BaseModel):
    date: str
    text: str


@research.tool
def search_notes(query: str, limit: int = 3) -> list[Note]:
    """Search the team notes.

    Args:
        query: A word to look for.
        limit: Return at most this many notes.
    """
    hits = [note for note in NOTES if query.lower() in note.lower()][:limit]
    return [Note(date=hit[:10], text=hit[11:]) for hit in hits]


async def main() -> None:
    parent_end, subagent_end = memory_pair()  # parent -> sub-agent
    back_end, parent_frame_end = memory_pair()  # sub-agent -> parent
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(AssistantFrameProvider(research).serve, subagent_end)
        task_group.start_soon(AssistantFrameProvider(parent).serve, parent_frame_end)

        # The sub-agent connects back to the parent and uses a parent tool in one of its own.
        async with AssistantFrameHost(back_end, name="parent") as parent_host:
            await parent_host.wait_for_context()

            @research.tool
            async def notes_from_today() -> list[str]:
                """The notes written today."""
                date = await parent_host.call_tool("today")
                return [note for note in NOTES if note.startswith(date)]

            async with AssistantFrameHost(parent_end, name="research") as research_host:
                await research_host.wait_for_context()
                await show_federation(research_host)

        task_group.cancel_scope.cancel()


async def show_federation(research_host: AssistantFrameHost) -> None:
    """What the parent assistant does with the merged context."""
    parent.add_provider(research_host, namespace="research")

    context = parent.get_model_context()
    print("Instructions the model sees:")
    print("  " + (context.system or "").replace("\n\n", "\n  "))
    print("Tools the model sees:")
    for name, tool in context.tools.items():
        owner = "sub-agent" if name.startswith("research_") else "parent"
        print(f"  {name:<26} ({owner}) {tool.description}")

    print("\nCalls, each routed to the frame that owns the tool:")
    date = await context.call_tool("today")
    print(f"  today() -> {date!r}")
    notes = await context.call_tool("research_search_notes", {"query": "deploy"})
    print(f"  research_search_notes(query='deploy') -> {notes}")
    mine = await context.call_tool("research_notes_from_today")
    print(f"  research_notes_from_today() -> {mine}  (the sub-agent asked the parent)")
    assert mine == [NOTES[2]]

    try:
        await context.call_tool("research_search_notes", {"query": "x", "limit": "many"})
    except ToolCallError as error:
        print(f"  bad arguments -> ToolCallError: {error}")

    print("\nA live update: the sub-agent adds a tool at runtime.")
    changed = anyio.Event()
    unsubscribe = parent.subscribe(changed.set)
    research.add_tool("count_notes", lambda: len(NOTES), description="How many notes.")
    with anyio.fail_after(5):
        await changed.wait()
    unsubscribe()
    context = parent.get_model_context()
    print(f"  the parent now sees: {', '.join(context.tools)}")
    print(f"  research_count_notes() -> {await context.call_tool('research_count_notes')}")
    assert "research_count_notes" in context.tools


if __name__ == "__main__":
    anyio.run(main)
