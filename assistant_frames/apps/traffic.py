"""The JSON-RPC traffic between views and their host, as the apps page logs it.

:class:`Recorded` wraps a view's transport so that every message is reported;
:func:`logged` keeps a message as the log shows it (whole up to 8 KiB of JSON, else its
envelope and the start of its JSON), whatever the message holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from anyio.abc import ObjectStream
from pydantic_core import PydanticSerializationError, to_json

from .._json import encode_json

__all__ = ["Recorded", "Traffic", "logged"]

# A logged message is kept whole up to this size as JSON, else shortened: 2,000 whole
# messages of up to 4 MiB each would be 8 GiB for a pane that shows a few lines.
_MAX_LOGGED_BYTES = 8 * 1024
_ENVELOPE = ("jsonrpc", "id", "method")


@dataclass(frozen=True)
class Traffic:
    """One JSON-RPC message between a view and its host, as the log keeps it.

    A message larger than 8 KiB as JSON is kept shortened: its ``jsonrpc``, ``id`` and
    ``method``, and the start of its JSON under ``"truncated"``; ``size`` is always the
    whole message's.
    """

    app_id: str
    #: ``"in"``: from the view; ``"out"``: to the view.
    direction: Literal["in", "out"]
    message: Any
    #: The whole message's size as JSON, in bytes.
    size: int = 0
    #: Whether :attr:`message` is shortened.
    truncated: bool = False


def logged(message: Any) -> tuple[Any, int, bool]:
    """``message`` as the log keeps it (shortened past the limit), its size, and
    whether it was shortened."""
    text = _json_text(message)
    if len(text) <= _MAX_LOGGED_BYTES:
        return message, len(text), False
    kept = (
        {key: message[key] for key in _ENVELOPE if key in message}
        if isinstance(message, dict)
        else {}
    )
    preview = text[: _MAX_LOGGED_BYTES // 2].decode("utf-8", "replace")
    return {**kept, "truncated": f"{preview}... ({len(text):,} bytes)"}, len(text), True


def _json_text(message: Any) -> bytes:
    """``message`` as JSON for the log, whatever it holds: pydantic-core refuses lone
    surrogates (which a view's JSON may carry as escapes) and deep nesting, which the
    wire's own encoder takes; anything else unforeseen is logged as its ``repr``."""
    try:
        return to_json(message, fallback=repr)
    except (PydanticSerializationError, ValueError, RecursionError):
        pass
    try:
        return encode_json(message)
    except TypeError:
        return repr(message).encode("utf-8", "replace")


class Recorded(ObjectStream[Any]):
    """A view's transport whose every message is reported (the page's log pane)."""

    def __init__(
        self, inner: ObjectStream[Any], report: Callable[[Literal["in", "out"], Any], None]
    ) -> None:
        self._inner = inner
        self._report = report

    async def receive(self) -> Any:
        message = await self._inner.receive()
        self._report("in", message)
        return message

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        self._report("out", item)

    async def send_eof(self) -> None:
        await self._inner.send_eof()

    async def aclose(self) -> None:
        await self._inner.aclose()
