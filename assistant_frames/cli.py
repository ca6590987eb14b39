"""The ``assistant-frames`` command line: serve, inspect and call frames, run the demo.

::

    assistant-frames demo
    assistant-frames serve --ws :8765 --token s3cret myapp.tools:registry
    assistant-frames inspect ws://127.0.0.1:8765 --token s3cret
    assistant-frames call add --args '{"a": 2, "b": 3}' -- python worker.py

Also runnable as ``python -m assistant_frames``. Exit status: 0 success, 1 the tool or
the frame failed (a tool error, a timeout, an unreachable or refusing frame), 2 a usage
error (bad arguments, bad ``--args`` JSON, a ``MODULE:OBJECT`` that cannot be loaded),
130 interrupted. Errors are one line on stderr, never a traceback (``-v`` adds it).

This module imports nothing WebSocket-related until a command needs it.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import inspect
import json
import logging
import os
import shlex
import shutil
import signal
import sys
import textwrap
import traceback
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import anyio

from . import __version__
from .errors import (
    AssistantFramesError,
    HandshakeRejected,
    ToolArgumentsError,
    ToolCallError,
    ToolDisabledError,
    ToolNotFoundError,
)
from .frames import AssistantFrameHost, AssistantFrameProvider
from .registry import ModelContext, ModelContextProvider

__all__ = [
    "DEFAULT_TIMEOUT",
    "TOKEN_ENV",
    "CommandError",
    "build_parser",
    "describe_type",
    "format_table",
    "load_frame",
    "main",
    "parameter_rows",
    "parse_listen_address",
    "render_context",
]

PROG = "assistant-frames"
DEFAULT_TIMEOUT = 10.0
TOKEN_ENV = "ASSISTANT_FRAMES_TOKEN"
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

_logger = logging.getLogger("assistant_frames.cli")


class CommandError(Exception):
    """A failure to report as one line on stderr, with the exit status to use."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def _usage_error(message: str) -> CommandError:
    return CommandError(message, EXIT_USAGE)


# -- argument parsing ----------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line: ``assistant-frames: error: ...``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: error: {message} (see '{self.prog} --help')\n")


_FORMATTER = argparse.RawDescriptionHelpFormatter

_MAIN_DESCRIPTION = """\
Serve, inspect and call assistant-frames frames, and run the demo.

A frame offers tools and instructions (a model context); a host connects to it,
sees its context live and calls its tools across the connection. Frames are
reached over WebSockets (ws://HOST:PORT) or run as worker subprocesses that speak
newline-delimited JSON on stdin/stdout (-- COMMAND ...)."""

_MAIN_EPILOG = f"""\
examples:
  {PROG} demo
  {PROG} serve --ws :8765 --token s3cret myapp.tools:registry
  {PROG} inspect ws://127.0.0.1:8765 --token s3cret
  {PROG} inspect -- python worker.py
  {PROG} call add --args '{{"a": 2, "b": 3}}' -- python worker.py

exit status: 0 ok, 1 the tool or the frame failed (tool error, timeout,
unreachable, refused), 2 usage error, 130 interrupted.
Run '{PROG} COMMAND --help' for the options of each command."""

_SERVE_DESCRIPTION = """\
Serve a frame: the object MODULE:OBJECT names, which is a ModelContextRegistry,
any ModelContextProvider, an AssistantFrameProvider, or a zero-argument callable
(sync or async) returning one. The current directory is importable, as with
'python -m'; OBJECT may be a dotted path (module:app.registry).

--stdio serves the one host that started this process on stdin/stdout (what
'inspect -- COMMAND' and spawn_worker() expect); anything the frame prints goes to
stderr. --ws serves every host that connects over WebSockets; HOST defaults to
127.0.0.1 and port 0 picks a free port. The URL is printed to stderr."""

_SERVE_EPILOG = f"""\
examples:
  {PROG} serve --ws :8765 myapp.tools:registry
  {PROG} serve --ws 127.0.0.1:0 --token s3cret myapp.tools:make_registry
  {PROG} serve --ws 0.0.0.0:8765 --token s3cret \\
      --allow-origin https://app.example.com myapp.tools:registry
  {PROG} inspect -- {PROG} serve --stdio myapp.tools:registry

The token may also come from ${TOKEN_ENV}. Stop the server with Ctrl-C."""

