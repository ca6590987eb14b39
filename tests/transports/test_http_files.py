"""websocket_server(http_files=...): plain HTTP GETs for static files beside the WebSockets.

Real sockets on 127.0.0.1; the HTTP client is a raw anyio TCP stream, so the tests run on
asyncio and trio alike.
"""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest

from assistant_frames import AssistantFrameHost, AssistantFrameProvider, HandshakeRejected, browser
from assistant_frames.browser import RELAY_FILES, inline_script, relay_files, relay_source
from assistant_frames.transports import (
    HttpRequest,
    HttpResponse,
    connect_websocket,
    websocket_server,
)

from helpers import calculator, http_get

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-token"
PAGE = b"<!doctype html><title>hello</title>"
FILES = {"/index.html": (PAGE, "text/html; charset=utf-8"), **relay_files()}


async def never_called(transport: Any) -> None:
    raise AssertionError("a plain HTTP request reached the WebSocket handler")


async def test_get_a_file() -> None:
    async with websocket_server(never_called, http_files=FILES) as server:
        status, headers, body = await http_get(server, "/index.html")
    assert status == 200
    assert body == PAGE
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert headers["content-length"] == str(len(PAGE))
    assert headers["cache-control"] == "no-store"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["connection"] == "close"


async def test_relay_files_are_served() -> None:
    async with websocket_server(never_called, http_files=relay_files()) as server:
        for name, content_type in RELAY_FILES.items():
            status, headers, body = await http_get(server, f"/assistant-frames/{name}?v=1")
            assert status == 200, name
            assert body == relay_source(name)
            assert headers["content-type"] == content_type


async def test_unknown_path_is_404() -> None:
    async with websocket_server(never_called, http_files=FILES) as server:
        for path in ("/", "/nope.js", "/assistant-frames/", "/index.html/"):
            status, headers, _ = await http_get(server, path)
            assert status == 404, path
            assert headers["connection"] == "close"


async def test_files_need_no_token_but_websockets_do() -> None:
    frame = AssistantFrameProvider(calculator())
    async with websocket_server(frame.serve, token=TOKEN, http_files=FILES) as server:
        status, _, body = await http_get(server, "/index.html")
        assert (status, body) == (200, PAGE)
        status, _, _ = await http_get(server, "/missing")
        assert status == 404

        with pytest.raises(HandshakeRejected) as refused:
            async with connect_websocket(server.url + "/index.html"):
                pass
        assert refused.value.status == 401
        with pytest.raises(HandshakeRejected):
            async with connect_websocket(server.url, token="wrong"):
                pass

        async with (
            connect_websocket(server.url + "/index.html", token=TOKEN) as transport,
            AssistantFrameHost(transport, timeout=5) as host,
        ):
            await host.wait_for_context(timeout=5)
            assert await host.call_tool("add", {"a": 2, "b": 3}) == 5


async def test_without_files_plain_requests_keep_426_and_401() -> None:
    async with websocket_server(never_called) as server:
        status, _, _ = await http_get(server, "/index.html")
        assert status == 426
    async with websocket_server(never_called, token=TOKEN) as server:
        status, headers, _ = await http_get(server, "/index.html")
        assert status == 401
        assert headers["www-authenticate"] == "Bearer"


async def test_files_do_not_stop_the_server_serving() -> None:
    frame = AssistantFrameProvider(calculator())
    async with websocket_server(frame.serve, http_files=FILES) as server:
        for _ in range(3):
            assert (await http_get(server, "/index.html"))[0] == 200
        async with (
            connect_websocket(server.url) as transport,
            AssistantFrameHost(transport) as host,
        ):
            await host.wait_for_context(timeout=5)
            assert list(host.get_model_context().tools) == ["add"]


def test_bad_files_are_refused_up_front() -> None:
    async def main(files: Any) -> None:
        async with websocket_server(never_called, http_files=files):
            pass

    with pytest.raises(ValueError, match="must start with '/'"):
        anyio.run(main, {"index.html": (PAGE, "text/html")})
    with pytest.raises(TypeError, match="must be bytes"):
        anyio.run(main, {"/index.html": ("text", "text/html")})


