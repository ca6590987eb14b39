"""``AppView``: a host's whole view of one app item, over real parts.

The app's server is a real ``mcp`` ``MCPServer`` in this process behind an ``MCPFrameHost``
(subclassed only to serve the malformed ``resources/read`` results a bad server sends);
the view is the Python ``App`` over a ``memory_pair``, or a silent raw end for a view
that never initializes. The CSP builder is checked against the MCP Apps spec's own text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp.server.apps import ResourceCsp, ResourcePermissions
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer

from assistant_frames.apps import (
    DEFAULT_CSP,
    App,
    AppRequestError,
    AppView,
    CspError,
    LinkPolicy,
    allow_attribute,
    allowed_display_modes,
    build_csp,
    build_host_context,
    choose_display_mode,
    protocol,
)
from assistant_frames.mcp import MCPFrameHost
from assistant_frames.transports import memory_pair

WAIT = 5.0
QUIET = 0.2
VIEW_URI = "ui://weather/view.html"
HTML = "<!doctype html><html><body>weather</body></html>"

# The restrictive default, as written in the MCP Apps spec (specification/2026-01-26/
# apps.mdx, "Host Behavior"), for a resource that declares no csp.
SPEC_DEFAULT_CSP = """
  default-src 'none';
  script-src 'self' 'unsafe-inline';
  style-src 'self' 'unsafe-inline';
  img-src 'self' data:;
  media-src 'self' data:;
  connect-src 'none';