_INSPECT_DESCRIPTION = """\
Connect to a frame and print its instructions and tools, with each tool's
parameters (name, type, required or optional, default, description).

The frame is a ws:// (or wss://) URL, or a worker command given after '--',
which is started and stopped again (its stderr passes through)."""

_INSPECT_EPILOG = f"""\
examples:
  {PROG} inspect ws://127.0.0.1:8765 --token s3cret
  {PROG} inspect --json ws://127.0.0.1:8765 > context.json
  {PROG} inspect -- python worker.py
  {PROG} inspect -- {PROG} serve --stdio myapp.tools:registry

The token may also come from ${TOKEN_ENV}."""

_CALL_DESCRIPTION = """\
Call one tool of a frame and print its result as JSON.

The frame is a ws:// (or wss://) URL before TOOL, or a worker command given last,
after '--'. A tool error, a timeout, an unknown tool or an unreachable or refusing
frame exits with status 1 and one line on stderr."""

_CALL_EPILOG = f"""\
examples:
  {PROG} call ws://127.0.0.1:8765 add --args '{{"a": 2, "b": 3}}' --token s3cret
  {PROG} call search_notes --args '{{"query": "deploy"}}' -- python worker.py
  echo '{{"a": 1, "b": 2}}' | {PROG} call ws://127.0.0.1:8765 add --args -
  {PROG} call ws://127.0.0.1:8765 add --args @args.json

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


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


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


def _listen_address(text: str) -> tuple[str, int]:
    try:
        return parse_listen_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_client_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"bearer token for a ws:// frame that requires one (default: ${TOKEN_ENV})",
    )
    parser.add_argument(
        "--timeout",
        type=_positive_float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="how long to wait to connect, for the frame's context and for a tool's result "
        f"(default: {DEFAULT_TIMEOUT:g})",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``assistant-frames`` command (without the ``--`` part).

    The worker command of ``inspect`` and ``call`` (everything after ``--``) is split
    off by :func:`main` before parsing.
    """
    parser = _Parser(
        prog=PROG,
        description=_MAIN_DESCRIPTION,
        epilog=_MAIN_EPILOG,
        formatter_class=_FORMATTER,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"{PROG} {__version__} (Python {sys.version.split()[0]})",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log more (-v: info, -vv: debug); show the traceback of an unexpected error",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    verbose = _Parser(add_help=False)  # -v after the command works too
    verbose.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS,
        help="log more (-v: info, -vv: debug); show the traceback of an unexpected error",
    )

    serve = commands.add_parser(
        "serve",
        parents=[verbose],
        help="serve a registry or provider over stdio or WebSockets",
        description=_SERVE_DESCRIPTION,
        epilog=_SERVE_EPILOG,
        formatter_class=_FORMATTER,
    )
    serve.add_argument("target", metavar="MODULE:OBJECT", help="what to serve, e.g. app:registry")
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
    serve.add_argument(
        "--token",
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' (or ?access_token=TOKEN) from WebSocket "
        f"clients (default: ${TOKEN_ENV}; none if unset)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="allow browser pages from ORIGIN (repeatable); with any given, other origins get "
        "HTTP 403. Programs sending no Origin are always allowed",
    )
    serve.set_defaults(handler=_cmd_serve)

    inspect_ = commands.add_parser(
        "inspect",
        parents=[verbose],
        help="print a frame's instructions and tools",
        description=_INSPECT_DESCRIPTION,
        epilog=_INSPECT_EPILOG,
        formatter_class=_FORMATTER,
        usage=f"{PROG} inspect [-h] [--json] [--token TOKEN] [--timeout SECONDS]\n"
        f"{' ' * len(f'usage: {PROG} inspect ')}(URL | -- COMMAND [ARG ...])",
    )
    inspect_.add_argument(
        "target", metavar="URL", nargs="?", help="ws:// or wss:// URL of the frame"
    )
    inspect_.add_argument(
        "--json",
        action="store_true",
        help="print the context as JSON, in its wire form ({system, tools})",
    )
    _add_client_options(inspect_)
    inspect_.set_defaults(handler=_cmd_inspect)

    call = commands.add_parser(
        "call",
        parents=[verbose],
        help="call one tool of a frame and print the result as JSON",
        description=_CALL_DESCRIPTION,
        epilog=_CALL_EPILOG,
        formatter_class=_FORMATTER,
        usage=f"{PROG} call [-h] [--args JSON] [--token TOKEN] [--timeout SECONDS]\n"
        f"{' ' * len(f'usage: {PROG} call ')}(URL TOOL | TOOL -- COMMAND [ARG ...])",
    )
    call.add_argument("target", metavar="URL", nargs="?", help="ws:// or wss:// URL of the frame")
    call.add_argument("tool", metavar="TOOL", help="the name of the tool to call")
    call.add_argument(
        "--args",
        default="{}",
        metavar="JSON",
        help="the arguments as JSON (default: {}); '-' reads them from stdin, @FILE from FILE",
    )
    _add_client_options(call)
    call.set_defaults(handler=_cmd_call)

    demo = commands.add_parser(
        "demo",
        parents=[verbose],
        help="run the federation demo (three frames, three transports)",
        description=_DEMO_DESCRIPTION,
        epilog=_DEMO_EPILOG,
        formatter_class=_FORMATTER,
    )
    demo.add_argument(
        "--backend",
        choices=("asyncio", "trio"),
        default="asyncio",
        help="the anyio backend to run on (default: asyncio)",
    )
    demo.set_defaults(handler=_cmd_demo)
    return parser


