"""The sans-I/O MCP Apps protocol: golden messages, round trips, bad input, the SDK's schema.

The schema test validates everything this module emits against ``schema.json`` of the
``@modelcontextprotocol/ext-apps`` pinned in ``tests/browser/package.json``: skipped
(with the reason) when ``tests/browser/node_modules`` is missing, failed under ``CI``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import mcp_types as mcp
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from assistant_frames.apps import protocol as p
from assistant_frames.calls import PendingCalls
from assistant_frames.errors import ERROR_KINDS, AssistantFramesError, ErrorCode

from helpers import installed

BROWSER = Path(__file__).resolve().parents[1] / "browser"
SCHEMA = BROWSER / "node_modules/@modelcontextprotocol/ext-apps/dist/src/generated/schema.json"


def same_json(a: Any, b: Any) -> bool:
    """Equal as parsed JSON (key order differs between SDK versions)."""
    return json.loads(json.dumps(a)) == json.loads(json.dumps(b))


# -- golden messages, as ext-apps 2.0.4 sends them ---------------------------------------------

GOLDEN_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "ui/initialize",
    "params": {
        "protocolVersion": "2026-01-26",
        "appInfo": {"name": "clock-view", "version": "1.0.0"},
        "appCapabilities": {"tools": {"listChanged": True}, "availableDisplayModes": ["inline"]},
    },
}
GOLDEN_INITIALIZED = {"jsonrpc": "2.0", "method": "ui/notifications/initialized"}
GOLDEN_CALL_SERVER_TOOL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "get_time", "arguments": {"zone": "UTC"}, "_meta": {"progressToken": 1}},
}


def test_golden_initialize_decodes_and_encodes_back() -> None:
    message = p.decode(GOLDEN_INITIALIZE)
    assert isinstance(message, p.Request)
    assert (message.id, message.method) == (0, p.INITIALIZE)
    params = message.params
    assert isinstance(params, p.InitializeParams)
    assert params.protocol_version == p.PROTOCOL_VERSION
    assert params.app_info == mcp.Implementation(name="clock-view", version="1.0.0")
    assert params.app_capabilities.tools == p.ListChanged(list_changed=True)
    assert params.app_capabilities.available_display_modes == ["inline"]
    assert same_json(p.encode_request(0, p.INITIALIZE, params), GOLDEN_INITIALIZE)


def test_golden_initialized_has_no_params() -> None:
    message = p.decode(GOLDEN_INITIALIZED)
    assert message == p.Notification(p.INITIALIZED, None, None)
    assert p.encode_notification(p.INITIALIZED) == GOLDEN_INITIALIZED


def test_golden_call_server_tool_keeps_its_progress_token() -> None:
    message = p.decode(GOLDEN_CALL_SERVER_TOOL)
    assert isinstance(message, p.Request)
    assert isinstance(message.params, mcp.CallToolRequestParams)
    assert message.params.name == "get_time"
    assert message.params.arguments == {"zone": "UTC"}
    assert message.params.meta == {"progress_token": 1}
    # Forwarding uses the params as received: nothing lost or renamed.
    assert message.raw_params == GOLDEN_CALL_SERVER_TOOL["params"]
    assert same_json(p.encode_request(1, "tools/call", message.params), GOLDEN_CALL_SERVER_TOOL)


def host_context() -> p.HostContext:
    return p.HostContext(
        tool_info=p.ToolInfo(
            id=3,
            tool=mcp.Tool(
                name="get_time",
                input_schema={"type": "object", "properties": {"zone": {"type": "string"}}},
                meta={"ui": {"resourceUri": "ui://clock/app.html"}},
            ),
        ),
        theme="dark",
        styles=p.HostStyles(
            variables={"--color-background-primary": "#000", "--font-sans": "Inter"},
            css=p.HostCss(fonts="@import url(https://fonts.example/inter.css);"),
        ),
        display_mode="inline",
        available_display_modes=["inline", "fullscreen"],
        container_dimensions=p.ContainerDimensions(height=400, max_width=800),
        locale="en-GB",
        time_zone="Europe/London",
        user_agent="assistant-frames",
        platform="web",
        device_capabilities=p.DeviceCapabilities(touch=False, hover=True),
        safe_area_insets=p.SafeAreaInsets(top=0, right=0, bottom=10, left=0),
    )


def initialize_result() -> p.InitializeResult:
    return p.InitializeResult(
        protocol_version=p.PROTOCOL_VERSION,
        host_info=mcp.Implementation(name="assistant-frames", version="0.1"),
        host_capabilities=p.HostCapabilities(
            open_links=p.Empty(),
            download_file=p.Empty(),
            server_tools=p.ListChanged(list_changed=True),
            server_resources=p.ListChanged(),
            logging=p.Empty(),
            sandbox=p.SandboxCapability(
                permissions=p.ResourcePermissions(clipboard_write={}),
                csp=p.ResourceCsp(connect_domains=["https://api.example"]),
            ),
            update_model_context=p.ContentModalities(text=p.Empty(), structured_content=p.Empty()),
            message=p.ContentModalities(text=p.Empty()),
            sampling=p.SamplingCapability(tools=p.Empty()),
            experimental={"x-feature": {"on": True}},
        ),
        host_context=host_context(),
    )


def test_initialize_result_missing_a_field_is_refused_as_the_js_app_does() -> None:
    full = p.to_wire(initialize_result())
    assert set(full) == {"protocolVersion", "hostInfo", "hostCapabilities", "hostContext"}
    assert p.parse_result(p.INITIALIZE, full) == initialize_result()
    for missing in full:
        partial = {k: v for k, v in full.items() if k != missing}
        with pytest.raises(p.InvalidParams, match=missing):
            p.parse_result(p.INITIALIZE, partial)


# -- every message kind, encoded then decoded ----------------------------------------------------

TEXT = mcp.TextContent(type="text", text="It is noon")
TOOL_RESULT = mcp.CallToolResult(content=[TEXT], structured_content={"time": "12:00"})

#: (method, params model or None) for every request and notification this module sends.
SENT: list[tuple[str, BaseModel | None]] = [
    (p.INITIALIZE, p.InitializeParams.model_validate(GOLDEN_INITIALIZE["params"])),
    (p.INITIALIZED, None),
    (p.TOOL_INPUT, p.ToolInputParams(arguments={"zone": "UTC"})),
    (p.TOOL_INPUT_PARTIAL, p.ToolInputParams(arguments={"zo": None})),
    (p.TOOL_RESULT, TOOL_RESULT),
    (p.TOOL_CANCELLED, p.ToolCancelledParams(reason="user stopped it")),
    (p.HOST_CONTEXT_CHANGED, host_context()),
    (p.HOST_CONTEXT_CHANGED, p.HostContext(theme="light")),
    (p.SIZE_CHANGED, p.SizeChangedParams(width=320, height=240.5)),
    (p.REQUEST_TEARDOWN, None),
    (p.SANDBOX_PROXY_READY, p.Empty()),
    (
        p.SANDBOX_RESOURCE_READY,
        p.SandboxResourceReadyParams(
            html="<p>hi</p>", sandbox="allow-scripts", csp=p.ResourceCsp(frame_domains=[])
        ),
    ),
    (p.MESSAGE, p.MessageParams(content=[TEXT])),
    (p.OPEN_LINK, p.OpenLinkParams(url="https://example.com/")),
    (
        p.DOWNLOAD_FILE,
        p.DownloadFileParams(
            contents=[
                mcp.EmbeddedResource(
                    type="resource",
                    resource=mcp.TextResourceContents(
                        uri="file:///notes.txt", mime_type="text/plain", text="notes"
                    ),
                ),
                mcp.ResourceLink(type="resource_link", name="report", uri="https://x/r.pdf"),
            ]
        ),
    ),
    (
        p.UPDATE_MODEL_CONTEXT,
        p.UpdateModelContextParams(content=[TEXT], structured_content={"selected": [1, 2]}),
    ),
    (p.REQUEST_DISPLAY_MODE, p.RequestDisplayModeParams(mode="fullscreen")),
    (p.RESOURCE_TEARDOWN, p.Empty()),
    ("tools/call", mcp.CallToolRequestParams(name="get_time", arguments={})),
    ("tools/list", mcp.PaginatedRequestParams()),
    ("resources/read", mcp.ReadResourceRequestParams(uri="ui://clock/app.html")),
    ("resources/list", mcp.PaginatedRequestParams(cursor="2")),
    ("resources/templates/list", mcp.PaginatedRequestParams()),
    ("prompts/list", mcp.PaginatedRequestParams()),
    (
        "sampling/createMessage",
        mcp.CreateMessageRequestParams(
            messages=[mcp.SamplingMessage(role="user", content=TEXT)], max_tokens=100
        ),
    ),
    ("ping", None),
    ("notifications/message", mcp.LoggingMessageNotificationParams(level="info", data="hi")),
    ("notifications/cancelled", mcp.CancelledNotificationParams(request_id=1, reason="gone")),
    ("notifications/tools/list_changed", None),
]

#: A result for every request method (the ``ui/*`` ones and the proxied MCP ones).
RESULTS: dict[str, BaseModel] = {
    p.INITIALIZE: initialize_result(),
    p.MESSAGE: p.MessageResult(),
    p.OPEN_LINK: p.OpenLinkResult(is_error=True),
    p.DOWNLOAD_FILE: p.DownloadFileResult(is_error=False),
    p.UPDATE_MODEL_CONTEXT: mcp.EmptyResult(),
    p.REQUEST_DISPLAY_MODE: p.RequestDisplayModeResult(mode="inline"),
    p.RESOURCE_TEARDOWN: mcp.EmptyResult(),
    "tools/call": TOOL_RESULT,
    "tools/list": mcp.ListToolsResult(tools=[mcp.Tool(name="t", input_schema={"type": "object"})]),
    "ping": mcp.EmptyResult(),
}


def _encode(index: int, method: str, params: BaseModel | None) -> dict[str, Any]:
    if p.METHODS[method].is_request:
        return p.encode_request(index, method, params)
    return p.encode_notification(method, params)


def test_every_ui_method_has_a_sample() -> None:
    ui_methods = {m for m in p.METHODS if m.startswith("ui/")}
    assert ui_methods <= {method for method, _ in SENT}
    requests = {m for m, spec in p.METHODS.items() if m.startswith("ui/") and spec.is_request}
    assert requests <= set(RESULTS)


@pytest.mark.parametrize(
    ("index", "method", "params"), [(i, m, x) for i, (m, x) in enumerate(SENT)]
)
def test_round_trip(index: int, method: str, params: BaseModel | None) -> None:
    wire = _encode(index, method, params)
    assert json.loads(json.dumps(wire)) == wire  # plain JSON data
    message = p.decode(wire)
    assert message.method == method  # type: ignore[union-attr]
    if isinstance(message, p.Request):
        assert message.id == index
    else:
        assert isinstance(message, p.Notification)
    if params is None:
        assert message.params is None
    else:
        assert message.params == params
    assert _encode(index, method, message.params) == wire


@pytest.mark.parametrize("method", sorted(RESULTS))
def test_result_round_trip(method: str) -> None:
    wire = p.encode_result("call-1", RESULTS[method])
    message = p.decode(wire)
    assert isinstance(message, p.Response)
    assert message.id == "call-1"
    parsed = p.parse_result(method, message.result)
    assert p.to_wire(parsed) == p.to_wire(RESULTS[method])


@pytest.mark.parametrize("content", [TEXT, [TEXT]])
def test_sampling_results_with_one_or_many_content_blocks(content: Any) -> None:
    wire = {"role": "assistant", "content": p.to_wire(TEXT), "model": "m"}
    wire["content"] = [p.to_wire(TEXT)] if isinstance(content, list) else p.to_wire(TEXT)
    result = p.parse_result("sampling/createMessage", wire)
    assert result.model == "m"
    assert p.to_wire(result)["content"] == wire["content"]


def test_error_round_trip() -> None:
    wire = p.encode_error(4, p.REFUSED, "Tool get_secret is not visible to apps", {"tool": "x"})
    assert wire == {
        "jsonrpc": "2.0",
        "id": 4,
        "error": {
            "code": -32000,
            "message": "Tool get_secret is not visible to apps",
            "data": {"tool": "x"},
        },
    }
    assert p.decode(wire) == p.ErrorResponse(
        4, -32000, "Tool get_secret is not visible to apps", {"tool": "x"}
    )
    # Received leniently: a peer that could not read our id answers with null.
    null_id = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert p.decode(null_id) == p.ErrorResponse(None, -32700, "Parse error")


def test_open_objects_keep_extra_keys_and_closed_ones_drop_them() -> None:
    context = p.decode(
        {
            "jsonrpc": "2.0",
            "method": p.HOST_CONTEXT_CHANGED,
            "params": {"theme": "dark", "x-host-feature": {"a": 1}},
        }
    ).params  # type: ignore[union-attr]
    assert p.to_wire(context) == {"theme": "dark", "x-host-feature": {"a": 1}}
    result = p.parse_result(p.MESSAGE, {"isError": False, "note": "queued"})
    assert p.to_wire(result) == {"isError": False, "note": "queued"}
    link = p.decode(
        {
            "jsonrpc": "2.0",
            "id": "a",
            "method": p.OPEN_LINK,
            "params": {"url": "https://x/", "target": "_blank"},
        }
    )
    assert p.to_wire(link.params) == {"url": "https://x/"}  # type: ignore[union-attr]


def test_ids_are_correlated_by_pending_calls() -> None:
    calls = PendingCalls("ui-")
    call = calls.add(p.REQUEST_DISPLAY_MODE)
    sent = p.encode_request(call.id, call.name, p.RequestDisplayModeParams(mode="pip"))
    answer = p.decode({"jsonrpc": "2.0", "id": sent["id"], "result": {"mode": "inline"}})
    assert isinstance(answer, p.Response)
    pending = calls.get(str(answer.id))
    assert pending is call
    assert p.parse_result(pending.name, answer.result) == p.RequestDisplayModeResult(mode="inline")
    assert calls.get("ui-999") is None  # an answer to an unknown id: the caller drops it


# -- bad input ---------------------------------------------------------------------------------

MALFORMED: list[tuple[object, type[p.ProtocolError], object]] = [
    ("not even an object", p.InvalidRequest, None),
    ([{"jsonrpc": "2.0", "method": "ping", "id": 1}], p.InvalidRequest, None),  # no batches
    ({"method": "ping", "id": 1}, p.InvalidRequest, None),
    ({"jsonrpc": "1.0", "method": "ping", "id": 1}, p.InvalidRequest, None),
    ({"jsonrpc": "2.0", "id": 2, "method": 7}, p.InvalidRequest, 2),
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, p.InvalidRequest, None),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, p.InvalidRequest, None),
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, p.InvalidRequest, None),
    ({"jsonrpc": "2.0", "id": 3, "method": p.MESSAGE, "params": []}, p.InvalidRequest, 3),
    ({"jsonrpc": "2.0", "id": 4}, p.InvalidRequest, 4),
    ({"jsonrpc": "2.0", "result": {}}, p.InvalidRequest, None),
    ({"jsonrpc": "2.0", "id": 5, "result": []}, p.InvalidRequest, 5),
    ({"jsonrpc": "2.0", "id": 6, "result": {}, "error": {}}, p.InvalidRequest, None),
    ({"jsonrpc": "2.0", "id": 7, "error": {"message": "no code"}}, p.InvalidRequest, 7),
    ({"jsonrpc": "2.0", "id": [1], "error": {"code": 1, "message": "x"}}, p.InvalidRequest, None),
    ({"jsonrpc": "2.0", "id": 8, "method": "ui/no-such-thing"}, p.MethodNotFound, 8),
    ({"jsonrpc": "2.0", "id": 9, "method": "resources/subscribe"}, p.MethodNotFound, 9),
    ({"jsonrpc": "2.0", "method": "ui/notifications/no-such-thing"}, p.MethodNotFound, None),
    ({"jsonrpc": "2.0", "method": p.INITIALIZE, "params": {}}, p.MethodNotFound, None),
    ({"jsonrpc": "2.0", "id": 10, "method": p.INITIALIZED}, p.MethodNotFound, 10),
    ({"jsonrpc": "2.0", "id": 11, "method": p.OPEN_LINK, "params": {}}, p.InvalidParams, 11),
    ({"jsonrpc": "2.0", "id": 12, "method": p.OPEN_LINK}, p.InvalidParams, 12),
    (
        {"jsonrpc": "2.0", "id": 13, "method": p.REQUEST_DISPLAY_MODE, "params": {"mode": "tiny"}},
        p.InvalidParams,
        13,
    ),
    (
        {"jsonrpc": "2.0", "id": "i", "method": p.INITIALIZE, "params": {"protocolVersion": 1}},
        p.InvalidParams,
        "i",
    ),
    (
        {"jsonrpc": "2.0", "method": p.SIZE_CHANGED, "params": {"width": "wide"}},
        p.InvalidParams,
        None,
    ),
    (
        {"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"arguments": {}}},
        p.InvalidParams,
        14,
    ),
]


@pytest.mark.parametrize(("raw", "kind", "request_id"), MALFORMED)
def test_malformed_input_raises_a_typed_error(
    raw: object, kind: type[p.ProtocolError], request_id: object
) -> None:
    with pytest.raises(kind) as caught:
        p.decode(raw)
    error = caught.value
    assert type(error) is kind
    assert isinstance(error, AssistantFramesError)
    assert isinstance(error, ValueError)
    assert error.request_id == request_id
    assert error.answerable is (request_id is not None)
    assert error.raw is raw
    answer = error.to_wire()
    if request_id is None:
        assert answer is None  # nothing to answer: a notification, or no usable id
        return
    assert answer == {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": kind.jsonrpc_code, "message": error.message},
    }
    assert p.decode(answer) == p.ErrorResponse(request_id, kind.jsonrpc_code, error.message)  # type: ignore[arg-type]


def test_error_messages_say_what_is_wrong() -> None:
    with pytest.raises(p.InvalidParams, match=r"ui/open-link: url: Field required"):
        p.decode({"jsonrpc": "2.0", "id": 1, "method": p.OPEN_LINK, "params": {}})
    with pytest.raises(p.MethodNotFound, match=r"ui/initialize \(as a notification\)"):
        p.decode({"jsonrpc": "2.0", "method": p.INITIALIZE})
    with pytest.raises(p.MethodNotFound):
        p.parse_result(p.INITIALIZED, {})
    with pytest.raises(p.InvalidParams, match="mode"):
        p.parse_result(p.REQUEST_DISPLAY_MODE, {})


def test_codes_match_the_error_table_and_jsonrpc() -> None:
    assert (p.InvalidRequest.jsonrpc_code, p.MethodNotFound.jsonrpc_code) == (-32600, -32601)
    assert (p.InvalidParams.jsonrpc_code, p.Refused.jsonrpc_code) == (-32602, -32000)
    assert p.InvalidRequest.jsonrpc_code == ERROR_KINDS[ErrorCode.MALFORMED_CALL].jsonrpc_code
    assert p.InvalidParams.jsonrpc_code == ERROR_KINDS[ErrorCode.INVALID_ARGUMENTS].jsonrpc_code
    refused = p.Refused("Tool x is not visible to apps", request_id=1, method="tools/call")
    assert (refused.to_wire() or {})["error"] == {
        "code": -32000,
        "message": "Tool x is not visible to apps",
    }


def test_is_jsonrpc_tells_app_traffic_from_the_frame_channel() -> None:
    assert p.is_jsonrpc(GOLDEN_INITIALIZED)
    assert p.is_jsonrpc(p.encode_error(1, -32600, "x"))
    assert not p.is_jsonrpc({"channel": "assistant-ui-frame", "message": {"type": "x"}})
    assert not p.is_jsonrpc({"jsonrpc": "1.0", "method": "ping"})
    assert not p.is_jsonrpc([GOLDEN_INITIALIZED])


# -- constants and tool metadata ---------------------------------------------------------------


def test_constants() -> None:
    assert p.PROTOCOL_VERSION == "2026-01-26"
    assert p.SUPPORTED_PROTOCOL_VERSIONS == ("2026-01-26",)
    assert p.EXTENSION_ID == "io.modelcontextprotocol/ui"
    assert p.APP_MIME_TYPE == "text/html;profile=mcp-app"


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        (None, ("model", "app")),
        ({}, ("model", "app")),
        ({"ui": {"resourceUri": "ui://a"}}, ("model", "app")),
        ({"ui": {"visibility": ["app"]}}, ("app",)),
        ({"ui": {"visibility": ["model"]}}, ("model",)),
        ({"ui": {"visibility": []}}, ()),
        ({"ui": {"visibility": ["app", "model", "app", "robot"]}}, ("app", "model")),
        ({"ui": {"visibility": None}}, ("model", "app")),
        ({"ui": "nonsense"}, ("model", "app")),
        # Malformed: fails closed, model-only (a view may never call it).
        ({"ui": {"visibility": "app"}}, ("model",)),
        ({"ui": {"visibility": "model"}}, ("model",)),
        ({"ui": {"visibility": {"app": True}}}, ("model",)),
        ({"ui": {"visibility": ["app", 1]}}, ("model",)),
        ({"ui": {"visibility": [["app"]]}}, ("model",)),
        ({"ui": {"visibility": True}}, ("model",)),
    ],
)
def test_visibility(meta: dict[str, Any] | None, expected: tuple[str, ...]) -> None:
    assert p.visibility(meta) == expected


def test_a_malformed_visibility_is_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    meta = {"ui": {"visibility": "only-the-model-please"}}
    with caplog.at_level(logging.WARNING, logger="assistant_frames.apps"):
        for _ in range(3):
            assert p.visibility(meta) == ("model",)
    reports = [r for r in caplog.records if "only-the-model-please" in r.getMessage()]
    assert len(reports) == 1
    assert "model-only" in reports[0].getMessage()


def test_model_visible_hides_app_only_tools_of_a_listing() -> None:
    def tool(name: str, meta: dict[str, Any] | None) -> mcp.Tool:
        return mcp.Tool(name=name, input_schema={"type": "object"}, _meta=meta)

    listing = [
        tool("plain", None),
        tool("both", {"ui": {"resourceUri": "ui://w", "visibility": ["model", "app"]}}),
        tool("view_only", {"ui": {"visibility": ["app"]}}),
        tool("model_only", {"ui": {"visibility": ["model"]}}),
        tool("nobody", {"ui": {"visibility": []}}),
    ]
    assert [t.name for t in p.model_visible(listing)] == ["plain", "both", "model_only"]


def test_resource_uri_reads_both_forms() -> None:
    assert p.resource_uri({"ui": {"resourceUri": "ui://clock/app.html"}}) == "ui://clock/app.html"
    assert p.resource_uri({"ui/resourceUri": "ui://legacy"}) == "ui://legacy"
    assert p.resource_uri({"ui": {"resourceUri": "https://not-ui"}}) is None
    assert p.resource_uri(None) is None


# -- against the shipped SDK's schema.json -----------------------------------------------------


@pytest.fixture(scope="module")
def schema_defs() -> dict[str, Any]:
    if not installed(SCHEMA, BROWSER):
        reason = (
            "ext-apps schema.json is missing: run `npm ci` in tests/browser "
            "(pins @modelcontextprotocol/ext-apps 2.0.4)"
        )
        if os.environ.get("CI") or os.environ.get("ASSISTANT_FRAMES_REQUIRE_BROWSER") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    defs: dict[str, Any] = schema["$defs"]
    # Styles: McpUiStyles, McpUiHostStyles and the three host contexts (McpUiHostContext,
    # its changed notification, the initialize result); dimensions: the three contexts.
    assert _relax(defs) == (5, 3)
    return defs


def _relax(node: Any) -> tuple[int, int]:
    """Undo two artifacts of ``schema.json``'s generation; how many of each were undone.

    Where the generated schema is stricter than the SDK's own zod schemas (checked with
    ext-apps 2.0.4's ``McpUiHostContextSchema``), the SDK's wire behaviour counts:

    * ``McpUiStyles`` requires every ``--color-*``/``--font-*`` key (generated from
      ``Record<K, string | undefined>``); the SDK accepts any subset, as documented;
    * ``containerDimensions`` is an ``allOf`` of closed objects, which only ``{}``
      satisfies; the SDK accepts ``{"height": 400, "maxWidth": 800}``.
    """
    styles = dimensions = 0
    if isinstance(node, dict):
        required = node.get("required")
        if (
            isinstance(required, list)
            and required
            and all(isinstance(key, str) and key.startswith("--") for key in required)
        ):
            del node["required"]
            styles += 1
        if isinstance(node.get("allOf"), list):
            for part in node["allOf"]:
                for branch in part.get("anyOf", []):
                    branch.pop("additionalProperties", None)
            dimensions += 1
        children: list[Any] = list(node.values())
    else:
        children = node if isinstance(node, list) else []
    for child in children:
        more_styles, more_dimensions = _relax(child)
        styles += more_styles
        dimensions += more_dimensions
    return styles, dimensions


def validate(defs: dict[str, Any], name: str, instance: Any) -> None:
    # Each definition is a standalone schema: its "#/$defs/..." refs point into itself.
    validator = Draft202012Validator(defs[name])
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]
    assert not errors, f"{name}: {errors}"


def test_the_method_table_matches_the_schema(schema_defs: dict[str, Any]) -> None:
    named = {spec.schema for spec in p.METHODS.values() if spec.schema}
    named |= {spec.result_schema for spec in p.METHODS.values() if spec.result_schema}
    assert named <= set(schema_defs)
    for spec in p.METHODS.values():
        if spec.schema:
            method = schema_defs[spec.schema]["properties"]["method"]["const"]
            assert method == spec.method
    # Every message definition in the schema has its method in the table.
    methods = {
        d["properties"]["method"]["const"]
        for d in schema_defs.values()
        if "method" in d.get("properties", {})
    }
    assert methods == {m for m in p.METHODS if m.startswith("ui/")}


@pytest.mark.parametrize(
    ("index", "method", "params"), [(i, m, x) for i, (m, x) in enumerate(SENT)]
)
def test_sent_messages_validate_against_the_sdk_schema(
    schema_defs: dict[str, Any], index: int, method: str, params: BaseModel | None
) -> None:
    wire = _encode(index, method, params)
    envelope = mcp.jsonrpc_message_adapter.validate_python(wire)  # the JSON-RPC framing
    assert envelope.jsonrpc == "2.0"
    name = p.METHODS[method].schema
    if name is None:  # a plain MCP method: its params validate as the mcp SDK's model
        return
    # The definitions describe {method, params}; the jsonrpc/id framing is the transport's.
    validate(schema_defs, name, {k: v for k, v in wire.items() if k in ("method", "params")})


@pytest.mark.parametrize("method", sorted(m for m in RESULTS if p.METHODS[m].result_schema))
def test_sent_results_validate_against_the_sdk_schema(
    schema_defs: dict[str, Any], method: str
) -> None:
    wire = p.encode_result(1, RESULTS[method])
    mcp.jsonrpc_message_adapter.validate_python(wire)
    validate(schema_defs, p.METHODS[method].result_schema or "", wire["result"])


def test_the_schema_rejects_what_the_sdk_rejects(schema_defs: dict[str, Any]) -> None:
    # A sanity check of the validation itself: an initialize result without hostContext.
    result = p.to_wire(initialize_result())
    del result["hostContext"]
    with pytest.raises(AssertionError, match="hostContext"):
        validate(schema_defs, "McpUiInitializeResult", result)
    with pytest.raises(AssertionError, match="url"):
        validate(schema_defs, "McpUiOpenLinkRequest", {"method": p.OPEN_LINK, "params": {}})


# -- against the shipped SDK's own zod schemas, in node ----------------------------------------

ZOD_SCRIPT = """
import * as core from "@modelcontextprotocol/core";
import * as apps from "@modelcontextprotocol/ext-apps/app-bridge";
let input = "";
for await (const chunk of process.stdin) input += chunk;
const failures = [];
for (const [schema, value, framed] of JSON.parse(input)) {
  const checks = [[schema, schema && (apps[schema + "Schema"] ?? core[schema + "Schema"]), value]];
  if (framed) checks.push(["JSONRPCMessage", core.JSONRPCMessageSchema, framed]);
  for (const [name, zod, instance] of checks) {
    if (!name) continue;
    if (!zod) { failures.push([name, "no such schema"]); continue; }
    const parsed = zod.safeParse(instance);
    if (!parsed.success) failures.push([name, JSON.stringify(instance), parsed.error.message]);
  }
}
console.log(JSON.stringify(failures));
"""


#: The MCP TypeScript SDK's schemas for the methods that have no ``McpUi*`` one:
#: ``(message schema, result schema)``.
MCP_ZOD: dict[str, tuple[str | None, str | None]] = {
    "tools/call": ("CallToolRequest", "CallToolResult"),
    "tools/list": ("ListToolsRequest", "ListToolsResult"),
    "resources/read": ("ReadResourceRequest", None),
    "resources/list": ("ListResourcesRequest", None),
    "resources/templates/list": ("ListResourceTemplatesRequest", None),
    "prompts/list": ("ListPromptsRequest", None),
    "sampling/createMessage": ("CreateMessageRequest", None),
    "ping": ("PingRequest", "EmptyResult"),
    "notifications/message": ("LoggingMessageNotification", None),
    "notifications/cancelled": ("CancelledNotification", None),
    "notifications/tools/list_changed": ("ToolListChangedNotification", None),
    p.UPDATE_MODEL_CONTEXT: (None, "EmptyResult"),
}


def test_sent_messages_pass_the_sdks_own_zod_schemas() -> None:
    node = shutil.which("node")
    if node is None or not installed(BROWSER / "node_modules" / "@modelcontextprotocol", BROWSER):
        reason = "node or tests/browser/node_modules is missing: run `npm ci` in tests/browser"
        if os.environ.get("CI") or os.environ.get("ASSISTANT_FRAMES_REQUIRE_BROWSER") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    cases: list[tuple[str | None, Any, Any]] = []
    for index, (method, params) in enumerate(SENT):
        wire = _encode(index, method, params)
        schema = p.METHODS[method].schema or MCP_ZOD[method][0]
        cases.append((schema, wire, wire))
    for method, result in RESULTS.items():
        wire = p.encode_result(f"call-{method}", result)
        schema = p.METHODS[method].result_schema or MCP_ZOD[method][1]
        cases.append((schema, wire["result"], wire))
    for raw, _, request_id in MALFORMED:  # our answers to bad input
        if request_id is not None:
            with pytest.raises(p.ProtocolError) as caught:
                p.decode(raw)
            cases.append((None, None, caught.value.to_wire()))
    refusal = p.Refused("Tool x is not visible to apps", request_id="7").to_wire()
    cases.append((None, None, refusal))
    incomplete = p.to_wire(initialize_result())
    del incomplete["hostContext"]
    cases.append(("McpUiInitializeResult", incomplete, None))
    completed = subprocess.run(
        [node, "--input-type=module", "-e", ZOD_SCRIPT],
        cwd=BROWSER,
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    failures = json.loads(completed.stdout)
    # The one bad case below, put there to show the check can fail: the JS App refuses an
    # initialize result without hostContext.
    assert [failure[0] for failure in failures] == ["McpUiInitializeResult"], failures