"""


class BadServer(MCPServer):
    """An ``MCPServer`` whose reads of some URIs are what a broken server sends."""

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        uri = str(uri)
        if uri == "ui://bad/two.html":
            return [ReadResourceContents(HTML, protocol.APP_MIME_TYPE)] * 2
        if uri == "ui://bad/stripped.html":  # the content says nothing: the listing does
            return [ReadResourceContents(HTML, protocol.APP_MIME_TYPE)]
        return await super().read_resource(uri, context)


def app_server(name: str = "weather") -> MCPServer:
    server = BadServer(name)
    calls: list[str] = []
    meta_ui = {
        "csp": {"connectDomains": ["https://api.weather.example"]},
        "permissions": {"geolocation": {}},
        "domain": "weather.example",
        "prefersBorder": True,
    }

    @server.tool(meta={"ui": {"resourceUri": VIEW_URI}})
    def forecast(city: str) -> str:
        """Both the model and the view may call it."""
        calls.append(f"forecast {city}")
        return f"Sunny in {city}"

    @server.tool(meta={"ui": {"visibility": ["app"]}})
    def refresh(city: str) -> dict[str, Any]:
        """Only a view of this server may call it."""
        calls.append(f"refresh {city}")
        return {"city": city, "temperature": 21}

    @server.resource(VIEW_URI, mime_type=protocol.APP_MIME_TYPE, meta={"ui": meta_ui})
    def view_html() -> str:
        calls.append("read")
        return HTML

    @server.resource("ui://weather/blob.html", mime_type=protocol.APP_MIME_TYPE)
    def blob_html() -> bytes:
        return HTML.encode()

    @server.resource("ui://weather/plain.html", mime_type="text/html")
    def plain_html() -> str:
        return HTML

    @server.resource("ui://bad/two.html", mime_type=protocol.APP_MIME_TYPE)
    def two() -> str:
        return HTML

    @server.resource(
        "ui://bad/stripped.html", mime_type=protocol.APP_MIME_TYPE, meta={"ui": meta_ui}
    )
    def stripped() -> str:
        return HTML

    server.calls = calls  # type: ignore[attr-defined]
    return server


@asynccontextmanager
async def served(
    view: AppView, **app_options: Any
) -> AsyncIterator[tuple[App, anyio.abc.TaskGroup]]:
    """Serve ``view`` to a Python ``App`` over a fresh ``memory_pair``; close it after."""
    host_end, view_end = memory_pair()
    app_options.setdefault("timeout", WAIT)
    async with anyio.create_task_group() as group:
        group.start_soon(view.serve, host_end)
        async with App(view_end, **app_options) as app:
            await view.wait_state("ready", timeout=WAIT)
            yield app, group
            with anyio.fail_after(WAIT):
                await view.close()


def frame_view(frame: MCPFrameHost, **options: Any) -> AppView:
    options.setdefault("title", "Weather")
    options.setdefault("app_id", "weather-1")
    options.setdefault("resource_uri", VIEW_URI)
    options.setdefault("timeout", WAIT)
    return AppView(server=frame, **options)


# -- the sandbox: CSP and permissions ----------------------------------------------------------


def test_no_csp_gives_the_spec_default_exactly() -> None:
    spec = " ".join(line.strip() for line in SPEC_DEFAULT_CSP.strip().splitlines())
    assert build_csp(None) == DEFAULT_CSP == spec.removesuffix(";")


def test_declared_domains_are_added_where_the_spec_maps_them() -> None:
    csp = ResourceCsp(
        connect_domains=["https://api.example.com", "wss://live.example.com"],
        resource_domains=["https://cdn.example.com", "https://*.cdn.example.com"],
        frame_domains=["https://www.youtube.com"],
        base_uri_domains=["https://cdn.example.com"],
    )
    res = "https://cdn.example.com https://*.cdn.example.com"
    assert build_csp(csp) == (
        "default-src 'none'; "
        f"script-src 'self' 'unsafe-inline' {res}; "
        f"style-src 'self' 'unsafe-inline' {res}; "
        f"img-src 'self' data: {res}; "
        f"media-src 'self' data: {res}; "
        f"font-src 'self' {res}; "
        "connect-src https://api.example.com wss://live.example.com; "
        "frame-src https://www.youtube.com; "
        "base-uri https://cdn.example.com"
    )
    # Empty lists: the spec's per-field defaults (no connections, no frames, base 'self').
    assert build_csp(ResourceCsp()) == (DEFAULT_CSP + "; frame-src 'none'; base-uri 'self'")


@pytest.mark.parametrize(
    "domain",
    [
        "*",
        "https:",
        "data:",
        "'unsafe-eval'",
        "a.example.com; script-src *",
        "a.com b.com",
        "",
        # Matched whole: a trailing newline once passed (and broke the header).
        "https://a.example\n",
        "https://a.example/\n",
        "https://a.example/p\r\nX-Injected: 1",
        "https://a.example/\t",
        "https://a.example/\x00",
        "https://a.example/\x7f",
        "https://a.example/caf\u00e9",
        "https://a.example/a,b",
    ],
)
def test_a_declared_entry_that_is_no_host_source_is_refused(domain: str) -> None:
    with pytest.raises(CspError, match="not a host source"):
        build_csp(ResourceCsp(connect_domains=[domain]))


def test_permissions_become_the_allow_attribute() -> None:
    assert allow_attribute(None) == ""
    asked = ResourcePermissions(camera={}, clipboard_write={})
    assert allow_attribute(asked) == "camera; clipboard-write"


# -- links, display modes, host context (no I/O) ------------------------------------------------


@pytest.mark.anyio
async def test_the_link_policy_allows_listed_asks_for_others_refuses_dangerous() -> None:
    asked: list[str] = []

    def confirm(url: str) -> bool:
        asked.append(url)
        return url.endswith("/yes")

    policy = LinkPolicy(
        allow=["https://docs.example.com", "https://*.cdn.example.com", "http://example.org/help/"],
        confirm=confirm,
    )
    assert await policy.decide("https://docs.example.com/a/b?q=1") == "allowed"
    assert await policy.decide("https://eu.cdn.example.com/x") == "allowed"
    assert await policy.decide("http://example.org/help/page") == "allowed"
    assert await policy.decide("https://cdn.example.com/x") == "declined"  # not a subdomain
    assert await policy.decide("http://example.org/helpers") == "declined"  # not under /help/
    assert await policy.decide("http://docs.example.com/") == "declined"  # another scheme
    assert await policy.decide("https://docs.example.com:8443/") == "declined"  # another port
    # Credentials: the host is evil.example; refused without asking (a phishing shape).
    assert await policy.decide("https://docs.example.com@evil.example/") == "refused"
    assert await policy.decide("https://other.example/yes") == "confirmed"
    assert len(asked) == 5
    for url in [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
        "blob:https://docs.example.com/uuid",
        "vbscript:msgbox(1)",
        " https://docs.example.com/",
        "java\tscript:alert(1)",
        "https://docs.example.com/\nx",
        "https://",
        "//docs.example.com/",
    ]:
        assert await policy.decide(url) == "refused", url
    assert len(asked) == 5  # never asked about any of those
    assert await LinkPolicy().decide("https://docs.example.com/") == "refused"  # no confirm
    with pytest.raises(ValueError, match="not an http"):
        LinkPolicy(allow=["javascript:"])


def test_display_modes_are_host_and_view_with_inline_as_the_fallback() -> None:
    host = ("inline", "fullscreen", "pip")
    assert allowed_display_modes(host, ["fullscreen"]) == ["inline", "fullscreen"]
    assert allowed_display_modes(("inline",), ["fullscreen", "pip"]) == ["inline"]
    assert allowed_display_modes(host, None) == ["inline"]
    assert choose_display_mode("pip", ["inline", "fullscreen"]) == "inline"
    assert choose_display_mode("fullscreen", ["inline", "fullscreen"]) == "fullscreen"
    assert choose_display_mode("sideways", ["inline", "fullscreen"]) == "inline"


def test_the_host_context_is_built_once_with_every_key() -> None:
    context = build_host_context(
        theme="dark",
        locale="nb-NO",
        time_zone="Europe/Oslo",
        container_dimensions={"maxHeight": 600, "width": 400},
        style_variables={"--color-background-primary": "#000"},
    )
    wire = protocol.to_wire(context)
    assert wire["theme"] == "dark"
    assert wire["locale"] == "nb-NO"
    assert wire["timeZone"] == "Europe/Oslo"
    assert wire["userAgent"].startswith("assistant-frames/")
    assert wire["platform"] == "web"
    assert wire["deviceCapabilities"] == {"touch": False, "hover": False}
    assert wire["safeAreaInsets"] == {"top": 0, "right": 0, "bottom": 0, "left": 0}
    assert wire["containerDimensions"] == {"maxHeight": 600, "width": 400}
    assert wire["styles"] == {"variables": {"--color-background-primary": "#000"}}
    defaults = protocol.to_wire(build_host_context())
    assert defaults["locale"]
    assert defaults["timeZone"]


# -- resolving -----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_resolving_reads_the_resource_and_its_sandbox() -> None:
    async with MCPFrameHost(app_server(), name="weather") as frame:
        view = frame_view(frame)
        assert view.state == "resolving"
        resource = await view.resolve()
        assert view.state == "loading"
        assert resource is not None
        assert resource.html == HTML
        assert resource.csp == ResourceCsp(connect_domains=["https://api.weather.example"])
        assert "connect-src https://api.weather.example;" in resource.csp_header
        assert resource.allow == "geolocation"
        assert (resource.domain, resource.prefers_border) == ("weather.example", True)

        blob = await frame_view(frame, resource_uri="ui://weather/blob.html").resolve()
        assert blob is not None
        assert blob.html == HTML
        assert blob.csp_header == DEFAULT_CSP

        # No _meta.ui on the content: every key comes from the listing.
        view = frame_view(frame, resource_uri="ui://bad/stripped.html")
        listed = await view.resolve()
        assert listed is not None
        assert listed.allow == "geolocation"
        assert listed.csp == resource.csp
        assert listed.domain == "weather.example"


@pytest.mark.anyio
async def test_the_view_is_told_the_sandbox_it_is_granted() -> None:
    ui = {
        "csp": {"connectDomains": ["https://api.example.com"]},
        "permissions": {"clipboardWrite": {}},
    }
    view = AppView(title="Weather", app_id="w", html=HTML, resource_meta=ui, timeout=WAIT)
    async with served(view) as (app, _):
        sandbox = app.host_capabilities.sandbox
        assert sandbox is not None
        assert sandbox.csp is not None
        assert sandbox.csp.connect_domains == ["https://api.example.com"]
        assert sandbox.permissions is not None
        assert sandbox.permissions.clipboard_write is not None
        assert sandbox.permissions.camera is None  # nothing it did not ask for


@pytest.mark.anyio
async def test_prefetched_html_skips_resources_read() -> None:
    server = app_server()
    async with MCPFrameHost(server, name="weather") as frame:
        reads_before = server.calls.count("read")  # type: ignore[attr-defined]
        csp = {"csp": {"resourceDomains": ["https://cdn.example.com"]}}
        view = frame_view(frame, html=HTML, resource_meta=csp)
        assert view.state == "loading"  # nothing to read
        async with served(view):
            pass
        # (the frame itself may have read its UI resources on entering: not the view)
        assert server.calls.count("read") == reads_before  # type: ignore[attr-defined]
        assert view.resource is not None
        assert "https://cdn.example.com" in view.resource.csp_header


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("https://weather.example/view.html", "is not a ui:// resource URI"),
        ("ui:/weather/view.html", "is not a ui:// resource URI"),
        (" ui://weather/view.html", "is not a ui:// resource URI"),
        ("ui://", "is not a ui:// resource URI"),
        ("ui://weather/plain.html", "MIME 'text/html', not 'text/html;profile=mcp-app'"),
        ("ui://bad/two.html", "gave 2 contents; an app view is exactly one"),
        ("ui://weather/missing.html", "resources/read ui://weather/missing.html failed"),
    ],
)
async def test_a_bad_resource_is_the_error_state_with_the_fallback_text(uri: str, why: str) -> None:
    async with MCPFrameHost(app_server(), name="weather") as frame:
        view = frame_view(frame, resource_uri=uri, fallback_text="Sunny in Oslo (no view)")
        assert await view.resolve() is None
        assert view.state == "error"
        assert view.error is not None
        assert why in view.error
        assert view.fallback_text == "Sunny in Oslo (no view)"
        # Serving an errored view closes the view's connection at once.
        host_end, view_end = memory_pair()
        with anyio.fail_after(WAIT):
            await view.serve(host_end)
            with pytest.raises(anyio.EndOfStream):
                await view_end.receive()


@pytest.mark.anyio
async def test_prefetched_html_with_a_widening_csp_is_the_error_state() -> None:
    view = AppView(
        title="x",
        app_id="x",
        html=HTML,
        resource_meta={"csp": {"connectDomains": ["*"]}},
        fallback_text="text",
    )
    assert view.state == "error"
    assert "not a host source" in (view.error or "")


# -- the lifecycle -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_tool_view_gets_its_context_input_and_result_then_is_torn_down() -> None:
    server = app_server()
    states: list[str] = []
    async with MCPFrameHost(server, name="weather") as frame:
        view = frame_view(
            frame,
            tool_name="forecast",
            tool_call_id="call-7",
            host_context=build_host_context(theme="dark", locale="en-GB"),
            on_change=lambda v: states.append(v.state),
        )
        await view.send_tool_input_partial({"city": "Os"})  # before the view connects
        async with served(view) as (app, _):
            assert app.host_context.theme == "dark"
            assert app.host_context.locale == "en-GB"
            assert app.host_context.display_mode == "inline"
            assert app.host_context.tool_info is not None
            assert app.host_context.tool_info.id == "call-7"
            assert app.host_context.tool_info.tool.name == "forecast"
            await app.wait_until(lambda a: a.tool_input_partial == {"city": "Os"}, timeout=WAIT)
            await view.send_tool_input({"city": "Oslo"})
            assert await app.wait_tool_input(timeout=WAIT) == {"city": "Oslo"}
            result = await frame.call_tool_result("forecast", {"city": "Oslo"})
            await view.send_tool_result(result)
            got = await app.wait_tool_result(timeout=WAIT)
            assert got.content[0].text == "Sunny in Oslo"  # type: ignore[union-attr]
            assert not app.torn_down
        assert app.torn_down  # teardown was answered before the view went
        assert view.state == "closed"
        assert view.bridge is None
    assert states == ["loading", "ready", "closed"]


@pytest.mark.anyio
async def test_without_a_tool_call_id_the_view_gets_its_own_and_every_notification() -> None:
    """Before: a view made without tool_call_id dropped its input and result silently
    (logged at DEBUG), and the widget waited forever."""
    view = AppView(title="Notes", app_id="notes", html=HTML)
    assert view.tool_call_id == "notes/tool-call"
    async with served(view) as (app, _):
        await view.send_tool_input_partial({"city": "Os"})
        await app.wait_until(lambda app: app.tool_input_partial == {"city": "Os"})
        await view.send_tool_input({"city": "Oslo"})
        await view.send_tool_result({"content": [{"type": "text", "text": "Sunny"}]})
        assert (await app.wait_tool_input()) == {"city": "Oslo"}
        assert (await app.wait_tool_result()).content[0].text == "Sunny"  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_cancelled_tool_call_reaches_the_view() -> None:
    view = AppView(title="W", app_id="w", html=HTML, tool_call_id=3)
    async with served(view) as (app, _):
        await view.send_tool_input({"city": "Oslo"})
        await view.send_tool_cancelled("The user stopped it")
        await app.wait_until(lambda a: a.cancelled, timeout=WAIT)
        assert app.tool_cancelled == "The user stopped it"


@pytest.mark.anyio
async def test_html_that_never_initializes_is_the_error_state_within_the_timeout() -> None:
    view = AppView(
        title="W", app_id="w", html="<p>no script</p>", init_timeout=0.3, fallback_text="F"
    )
    host_end, view_end = memory_pair()
    with anyio.fail_after(WAIT):
        await view.serve(host_end)  # returns once the view is given up on
    assert view.state == "error"
    assert view.fallback_text == "F"
    assert view.error is not None
    assert "sent no ui/initialize within 0.3 s" in view.error
    with pytest.raises((anyio.EndOfStream, anyio.ClosedResourceError)), anyio.fail_after(WAIT):
        await view_end.receive()  # the connection was closed


@pytest.mark.anyio
async def test_the_view_is_torn_down_when_its_task_is_cancelled() -> None:
    view = AppView(title="W", app_id="w", html=HTML, teardown_timeout=2.0)
    host_end, view_end = memory_pair()
    serving = anyio.CancelScope()

    async def serve() -> None:
        with serving:
            await view.serve(host_end)

    async with anyio.create_task_group() as group:
        group.start_soon(serve)
        async with App(view_end, timeout=WAIT) as app:
            await view.wait_state("ready", timeout=WAIT)
            serving.cancel()  # the page went away, say
            await app.wait_torn_down(timeout=WAIT)
            assert await view.wait_state("closed", timeout=WAIT) == "closed"
            with anyio.fail_after(WAIT):
                await app.wait_disconnected()  # and then the connection was closed


@pytest.mark.anyio
async def test_a_view_asking_to_go_is_torn_down_and_closed() -> None:
    view = AppView(title="W", app_id="w", html=HTML)
    host_end, view_end = memory_pair()
    async with anyio.create_task_group() as group:
        group.start_soon(view.serve, host_end)
        async with App(view_end, timeout=WAIT) as app:
            await view.wait_state("ready", timeout=WAIT)
            await app.request_teardown()
            await app.wait_torn_down(timeout=WAIT)
            assert await view.wait_state("closed", timeout=WAIT) == "closed"


@pytest.mark.anyio
async def test_a_view_that_reconnects_is_told_the_tool_call_again() -> None:
    view = AppView(title="W", app_id="w", html=HTML, tool_call_id="c")
    await view.send_tool_input({"city": "Oslo"})
    for _ in range(2):  # the page reloaded the iframe: a new connection, the same item
        host_end, view_end = memory_pair()
        async with anyio.create_task_group() as group:
            group.start_soon(view.serve, host_end)
            async with App(view_end, timeout=WAIT) as app:
                await view.wait_state("ready", timeout=WAIT)
                assert await app.wait_tool_input(timeout=WAIT) == {"city": "Oslo"}
            assert await view.wait_state("loading", timeout=WAIT) == "loading"
    await view.close()
    assert view.state == "closed"


# -- display modes and host context ---------------------------------------------------------------


@pytest.mark.anyio
async def test_display_modes_are_what_host_and_view_both_have() -> None:
    seen: list[str] = []
    view = AppView(
        title="W",
        app_id="w",
        html=HTML,
        display_mode="pip",
        display_modes=("inline", "fullscreen", "pip"),
        on_change=lambda v: seen.append(v.display_mode) if seen[-1:] != [v.display_mode] else None,
    )
    assert view.display_mode == "pip"  # what the page shows while the view loads
    capabilities = protocol.AppCapabilities(available_display_modes=["inline", "fullscreen"])
    async with served(view, capabilities=capabilities) as (app, _):
        # pip was asked for, but the view does not declare it: inline.
        assert app.host_context.display_mode == "inline"
        assert app.host_context.available_display_modes == ["inline", "fullscreen"]
        assert view.display_mode == "inline"
        assert await app.request_display_mode("pip") == "inline"  # undeclared: stays
        assert await app.request_display_mode("fullscreen") == "fullscreen"
        await app.wait_until(lambda a: a.host_context.display_mode == "fullscreen", timeout=WAIT)
        assert view.display_mode == "fullscreen"
        assert await view.set_display_mode("inline") == "inline"  # the user closed the panel
        await app.wait_until(lambda a: a.host_context.display_mode == "inline", timeout=WAIT)
    assert seen == ["inline", "fullscreen", "inline"]  # state changes are calls too


@pytest.mark.anyio
async def test_the_hosts_mode_change_before_the_view_connects_is_where_it_starts() -> None:
    view = AppView(title="W", app_id="w", html=HTML)
    assert await view.set_display_mode("fullscreen") == "fullscreen"
    capabilities = protocol.AppCapabilities(available_display_modes=["fullscreen"])
    async with served(view, capabilities=capabilities) as (app, _):
        assert app.host_context.display_mode == "fullscreen"


@pytest.mark.anyio
async def test_a_closed_view_stays_closed() -> None:
    async with MCPFrameHost(app_server(), name="weather") as frame:
        view = frame_view(frame, resource_uri="ui://weather/missing.html")
        await view.close()
        assert await view.resolve() is None  # nothing is read for a closed view
        assert view.state == "closed"
        host_end, view_end = memory_pair()
        with anyio.fail_after(WAIT):
            await view.serve(host_end)
            with pytest.raises(anyio.EndOfStream):
                await view_end.receive()


@pytest.mark.anyio
async def test_a_view_declaring_no_modes_stays_inline() -> None:
    view = AppView(title="W", app_id="w", html=HTML, display_mode="fullscreen")
    async with served(view) as (app, _):
        assert app.host_context.display_mode == "inline"
        assert app.host_context.available_display_modes == ["inline"]
        assert await app.request_display_mode("fullscreen") == "inline"


@pytest.mark.anyio
async def test_host_context_changes_reach_the_view_without_recreating_it() -> None:
    changes: list[protocol.HostContext] = []
    view = AppView(
        title="W",
        app_id="w",
        html=HTML,
        host_context=build_host_context(theme="light", locale="en-US"),
    )
    async with served(view, on_host_context_changed=changes.append) as (app, _):
        bridge = view.bridge
        await view.update_host_context(theme="dark")
        await view.update_host_context(container_dimensions={"width": 320, "maxHeight": 480})
        await app.wait_until(lambda a: len(changes) == 2, timeout=WAIT)
        assert app.host_context.theme == "dark"
        assert app.host_context.locale == "en-US"
        assert app.host_context.container_dimensions == protocol.ContainerDimensions(
            width=320, max_height=480
        )
        assert view.bridge is bridge
        assert app.state == "initialized"
        with pytest.raises(ValueError, match="set_display_mode"):
            await view.update_host_context(display_mode="pip")


# -- what the view may do --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_open_link_follows_the_policy() -> None:
    opened: list[str] = []
    view = AppView(
        title="W",
        app_id="w",
        html=HTML,
        link_policy=LinkPolicy(allow=["https://docs.example.com"], confirm=lambda url: "ok" in url),
        on_open_link=lambda v, url: opened.append(url),
    )
    async with served(view) as (app, _):
        assert app.host_capabilities is not None
        assert app.host_capabilities.open_links is not None
        assert (await app.open_link("https://docs.example.com/x")).is_error is None
        assert (await app.open_link("https://elsewhere.example/ok")).is_error is None
        assert (await app.open_link("https://elsewhere.example/no")).is_error is True
        assert (await app.open_link("javascript:alert(1)")).is_error is True
        assert (await app.open_link("data:text/html,hi")).is_error is True
        assert (await app.open_link("file:///etc/passwd")).is_error is True
    assert opened == ["https://docs.example.com/x", "https://elsewhere.example/ok"]


@pytest.mark.anyio
async def test_messages_and_model_context_go_to_the_host() -> None:
    got: list[tuple[str, Any]] = []
    view = AppView(
        title="W",
        app_id="w",
        html=HTML,
        on_message=lambda v, params: got.append((v.app_id, params.content[0].text)),
        on_update_model_context=lambda v, params: got.append((v.app_id, params.content[0].text)),
    )
    async with served(view) as (app, _):
        await app.send_message("Plan a walk")
        await app.update_model_context("Oslo is selected")
        assert view.bridge is not None
        assert view.bridge.get_model_context().system == "Oslo is selected"
    assert got == [("w", "Plan a walk"), ("w", "Oslo is selected")]


@pytest.mark.anyio
async def test_a_view_calls_its_own_servers_tools_never_another_servers() -> None:
    weather, other = app_server("weather"), app_server("other")
    async with (
        MCPFrameHost(weather, name="weather") as one,
        MCPFrameHost(other, name="other") as two,
    ):
        # What the frames read of their UI resources on entering is not the views' doing.
        weather.calls.clear()  # type: ignore[attr-defined]
        other.calls.clear()  # type: ignore[attr-defined]
        view_one, view_two = frame_view(one, app_id="one"), frame_view(two, app_id="two")
        async with served(view_one) as (app, _), served(view_two):
            result = await app.call_server_tool("refresh", {"city": "Oslo"})
            assert result.structured_content == {"city": "Oslo", "temperature": 21}
            weather.add_tool(
                lambda: "hidden", name="secret", meta={"ui": {"visibility": ["model"]}}
            )
            other.add_tool(
                lambda: "other's", name="only_other", meta={"ui": {"visibility": ["app"]}}
            )
            with pytest.raises(AppRequestError) as refused:
                await app.call_server_tool("only_other")  # app-only, but another server's
            assert refused.value.jsonrpc_code == protocol.REFUSED
            with pytest.raises(AppRequestError) as hidden:
                await app.call_server_tool("secret")  # its own server's, model-only
            assert hidden.value.jsonrpc_code == protocol.REFUSED
            read = await app.read_server_resource(VIEW_URI)
            assert read.contents[0].text == HTML  # type: ignore[union-attr]
    assert weather.calls == ["read", "refresh Oslo", "read"]  # type: ignore[attr-defined]
    assert other.calls == ["read"]  # type: ignore[attr-defined]