# -- entry point -----------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    worker_command: list[str] | None = None
    if "--" in words:
        at = words.index("--")
        words, worker_command = words[:at], words[at + 1 :]
    parser = build_parser()
    try:
        options = parser.parse_args(words)
    except SystemExit as exc:  # --help, --version, or a usage error already reported
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    _configure_logging(options.verbose)
    if options.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    options.worker_command = worker_command
    try:
        handler: Callable[[argparse.Namespace], int] = options.handler
        if worker_command is not None and options.command not in ("inspect", "call"):
            raise _usage_error(f"'-- COMMAND' is for inspect and call, not {options.command}")
        return handler(options)
    except BaseException as exc:  # every failure becomes one line
        return _report(exc, verbose=options.verbose)


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LogFormatter(f"{PROG}: %(levelname)s: %(message)s"))
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(handler)
    root.setLevel(level)


class _LogFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        record.levelname = record.levelname.lower()
        return super().format(record)


def _leaf(exc: BaseException) -> BaseException:
    """The exception that matters inside (nested) exception groups from task groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = list(exc.exceptions)
        interrupts = [e for e in inner if isinstance(e, KeyboardInterrupt)]
        errors = [e for e in inner if isinstance(e, Exception)]  # not cancellations
        exc = (interrupts or errors or inner)[0]
    return exc


def _report(exc: BaseException, *, verbose: int) -> int:
    """Print ``exc`` as one line on stderr; return the exit status it calls for."""
    exc = _leaf(exc)
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else EXIT_FAILED
    if isinstance(exc, KeyboardInterrupt):
        _note("interrupted")
        return EXIT_INTERRUPTED
    if isinstance(exc, BrokenPipeError):  # e.g. `assistant-frames inspect ... | head`
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    code = EXIT_FAILED
    if isinstance(exc, CommandError):
        message, code = exc.message, exc.exit_code
    elif isinstance(exc, HandshakeRejected):
        message = str(exc)
        if exc.status == 401:
            message += " (give the right --token)"
    elif isinstance(exc, (ToolNotFoundError, ToolDisabledError, ToolArgumentsError)):
        message = exc.message
    elif isinstance(exc, ToolCallError):
        where = f'tool "{exc.tool_name}" failed: ' if exc.tool_name else "the tool failed: "
        message = where + exc.message
    elif isinstance(exc, AssistantFramesError):
        message = str(exc) or type(exc).__name__
    elif isinstance(exc, TimeoutError):
        message = f"timed out{': ' + str(exc) if str(exc) else ''}"
    elif isinstance(exc, OSError):
        message = exc.strerror or str(exc) or type(exc).__name__
        if exc.filename is not None:
            message = f"{exc.filename}: {message}"
    elif isinstance(exc, ValueError):
        message, code = str(exc), EXIT_USAGE
    else:
        message = f"unexpected {type(exc).__name__}: {exc}"
        if verbose:
            traceback.print_exception(exc, file=sys.stderr)
        else:
            message += " (run with -v for the traceback)"
    _error(_one_line(message))
    return code


def _one_line(message: str) -> str:
    """The first line of a message; a worker's stderr tail has passed through already."""
    lines = message.strip().splitlines() or ["(no message)"]
    first = lines[0].rstrip()
    if len(lines) > 1:
        trimmed = first.removesuffix("; the end of its stderr:")
        first = f"{trimmed} (its stderr is above)" if trimmed != first else first.rstrip(":")
    return first


