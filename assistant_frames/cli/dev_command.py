"""``assistant-frames dev``: a federation of frames and MCP servers in one local web page.

Each ``TARGET`` is what :func:`assistant_frames.connect` takes, as ``inspect`` takes it
(a ``MODULE:OBJECT`` registry served in this process, a worker script or command, a
``ws://``, ``http(s)://`` or ``nats://`` URL), optionally named ``NAME=TARGET``; ``--mcp``
adds an MCP server given as a command, and everything after ``--`` is one more worker.
They join one :class:`~assistant_frames.Federation` and :class:`~assistant_frames.dev.DevPage`
shows it: the page's URL (loopback, its token in the fragment) goes to stdout.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import webbrowser
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio

from ..errors import AssistantFramesError
from .arguments import add_command, add_page_address, add_timeout, at_least_one, positive_seconds
from .common import EXIT_OK, LOOPBACK, PROG, TOKEN_ENV, CommandError, note, usage_error
from .loading import load_frame_async
from .serve_command import _stop_signals

if TYPE_CHECKING:
    from ..apps import LinkPolicy
    from ..dev import DevPage
    from ..registry import ModelContext

__all__ = [
    "DevMember",
    "Preview",
    "add_dev_parser",
    "cmd_dev",
    "default_name",
    "parse_dev_members",
    "run_dev",
]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
_NAMED = re.compile(r"([A-Za-z0-9][A-Za-z0-9_-]{0,31})=(.*)", re.DOTALL)
_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")
_URLS = ("ws://", "wss://", "nats://", "tls://", "http://", "https://")
_RUNNERS = {"python", "python3", "node", "deno", "bun", "uv", "uvx", "npx", "pnpm", "run", "-m"}

_DESCRIPTION = """\
Open one local web page that shows a federation of frames and MCP servers, live:
each member and its state (connecting, connected, reconnecting, failed and why),
the merged context (instructions per member and merged; every tool with its
description, JSON Schema, annotations, visibility and owner), a form per tool
generated from its schema (or raw JSON) to call it, with its progress, logs,
result or typed error streaming in and a Cancel button, and the model's view: the
tools as OpenAI, Anthropic and MCP tool definitions.

Each TARGET is what connect() takes: MODULE:OBJECT (a registry served in this
process), a worker script or command (quoted as one argument), a ws://, wss:// or
nats:// URL, or an http(s):// MCP server. NAME=TARGET names it (its tools are
called NAME_tool); the default name comes from the target (calc:registry is calc,
worker.py is worker). --mcp adds an MCP server started by a command; everything
after '--' is one more worker. A member that drops is reconnected (a worker
started again).

The page listens on 127.0.0.1 (any free port unless --port); its URL, with a
random access token in its fragment, is printed on stdout. Stop with Ctrl-C."""

_EPILOG = f"""\
examples:
  {PROG} dev myapp.tools:registry
  {PROG} dev calc=myapp.tools:registry notes_worker.py search=ws://127.0.0.1:8765
  {PROG} dev --mcp time='uvx mcp-server-time' http://127.0.0.1:8000/mcp
  {PROG} dev --port 8800 myapp.tools:registry -- python worker.py

