"""Widget state shared by every host on NATS: a JetStream key-value bucket.

Two web servers behind a load balancer each host widgets: with an in-memory or an SQLite
store, each keeps its own copy and one overwrites what the other saved. A
:class:`NATSWidgetStateStore` keeps each widget instance's state in one key of a
JetStream key-value bucket that every host shares, and writes it by compare-and-set on
the key's revision, so that no write is lost or torn when two hosts write at once.

It is a :class:`~assistant_frames.widgets.WidgetStateStore` (``load``, ``save``), for
``WidgetStateKeeper``, ``WidgetHost`` and ``AppView`` as they are, plus
:meth:`NATSWidgetStateStore.update`, an atomic read-modify-write for code that changes a
state relative to what is there (a counter, a merge).

This module imports nothing of :mod:`assistant_frames.widgets` at run time (only its
types, for the type checker): ``assistant_frames.nats`` works without the ``mcp`` extra
that the widget hosts need.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import random
import re
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio
import nats.errors
import nats.js.errors
from nats.js.api import KeyValueConfig
from nats.js.client import JetStreamContext
from nats.js.kv import KeyValue

from ..errors import AssistantFramesError
from .connection import NATSTarget, nats_client

if TYPE_CHECKING:
    from ..widgets.store import WidgetState, WidgetStateStore

__all__ = [
    "DEFAULT_WIDGET_BUCKET",
    "NATSWidgetStateStore",
    "WidgetStateConflict",
    "WidgetStateStoreError",
    "WidgetStateTooLarge",
    "widget_key",
]

logger = logging.getLogger("assistant_frames.nats")

#: The bucket a :class:`NATSWidgetStateStore` uses unless told otherwise.
DEFAULT_WIDGET_BUCKET: Final = "assistant_frames_widget_state"

# A bucket's messages carry headers too (the expected revision of a compare-and-set, a
# delete marker), and JetStream counts them in a message's size: the bucket's maximum is
# the store's max_value_bytes plus this.
_HEADER_ROOM: Final = 1024
# Keys longer than this (as base64url) are a hash of the id instead (see widget_key).
_LONGEST_KEY: Final = 200
# Between two attempts of a compare-and-set that lost: a random pause up to this, times
# the attempt's number (capped), so that two hosts in step fall out of step.
_BACKOFF: Final = 0.005
_MAX_BACKOFF: Final = 0.1
_BUCKET_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
# JetStream's "wrong last sequence": another host wrote the key since we read it.
_CONFLICT = nats.js.errors.KeyWrongLastSequenceError
# JetStream's "stream name already in use with a different configuration".
_BUCKET_TAKEN: Final = 10058

_T = TypeVar("_T")


class WidgetStateStoreError(AssistantFramesError):
    """The NATS widget state store could not do what was asked (NATS or JetStream failed,
    did not answer in time, or the bucket is unusable); the message says which bucket and
    widget, and why."""

    def __init__(self, message: str, *, bucket: str, widget_id: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: The bucket of the store.
        self.bucket = bucket
        #: The widget instance the operation was for (``None``: the bucket itself).
        self.widget_id = widget_id


class WidgetStateConflict(WidgetStateStoreError):
    """Other hosts kept writing the widget's state: the compare-and-set lost every one of
    its attempts. Nothing was written; trying again later is safe."""


class WidgetStateTooLarge(ValueError):
    """A state over the store's ``max_value_bytes`` as JSON: refused, nothing was written."""

    def __init__(self, widget_id: str, size: int, limit: int, bucket: str) -> None:
        super().__init__(
            f"The state of widget {widget_id!r} is {size} bytes as JSON, over the limit of "
            f"{limit} of the NATS widget state store (bucket {bucket!r})"
        )
        self.widget_id = widget_id
        self.size = size
        self.limit = limit
        self.bucket = bucket


