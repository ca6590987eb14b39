"""The argument parser of the ``assistant-frames`` command: its commands, options and help."""

from __future__ import annotations

import argparse
import sys

from .._version import package_version
from .apps_command import cmd_apps_preview
from .arguments import FORMATTER, Parser, add_command, add_page_address, add_timeout
from .call_command import cmd_call
from .common import PROG, TOKEN_ENV
from .demo_command import cmd_demo
from .dev_command import add_dev_parser
from .federation import Member, parse_member
from .inspect_command import cmd_inspect
from .serve_command import cmd_serve

__all__ = ["build_parser", "parse_listen_address"]


_MAIN_DESCRIPTION = """\
Serve, inspect and call assistant-frames frames, and run the demo.

A frame offers tools and instructions (a model context); a host connects to it,
sees its context live and calls its tools across the connection. Frames are
reached over WebSockets (ws://HOST:PORT) or run as worker subprocesses that speak
newline-delimited JSON on stdin/stdout (-- COMMAND ...). 'serve' also serves a
context, or a federation of frames and MCP servers, as an MCP server."""

_MAIN_EPILOG = f"""\
examples:
  {PROG} demo
  {PROG} serve --ws :8765 --token s3cret myapp.tools:registry
  {PROG} inspect ws://127.0.0.1:8765 --token s3cret
  {PROG} inspect -- python worker.py
  {PROG} call add --args '{{"a": 2, "b": 3}}' -- python worker.py
  {PROG} apps preview -- python examples/weather_app.py
  {PROG} dev myapp.tools:registry worker.py search=ws://127.0.0.1:8765

exit status: 0 ok, 1 the tool or the frame failed (tool error, timeout,
unreachable, refused), 2 usage error, 130 interrupted.
Run '{PROG} COMMAND --help' for the options of each command."""

_SERVE_DESCRIPTION = """\
Serve a frame: the object MODULE:OBJECT names, which is a ModelContextRegistry,
any ModelContextProvider, an AssistantFrameProvider, or a zero-argument callable
(sync or async) returning one. The current directory is importable, as with
'python -m'; OBJECT may be a dotted path (module:app.registry).

Or serve a federation: --frame NAME=FRAME connects an assistant-frames frame (a
ws:// URL or a worker command) and --mcp NAME=SERVER an MCP server (an http(s)://
URL or a command); each joins under the namespace NAME (its tools are called
NAME_tool), beside MODULE:OBJECT if given. A member that goes away takes its tools
with it.

--stdio serves the one host that started this process on stdin/stdout (what
'inspect -- COMMAND' and spawn_worker() expect); anything the frame prints goes to
stderr. --ws serves every host that connects over WebSockets. --mcp-stdio serves
one MCP client on stdin/stdout (what MCP desktop clients start); --mcp-http serves
MCP clients over Streamable HTTP at http://HOST:PORT/mcp. HOST defaults to
127.0.0.1 and port 0 picks a free port; the URL is printed to stderr. MCP clients
are told when the tool list changes. --nats serves the frame --name as one replica
on a NATS server: start as many as you like, each call goes to one of them."""

_SERVE_EPILOG = f"""\
examples:
  {PROG} serve --ws :8765 myapp.tools:registry
  {PROG} serve --ws 127.0.0.1:0 --token s3cret myapp.tools:make_registry
  {PROG} serve --ws 0.0.0.0:8765 --token s3cret \\
      --allow-origin https://app.example.com myapp.tools:registry
  {PROG} inspect -- {PROG} serve --stdio myapp.tools:registry
  {PROG} serve --mcp-stdio myapp.tools:registry
  {PROG} serve --mcp-http :8000 --frame notes='python notes_worker.py' \\
      --frame search=ws://127.0.0.1:8765 --mcp time='uvx mcp-server-time'
  {PROG} serve --nats nats://127.0.0.1:4222 --name calc myapp.tools:registry

The token may also come from ${TOKEN_ENV}. Stop the server with Ctrl-C."""