--token NAME=TOKEN is the bearer token of the member NAME (a ws:// frame or an
http(s):// MCP server); ${TOKEN_ENV} is not used, so that no member's token goes
to another."""


@dataclass(frozen=True)
class DevMember:
    """One member of ``dev``: its name, what it is as given, and whether it is an MCP
    server started by a command (``--mcp``)."""

    name: str
    target: str | tuple[str, ...]
    mcp: bool = False

    @property
    def spec(self) -> str | None:
        """The ``MODULE:OBJECT`` to load, if the target is one."""
        target = self.target
        if isinstance(target, str) and not self.mcp and _SPEC.fullmatch(target):
            return target
        return None


@dataclass(frozen=True)
class Preview:
    """What ``apps preview`` asks of the dev page: the server as it is named, the views'
    link policy, and the UI tool to call once the page is up (with its arguments)."""

    described: str
    links: LinkPolicy
    call: str | None = None
    arguments: dict[str, Any] | None = None

    def check(self, context: ModelContext) -> None:
        """Refuse, before the page is announced, a ``--call`` of no UI tool of the
        server that the model may call."""
        if self.call is None:
            return
        ui_tools = sorted(
            name
            for name, tool in context.tools.items()
            if tool.ui is not None and "model" in tool.ui.visibility
        )
        if self.call not in ui_tools:
            shown = ", ".join(ui_tools) or "none"
            raise usage_error(
                f"--call {self.call}: not a UI tool of the server (its UI tools: {shown})"
            )

    async def run_call(self, page: DevPage) -> None:
        """The model's call: its view shows in every page (a failure is said)."""
        assert self.call is not None
        try:
            await page.call_tool(self.call, self.arguments)
        except Exception as exc:
            note(f"--call {self.call} failed: {exc}")
        else:
            note(f"--call {self.call}: the result was sent to its view")


def _clean(text: str) -> str:
    """``text`` made a member name: letters, digits, ``_`` and ``-``, up to 32."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-_")
    return name[:32].rstrip("-_") or "frame"


def default_name(target: str | tuple[str, ...] | list[str]) -> str:
    """A short member name for ``target``: ``myapp.tools:registry`` is ``tools``,
    ``python notes_worker.py`` is ``notes_worker``, ``uvx mcp-server-time`` is
    ``mcp-server-time``, ``ws://127.0.0.1:8765/search`` is ``search`` (without a path,
    the host's first label, or ``ws-8765`` on loopback), ``nats://host:4222/calc`` is
    ``calc``."""
    if not isinstance(target, str):
        words = [str(word) for word in target]
    elif target.startswith(_URLS):
        parts = urlsplit(target)
        segments = [s for s in parts.path.split("/") if s and s != "mcp"]
        if segments:
            return _clean(segments[-1])
        host = parts.hostname or ""
        if host and host not in LOOPBACK and not host.replace(".", "").isdigit():
            return _clean(host.split(".")[0])
        scheme = parts.scheme.replace("wss", "ws").replace("https", "http")
        scheme = "mcp" if scheme == "http" else scheme
        return _clean(f"{scheme}-{parts.port}" if parts.port else scheme)
    elif _SPEC.fullmatch(target):
        module = target.partition(":")[0]
        return _clean(module.rsplit(".", 1)[-1])
    else:
        try:
            words = shlex.split(target)
        except ValueError:
            words = target.split()
    for word in words:  # a script names the member
        base = os.path.basename(word)
        stem, ext = os.path.splitext(base)
        if ext in (".py", ".js", ".mjs", ".ts") and stem:
            return _clean(stem)
    for word in words:  # else the program, past the runners and options
        base = os.path.basename(word)
        if base.startswith("-") or base.split(".")[0].rstrip("0123456789.") in _RUNNERS:
            continue
        if "@" in base[1:]:  # an npm package@version
            base = base[: base.index("@", 1)]
        return _clean(base.rsplit("/", 1)[-1])
    return "frame"


def _split_named(text: str) -> tuple[str | None, str]:
    """``NAME=TARGET`` -> ``(NAME, TARGET)``; a target alone -> ``(None, TARGET)``."""
    if not text.startswith(_URLS):
        match = _NAMED.fullmatch(text)
        if match:
            return match.group(1), match.group(2).strip()
    return None, text.strip()


def parse_dev_members(
    targets: list[str], mcp: list[str], command: list[str] | None
) -> list[DevMember]:
    """The members ``dev`` was given, named (derived names made unique with ``-2``...);
    a usage error for an empty target or a name given twice."""
    given: list[tuple[str | None, str | tuple[str, ...], bool]] = []
    for text in targets:
        name, target = _split_named(text)
        given.append((name, target, False))
    for text in mcp:
        name, target = _split_named(text)
        given.append((name, target, True))
    if command is not None:
        if not command:
            raise usage_error("nothing after '--': give the worker command to run")
        given.append((None, tuple(command), False))
    if not given:
        raise usage_error(
            "give at least one TARGET: MODULE:OBJECT, a worker script or command, a ws://, "
            "nats:// or http(s):// URL, --mcp COMMAND, or '-- COMMAND ...'"
        )
    explicit = [name for name, _, _ in given if name is not None]
    twice = sorted({name for name in explicit if explicit.count(name) > 1})
    if twice:
        raise usage_error(f"each name once: {', '.join(twice)} given twice")
    taken = set(explicit)
    members: list[DevMember] = []
    for given_name, what, is_mcp in given:
        if not what:
            raise usage_error(f"{given_name}= names nothing: give its target after '='")
        name = given_name
        if name is None:
            base = default_name(what)
            name, number = base, 1
            while name in taken:
                number += 1
                name = f"{base[:29]}-{number}"
            taken.add(name)
        members.append(DevMember(name, what, is_mcp))
    return members


def _tokens(texts: list[str], members: list[DevMember]) -> dict[str, str]:
    tokens: dict[str, str] = {}
    names = {member.name for member in members}
    for text in texts:
        name, sep, token = text.partition("=")
        if not sep or not token or not _NAME.fullmatch(name):
            raise usage_error(f"--token takes NAME=TOKEN, not {text!r}")
        if name not in names:
            raise usage_error(f"--token {name}=...: no member is named {name!r}")
        tokens[name] = token
    return tokens


def cmd_dev(options: argparse.Namespace) -> int:
    """Run ``assistant-frames dev``: serve the page until Ctrl-C (or SIGTERM)."""
    members = parse_dev_members(options.targets, options.mcp or [], options.worker_command)
    tokens = _tokens(options.token or [], members)
    run_dev(
        members,
        tokens,
        host=options.host,
        port=options.port,
        title=options.title,
        connect_timeout=options.timeout,
        call_timeout=options.call_timeout,
        max_attempts=options.max_attempts,
        open_browser=options.open,
    )
    return EXIT_OK


def run_dev(
    members: list[DevMember],
    tokens: Mapping[str, str],
    *,
    host: str,
    port: int,
    title: str,
    connect_timeout: float,
    call_timeout: float,
    max_attempts: int | None = None,
    open_browser: bool = False,
    preview: Preview | None = None,
) -> None:
    """Serve the dev page of a federation of ``members`` until Ctrl-C (or SIGTERM).

    ``preview`` makes it ``apps preview``: each member is waited for (a failure to
    connect stops everything), its tools keep their own names, its views' links follow
    the preview's policy, and its call is made once the URL is out."""
    if host not in LOOPBACK:
        raise usage_error(f"the dev page listens on loopback only, not {host!r}")
    try:
        from ..dev import DevPage
        from ..federation import Federation
    except ImportError as exc:  # the websockets extra is missing
        raise CommandError(str(exc)) from None

    async def run() -> None:
        targets: dict[str, Any] = {}
        for member in members:  # a registry that cannot be loaded stops everything first
            spec = member.spec
            targets[member.name] = await load_frame_async(spec) if spec else member.target
        federation = Federation(
            timeout=call_timeout, connect_timeout=connect_timeout, max_attempts=max_attempts
        )
        page = DevPage(
            federation,
            host=host,
            port=port,
            title=title,
            link_policy=preview.links if preview else None,
        )
        async with federation, page, anyio.create_task_group() as tasks:
            for member in members:
                spec = member.spec
                described = f"{spec} in this process" if spec else None
                try:
                    await page.add(
                        member.name,
                        targets[member.name],
                        mcp=True if member.mcp else None,
                        token=tokens.get(member.name),
                        described=described,
                        namespaced=preview is None,
                        wait=preview is not None,
                    )
                except ImportError as exc:  # the mcp or nats extra is missing
                    raise CommandError(f"{member.name}: {exc}") from None
                except (TypeError, ValueError) as exc:
                    raise usage_error(f"{member.name}: {exc}") from None
                except AssistantFramesError as exc:  # preview: it did not connect
                    raise CommandError(str(exc)) from None
                note(f"{member.name}: {described or federation.status(member.name).target}")
            if preview is not None:
                preview.check(federation.get_model_context())
                note(f"previewing {preview.described}; Ctrl-C stops")
            else:
                note("serving the dev page; Ctrl-C stops")
            print(page.url, flush=True)
            if open_browser:
                await anyio.to_thread.run_sync(webbrowser.open, page.url)
            if preview is not None and preview.call is not None:
                tasks.start_soon(preview.run_call, page)
            with _stop_signals() as stop:
                async for signum in stop:
                    note(f"{signal.Signals(signum).name}: stopping")
                    tasks.cancel_scope.cancel()
                    return

    anyio.run(run)


def add_dev_parser(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    """Add the ``dev`` command to ``commands`` (the parser's subparsers)."""
    dev = add_command(
        commands,
        "dev",
        parents,
        help="show frames and MCP servers, federated, in a local web page; call their tools",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        usage=(
            "[-h] [--mcp [NAME=]COMMAND] [--port PORT] [--open] [options]",
            "[[NAME=]TARGET ...] [-- COMMAND [ARG ...]]",
        ),
    )
    dev.add_argument(
        "targets",
        metavar="[NAME=]TARGET",
        nargs="*",
        help="a member: MODULE:OBJECT, a worker script or command, or a ws://, wss://, "
        "nats:// or http(s):// URL",
    )
    dev.add_argument(
        "--mcp",
        action="append",
        metavar="[NAME=]COMMAND",
        help="a member that is an MCP server started by COMMAND (repeatable; needs the 'mcp' "
        "extra)",
    )
    add_page_address(dev, "the page's port on 127.0.0.1 (default: 0, any free port)")
    dev.add_argument("--open", action="store_true", help="open the page in a web browser")
    dev.add_argument(
        "--token",
        action="append",
        metavar="NAME=TOKEN",
        help="the bearer token of the member NAME (repeatable)",
    )
    add_timeout(dev, "how long each connection attempt may take")
    dev.add_argument(
        "--call-timeout",
        type=positive_seconds,
        default=300.0,
        metavar="SECONDS",
        help="how long a call from the page may take (default: 300)",
    )
    dev.add_argument(
        "--max-attempts",
        type=at_least_one,
        default=None,
        metavar="N",
        help="give a member up (failed) after N failed connection attempts in a row "
        "(default: never; retried with backoff up to 5 s)",
    )
    dev.add_argument("--title", default="assistant-frames dev", help="the page's title")
    dev.set_defaults(handler=cmd_dev)
