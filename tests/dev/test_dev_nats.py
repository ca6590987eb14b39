"""The dev page (``DevPage``) of a federation whose member is a whole NATS bus.

A real ``nats-server`` (``nats_support.NATSServer``); the member is the bus's URL with
no frame name (``nats://127.0.0.1:PORT``), which the federation turns into a
``NATSDiscovery`` of every frame on it. Frames are real replicas on the bus: one in a
subprocess (``nats_replica.py``), on the bus before the page, and one in this process
that starts serving later and stops while the page looks on. The tests read the page's
real WebSocket (``/socket``, with the token) as the page would: the bus member's frames
join and leave in pushed ``state`` messages, and a call sent on the socket reaches a
frame on the bus and comes back with its progress and result. Every wait is bounded
by ``WAIT``. asyncio only: ``nats-py`` runs on asyncio.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from dev_socket import WAIT, page_socket

from assistant_frames import Federation
from assistant_frames.dev import DevPage, describe_federation
from assistant_frames.nats import NATSBusTarget, NATSFrameProvider

from nats_support import NATSServer, greeting_frame, leavable, nats_server, replica_process

pytestmark = pytest.mark.anyio

__all__ = ["nats_server"]  # a fixture, used by name

#: The discovery round of the bus member (1 s by default): a frame joins within a round
#: and leaves after 3 rounds it did not answer.
ROUND = 0.25

#: The tools of the subprocess replica's frame "calc" (``nats_replica.py``), as the
#: federation names them: the member "bus", then the frame, then the tool.
CALC = ["bus_calc_add", "bus_calc_slow", "bus_calc_whoami", "bus_calc_cpu"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def dev_page() -> AsyncIterator[DevPage]:
    async with Federation() as federation, DevPage(federation) as page:
        yield page


def members(state: dict[str, Any]) -> dict[str, str]:
    return {member["name"]: member["state"] for member in state["members"]}


def tool_names(state: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in state["tools"]]


def bus_member(url: str, tools: list[str], instructions: str | None) -> dict[str, Any]:
    """What the page shows of the member "bus" (the whole bus at ``url``), connected."""
    return {
        "name": "bus",
        "target": f"the frames on NATS ({url})",
        "state": "connected",
        "error": None,
        "connections": 1,  # frames joining and leaving are no reconnection of the bus
        "instructions": instructions,
        "tools": tools,
    }


async def test_a_bus_member_shows_its_frames_joining_and_leaving(nats_server: NATSServer) -> None:
    url = nats_server.url
    async with (
        replica_process(url, "calc") as calc,
        dev_page() as page,
        page_socket(page) as socket,
    ):
        first = await socket.state(lambda s: True)
        assert first["members"] == []
        # No frame name: every frame on the bus.
        await page.add("bus", NATSBusTarget(url, interval=ROUND))
        # The frame already on the bus: connected, its tools namespaced bus_calc_*.
        state = await socket.state(lambda s: tool_names(s) == CALC)
        assert state["members"] == [bus_member(url, CALC, None)]
        assert {tool["owner"] for tool in state["tools"]} == {"bus"}
        (add,) = [tool for tool in state["tools"] if tool["name"] == "bus_calc_add"]
        assert add["description"] == "Add two numbers."
        assert add["inputSchema"]["required"] == ["a", "b"]
        assert [tool["name"] for tool in state["exports"]["anthropic"]] == CALC
        assert [tool["function"]["name"] for tool in state["exports"]["openai-chat"]] == CALC

        # A frame that starts serving later joins: its tool comes in a pushed state.
        notes = greeting_frame("notes")
        notes.add_instruction("Keep notes with the notes tools.")
        async with leavable(NATSFrameProvider(notes, "notes", nats=url)) as leave:
            joined = [*CALC, "bus_notes_hello"]
            state = await socket.state(lambda s: "bus_notes_hello" in tool_names(s))
            assert tool_names(state) == joined
            assert state["members"] == [bus_member(url, joined, "Keep notes with the notes tools.")]
            assert state["instructions"] == "Keep notes with the notes tools."
            (hello,) = [tool for tool in state["tools"] if tool["name"] == "bus_notes_hello"]
            assert hello["owner"] == "bus"
            assert hello["description"] == "Say hello."
            assert hello["inputSchema"]["required"] == ["who"]
            assert [tool["name"] for tool in state["exports"]["mcp"]] == joined

            # ... and once it stops serving, it leaves: its tool goes in a pushed state.
            await leave()
            state = await socket.state(lambda s: "bus_notes_hello" not in tool_names(s))
            assert tool_names(state) == CALC
            assert state["members"] == [bus_member(url, CALC, None)]
            assert state["instructions"] is None

        # The first frame's process killed: it leaves too; the bus stays, with no tools.
        calc.kill()
        assert await calc.wait(WAIT) != 0
        state = await socket.state(lambda s: tool_names(s) == [])
        assert state["members"] == [bus_member(url, [], None)]
        assert state["exports"]["anthropic"] == []
        assert state == {"type": "state", **page.state}
        assert describe_federation(page.federation)["members"] == state["members"]


async def test_a_call_from_the_page_reaches_a_frame_on_the_bus(nats_server: NATSServer) -> None:
    url = nats_server.url
    async with (
        replica_process(url, "calc") as calc,
        dev_page() as page,
        page_socket(page) as socket,
    ):
        await page.add("bus", NATSBusTarget(url, interval=ROUND))
        await socket.state(lambda s: members(s) == {"bus": "connected"} and tool_names(s) == CALC)

        # The replica in the other process runs it, and says so on its stdout.
        result = await socket.call("1", "bus_calc_whoami", {"marker": "from-page"})
        assert result["type"] == "result", result
        assert result["result"] == {"replica": calc.id, "pid": calc.pid}
        assert calc.started("whoami") == ["from-page"]
        started = next(m for m in socket.received if m.get("call") == "1")
        assert (started["type"], started["tool"], started["member"]) == (
            "started",
            "bus_calc_whoami",
            "bus",  # the page's member, not the frame on the bus
        )

        result = await socket.call("2", "bus_calc_add", {"a": 2, "b": 40})
        assert (result["type"], result["result"]) == ("result", 42)

        # Its progress crosses the bus and reaches the page, in order, before the result.
        result = await socket.call("3", "bus_calc_slow", {"seconds": 0.2, "marker": "slow"})
        assert (result["type"], result["result"]) == ("result", "slow")
        progress = [m for m in socket.received if m.get("call") == "3" and m["type"] == "progress"]
        assert [(m["progress"], m["total"]) for m in progress] == [(i, 10) for i in range(1, 11)]
        assert progress[-1]["message"] == "step 10"

        # A frame that joined later is called the same way.
        async with NATSFrameProvider(greeting_frame("notes"), "notes", nats=url):
            await socket.state(lambda s: "bus_notes_hello" in tool_names(s))
            result = await socket.call("4", "bus_notes_hello", {"who": "the page"})
            assert (result["type"], result["result"]) == ("result", "notes greets the page")

        # Bad arguments are the frame's typed error, named by the page's tool name.
        result = await socket.call("5", "bus_calc_add", {"a": "two", "b": 1})
        assert result["type"] == "error", result
        error = result["error"]
        assert (error["type"], error["code"]) == ("ToolArgumentsError", "invalid_arguments")
        assert error["tool"] == "bus_calc_add"
        # The page's member is the bus, and the tool is calc_add there (the frame's "add").
        assert (error["member"], error["memberTool"]) == ("bus", "calc_add")