_INSPECT_DESCRIPTION = """\
Connect to a frame and print its instructions and tools, with each tool's
parameters (name, type, required or optional, default, description).

The frame is what connect() takes: a ws:// (or wss://, nats://) URL, an
http(s):// MCP server (Streamable HTTP), a registry MODULE:OBJECT served in this
process, or a worker: a script or a command in one argument, or everything after
'--' (started and stopped again; its stderr passes through). With --mcp a command
is an MCP server instead."""

_TARGET_HELP = (
    "the frame: a ws://, wss:// or nats:// URL, an http(s):// MCP server, MODULE:OBJECT, "
    "or a worker script or command (quoted as one argument)"
)

_INSPECT_EPILOG = f"""\
examples:
  {PROG} inspect ws://127.0.0.1:8765 --token s3cret
  {PROG} inspect --json ws://127.0.0.1:8765 > context.json
  {PROG} inspect worker.py
  {PROG} inspect myapp.tools:registry
  {PROG} inspect -- python worker.py
  {PROG} inspect -- {PROG} serve --stdio myapp.tools:registry
  {PROG} inspect --mcp -- mcp-server-time
  {PROG} inspect --mcp http://127.0.0.1:8000/mcp

The token may also come from ${TOKEN_ENV}."""

_CALL_DESCRIPTION = """\
Call one tool of a frame and print its result as JSON.

The frame comes before TOOL, as inspect takes it (a URL, MODULE:OBJECT, a worker
script or command), or last, after '--'; with --mcp a command is an MCP server. A
tool error, a timeout, an unknown tool or an unreachable or refusing frame exits
with status 1 and one line on stderr."""

_CALL_EPILOG = f"""\
examples:
  {PROG} call ws://127.0.0.1:8765 add --args '{{"a": 2, "b": 3}}' --token s3cret
  {PROG} call search_notes --args '{{"query": "deploy"}}' -- python worker.py
  {PROG} call worker.py add --args '{{"a": 2, "b": 3}}'
  {PROG} call myapp.tools:registry add --args '{{"a": 2, "b": 3}}'
  echo '{{"a": 1, "b": 2}}' | {PROG} call ws://127.0.0.1:8765 add --args -
  {PROG} call ws://127.0.0.1:8765 add --args @args.json
  {PROG} call --mcp get_current_time --args '{{"timezone": "UTC"}}' -- mcp-server-time

The token may also come from ${TOKEN_ENV}."""

_DEMO_DESCRIPTION = """\
Run the demo: a parent assistant federates three frames, each over another
transport (an in-process sub-agent over memory_pair, a worker subprocess over
stdio, a WebSocket service on 127.0.0.1), prints the merged context, calls a tool
on each, shows a live update, and kills the worker with SIGKILL in the middle of
a call to show the error the parent gets at once. Loopback only; a few seconds."""

_DEMO_EPILOG = f"""\
examples:
  {PROG} demo
  {PROG} demo --backend trio
  python -m assistant_frames demo"""


_APPS_DESCRIPTION = """\
Work with MCP Apps: tools that come with an HTML view.

'apps preview' shows an MCP server's app views in a local web page."""

_PREVIEW_DESCRIPTION = """\
Preview the app views of an MCP server: an http(s):// URL (Streamable HTTP) or a
command given after '--' (stdio), which is started and stopped again.

Prints the page's URL (loopback; the access token is in the URL) and serves
until Ctrl-C. In the page, call one of the server's UI tools with JSON arguments
and see its view, switch the theme and the display mode (inline, fullscreen,
pip), and watch each view's JSON-RPC traffic. Each view runs in a sandboxed
iframe on another origin than the page, with the Content-Security-Policy and
permissions its resource declares; the host side (the MCP Apps bridge) runs in
this process. Nothing is fetched from the network: everything is on loopback.

--call TOOL (with --args JSON) calls the tool as the model would, once the page
is up: its view is shown to every page that opens, without a click, so a
headless browser's screenshot of the URL shows it."""

_PREVIEW_EPILOG = f"""\
examples:
  {PROG} apps preview -- python examples/weather_app.py
  {PROG} apps preview http://127.0.0.1:8000/mcp --token s3cret
  {PROG} apps preview --port 8765 --allow-link https://docs.example.com -- my-server
  {PROG} apps preview --call get_weather --args '{{"city": "Oslo"}}' -- python weather.py

The token may also come from ${TOKEN_ENV}."""


