"""Serving UI tools for ChatGPT (the Apps SDK's ``openai/*`` metadata) beside MCP Apps.

One registry, one declaration: ``MCPContextServer`` lists each UI tool with MCP Apps'
``_meta.ui`` and ChatGPT's ``openai/*`` keys, and each ``ui://`` resource both as
``text/html;profile=mcp-app`` and, under its own URI, as ``text/html+skybridge``.
Everything is read through the SDK's real ``mcp.Client`` over an in-process server.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from test_apps_serving import schema_defs, validate  # noqa: F401 (a fixture)

from assistant_frames import ModelContextRegistry, Tool, ToolResult, ToolUI
from assistant_frames.mcp import (
    SKYBRIDGE_MIME_TYPE,
    AppDialect,
    MCPContextServer,
    MCPFrameHost,
    skybridge_uri,
)

pytestmark = pytest.mark.anyio

MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])
WAIT = 5.0
URI = "ui://board/view"
WIDGET = "ui://widget/skybridge/board/view"
VIEW = "<!doctype html><div id=root></div>"


def show_board(board_id: str) -> ToolResult:
    """Show a kanban board."""
    return ToolResult(
        content=f"Board {board_id}: 2 tasks, 1 done.",  # enough for a model on its own
        structured_content={"board": board_id, "tasks": 2, "done": 1},
        meta={"columns": [{"id": "todo", "cards": ["a"]}, {"id": "done", "cards": ["b"]}]},
    )


def move_card(card: str, to: str) -> dict[str, Any]:
    """Move a card (the widget's own tool)."""
    return {"card": card, "column": to}


def attach(board_id: str, file: dict[str, Any]) -> str:
    """Attach a file to a board."""
    return "attached"


def board_app() -> ModelContextRegistry:
    registry = ModelContextRegistry()
    registry.add_tool(
        "show_board",
        show_board,
        ui=ToolUI(URI, invoking="Preparing the board…", invoked="Board ready."),
    )
    registry.add_tool("move_card", move_card, ui=ToolUI(URI, visibility=["app"]))
    registry.add_tool("attach", attach, ui=ToolUI(URI, visibility=["model"], file_params=["file"]))
    registry.add_tool("plain", lambda: "no UI", description="A tool without a view.")
    registry.add_ui_resource(
        URI,
        html=VIEW,
        description="An interactive kanban board",
        csp={
            "connectDomains": ["https://api.board.example"],
            "resourceDomains": ["https://cdn.board.example"],
            "frameDomains": ["https://embed.board.example"],
            "baseUriDomains": ["https://board.example"],  # no ChatGPT counterpart
        },
        domain="https://board.example",
        prefers_border=True,
    )
    return registry


def wire(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def served(
    registry: ModelContextRegistry, mode: str, **options: Any
) -> tuple[dict[str, Any], list[dict[str, Any]], Any]:
    """Tools' ``_meta`` by name, the resources listed, and the client's extensions."""
    server = MCPContextServer(registry, **options)
    with anyio.fail_after(WAIT):
        async with server.running(), Client(server.server, mode=mode) as client:
            tools = {t.name: t.meta for t in (await client.list_tools()).tools}
            resources = [wire(r) for r in (await client.list_resources()).resources]
            return tools, resources, client.server_capabilities.extensions


WIDGET_META = {
    "openai/widgetCSP": {
        "connect_domains": ["https://api.board.example"],
        "resource_domains": ["https://cdn.board.example"],
        "frame_domains": ["https://embed.board.example"],
    },
    "openai/widgetDomain": "https://board.example",
    "openai/widgetDescription": "An interactive kanban board",
    "openai/widgetPrefersBorder": True,
}


@MODES
async def test_one_declaration_is_listed_for_both_dialects(mode: str) -> None:
    tools, resources, _ = await served(board_app(), mode)
    assert tools["show_board"] == {
        "ui": {"resourceUri": URI, "visibility": ["model", "app"]},
        "ui/resourceUri": URI,
        "openai/toolInvocation/invoking": "Preparing the board…",
        "openai/toolInvocation/invoked": "Board ready.",
        "openai/outputTemplate": WIDGET,
        "openai/visibility": "public",
        "openai/widgetAccessible": True,
    }
    # Our visibility, mapped: an app-only tool is private to the model but the widget's.
    move = tools["move_card"]
    assert move is not None
    assert (move["openai/visibility"], move["openai/widgetAccessible"]) == ("private", True)
    attach_meta = tools["attach"]
    assert attach_meta is not None
    assert (attach_meta["openai/visibility"], attach_meta["openai/widgetAccessible"]) == (
        "public",
        False,
    )
    assert attach_meta["openai/fileParams"] == ["file"]
    assert tools["plain"] is None  # no UI, no metadata of either dialect
    assert resources == [
        {
            "name": URI,
            "uri": URI,
            "description": "An interactive kanban board",
            "mimeType": APP_MIME_TYPE,
            "_meta": {
                "ui": {
                    "csp": {
                        "connectDomains": ["https://api.board.example"],
                        "resourceDomains": ["https://cdn.board.example"],
                        "frameDomains": ["https://embed.board.example"],
                        "baseUriDomains": ["https://board.example"],
                    },
                    "domain": "https://board.example",
                    "prefersBorder": True,
                }
            },
        },
        {
            "name": WIDGET,
            "uri": WIDGET,
            "description": "An interactive kanban board",
            "mimeType": SKYBRIDGE_MIME_TYPE,
            "_meta": WIDGET_META,
        },
    ]


@MODES
async def test_each_uri_reads_as_its_own_dialect(mode: str) -> None:
    server = MCPContextServer(board_app())
    with anyio.fail_after(WAIT):
        async with server.running(), Client(server.server, mode=mode) as client:
            app = [wire(c) for c in (await client.read_resource(URI)).contents]
            widget = [wire(c) for c in (await client.read_resource(WIDGET)).contents]
    assert [(c["uri"], c["mimeType"], c["text"]) for c in app] == [(URI, APP_MIME_TYPE, VIEW)]
    assert widget == [
        {"uri": WIDGET, "mimeType": SKYBRIDGE_MIME_TYPE, "_meta": WIDGET_META, "text": VIEW}
    ]


@MODES
@pytest.mark.parametrize(
    "dialects", [("mcp-apps",), ("openai",), ("openai", "mcp-apps")], ids="+".join
)
async def test_which_dialects_a_server_emits_is_a_setting(
    mode: str, dialects: tuple[AppDialect, ...]
) -> None:
    tools, resources, extensions = await served(board_app(), mode, app_dialects=dialects)
    meta = tools["show_board"]
    assert meta is not None
    openai, mcp_apps = "openai" in dialects, "mcp-apps" in dialects
    assert any(key.startswith("openai/") for key in meta) is openai
    assert ("ui" in meta, "ui/resourceUri" in meta) == (mcp_apps, mcp_apps)
    assert [r["mimeType"] for r in resources] == [APP_MIME_TYPE] * mcp_apps + [
        SKYBRIDGE_MIME_TYPE
    ] * openai
    if mode == "auto":  # capabilities carry extensions from 2026-07-28 on
        assert extensions == ({EXTENSION_ID: {}} if mcp_apps else None)
    # A dialect left out is not served at its URI either.
    server = MCPContextServer(board_app(), app_dialects=dialects)
    with anyio.fail_after(WAIT):
        async with server.running(), Client(server.server, mode=mode) as client:
            for uri, served_here in ((URI, mcp_apps), (WIDGET, openai)):
                if served_here:
                    assert (await client.read_resource(uri)).contents[0].text == VIEW  # type: ignore[union-attr]
                else:
                    with pytest.raises(MCPError, match=f"Unknown resource: {uri}") as info:
                        await client.read_resource(uri)
                    assert info.value.error.code == INVALID_PARAMS


@pytest.mark.parametrize("dialects", [(), ["chatgpt"], ["openai", "openai"], "openai"])
def test_unknown_dialects_are_refused(dialects: Any) -> None:
    with pytest.raises(ValueError, match="app_dialects must"):
        MCPContextServer(board_app(), app_dialects=dialects)


@MODES
async def test_results_keep_their_three_tiers_for_the_widget(mode: str) -> None:
    server = MCPContextServer(board_app())
    with anyio.fail_after(WAIT):
        async with server.running(), Client(server.server, mode=mode) as client:
            result = await client.call_tool("show_board", {"board_id": "b1"})
    # structuredContent is the widget's toolOutput, _meta its toolResponseMetadata...
    assert result.structured_content == {"board": "b1", "tasks": 2, "done": 1}
    assert result.meta is not None
    assert result.meta["columns"][0] == {"id": "todo", "cards": ["a"]}
    # ...and the content alone tells a model what happened.
    assert [block.text for block in result.content] == ["Board b1: 2 tasks, 1 done."]  # type: ignore[union-attr]


@MODES
async def test_mcp_apps_parts_still_validate_against_the_ext_apps_schema(
    schema_defs: dict[str, Any],  # noqa: F811
    mode: str,
) -> None:
    tools, resources, _ = await served(board_app(), mode)
    for name in ("show_board", "move_card", "attach"):
        meta = tools[name]
        assert meta is not None
        validate(schema_defs, "McpUiToolMeta", meta["ui"])  # no openai key under _meta.ui
    validate(schema_defs, "McpUiResourceMeta", resources[0]["_meta"]["ui"])


async def test_an_mcp_frame_keeps_the_ui_and_skips_the_skybridge_variant() -> None:
    server = MCPContextServer(board_app())
    with anyio.fail_after(WAIT):
        async with server.running(), MCPFrameHost(server.server) as frame:
            context = await frame.wait_for_context(WAIT)
            # Served on by a registry over the frame, the metadata comes out the same.
            parent = ModelContextRegistry()
            parent.add_provider(frame)
            tools, resources, _ = await served(parent, "auto")
    assert list(context.ui_resources) == [URI]
    assert context.tools["show_board"].ui == ToolUI(
        URI, invoking="Preparing the board…", invoked="Board ready."
    )
    assert context.tools["attach"].ui == ToolUI(URI, ["model"], file_params=("file",))
    original, _, _ = await served(board_app(), "auto")
    assert tools == original
    assert [r["uri"] for r in resources] == [URI, WIDGET]


# -- declaration -----------------------------------------------------------------------------


def test_status_texts_are_checked_at_declaration() -> None:
    ToolUI(URI, invoking="x" * 64, invoked="y" * 64)  # the limit itself is fine
    registry = ModelContextRegistry()
    with pytest.raises(ValueError, match=r"invoking must be at most 64 characters .* not 65"):
        registry.add_tool("t", lambda: None, ui=ToolUI(URI, invoking="x" * 65))
    with pytest.raises(ValueError, match=r"invoked must be at most 64 characters"):
        ToolUI(URI, invoked="y" * 100)
    for bad in ("", "   ", 3):
        with pytest.raises(ValueError, match="invoking must be a non-empty string"):
            ToolUI(URI, invoking=bad)  # type: ignore[arg-type]
    assert not registry.get_model_context().tools


@pytest.mark.parametrize("params", ["file", ["file", "file"], [""], [1], 3])
def test_file_params_are_checked_at_declaration(params: Any) -> None:
    with pytest.raises(ValueError, match="file_params must"):
        ToolUI(URI, file_params=params)


def test_the_chatgpt_keys_live_at_the_top_of_the_tools_meta() -> None:
    tool = Tool("t", lambda: None, meta={"other": 1}, ui=ToolUI(URI, invoked="Done."))
    assert tool.meta == {
        "other": 1,
        "ui": {"resourceUri": URI, "visibility": ["model", "app"]},
        "openai/toolInvocation/invoked": "Done.",
    }
    assert tool.ui == ToolUI(URI, invoked="Done.")
    # Malformed ChatGPT keys (from some server) are dropped, the UI itself kept.
    meta = {**(tool.meta or {}), "openai/toolInvocation/invoked": "z" * 65}
    assert ToolUI.from_meta(meta) == ToolUI(URI)


def test_the_skybridge_uri_of_a_resource() -> None:
    assert skybridge_uri("ui://weather/view") == "ui://widget/skybridge/weather/view"
    assert skybridge_uri("ui://widget/board.html") == "ui://widget/skybridge/widget/board.html"
    with pytest.raises(ValueError, match="ui:// URI"):
        skybridge_uri("https://weather/view")


@MODES
async def test_a_resource_with_nothing_set_gets_a_closed_csp(mode: str) -> None:
    registry = ModelContextRegistry()
    registry.add_tool("t", lambda: None, ui=URI)
    registry.add_ui_resource(URI, html=VIEW)
    _, resources, _ = await served(registry, mode, app_dialects=["openai"])
    assert resources == [
        {
            "name": WIDGET,
            "uri": WIDGET,
            "mimeType": SKYBRIDGE_MIME_TYPE,
            "_meta": {"openai/widgetCSP": {"connect_domains": [], "resource_domains": []}},
        }
    ]
