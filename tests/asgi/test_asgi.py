"""``assistant_frames.asgi`` in a real application: uvicorn on 127.0.0.1, Starlette and
FastAPI routes, our WebSocket client and the ``websockets`` package's.

uvicorn runs on asyncio only, so these tests do (the conformance suite,
``test_transport_contract.py``, runs the ASGI transport's promises; here are the
endpoint's checks, its two modes, the mounted files and the mounted app page).
"""

from __future__ import annotations

import logging
import os
import runpy
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import SocketAttribute
from fastapi import FastAPI, WebSocket
from starlette.applications import Starlette
from starlette.routing import Mount, WebSocketRoute
from websockets.asyncio.client import connect as websockets_connect
from websockets.exceptions import InvalidStatus

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    HandshakeRejected,
    ModelContextRegistry,
    connect,
)
from assistant_frames.asgi import (
    DEFAULT_MAX_MESSAGE_BYTES,
    ASGIAttribute,
    ASGIWebSocketTransport,
    app_page_app,
    files_app,
    frame_endpoint,
    relay_app,
)
from assistant_frames.browser import RELAY_FILES, relay_source
from assistant_frames.transports import (
    MessageTooLarge,
    TransportAttribute,
    WebSocketAttribute,
    close_reason,
    connect_websocket,
)
from assistant_frames.transports import websocket as websocket_module

from helpers import calculator, wait_until
from uvicorn_support import fetch, serve_asgi

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "asgi-test-token"
WAIT = 10.0


@pytest.fixture
def anyio_backend() -> str:
    """uvicorn runs on asyncio only: there is no uvicorn to run these on under trio."""
    return "asyncio"


class Recorder:
    """A handler that records each transport it is handed and echoes until the end."""

    def __init__(self) -> None:
        self.transports: list[ASGIWebSocketTransport] = []
        self.ends: list[BaseException] = []

    async def __call__(self, transport: ASGIWebSocketTransport) -> None:
        self.transports.append(transport)
        try:
            while True:
                await transport.send(await transport.receive())
        except anyio.EndOfStream as exc:
            self.ends.append(exc)


@asynccontextmanager
async def serving(*routes: Any, **options: Any) -> AsyncIterator[Any]:
    async with serve_asgi(Starlette(routes=list(routes)), **options) as running:
        yield running


async def receive_end(transport: Any) -> BaseException:
    with anyio.fail_after(WAIT), pytest.raises(anyio.EndOfStream) as info:  # noqa: PT012
        message = await transport.receive()
        pytest.fail(f"expected the end of the stream, received {message!r}")
    return info.value


# -- serving a frame -----------------------------------------------------------------------------


async def test_a_frame_served_at_an_endpoint_feeds_python_hosts() -> None:
    frame = AssistantFrameProvider(calculator("Use add."))
    endpoint = frame_endpoint(frame, token=TOKEN)
    assert endpoint.provider is frame
    async with serving(WebSocketRoute("/frames/calc", endpoint)) as running:
        url = f"{running.ws}/frames/calc"
        parent = ModelContextRegistry()
        async with (
            connect_websocket(url, token=TOKEN) as transport,
            AssistantFrameHost(transport, name="calc", timeout=WAIT) as host,
        ):
            await host.wait_for_context(timeout=WAIT)
            parent.add_provider(host, namespace="calc")
            context = parent.get_model_context()
            assert (context.system, list(context.tools)) == ("Use add.", ["calc_add"])
            assert await context.call_tool("calc_add", {"a": 2, "b": 3}) == 5
            assert frame.connection_count == 1
        # connect() takes the endpoint's URL as it takes websocket_server's.
        async with connect(url, token=TOKEN, timeout=WAIT) as remote:
            assert await remote.call_tool("add", {"a": 40, "b": 2}) == 42
        await wait_until(lambda: frame.connection_count == 0, WAIT)