def _error(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)


def _note(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"{PROG}: {message}", file=sys.stderr, flush=True)


# -- loading MODULE:OBJECT -----------------------------------------------------------------


def load_frame(spec: str) -> AssistantFrameProvider:
    """Import ``MODULE:OBJECT`` and return it as a frame to serve.

    ``OBJECT`` (a dotted path inside the module) is an :class:`AssistantFrameProvider`,
    any :class:`ModelContextProvider` (a registry...), which is then wrapped in one, or
    a zero-argument callable returning one of those. The current directory is put on
    ``sys.path`` first, as ``python -m`` does. Raises :class:`CommandError` (a usage
    error) when the object cannot be loaded; an async factory needs ``serve``, which
    awaits it.
    """
    made = _resolve(spec)
    if inspect.isawaitable(made):
        with contextlib.suppress(Exception):
            made.close()  # type: ignore[attr-defined]
        raise _usage_error(f"{spec} is an async factory; it needs a running event loop")
    return _as_frame(spec, made)


async def _load_frame_async(spec: str) -> AssistantFrameProvider:
    """Like :func:`load_frame`, awaiting an async factory."""
    made = _resolve(spec)
    if inspect.isawaitable(made):
        try:
            made = await made
        except Exception as exc:
            raise _usage_error(f"{spec}() failed: {type(exc).__name__}: {exc}") from None
    return _as_frame(spec, made)


def _resolve(spec: str) -> Any:
    """The object ``spec`` names, or what it returns when it is a factory."""
    obj = _import_object(spec)
    if _is_frame_like(obj):
        return obj
    if not callable(obj):
        raise _not_a_frame(spec, obj)
    return _call_factory(spec, obj)


def _import_object(spec: str) -> Any:
    module_name, sep, path = spec.partition(":")
    if not sep or not module_name or not path:
        raise _usage_error(f"expected MODULE:OBJECT, e.g. myapp.tools:registry, not {spec!r}")
    if module_name.endswith(".py") or os.sep in module_name:
        raise _usage_error(
            f"expected a module name, not a file: write {spec!r} as "
            f"{_module_from_path(module_name)}:{path} and run from its directory"
        )
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        # Python code printing at import time must not reach a --stdio channel.
        with contextlib.redirect_stdout(sys.stderr):
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            raise _usage_error(
                f"cannot import {spec}: no module named {exc.name!r} "
                f"(looked in {cwd} and the installed packages)"
            ) from None
        raise _usage_error(f"cannot import {spec}: {exc}") from None
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise _usage_error(
            f"cannot import {spec}: importing {module_name!r} raised {what}"
        ) from None
    obj: Any = module
    for part in path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise _usage_error(
                f"cannot load {spec}: module {module_name!r} has no attribute {path!r}"
            ) from None
    return obj