def widget_key(widget_id: str) -> str:
    """The key of ``widget_id`` in the bucket: the same on every host, always a valid key.

    A key may hold only letters, digits and ``-/_=.``, so the id is encoded: ``w_``
    and the id's UTF-8 bytes in base64url without padding
    (``"message-7/pizza"`` is ``w_bWVzc2FnZS03L3Bpenph``), or, for an id whose encoding
    is over 200 characters, ``h_`` and the SHA-256 of those bytes in hex. Either way
    two ids never share a key.
    """
    raw = widget_id.encode("utf-8", "surrogatepass")
    encoded = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    if len(encoded) <= _LONGEST_KEY:
        return f"w_{encoded}"
    return f"h_{hashlib.sha256(raw).hexdigest()}"


class NATSWidgetStateStore:
    """Widget state in a JetStream key-value bucket, shared by every host on the bus.

    ``nats`` is a server URL (or several), connected to on entering and closed on
    leaving, or a connected ``nats.aio.client.Client``, shared and left open;
    ``nats_options`` go to ``nats.connect`` (token, credentials, TLS...). The server
    must run JetStream (``nats-server -js``).

    On entering, the store binds to ``bucket``, or creates it with one revision per key
    (history 1), ``ttl`` (seconds a state is kept after its last write; ``None``: until
    deleted) and a maximum message size of ``max_value_bytes`` plus room for headers.
    A bucket that exists is used as it is, with its own TTL and limits.

    Each state is one key (:func:`widget_key`), its value the state as compact JSON, of
    at most ``max_value_bytes`` (a larger state raises :class:`WidgetStateTooLarge`).
    Every write is a compare-and-set on the key's revision (``create`` for a new key,
    ``update(last=revision)`` for one that exists), tried again when another host wrote
    in between, at most ``attempts`` times (then :class:`WidgetStateConflict`).

    - :meth:`save` replaces the state (or deletes it, for ``None``): what
      ``WidgetStateKeeper``, ``WidgetHost`` and ``AppView`` call when a widget sets its
      state, whole. Of two hosts saving at once, the write that reaches the bucket last
      wins, whole: states are never mixed.
    - :meth:`update` changes the state from what is there: ``change(current)`` runs
      again on the newer state when another host wrote in between, so no host's change
      is lost (two hosts adding 1 at once add 2).
    - :meth:`load` reads it: a host that starts (or restarts) gets the latest state.

    Every NATS request is bounded by ``timeout`` seconds; a NATS failure raises
    :class:`WidgetStateStoreError` naming the bucket and the widget, never hangs. Needs
    asyncio, as all of ``assistant_frames.nats``.
    """

    def __init__(
        self,
        nats: NATSTarget,
        *,
        nats_options: Mapping[str, Any] | None = None,
        bucket: str = DEFAULT_WIDGET_BUCKET,
        max_value_bytes: int = 256_000,
        ttl: float | None = None,
        timeout: float = 5.0,
        attempts: int = 20,
    ) -> None:
        if not _BUCKET_NAME.match(bucket):
            raise ValueError(f"A bucket name is letters, digits, '-' and '_', not {bucket!r}")
        if max_value_bytes < 1:
            raise ValueError(f"max_value_bytes must be positive, not {max_value_bytes!r}")
        if ttl is not None and not ttl > 0:
            raise ValueError(f"ttl must be positive (or None: no TTL), not {ttl!r}")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, not {attempts!r}")
        self.nats = nats
        self.nats_options = nats_options
        self.bucket = bucket
        self.max_value_bytes = max_value_bytes
        self.ttl = ttl
        self.timeout = timeout
        self.attempts = attempts
        self._kv: KeyValue | None = None
        self._exit: AsyncExitStack | None = None
        self._entered = False

    def __repr__(self) -> str:
        return f"NATSWidgetStateStore(bucket={self.bucket!r})"

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> NATSWidgetStateStore:
        if self._entered:
            raise RuntimeError("A NATSWidgetStateStore can be entered only once")
        self._entered = True
        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(
                nats_client(self.nats, self.nats_options, name="assistant-frames widget state")
            )
            self._kv = await self._bind(client.jetstream(timeout=self.timeout))
            self._exit = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._kv = None
        exit_stack, self._exit = self._exit, None
        if exit_stack is not None:
            await exit_stack.aclose()

    async def _bind(self, js: JetStreamContext) -> KeyValue:
        """The bucket: bound if it exists, else created (by us or, meanwhile, another)."""
        missing = nats.js.errors.BucketNotFoundError
        try:
            return await self._bounded(
                js.key_value(self.bucket), "opening the bucket", None, missing
            )
        except missing:
            pass
        config = KeyValueConfig(
            bucket=self.bucket,
            description="assistant-frames widget state, one key per widget instance",
            history=1,
            ttl=self.ttl,
            max_value_size=self.max_value_bytes + _HEADER_ROOM,
        )
        try:
            kv = await self._bounded(js.create_key_value(config), "creating the bucket")
        except WidgetStateStoreError as exc:
            cause = exc.__cause__
            if not (isinstance(cause, nats.js.errors.APIError) and cause.err_code == _BUCKET_TAKEN):
                raise
            # Another host created it at the same moment, with other settings: use theirs.
            return await self._bounded(js.key_value(self.bucket), "opening the bucket")
        logger.info("NATS: created the widget state bucket %r (ttl %s)", self.bucket, self.ttl)
        return kv

    # -- the store ---------------------------------------------------------------------------

    async def load(self, widget_id: str) -> WidgetState:
        """The state last saved for ``widget_id`` (``None``: none, or it expired)."""
        state, _ = await self._read(self._bucket(), widget_id)
        return state

    async def save(self, widget_id: str, state: WidgetState) -> None:
        """Keep ``state`` for ``widget_id``, replacing what is there (``None`` deletes it).

        A compare-and-set like every write (:meth:`update` with a change that ignores
        the current state): of two hosts saving at once, the later write wins, whole.
        """
        value = self._encode(widget_id, state)  # refused before any request; encoded once
        await self._compare_and_set(widget_id, lambda _current: (state, value))

    async def update(
        self, widget_id: str, change: Callable[[WidgetState], WidgetState]
    ) -> WidgetState:
        """Atomically replace the state of ``widget_id`` with ``change(current)``; the new state.

        ``current`` is the state there now (``None``: none), a copy of its own;
        ``change`` returns the new state (``None`` deletes it). When another host wrote
        between our read and our write, ``change`` runs again on the newer state, up to
        ``attempts`` times: it must be a plain function of ``current``, without side
        effects. Raises :class:`WidgetStateConflict` when every attempt lost,
        :class:`WidgetStateTooLarge` for a new state over ``max_value_bytes`` (nothing
        is written), :class:`WidgetStateStoreError` when NATS fails; an exception of
        ``change`` propagates as it is, with nothing written.
        """

        def step(current: WidgetState) -> tuple[WidgetState, bytes | None]:
            state = change(current)
            return state, self._encode(widget_id, state)

        return await self._compare_and_set(widget_id, step)

    async def _compare_and_set(
        self,
        widget_id: str,
        step: Callable[[WidgetState], tuple[WidgetState, bytes | None]],
    ) -> WidgetState:
        """Write what ``step(current)`` gives (the state and its encoding, ``None`` to
        delete) if nobody wrote since ``current`` was read; else read and try again."""
        kv = self._bucket()
        key = widget_key(widget_id)
        for attempt in range(1, self.attempts + 1):
            current, revision = await self._read(kv, widget_id)
            state, value = step(current)
            try:
                if value is None:
                    if current is not None:
                        await self._bounded(
                            kv.delete(key, last=revision), "deleting", widget_id, _CONFLICT
                        )
                elif revision:
                    await self._bounded(
                        kv.update(key, value, last=revision), "writing", widget_id, _CONFLICT
                    )
                else:
                    await self._bounded(kv.create(key, value), "creating", widget_id, _CONFLICT)
            except _CONFLICT:
                logger.debug("NATS: widget %r: attempt %d lost, again", widget_id, attempt)
                if attempt < self.attempts:
                    await anyio.sleep(random.uniform(0, min(_BACKOFF * attempt, _MAX_BACKOFF)))
                continue
            return state
        raise WidgetStateConflict(
            f"Could not write the state of widget {widget_id!r} in the NATS bucket "
            f"{self.bucket!r}: other hosts wrote it first {self.attempts} times in a row",
            bucket=self.bucket,
            widget_id=widget_id,
        )

    # -- helpers -----------------------------------------------------------------------------

    def _bucket(self) -> KeyValue:
        if self._kv is None:
            raise RuntimeError(
                "Use a NATSWidgetStateStore inside `async with` (it connects on entering)"
            )
        return self._kv

    async def _read(self, kv: KeyValue, widget_id: str) -> tuple[WidgetState, int]:
        """The state of ``widget_id`` and the revision to compare with when writing it:
        its entry's, a deleted key's marker's, or 0 for a key never written."""
        try:
            entry = await self._bounded(
                kv.get(widget_key(widget_id)),
                "reading",
                widget_id,
                nats.js.errors.KeyNotFoundError,
            )
        except nats.js.errors.KeyNotFoundError as missing:
            deleted = missing.entry  # the delete marker, if the key was deleted
            return None, deleted.revision if deleted is not None else 0
        state = self._decode(widget_id, entry.value or b"")
        return state, entry.revision or 0

    def _encode(self, widget_id: str, state: WidgetState) -> bytes | None:
        if state is None:
            return None
        if not isinstance(state, dict):
            raise ValueError(
                f"The state of widget {widget_id!r} must be a JSON object or None, "
                f"not {type(state).__name__}"
            )
        try:
            text = json.dumps(state, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"The state of widget {widget_id!r} is not JSON: {exc}") from None
        value = text.encode()
        if len(value) > self.max_value_bytes:
            raise WidgetStateTooLarge(widget_id, len(value), self.max_value_bytes, self.bucket)
        return value

    def _decode(self, widget_id: str, value: bytes) -> WidgetState:
        try:
            state = json.loads(value)
        except ValueError:
            state = None
        if not isinstance(state, dict):  # not ours: written by something else
            logger.warning(
                "NATS: the state of widget %r in bucket %r is not a JSON object; ignored",
                widget_id,
                self.bucket,
            )
            return None
        return state

    async def _bounded(
        self,
        request: Awaitable[_T],
        doing: str,
        widget_id: str | None = None,
        expected: type[Exception] | None = None,
    ) -> _T:
        """``request``, within ``timeout``; a failure (other than ``expected``) as a
        :class:`WidgetStateStoreError` that says what, where and why."""
        try:
            with anyio.fail_after(self.timeout):
                return await request
        except Exception as exc:
            if expected is not None and isinstance(exc, expected):
                raise
            if isinstance(exc, TimeoutError):  # anyio's, nats-py's and asyncio's alike
                why = f"no answer within {self.timeout:g} s"
            elif isinstance(exc, nats.js.errors.ServiceUnavailableError):
                why = "JetStream is not available (is the server running with -js?)"
            elif isinstance(exc, nats.errors.Error | OSError):
                why = str(exc) or type(exc).__name__
            else:
                raise
            what = f"widget {widget_id!r} in " if widget_id is not None else ""
            raise WidgetStateStoreError(
                f"NATS widget state store: {doing} {what}bucket {self.bucket!r} failed: {why}",
                bucket=self.bucket,
                widget_id=widget_id,
            ) from exc


if TYPE_CHECKING:  # the store is a WidgetStateStore, for the type checker

    def _a_store(store: NATSWidgetStateStore) -> WidgetStateStore:
        return store