async def test_a_registry_is_served_through_a_frame_made_for_it() -> None:
    endpoint = frame_endpoint(calculator())
    assert isinstance(endpoint.provider, AssistantFrameProvider)
    async with (
        serving(WebSocketRoute("/calc", endpoint)) as running,
        connect(f"{running.ws}/calc", timeout=WAIT) as remote,
    ):
        assert await remote.call_tool("add", {"a": 1, "b": 2}) == 3
    with pytest.raises(TypeError, match="AssistantFrameProvider"):
        frame_endpoint(42)  # type: ignore[arg-type]


async def test_stopping_the_server_ends_each_connection_with_code_1012() -> None:
    recorder = Recorder()
    async with (
        serving(WebSocketRoute("/echo", frame_endpoint(recorder))) as running,
        connect_websocket(f"{running.ws}/echo") as client,
    ):
        await client.send("ping")
        with anyio.fail_after(WAIT):
            assert await client.receive() == "ping"
        running.server.should_exit = True  # uvicorn shuts down: "service restart"
        end = close_reason(await receive_end(client))
        assert (end.close_code, end.clean) == (1012, False)
    server_end = close_reason(recorder.ends[0])
    assert (server_end.close_code, server_end.clean) == (1012, False)


# -- hosting frames that dial in (a handler) -----------------------------------------------------


async def test_a_handler_hosts_frames_that_dial_in_and_reads_the_connection() -> None:
    parent = ModelContextRegistry()
    seen: list[dict[str, Any]] = []

    async def host_frame(transport: ASGIWebSocketTransport) -> None:
        scope = transport.extra(ASGIAttribute.scope)
        name = scope["path_params"]["name"]
        seen.append(
            {
                "name": name,
                "path": transport.extra(WebSocketAttribute.path),
                "origin": transport.extra(WebSocketAttribute.origin),
                "remote": transport.extra(SocketAttribute.remote_address),
                "local_port": transport.extra(SocketAttribute.local_port),
                "limit": transport.extra(TransportAttribute.max_message_bytes),
            }
        )
        async with AssistantFrameHost(transport, name=name, timeout=WAIT) as host:
            handle = parent.add_provider(host, namespace=name)
            try:
                await host.wait_disconnected()
            finally:
                handle.remove()

    endpoint = frame_endpoint(host_frame, token=TOKEN, max_message_bytes=50_000)
    async with serving(WebSocketRoute("/frames/{name}", endpoint)) as running:
        clock = ModelContextRegistry()
        clock.add_tool("now", lambda: "12:00")
        url = f"{running.ws}/frames/clock?v=2&access_token={TOKEN}"
        async with (
            connect_websocket(url, origin="https://app.example") as transport,
            anyio.create_task_group() as tasks,
        ):
            tasks.start_soon(AssistantFrameProvider(clock).serve, transport)
            await wait_until(lambda: "clock_now" in parent.get_model_context().tools, WAIT)
            assert await parent.get_model_context().call_tool("clock_now") == "12:00"
            local = transport.extra(SocketAttribute.local_address)
            tasks.cancel_scope.cancel()
        await wait_until(lambda: parent.get_model_context().tools == {}, WAIT)
    assert seen == [
        {
            "name": "clock",
            "path": "/frames/clock?v=2",  # the token is not for handlers to see
            "origin": "https://app.example",
            "remote": local,
            "local_port": running.port,
            "limit": 50_000,
        }
    ]


async def test_a_handler_that_raises_is_logged_and_other_connections_go_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def flaky(transport: ASGIWebSocketTransport) -> None:
        message = await transport.receive()
        if message == "fail":
            raise RuntimeError("the handler's bug")
        await transport.send(message)

    async with serving(WebSocketRoute("/flaky", frame_endpoint(flaky))) as running:
        with caplog.at_level(logging.ERROR, logger="assistant_frames.asgi"):
            async with connect_websocket(f"{running.ws}/flaky") as failing:
                await failing.send("fail")
                end = close_reason(await receive_end(failing))
                assert (end.close_code, end.clean) == (1000, True)  # closed, not crashed
        assert "the handler's bug" in caplog.text
        async with connect_websocket(f"{running.ws}/flaky") as working:
            await working.send("hello")
            with anyio.fail_after(WAIT):
                assert await working.receive() == "hello"