def parse_listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT``, ``PORT`` or ``[IPv6]:PORT`` -> ``(host, port)``.

    The host defaults to 127.0.0.1 (loopback). ``ValueError`` says what is wrong.
    """
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = "", text
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"write an IPv6 address in brackets, e.g. [::1]:8765, not {text!r}")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"expected HOST:PORT or :PORT, e.g. :8765, not {text!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be between 0 and 65535, not {port}")
    return host or "127.0.0.1", port


def _member(kind: str, text: str) -> Member:
    try:
        return parse_member(kind, text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _listen_address(text: str) -> tuple[str, int]:
    try:
        return parse_listen_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_client_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mcp",
        action="store_true",
        help="the frame is an MCP server: an http(s):// URL, or the command after '--' "
        "(needs the 'mcp' extra)",
    )
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"bearer token for a ws:// frame or --mcp http(s):// server that requires one "
        f"(default: ${TOKEN_ENV})",
    )
    add_timeout(
        parser, "how long to wait to connect, for the frame's context and for a tool's result"
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``assistant-frames`` command (without the ``--`` part).

    The worker command of ``inspect`` and ``call`` (everything after ``--``) is split
    off by :func:`main` before parsing.
    """
    parser = Parser(
        prog=PROG,
        description=_MAIN_DESCRIPTION,
        epilog=_MAIN_EPILOG,
        formatter_class=FORMATTER,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"{PROG} {package_version()} (Python {sys.version.split()[0]})",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log more (-v: info, -vv: debug); show the traceback of an unexpected error",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    verbose = Parser(add_help=False)  # -v after the command works too
    verbose.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="log more (-v: info, -vv: debug); show the traceback of an unexpected error",
    )

    serve = add_command(
        commands,
        "serve",
        [verbose],
        help="serve a registry, provider or federation over stdio, WebSockets or MCP",
        description=_SERVE_DESCRIPTION,
        epilog=_SERVE_EPILOG,
    )
    serve.add_argument(
        "target",
        metavar="MODULE:OBJECT",
        nargs="?",
        help="what to serve, e.g. app:registry (optional with --frame or --mcp)",
    )
    how = serve.add_mutually_exclusive_group(required=True)
    how.add_argument(
        "--stdio", action="store_true", help="serve the parent process on stdin/stdout"
    )
    how.add_argument(
        "--ws",
        type=_listen_address,
        metavar="HOST:PORT",
        help="listen for WebSocket hosts (':PORT' is 127.0.0.1:PORT; port 0: any free port)",
    )
    how.add_argument(
        "--mcp-stdio",
        action="store_true",
        help="serve one MCP client on stdin/stdout (needs the 'mcp' extra)",
    )
    how.add_argument(
        "--mcp-http",
        type=_listen_address,
        metavar="HOST:PORT",
        help="serve MCP over Streamable HTTP at http://HOST:PORT/mcp (needs the 'mcp' extra)",
    )
    how.add_argument(
        "--nats",
        metavar="URL",
        help="serve as one replica of the frame --name on a NATS server, e.g. "
        "nats://127.0.0.1:4222 (needs the 'nats' extra)",
    )
    serve.add_argument(
        "--frame",
        action="append",
        type=lambda text: _member("frame", text),
        metavar="NAME=FRAME",
        help="federate a frame (ws:// URL or worker command) under the namespace NAME (repeatable)",
    )
    serve.add_argument(
        "--mcp",
        action="append",
        type=lambda text: _member("mcp", text),
        metavar="NAME=SERVER",
        help="federate an MCP server (http(s):// URL or command) under the namespace NAME "
        "(repeatable; needs the 'mcp' extra)",
    )
    serve.add_argument(
        "--name",
        default="assistant-frames",
        help="the server name MCP clients see, or the frame's name on NATS "
        "(default: assistant-frames)",
    )
    serve.add_argument(
        "--prefix",
        default="frames",
        help="with --nats: the subject prefix, a tenant's own (default: frames)",
    )
    add_timeout(serve, "how long to wait for each --frame or --mcp member to connect")
    serve.add_argument(
        "--token",
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' from --ws clients (which may send "
        f"?access_token=TOKEN instead) and --mcp-http clients (default: ${TOKEN_ENV}; none "
        "if unset)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="allow browser pages from ORIGIN (repeatable); with any given, other origins get "
        "HTTP 403. Programs sending no Origin are always allowed",
    )
    serve.set_defaults(handler=cmd_serve)

    inspect_ = add_command(
        commands,
        "inspect",
        [verbose],
        help="print a frame's instructions and tools",
        description=_INSPECT_DESCRIPTION,
        epilog=_INSPECT_EPILOG,
        usage=(
            "[-h] [--json] [--mcp] [--token TOKEN] [--timeout SECONDS]",
            "(TARGET | -- COMMAND [ARG ...])",
        ),
    )
    inspect_.add_argument("target", metavar="TARGET", nargs="?", help=_TARGET_HELP)
    inspect_.add_argument(
        "--json",
        action="store_true",
        help="print the context as JSON, in its wire form ({system, tools})",
    )
    _add_client_options(inspect_)
    inspect_.set_defaults(handler=cmd_inspect)

    call = add_command(
        commands,
        "call",
        [verbose],
        help="call one tool of a frame and print the result as JSON",
        description=_CALL_DESCRIPTION,
        epilog=_CALL_EPILOG,
        usage=(
            "[-h] [--args JSON] [--mcp] [--token TOKEN] [--timeout SECONDS]",
            "(TARGET TOOL | TOOL -- COMMAND [ARG ...])",
        ),
    )
    call.add_argument("target", metavar="TARGET", nargs="?", help=_TARGET_HELP)
    call.add_argument("tool", metavar="TOOL", help="the name of the tool to call")
    call.add_argument(
        "--args",
        default="{}",
        metavar="JSON",
        help="the arguments as JSON (default: {}); '-' reads them from stdin, @FILE from FILE",
    )
    _add_client_options(call)
    call.set_defaults(handler=cmd_call)

    demo = add_command(
        commands,
        "demo",
        [verbose],
        help="run the federation demo (three frames, three transports)",
        description=_DEMO_DESCRIPTION,
        epilog=_DEMO_EPILOG,
    )
    demo.add_argument(
        "--backend",
        choices=("asyncio", "trio"),
        default="asyncio",
        help="the anyio backend to run on (default: asyncio)",
    )
    demo.set_defaults(handler=cmd_demo)

    add_dev_parser(commands, [verbose])

    apps = add_command(
        commands,
        "apps",
        [verbose],
        help="work with MCP Apps (tools with an HTML view)",
        description=_APPS_DESCRIPTION,
        epilog=f"examples:\n  {PROG} apps preview -- python examples/weather_app.py",
    )
    apps_commands = apps.add_subparsers(
        dest="apps_command", metavar="COMMAND", parser_class=Parser, required=True
    )
    preview = add_command(
        apps_commands,
        "preview",
        [verbose],
        help="preview an MCP server's app views in a local web page",
        description=_PREVIEW_DESCRIPTION,
        epilog=_PREVIEW_EPILOG,
        usage=(
            "[-h] [--port PORT] [--allow-link URL] [--token TOKEN]",
            "[--timeout SECONDS] (URL | -- COMMAND [ARG ...])",
        ),
    )
    preview.add_argument(
        "target", metavar="URL", nargs="?", help="http(s):// URL of the MCP server"
    )
    add_page_address(
        preview, "the page's port on 127.0.0.1 (default: 0, any free port; the views get another)"
    )
    preview.add_argument(
        "--allow-link",
        action="append",
        metavar="URL",
        help="let views offer links under this http(s) URL prefix (repeatable); other links "
        "are refused",
    )
    preview.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"bearer token for an http(s):// MCP server that requires one (default: ${TOKEN_ENV})",
    )
    add_timeout(
        preview, "how long to wait to connect, for the server's answers and for a tool's result"
    )
    preview.add_argument(
        "--call",
        metavar="TOOL",
        help="call this UI tool once the page is up: every page that opens shows its view",
    )
    preview.add_argument(
        "--args",
        metavar="JSON",
        help="the --call's arguments as JSON (default: {}); '-' reads them from stdin, "
        "@FILE from FILE",
    )
    preview.set_defaults(handler=cmd_apps_preview)
    return parser
