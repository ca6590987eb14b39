"""The host side of the ``AUI_*`` widget wire as a sans-I/O state machine.

:class:`WidgetHostMachine` holds what a host knows about one widget (its globals and what
the widget has of them, its calls in flight, how many malformed messages it sent) and
applies the wire's rules: what is malformed, which method calls are refused without
running (unknown, not granted by the manifest, bad arguments) and with which message,
what each method's arguments must be, what a legacy message carries, which globals to
push when the widget is ready and after a change, and when the host may read on (fewer
than ``max_calls`` calls in flight). It never awaits and calls nothing back: feed it what
arrived (:meth:`WidgetHostMachine.receive`) and act on the event it returns; its
commands return the messages to send. :class:`~assistant_frames.widgets.WidgetHost` is
its anyio driver.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeAlias

from . import protocol
from .manifest import WidgetManifest
from .protocol import CallId, MethodCall

if TYPE_CHECKING:
    from .store import WidgetState

__all__ = [
    "DISPLAY_MODES",
    "CallTool",
    "DisplayMode",
    "HostMethod",
    "Ignored",
    "Legacy",
    "MethodRequest",
    "MethodRequested",
    "NotifyIntrinsicHeight",
    "OpenExternal",
    "Ready",
    "Refused",
    "RequestClose",
    "RequestDisplayMode",
    "RequestModal",
    "SendFollowUpMessage",
    "SetWidgetState",
    "WidgetEvent",
    "WidgetHostMachine",
]

DisplayMode: TypeAlias = Literal["inline", "fullscreen", "pip"]
#: The display modes a widget may ask for.
DISPLAY_MODES: Final[tuple[DisplayMode, ...]] = ("inline", "fullscreen", "pip")


# -- the requests: one per method, its arguments checked -----------------------------------------


@dataclass(frozen=True, slots=True)
class CallTool:
    """``callTool(name, args)``: ``args`` an object (``{}`` when the widget sent none)."""

    method: ClassVar[str] = "callTool"
    name: str
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SetWidgetState:
    """``setWidgetState(state)``: an object or ``None`` (its size is the keeper's check)."""

    method: ClassVar[str] = "setWidgetState"
    state: WidgetState


@dataclass(frozen=True, slots=True)
class SendFollowUpMessage:
    """``sendFollowUpMessage({prompt})``: the whole object, its ``prompt`` a string."""

    method: ClassVar[str] = "sendFollowUpMessage"
    follow_up: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RequestDisplayMode:
    """``requestDisplayMode({mode})``: one of :data:`DISPLAY_MODES`."""

    method: ClassVar[str] = "requestDisplayMode"
    mode: DisplayMode


@dataclass(frozen=True, slots=True)
class RequestModal:
    """``requestModal(options)``: an object (``{}`` when the widget sent none)."""

    method: ClassVar[str] = "requestModal"
    options: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RequestClose:
    """``requestClose()``."""

    method: ClassVar[str] = "requestClose"


@dataclass(frozen=True, slots=True)
class OpenExternal:
    """``openExternal({href})``: an ``http(s)`` URL."""

    method: ClassVar[str] = "openExternal"
    href: str


@dataclass(frozen=True, slots=True)
class NotifyIntrinsicHeight:
    """``notifyIntrinsicHeight(height)``: a number."""

    method: ClassVar[str] = "notifyIntrinsicHeight"
    height: int | float


@dataclass(frozen=True, slots=True)
class HostMethod:
    """A method of the host's own (``extra_methods``), with the widget's args unchecked."""

    method: str
    args: tuple[Any, ...]


MethodRequest: TypeAlias = (
    CallTool
    | SetWidgetState
    | SendFollowUpMessage
    | RequestDisplayMode
    | RequestModal
    | RequestClose
    | OpenExternal
    | NotifyIntrinsicHeight
    | HostMethod
)


# -- the events ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ignored:
    """A malformed message, dropped: ``reason`` says why; ``first`` is True for the
    widget's first one (log it louder)."""

    reason: str
    first: bool


@dataclass(frozen=True, slots=True)
class Refused:
    """A call answered without running (unknown method, not granted, bad arguments):
    send ``reply``, its error ``AUI_METHOD_RESPONSE``. It holds no place in flight."""

    reply: dict[str, Any]


@dataclass(frozen=True, slots=True)
class MethodRequested:
    """A call to run: ``request`` holds its checked arguments. It holds a place in flight
    until :meth:`WidgetHostMachine.finished`; answer it with
    :meth:`~WidgetHostMachine.answer` or :meth:`~WidgetHostMachine.fail`."""

    id: CallId
    method: str
    request: MethodRequest


@dataclass(frozen=True, slots=True)
class Ready:
    """The widget said ``ready``: send ``set_globals`` (every global) first."""

    set_globals: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Legacy:
    """A legacy ``resize`` (``payload`` its numeric height), ``action``, ``addResult`` or
    ``error`` message."""

    kind: Literal["resize", "action", "addResult", "error"]
    payload: Any


WidgetEvent: TypeAlias = Ignored | Refused | MethodRequested | Ready | Legacy


class _BadCall(Exception):
    """A call refused with this message (never leaves the machine)."""


class WidgetHostMachine:
    """The rules of one host-to-widget connection, without I/O.

    ``manifest`` grants methods; ``extra_methods`` names the host's own methods beyond
    the plan's (a live collection: the driver passes its handlers' dict). ``globals`` are
    the initial globals; ``full_updates`` pushes them all on each change instead of the
    changed ones. ``max_calls`` bounds the calls in flight (:attr:`may_read`).
    """

    __slots__ = (
        "_calls",
        "_globals",
        "_in_flight",
        "_sent",
        "extra_methods",
        "full_updates",
        "ignored",
        "manifest",
        "max_calls",
    )

    def __init__(
        self,
        *,
        manifest: WidgetManifest | None = None,
        extra_methods: Collection[str] = (),
        globals: Mapping[str, Any] | None = None,  # the plan's own name
        full_updates: bool = False,
        max_calls: int = 64,
    ) -> None:
        if max_calls < 1:
            raise ValueError(f"max_calls must be at least 1, not {max_calls!r}")
        self.manifest = manifest or WidgetManifest()
        self.extra_methods = extra_methods
        self.full_updates = full_updates
        self.max_calls = max_calls
        #: How many malformed messages were ignored.
        self.ignored = 0
        self._globals: dict[str, Any] = dict(globals or {})
        self._sent: dict[str, Any] | None = None  # what the widget has, once it is ready
        self._calls: Counter[CallId] = Counter()  # in flight, by id (ids may repeat)
        self._in_flight = 0

    # -- what the driver asks ----------------------------------------------------------------

    @property
    def globals(self) -> dict[str, Any]:
        """The globals as the host has them now (a copy)."""
        return dict(self._globals)

    @property
    def ready(self) -> bool:
        """Whether the widget has said ``ready`` (and got the globals)."""
        return self._sent is not None

    @property
    def in_flight(self) -> int:
        """How many calls run (from :class:`MethodRequested` to :meth:`finished`)."""
        return self._in_flight

    @property
    def may_read(self) -> bool:
        """Whether the host may read the next message: fewer than ``max_calls`` in flight."""
        return self._in_flight < self.max_calls

    # -- receiving ---------------------------------------------------------------------------

    def receive(self, raw: object) -> WidgetEvent:
        """Apply one received message; the event for the driver. Never raises."""
        message = protocol.decode(raw)
        if isinstance(message, str):
            return self._ignore(message)
        if isinstance(message, MethodCall):
            try:
                request = self._check(message)
            except _BadCall as exc:
                return Refused(protocol.encode_error(message.id, str(exc)))
            self._calls[message.id] += 1
            self._in_flight += 1
            return MethodRequested(message.id, message.method, request)
        kind, payload = message.type, message.payload
        if kind == "ready":
            return Ready(self._push_all())
        if kind == "resize":
            if isinstance(payload, bool) or not isinstance(payload, int | float):
                return self._ignore("resize without a numeric height")
            return Legacy("resize", payload)
        return Legacy(kind, payload)

    def _ignore(self, reason: str) -> Ignored:
        self.ignored += 1
        return Ignored(reason, self.ignored == 1)

    def _check(self, call: MethodCall) -> MethodRequest:
        """The request ``call`` makes, or :class:`_BadCall` saying why it is refused."""
        method, args = call.method, call.args
        if method not in protocol.METHODS and method not in self.extra_methods:
            raise _BadCall(f"Unknown method: {method}")
        if not self.manifest.grants(method):
            raise _BadCall(f"Method not granted to this widget by its manifest: {method}")
        if method in self.extra_methods:
            return HostMethod(method, args)
        if method == "callTool":
            name = _arg(args, 0, str, "callTool(name, args): name")
            tool_args = args[1] if len(args) > 1 and args[1] is not None else {}
            if not isinstance(tool_args, dict):
                raise _BadCall("callTool(name, args): args must be an object")
            return CallTool(name, tool_args)
        if method == "setWidgetState":
            state = args[0] if args else None
            if state is not None and not isinstance(state, dict):
                raise _BadCall("setWidgetState(state): state must be an object or null")
            return SetWidgetState(state)
        if method == "sendFollowUpMessage":
            follow_up = _arg(args, 0, dict, "sendFollowUpMessage({prompt})")
            if not isinstance(follow_up.get("prompt"), str):
                raise _BadCall("sendFollowUpMessage({prompt}): prompt must be a string")
            return SendFollowUpMessage(follow_up)
        if method == "requestDisplayMode":
            mode = _arg(args, 0, dict, "requestDisplayMode({mode})").get("mode")
            if not isinstance(mode, str) or mode not in DISPLAY_MODES:
                raise _BadCall(f"requestDisplayMode: unknown mode {mode!r}")
            return RequestDisplayMode(mode)
        if method == "requestModal":
            options = args[0] if args and args[0] is not None else {}
            if not isinstance(options, dict):
                raise _BadCall("requestModal(options): options must be an object")
            return RequestModal(options)
        if method == "requestClose":
            return RequestClose()
        if method == "openExternal":
            href = _arg(args, 0, dict, "openExternal({href})").get("href")
            if not isinstance(href, str) or not href.startswith(("https://", "http://")):
                raise _BadCall(f"openExternal: not an http(s) URL: {href!r}")
            return OpenExternal(href)
        height = _arg(args, 0, (int, float), "notifyIntrinsicHeight(height)")
        return NotifyIntrinsicHeight(height)

    # -- commands ----------------------------------------------------------------------------

    def answer(self, call_id: CallId, result: Any) -> dict[str, Any]:
        """The ``AUI_METHOD_RESPONSE`` carrying a call's ``result``."""
        return protocol.encode_result(call_id, result)

    def fail(self, call_id: CallId, error: str) -> dict[str, Any]:
        """The ``AUI_METHOD_RESPONSE`` rejecting a call with ``error``."""
        return protocol.encode_error(call_id, error)

    def finished(self, call_id: CallId) -> None:
        """A call's answer went (or the widget is gone): its place in flight frees up.

        ``KeyError`` for an id with no call in flight (the driver's mistake).
        """
        count = self._calls.get(call_id, 0)
        if count < 1:
            raise KeyError(call_id)
        if count == 1:
            del self._calls[call_id]
        else:
            self._calls[call_id] = count - 1
        self._in_flight -= 1

    def update_globals(self, changes: Mapping[str, Any]) -> dict[str, Any] | None:
        """Change globals; the ``AUI_SET_GLOBALS`` to send a ready widget, if any.

        It carries the globals that changed (every one with ``full_updates``); nothing
        goes before the widget is ready (it gets them all then) or when nothing changed.
        """
        self._globals.update(changes)
        return self._push()

    def state_loaded(self, state: WidgetState) -> None:
        """The store had ``state`` for this widget: it is the ``widgetState`` global,
        unless the store had none and the initial globals give one."""
        if state is not None or "widgetState" not in self._globals:
            self._globals["widgetState"] = state

    def state_saved(self, state: WidgetState) -> None:
        """``state``, which the widget set, was saved last: it is the ``widgetState``
        global, and the widget has it already (no update repeats it)."""
        self._globals["widgetState"] = state
        if self._sent is not None:
            self._sent["widgetState"] = state

    def _push(self) -> dict[str, Any] | None:
        if self._sent is None:
            return None  # not ready: the widget gets them all when it is
        if self.full_updates:
            return self._push_all()
        changes = protocol.changed_globals(self._sent, self._globals)
        if not changes:
            return None
        self._sent = dict(self._globals)
        return protocol.encode_set_globals(changes)

    def _push_all(self) -> dict[str, Any]:
        self._sent = dict(self._globals)
        return protocol.encode_set_globals(self._sent)


def _arg(args: tuple[Any, ...], index: int, kind: Any, what: str) -> Any:
    value = args[index] if len(args) > index else None
    if isinstance(value, bool) or not isinstance(value, kind):
        raise _BadCall(f"{what}: invalid argument {value!r}")
    return value