async def test_fastapi_routes_take_the_endpoint_both_ways() -> None:
    recorder = Recorder()
    endpoint = frame_endpoint(recorder, token=TOKEN)
    app = FastAPI()
    app.router.add_websocket_route("/plain", endpoint)

    @app.websocket("/decorated/{room}")
    async def decorated(websocket: WebSocket, room: str) -> None:
        assert room == "blue"  # FastAPI's own parameters still work
        await endpoint.serve_websocket(websocket)

    async with serve_asgi(app) as running:
        for path in ("/plain", "/decorated/blue"):
            async with connect_websocket(f"{running.ws}{path}", token=TOKEN) as client:
                await client.send({"path": path})
                with anyio.fail_after(WAIT):
                    assert await client.receive() == {"path": path}
            with pytest.raises(HandshakeRejected) as refused:
                async with connect_websocket(f"{running.ws}{path}"):
                    pass
            assert refused.value.status == 401
    assert [t.extra(WebSocketAttribute.path) for t in recorder.transports] == [
        "/plain",
        "/decorated/blue",
    ]


# -- refusals ------------------------------------------------------------------------------------


async def test_a_missing_or_wrong_token_is_http_401_and_never_reaches_the_handler() -> None:
    recorder = Recorder()
    endpoint = frame_endpoint(recorder, token=TOKEN, allowed_origins=["https://app.example"])
    async with serving(WebSocketRoute("/ws", endpoint)) as running:
        url = f"{running.ws}/ws"
        for options in (
            {},
            {"token": "wrong"},
            {"token": "wrong", "origin": "https://evil.example"},
        ):
            with pytest.raises(HandshakeRejected) as refused:
                async with connect_websocket(url, **options):
                    pass
            assert (refused.value.status, refused.value.body) == (
                401,
                "Missing or invalid bearer token",
            )
        for query in ("", "?access_token=wrong", "?access_token="):
            with pytest.raises(InvalidStatus) as rejected:
                async with websockets_connect(url + query, open_timeout=WAIT):
                    pass
            response = rejected.value.response
            assert response.status_code == 401
            assert response.headers["WWW-Authenticate"] == "Bearer"
            assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
        assert recorder.transports == []  # none of them reached the handler

        # The header, else the query parameter (as a browser sends it), is accepted.
        async with connect_websocket(url, token=TOKEN) as client:
            await client.send("header")
            with anyio.fail_after(WAIT):
                assert await client.receive() == "header"
        async with websockets_connect(f"{url}?access_token={TOKEN}", open_timeout=WAIT) as ws:
            await ws.send('"query"')
            with anyio.fail_after(WAIT):
                assert await ws.recv() == '"query"'
    assert len(recorder.transports) == 2


async def test_an_origin_not_allowed_is_http_403_and_never_reaches_the_handler() -> None:
    recorder = Recorder()
    endpoint = frame_endpoint(recorder, allowed_origins=["https://app.example"])
    async with serving(WebSocketRoute("/ws", endpoint)) as running:
        url = f"{running.ws}/ws"
        with pytest.raises(HandshakeRejected) as refused:
            async with connect_websocket(url, origin="https://evil.example"):
                pass
        assert refused.value.status == 403
        assert "invalid Origin header: https://evil.example" in refused.value.body
        with pytest.raises(InvalidStatus) as rejected:
            async with websockets_connect(url, origin="http://localhost:1", open_timeout=WAIT):  # type: ignore[arg-type]
                pass
        assert rejected.value.response.status_code == 403
        assert recorder.transports == []

        for origin in ("https://app.example", None):  # allowed; a program sends none
            async with connect_websocket(url, origin=origin) as client:
                await client.send(origin)
                with anyio.fail_after(WAIT):
                    assert await client.receive() == origin
    assert [t.extra(WebSocketAttribute.origin) for t in recorder.transports] == [
        "https://app.example",
        None,
    ]