def _module_from_path(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _is_frame_like(obj: Any) -> bool:
    if isinstance(obj, type):
        return False  # a class is a factory, even though it has the provider methods
    return isinstance(obj, (AssistantFrameProvider, ModelContextProvider))


def _call_factory(spec: str, factory: Callable[[], Any]) -> Any:
    try:
        return factory()
    except TypeError as exc:
        if _needs_arguments(factory):
            raise _usage_error(f"{spec} is callable but needs arguments: {exc}") from None
        raise _usage_error(f"{spec}() failed: TypeError: {exc}") from None
    except Exception as exc:
        raise _usage_error(f"{spec}() failed: {type(exc).__name__}: {exc}") from None


def _needs_arguments(factory: Callable[..., Any]) -> bool:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return False
    try:
        signature.bind()
    except TypeError:
        return True
    return False


def _as_frame(spec: str, obj: Any) -> AssistantFrameProvider:
    if isinstance(obj, AssistantFrameProvider):
        return obj
    if _is_frame_like(obj):
        return AssistantFrameProvider(obj)
    raise _not_a_frame(spec, obj)


def _not_a_frame(spec: str, obj: Any) -> CommandError:
    return _usage_error(
        f"{spec} is a {type(obj).__name__}, not a ModelContextRegistry, ModelContextProvider "
        "or AssistantFrameProvider (or a zero-argument callable returning one)"
    )


# -- serve -------------------------------------------------------------------------------


def _cmd_serve(options: argparse.Namespace) -> int:
    token: str | None = options.token or os.environ.get(TOKEN_ENV) or None
    if options.stdio and options.allow_origin:
        raise _usage_error("--allow-origin is for --ws")
    if options.stdio and options.token:
        raise _usage_error("--token is for --ws (a --stdio worker talks only to its parent)")
    if options.stdio:
        anyio.run(_serve_stdio, options.target)
    else:
        host, port = options.ws
        anyio.run(_serve_ws, options.target, host, port, token, options.allow_origin)
    return EXIT_OK


async def _serve_stdio(spec: str) -> None:
    frame = await _load_frame_async(spec)
    from .transports.stdio import serve_stdio

    await serve_stdio(frame)


async def _serve_ws(
    spec: str, host: str, port: int, token: str | None, origins: list[str] | None
) -> None:
    frame = await _load_frame_async(spec)
    websocket_server = _websocket_module().websocket_server
    with _stop_signals() as stop:
        async with websocket_server(
            frame.serve, host, port, token=token, allowed_origins=origins
        ) as server:
            count = len(frame.get_model_context().tools)
            auth = "a bearer token is required" if token else "no token required"
            _note(
                f"serving {spec} ({count} tool{'s' if count != 1 else ''}) on {server.url} "
                f"({auth}); Ctrl-C stops"
            )
            if not token and host not in ("127.0.0.1", "::1", "localhost"):
                _note(
                    f"warning: listening on {host} without --token: whoever reaches this port "
                    "can call these tools"
                )
            async for signum in stop:
                _note(f"{signal.Signals(signum).name}: stopping")
                return


def _stop_signals() -> contextlib.AbstractContextManager[AsyncIterator[int]]:
    """SIGTERM as an async iterator, so that a stopped server closes its connections."""
    if sys.platform == "win32":  # pragma: no cover - no signal receivers there
        return contextlib.nullcontext(_forever())
    return anyio.open_signal_receiver(signal.SIGTERM)


async def _forever() -> AsyncIterator[int]:  # pragma: no cover - Windows
    await anyio.sleep_forever()
    yield 0


def _websocket_module() -> Any:
    try:
        from .transports import websocket
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    return websocket


# -- connecting to a frame -----------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    url: str | None = None
    command: tuple[str, ...] | None = None

    def describe(self) -> str:
        if self.url is not None:
            return self.url
        return f"worker `{shlex.join(self.command or ())}`"


def _target(options: argparse.Namespace) -> _Target:
    command = options.worker_command
    if command is not None:
        if options.target is not None:
            raise _usage_error(
                f"give the frame once: a URL ({options.target}) or '-- COMMAND', not both"
            )
        if not command:
            raise _usage_error("nothing after '--': give the worker command to run")
        return _Target(command=tuple(command))
    url = options.target
    if url is None:
        raise _usage_error("give the frame: a ws:// URL, or '-- COMMAND ...' to start a worker")
    if not url.startswith(("ws://", "wss://")):
        raise _usage_error(
            f"the frame must be a ws:// or wss:// URL, or '-- COMMAND ...' to start a worker; "
            f"not {url!r}"
        )
    return _Target(url=url)


@contextlib.asynccontextmanager
async def _connect(
    target: _Target, *, token: str | None, timeout: float
) -> AsyncIterator[tuple[AssistantFrameHost, str]]:
    """A host connected to ``target`` and the frame's description (with a pid for workers)."""
    if target.url is not None:
        connect_websocket = _websocket_module().connect_websocket
        async with (
            connect_websocket(target.url, token=token, open_timeout=timeout) as transport,
            AssistantFrameHost(transport, timeout=timeout, name=target.url) as host,
        ):
            yield host, target.url
        return
    from .transports.stdio import spawn_worker

    command = list(target.command or ())
    async with contextlib.AsyncExitStack() as stack:
        try:
            transport = await stack.enter_async_context(
                spawn_worker(command, grace_period=min(timeout, 2.0))
            )
        except OSError as exc:
            raise CommandError(
                f"cannot start the worker {shlex.join(command)}: {exc.strerror or exc}"
            ) from None
        host = await stack.enter_async_context(
            AssistantFrameHost(transport, timeout=timeout, name="worker")
        )
        yield host, f"worker pid {transport.pid}: {shlex.join(command)}"


async def _context_of(host: AssistantFrameHost, target: _Target, timeout: float) -> ModelContext:
    try:
        return await host.wait_for_context(timeout)
    except TimeoutError:
        raise CommandError(
            f"{target.describe()} sent no model context within {timeout:g} s "
            "(is it an assistant-frames frame?)"
        ) from None


def _client_token(options: argparse.Namespace) -> str | None:
    token: str | None = options.token or os.environ.get(TOKEN_ENV) or None
    return token


# -- inspect -------------------------------------------------------------------------------


def _cmd_inspect(options: argparse.Namespace) -> int:
    target = _target(options)
    result: list[str] = []

    async def run() -> None:
        async with _connect(target, token=_client_token(options), timeout=options.timeout) as (
            host,
            described,
        ):
            context = await _context_of(host, target, options.timeout)
            if options.json:
                from .frames import protocol

                wire = protocol.serialize_context(context)
                result.append(json.dumps(wire, indent=2, ensure_ascii=False))
            else:
                width = shutil.get_terminal_size((100, 24)).columns
                result.append(render_context(context, title=described, width=width))

    anyio.run(run)
    print(result[0])
    return EXIT_OK


def render_context(context: ModelContext, *, title: str | None = None, width: int = 100) -> str:
    """A model context as text for a terminal: its instructions, then each tool with a
    table of its parameters (name, type, required/optional, default, description)."""
    lines: list[str] = []
    if title:
        lines += [f"Frame: {title}", ""]
    lines.append("Instructions:")
    if context.system:
        for paragraph in context.system.split("\n"):
            lines.append(_wrap(paragraph, width, "  ") if paragraph.strip() else "")
    else:
        lines.append("  (none)")
    count = len(context.tools)
    lines += ["", f"Tools ({count}):" if count else "Tools: (none)"]
    for name, tool in context.tools.items():
        flags = []
        if tool.disabled:
            flags.append("disabled")
        if tool.type:
            flags.append(f"type: {tool.type}")
        lines.append("")
        lines.append(f"  {name}" + (f"  [{', '.join(flags)}]" if flags else ""))
        for paragraph in (tool.description or "(no description)").strip().split("\n"):
            lines.append(_wrap(paragraph, width, "      ") if paragraph.strip() else "")
        rows = parameter_rows(tool.parameters)
        if rows:
            lines.append("")
            table = [["PARAMETER", "TYPE", "REQUIRED", "DEFAULT", "DESCRIPTION"], *rows]
            lines += format_table(table, indent=6, width=width).splitlines()
        elif _accepts_anything(tool.parameters):
            lines.append("      parameters: any JSON value")
        else:
            lines.append("      no parameters")
    return "\n".join(lines)


def _wrap(text: str, width: int, indent: str) -> str:
    return textwrap.fill(
        text.strip(),
        width=max(width - 1, len(indent) + 30),
        initial_indent=indent,
        subsequent_indent=indent,
        break_on_hyphens=False,
    )


def _accepts_anything(schema: Mapping[str, Any]) -> bool:
    return not schema or (schema.get("type") != "object" and "properties" not in schema)


def parameter_rows(schema: Mapping[str, Any]) -> list[list[str]]:
    """One row per top-level parameter of a JSON Schema object: ``[name, type,
    "required"/"optional", default, description]`` (``-`` when there is no default)."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    rows = []
    for name, spec in properties.items():
        spec = spec if isinstance(spec, Mapping) else {}
        default = _json_text(spec["default"]) if "default" in spec else "-"
        description = spec.get("description")
        rows.append(
            [
                str(name),
                describe_type(spec),
                "required" if name in required_names else "optional",
                default,
                description if isinstance(description, str) else "",
            ]
        )
    return rows


def describe_type(schema: Any) -> str:
    """A short, readable type for a JSON Schema: ``integer``, ``string | null``,
    ``array of string``, ``"a" | "b"``, ``string (date-time)``..."""
    if not isinstance(schema, Mapping):
        return "any" if schema is True or schema == {} else "?"
    if "const" in schema:
        return _json_text(schema["const"])
    if isinstance(schema.get("enum"), list):
        return " | ".join(_json_text(value) for value in schema["enum"])
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return " | ".join(dict.fromkeys(describe_type(option) for option in options))
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        return describe_type(schema["allOf"][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(describe_type({**schema, "type": one}) for one in kind)
    if kind == "array":
        items = schema.get("items")
        return f"array of {describe_type(items)}" if isinstance(items, Mapping) else "array"
    if kind == "string" and isinstance(schema.get("format"), str):
        return f"string ({schema['format']})"
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    return "any"


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def format_table(
    rows: Sequence[Sequence[str]], *, indent: int = 2, width: int | None = None
) -> str:
    """Left-aligned columns separated by two spaces; the last column is wrapped to
    ``width`` (if given) under itself. The first row is usually a header."""
    if not rows:
        return ""
    columns = max(len(row) for row in rows)
    padded = [[*row, *([""] * (columns - len(row)))] for row in rows]
    widths = [max(len(row[i]) for row in padded) for i in range(columns - 1)]
    lead = " " * indent
    start = indent + sum(w + 2 for w in widths)
    room = None if width is None else max(width - 1 - start, 24)
    lines = []
    for row in padded:
        head = lead + "".join(cell.ljust(w + 2) for cell, w in zip(row, widths, strict=False))
        last = row[-1]
        if room is None or len(last) <= room:
            lines.append((head + last).rstrip())
            continue
        wrapped = textwrap.wrap(last, room, break_on_hyphens=False) or [""]
        lines.append((head + wrapped[0]).rstrip())
        lines += [" " * start + more for more in wrapped[1:]]
    return "\n".join(lines)


# -- call ----------------------------------------------------------------------------------


def _parse_arguments(text: str) -> Any:
    source = "--args"
    if text == "-":
        text, source = sys.stdin.read(), "--args - (stdin)"
    elif text.startswith("@"):
        path = text[1:]
        try:
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except OSError as exc:
            raise _usage_error(f"cannot read --args {text}: {exc.strerror or exc}") from None
        source = f"--args {text}"
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _usage_error(f"{source} is not valid JSON: {exc}") from None


def _cmd_call(options: argparse.Namespace) -> int:
    target = _target(options)
    arguments = _parse_arguments(options.args)
    name: str = options.tool
    result: list[Any] = []

    async def run() -> None:
        async with _connect(target, token=_client_token(options), timeout=options.timeout) as (
            host,
            _,
        ):
            context = await _context_of(host, target, options.timeout)
            if name not in context.tools:
                raise CommandError(_not_found(name, list(context.tools)))
            result.append(await host.call_tool(name, arguments, timeout=options.timeout))

    anyio.run(run)
    print(json.dumps(result[0], indent=2, ensure_ascii=False))
    return EXIT_OK


def _not_found(name: str, available: list[str]) -> str:
    message = f'Tool "{name}" not found'
    close = difflib.get_close_matches(name, available, n=1)
    if close:
        return f'{message}; did you mean "{close[0]}"?'
    if not available:
        return f"{message}; the frame has no tools"
    shown = ", ".join(available[:10]) + (", ..." if len(available) > 10 else "")
    return f"{message}; the frame has: {shown}"


# -- demo ----------------------------------------------------------------------------------


def _cmd_demo(options: argparse.Namespace) -> int:
    if options.backend == "trio":
        try:
            import trio  # noqa: F401
        except ImportError:
            raise _usage_error(
                "--backend trio needs the 'trio' package: pip install trio"
            ) from None
    _websocket_module()  # a clear error up front if websockets is missing
    from .demo import run_demo

    anyio.run(run_demo, backend=options.backend)
    return EXIT_OK