CSP = "default-src 'none'; script-src 'unsafe-inline'"


async def test_http_handler_answers_with_its_headers_else_files_then_404() -> None:
    seen: list[HttpRequest] = []

    async def pages(request: HttpRequest) -> HttpResponse | None:
        seen.append(request)
        if request.path != "/view":
            return None  # the files, then 404
        await anyio.sleep(0.001)  # it may await (look a view up, say)
        body = f"view {request.query}".encode()
        headers = {"Content-Security-Policy": CSP, "Cache-Control": "private"}
        return HttpResponse(200, body, "text/html; charset=utf-8", headers)

    frame = AssistantFrameProvider(calculator())
    async with websocket_server(frame.serve, token=TOKEN, http_handler=pages) as server:
        status, headers, body = await http_get(server, "/view?id=7", {"X-Probe": "1"})
        assert (status, body) == (200, b"view id=7")
        assert headers["content-security-policy"] == CSP
        assert headers["content-type"] == "text/html; charset=utf-8"
        assert headers["cache-control"] == "private"  # replaced, not repeated
        assert headers["content-length"] == str(len(body))
        assert headers["x-content-type-options"] == "nosniff"
        assert (seen[0].path, seen[0].query, seen[0].headers["x-probe"]) == ("/view", "id=7", "1")
        assert (await http_get(server, "/index.html"))[0] == 404  # no files: 404, not 426
        # WebSockets still need the token, and work with it.
        with pytest.raises(HandshakeRejected):
            async with connect_websocket(server.url + "/view"):
                pass
        async with (
            connect_websocket(server.url, token=TOKEN) as transport,
            AssistantFrameHost(transport, timeout=5) as host,
        ):
            await host.wait_for_context(timeout=5)
    assert len(seen) == 2  # the upgrades never reached it

    async with websocket_server(never_called, http_files=FILES, http_handler=pages) as server:
        assert (await http_get(server, "/index.html"))[2] == PAGE  # None: the file
        assert (await http_get(server, "/view"))[2] == b"view "


async def test_http_handler_errors_are_500_and_the_server_goes_on() -> None:
    async def broken(request: HttpRequest) -> HttpResponse | None:
        if request.path == "/raise":
            raise RuntimeError("boom")
        if request.path == "/split":
            return HttpResponse(headers={"X-Evil": "a\r\nSet-Cookie: b"})
        if request.path == "/length":
            return HttpResponse(headers={"Content-Length": "0"})
        return HttpResponse(201, b"ok")

    async with websocket_server(never_called, http_handler=broken) as server:
        for path in ("/raise", "/split", "/length"):
            status, headers, body = await http_get(server, path)
            assert (status, body) == (500, b"Internal server error\n"), path
            assert "set-cookie" not in headers
        assert (await http_get(server, "/fine"))[:3:2] == (201, b"ok")


def test_relay_files_prefix() -> None:
    assert set(relay_files("/static")) == {f"/static/{name}" for name in RELAY_FILES}
    with pytest.raises(ValueError, match="must start with '/'"):
        relay_files("static/")
    with pytest.raises(KeyError):
        relay_source("nope.js")


@pytest.mark.parametrize("name", [name for name in RELAY_FILES if name.endswith(".js")])
def test_inline_script_is_safe_in_html_whatever_the_source_holds(name: str) -> None:
    element = inline_script(name, data_wire='a"b')
    assert element.startswith('<script data-wire="a&quot;b">')
    assert element.endswith("</script>")
    body = element.removeprefix(element.split(">", 1)[0] + ">").removesuffix("</script>")
    assert not re.search(r"</script|<!--", body, re.IGNORECASE)
    assert len(body) >= len(relay_source(name).decode())


def test_inline_script_escapes_what_would_end_the_element(monkeypatch: pytest.MonkeyPatch) -> None:
    source = b'var a = "</SCRIPT><!-- x"; // </script>'
    monkeypatch.setattr(browser, "relay_source", lambda name: source)
    assert inline_script("x.js") == '<script>var a = "<\\/SCRIPT><\\!-- x"; // <\\/script></script>'
    with pytest.raises(ValueError, match="not a script"):
        inline_script("child-relay.html")