async def test_same_origin_allows_the_pages_of_the_same_application() -> None:
    recorder = Recorder()
    endpoint = frame_endpoint(recorder, same_origin=True)
    async with serving(WebSocketRoute("/ws", endpoint)) as running:
        url = f"{running.ws}/ws"
        for origin in (f"http://127.0.0.1:{running.port}", None):
            async with connect_websocket(url, origin=origin) as client:
                await client.send(origin)
                with anyio.fail_after(WAIT):
                    assert await client.receive() == origin
        # Another port, host or scheme is another origin.
        for origin in (
            f"http://127.0.0.1:{running.port + 1}",
            f"http://localhost:{running.port}",
            f"ftp://127.0.0.1:{running.port}",
            "null",
        ):
            with pytest.raises(HandshakeRejected) as refused:
                async with connect_websocket(url, origin=origin):
                    pass
            assert refused.value.status == 403, origin
    assert len(recorder.transports) == 2


async def test_without_the_denial_extension_a_refusal_is_a_close_before_accepting() -> None:
    """A server without ``websocket.http.response`` cannot send a 401: the endpoint
    closes before accepting, which the server answers with HTTP 403."""
    recorder = Recorder()
    inner = Starlette(routes=[WebSocketRoute("/ws", frame_endpoint(recorder, token=TOKEN))])

    async def no_denial_responses(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            scope = {**scope, "extensions": {}}
        await inner(scope, receive, send)

    async with serve_asgi(no_denial_responses) as running:
        with pytest.raises(HandshakeRejected) as refused:
            async with connect_websocket(f"{running.ws}/ws", token="wrong"):
                pass
        assert refused.value.status == 403
        async with connect_websocket(f"{running.ws}/ws", token=TOKEN) as client:
            await client.send(1)
            with anyio.fail_after(WAIT):
                assert await client.receive() == 1
    assert len(recorder.transports) == 1


async def test_plain_http_gets_426_or_401_with_a_token() -> None:
    async with serving(
        Mount("/open", frame_endpoint(Recorder())),  # mounted: everything below /open/
        WebSocketRoute("/closed", frame_endpoint(Recorder(), token=TOKEN)),
    ) as running:
        status, headers, _ = await fetch(f"{running.http}/open/")
        assert (status, headers["upgrade"]) == (426, "websocket")
        async with connect_websocket(f"{running.ws}/open/anything") as client:
            await client.send("below the mount point")
            with anyio.fail_after(WAIT):
                assert await client.receive() == "below the mount point"
        # A WebSocketRoute takes WebSockets only: Starlette answers plain HTTP itself.
        assert (await fetch(f"{running.http}/closed"))[0] == 404
    async with serve_asgi(frame_endpoint(Recorder(), token=TOKEN)) as running:  # the whole app
        status, headers, _ = await fetch(f"{running.http}/")
        assert (status, headers["www-authenticate"]) == (401, "Bearer")
        authorized = {"Authorization": f"Bearer {TOKEN}"}
        assert (await fetch(f"{running.http}/", headers=authorized))[0] == 426


# -- message size --------------------------------------------------------------------------------


async def test_a_message_over_the_limit_from_the_client_closes_with_code_1009() -> None:
    recorder = Recorder()
    endpoint = frame_endpoint(recorder, max_message_bytes=1024)
    async with (
        serving(WebSocketRoute("/ws", endpoint)) as running,
        connect_websocket(f"{running.ws}/ws") as client,
    ):
        exactly = "x" * 1022  # 1024 bytes of JSON with its quotes
        await client.send(exactly)
        with anyio.fail_after(WAIT):
            assert await client.receive() == exactly
        with pytest.raises(MessageTooLarge):  # the server end refuses to send more
            await recorder.transports[0].send(exactly + "x")
        await client.send("x" * 2000)
        end = close_reason(await receive_end(client))
        assert (end.close_code, end.clean) == (1009, False)
        assert "2002 bytes exceeds limit of 1024 bytes" in end.description
    server_end = close_reason(recorder.ends[0])
    assert (server_end.close_code, server_end.clean) == (1009, False)
    assert server_end.description == (
        "WebSocket connection closed with code 1009: "
        "message of 2002 bytes exceeds limit of 1024 bytes"
    )


async def test_uvicorn_ws_max_size_below_the_limit_closes_first_with_1009() -> None:
    """uvicorn reads whole messages up to ``ws_max_size`` before the application sees
    them; a smaller ``ws_max_size`` than ``max_message_bytes`` wins, with the same code."""
    recorder = Recorder()
    async with (
        serving(WebSocketRoute("/ws", frame_endpoint(recorder)), ws_max_size=1000) as running,
        connect_websocket(f"{running.ws}/ws") as client,
    ):
        await client.send("x" * 2000)
        end = close_reason(await receive_end(client))
        assert (end.close_code, end.clean) == (1009, False)
    await wait_until(lambda: len(recorder.ends) == 1, WAIT)
    server_end = close_reason(recorder.ends[0])
    assert (server_end.close_code, server_end.clean) == (1009, False)


def test_the_default_limit_is_websocket_servers() -> None:
    assert DEFAULT_MAX_MESSAGE_BYTES == websocket_module.DEFAULT_MAX_MESSAGE_BYTES


# -- mounted files -------------------------------------------------------------------------------


async def test_relays_and_files_are_served_under_any_prefix() -> None:
    page = b"<!doctype html><title>demo</title>"
    async with serving(
        Mount("/static/assistant-frames", relay_app()),
        Mount("/demo", files_app({"/": (page, "text/html; charset=utf-8")})),
    ) as running:
        for name, content_type in RELAY_FILES.items():
            status, headers, body = await fetch(f"{running.http}/static/assistant-frames/{name}")
            assert (status, body) == (200, relay_source(name)), name
            assert headers["content-type"] == content_type
            assert headers["x-content-type-options"] == "nosniff"
            assert headers["content-length"] == str(len(body))
        assert RELAY_FILES["parent-relay.js"] == "text/javascript; charset=utf-8"
        assert RELAY_FILES["child-relay.html"] == "text/html; charset=utf-8"

        url = f"{running.http}/static/assistant-frames/parent-relay.js?v=1"  # query ignored
        status, headers, body = await fetch(url, method="HEAD")
        assert (status, body) == (200, b"")
        assert headers["content-length"] == str(len(relay_source("parent-relay.js")))
        status, headers, _ = await fetch(url, method="POST")
        assert (status, headers["allow"]) == (405, "GET, HEAD")
        assert (await fetch(f"{running.http}/static/assistant-frames/nothing.js"))[0] == 404
        assert (await fetch(f"{running.http}/parent-relay.js"))[0] == 404  # only under its prefix

        status, headers, body = await fetch(f"{running.http}/demo/")
        assert (status, body) == (200, page)
        assert (
            headers.items()
            >= {
                "x-content-type-options": "nosniff",
                "cache-control": "no-store",
                "content-type": "text/html; charset=utf-8",
                "content-length": str(len(page)),
            }.items()
        )
        with pytest.raises(HandshakeRejected) as refused:  # no WebSocket among files
            async with connect_websocket(f"{running.ws}/demo/"):
                pass
        assert refused.value.status == 403
    with pytest.raises(ValueError, match="must start with '/'"):
        files_app({"page.html": (page, "text/html")})


# -- the app page, mounted -----------------------------------------------------------------------


async def test_the_app_page_works_mounted_under_a_prefix() -> None:
    pytest.importorskip("mcp")
    from assistant_frames.apps import App
    from assistant_frames.apps.page import AppPage
    from assistant_frames.mcp import MCPFrameHost

    example = runpy.run_path(str(ROOT / "examples" / "weather_app.py"))
    async with (
        example["server"].running(),
        MCPFrameHost(example["server"].server, timeout=WAIT) as frame,
        AppPage(frame, port=None, timeout=WAIT, init_timeout=WAIT) as page,
    ):
        with pytest.raises(RuntimeError, match="no server of its own"):
            page.origin  # noqa: B018 - port=None: the page is only where it is mounted
        mounted = app_page_app(page)
        async with serving(Mount("/tools/apps", mounted)) as running:
            base = f"{running.http}/tools/apps"
            assert mounted.url(base) == f"{base}/#token={page.token}"

            # The page's URLs are relative: its mount point is redirected to it with a slash
            # (by Starlette's router here, by the mounted page without one).
            status, headers, _ = await fetch(f"{base}?x=1")
            assert (status, headers["location"]) == (307, f"{base}/?x=1")
            status, headers, body = await fetch(f"{base}/")
            assert (status, headers["content-type"]) == (200, "text/html; charset=utf-8")
            assert body == relay_source("app-page.html")
            for name in ("app-page.js", "app-page.css", "parent-relay.js"):
                assert b'"./assistant-frames/' + name.encode() + b'"' in body
                status, _, served = await fetch(f"{base}/assistant-frames/{name}")
                assert (status, served) == (200, relay_source(name))

            ws = f"{running.ws}/tools/apps"
            for options, status in (
                ({"token": "wrong"}, 401),
                ({"token": page.token, "origin": "http://evil.example"}, 403),
                ({"token": page.token, "origin": page.views_origin}, 403),  # the views' origin
            ):
                with pytest.raises(HandshakeRejected) as refused:
                    async with connect_websocket(f"{ws}/page", **options):
                        pass
                assert refused.value.status == status, options

            same_origin = running.http  # a page served by this application
            async with connect_websocket(
                f"{ws}/page", token=page.token, origin=same_origin
            ) as control:
                with anyio.fail_after(WAIT):
                    hello = await control.receive()
                    assert hello["type"] == "hello"
                    assert [tool["name"] for tool in hello["tools"]] == ["forecast"]
                    await control.send(
                        {"type": "call", "tool": "forecast", "arguments": {"city": "Oslo"}}
                    )
                    shown = await control.receive()
                    while shown["type"] != "view":
                        shown = await control.receive()
                # The view comes from AppPage's views server: another origin than the page's.
                assert shown["src"].startswith(f"{page.views_origin}/view/view-1/")
                assert not shown["src"].startswith(running.http)
                socket = shown["socket"].lstrip("/")  # relative to the page, as the page does
                async with (
                    connect_websocket(
                        f"{ws}/{socket}", token=page.token, origin=same_origin
                    ) as transport,
                    App(transport, timeout=WAIT) as app,
                ):
                    assert await app.wait_tool_input() == {"city": "Oslo"}
                    result = await app.wait_tool_result()
                    assert result.structured_content == {"city": "Oslo", "sky": "snow"}
                    assert page.views["view-1"].state == "ready"


# -- the package's boundaries --------------------------------------------------------------------


def test_importing_it_without_starlette_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['starlette'] = None  # as if not installed\n"
        "import assistant_frames\n"
        "assert not [m for m in sys.modules if m.startswith('assistant_frames.asgi')]\n"
        "import assistant_frames.asgi\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    completed = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr
    assert (
        "ImportError: assistant_frames.asgi needs Starlette: "
        "pip install 'assistant-frames[asgi]'" in completed.stderr
    )
