"""``AssistantFrameProvider``: the frame side, serving model contexts to hosts."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, cast

import anyio
import anyio.lowlevel
from anyio.abc import ObjectStream

from .._anyio import UntilSuspended, cancelled_here
from .._json import encode_json
from .._logs import log_first_loudly
from .._threads import DEFAULT_MAX_THREADS, ThreadLimiter, current_limiter
from ..errors import ToolCallError
from ..registry.context import ModelContext, ModelContextProvider, Unsubscribe
from ..registry.registry import ModelContextRegistry
from ..registry.tool import Tool
from ..registry.tool_map import ToolMap
from ..transports.contract import CLOSED_ERRORS, TransportAttribute, receiving_inline
from . import protocol
from .frame_machine import (
    CallCancelled,
    CallRequested,
    ContextWanted,
    FrameEvent,
    Malformed,
    Refused,
)
from .protocol import SerializedModelContext
from .provider_connection import ProviderCall, ProviderConnection, ReadingHandoff
from .wire_tools import WireTools

__all__ = ["DEFAULT_MAX_ARGUMENT_BYTES", "AssistantFrameProvider"]

logger = logging.getLogger("assistant_frames.frames")

DEFAULT_MAX_ARGUMENT_BYTES: int | None = None  # the transport bounds every message
_MAX_IDLE_WORKERS = 8
# Calls read but not yet started. Beyond this the frame stops reading the connection
# until workers catch up: a peer that sends calls and never reads the results (so the
# workers block sending them) meets backpressure instead of growing our memory.
_MAX_QUEUED_CALLS = 1000
# Workers per connection (each runs at most one call). At the cap a call waits in the
# queue for a worker to finish, so a peer whose calls all wait (for a thread, or to send
# results it never reads) holds at most this many plus the queue.
_MAX_WORKERS = 1000
_CONTEXT_KEY = "model-context"  # send_latest's key: a newer snapshot replaces an older one
# How long a frame that stops serving an open connection tries to say so (the running
# calls' errors and provider-disposed): shutting down never waits on a host longer.
_GOODBYE_TIMEOUT = 0.5


class AssistantFrameProvider:
    """Serves the merged context of its providers to every host that connects.

    ``await provider.serve(transport)`` serves one connection until the peer closes it
    (or the caller cancels); run it once per connection, as many at once as you like. A
    peer that sent ``model-context-request`` or ``model-context-subscribe`` is pushed every
    change, coalesced into one snapshot per burst. Tool calls run concurrently, each
    cancellable by ``tool-cancel``; bad input never ends the connection.

    ``max_argument_bytes`` refuses tool calls whose arguments are larger as JSON, with
    an error result (``None``, the default: the transport's message size limit is the
    only bound, and arguments are not encoded again just to be measured).
    ``max_threads`` bounds how many sync tools run in threads at once, over all
    connections; a call waiting for a thread can still be cancelled, and
    a cancelled sync call keeps its thread counted until its function returns.

    Each provider is one *document* (``@assistant-ui/core`` 0.3.35): :attr:`document_id`
    is stamped on everything it sends, and a call addressed to another document is
    refused. When ``serve`` is cancelled while its connection is still open (a server
    shutting down), the host is told as a JS frame's ``dispose()`` tells it: running
    calls end with ``"AssistantFrameProvider has been disposed"``, then
    ``provider-disposed`` (bounded, never holding up the shutdown).

    Whatever a tool raises is that call's error, never the connection's: a
    ``BaseException`` subclass, ``GeneratorExit``, or a ``CancelledError`` leaked from
    a task someone else cancelled. Only ``KeyboardInterrupt`` and ``SystemExit`` pass
    through (and end ``serve``), as everywhere in Python.
    """

    def __init__(
        self,
        *providers: ModelContextProvider,
        max_argument_bytes: int | None = DEFAULT_MAX_ARGUMENT_BYTES,
        max_threads: int = DEFAULT_MAX_THREADS,
    ) -> None:
        self.max_argument_bytes = max_argument_bytes
        self._document_id = protocol.new_document_id()
        self._threads = ThreadLimiter(max_threads)
        self._registry = ModelContextRegistry()
        self._registry.subscribe(self._on_change)
        self._connections: set[ProviderConnection] = set()
        self._wire_source: ModelContext | None = None
        self._wire: SerializedModelContext = {}
        self._tools_source: Mapping[str, Tool] | None = None
        # The tools in wire form, changed in place: versions for the machines' patches.
        self._tools_wire = WireTools()
        for provider in providers:
            self.add_model_context_provider(provider)

    def add_model_context_provider(self, provider: ModelContextProvider) -> Callable[[], None]:
        """Offer ``provider``'s context too; returns the function that withdraws it."""
        return self._registry.add_provider(provider).remove

    def get_model_context(self) -> ModelContext:
        """The merged context this frame serves."""
        return self._registry.get_model_context()

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` whenever the served context changes."""
        return self._registry.subscribe(callback)

    @property
    def document_id(self) -> str:
        """This provider's document id, sent with every message (0.3.35's ``documentId``)."""
        return self._document_id

    @property
    def connection_count(self) -> int:
        """How many connections are being served right now."""
        return len(self._connections)

    @property
    def thread_limiter(self) -> ThreadLimiter:
        """The limit on sync tools running in threads (``running``, ``total``)."""
        return self._threads

    async def serve(self, transport: ObjectStream[Any]) -> None:
        """Serve one connection until it closes; closes ``transport`` on the way out.

        Receiving never waits for a send, so a peer that is slow to read cannot stop
        this frame from reading (and answering) the peer's own messages.
        """
        async with transport, anyio.create_task_group() as task_group:
            connection = ProviderConnection(transport, task_group, self._document_id)
            self._connections.add(connection)
            # In memory, the host's sends are taken in its task (in this task's
            # context, so workers started there see this frame's variables): a call
            # goes straight to a worker, without waking the reading one first.
            inline = receiving_inline(transport, partial(self._take_inline, connection))
            try:
                with inline:
                    task_group.start_soon(self._push_updates, connection)
                    self._spawn_worker(connection, reading=True)
                    await connection.ended.wait()
            except anyio.get_cancelled_exc_class():
                await self._say_goodbye(connection)  # we stop; the connection is open
                raise
            finally:
                self._connections.discard(connection)
                for call in connection.machine.calls.values():
                    call.context.cancel()  # sync tools in threads see the flag
                task_group.cancel_scope.cancel()

    async def _say_goodbye(self, connection: ProviderConnection) -> None:
        """Tell a host whose connection is still open that this frame stops serving it."""
        handles, messages = connection.machine.dispose()
        for call in handles:
            call.cancel()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_GOODBYE_TIMEOUT):
            for message in messages:
                try:
                    await connection.transport.send(message)
                except (*CLOSED_ERRORS, TypeError, ValueError):
                    return

    # -- receiving -------------------------------------------------------------------------

    async def _read_call(self, connection: ProviderConnection) -> ProviderCall | None:
        """Read (holding the connection's reading turn) until a call is to run now: one
        read while no call waits for a worker. ``None``: the connection ended."""
        receive = connection.transport.receive
        feed = connection.machine.receive
        queue = connection.queue
        ready = connection.receive_ready
        while True:
            if len(queue) >= _MAX_QUEUED_CALLS:
                room = connection.room = connection.new_event()
                await room.wait()
            try:
                raw = await receive()
            except CLOSED_ERRORS:
                return None
            except Exception as exc:  # a transport failing in its own way ends only this one
                logger.warning("Frame connection ended: its transport failed: %r", exc)
                return None
            event = feed(raw)
            if type(event) is CallRequested:
                call = self._start_call(connection, event)
                if (
                    not queue
                    and ready is not None
                    and not ready()
                    and connection.workers < _MAX_WORKERS  # else none could read on
                ):
                    return call  # nothing waits behind it (its tool-cancel, say): run it
                self._queue(connection, call)
            elif event is not None:
                self._on_event(connection, event)

    def _take_inline(self, connection: ProviderConnection, raw: Any) -> bool:
        """A message from the host, taken in the host's task (``memory_pair``): a call
        is queued for a worker. ``False`` while the queue is full: the message then
        waits in the transport, for the reading worker."""
        if len(connection.queue) >= _MAX_QUEUED_CALLS:
            return False
        try:
            event = connection.machine.receive(raw)
            if type(event) is CallRequested:
                self._queue(connection, self._start_call(connection, event))
            elif event is not None:
                self._on_event(connection, event)
        except Exception:  # never into the host's send
            logger.exception("Handling a message from the host failed")
        return True

    def _on_event(self, connection: ProviderConnection, event: FrameEvent) -> None:
        """What a message other than a call does."""
        kind = type(event)
        if kind is CallCancelled:
            event.handle.cancel()  # type: ignore[union-attr]
        elif kind is ContextWanted:
            connection.wake.set()
        elif kind is Refused:
            self._answer(connection, cast(Refused, event).reply)
        else:
            self._on_malformed(connection, event)  # type: ignore[arg-type]

    def _on_malformed(self, connection: ProviderConnection, event: Malformed) -> None:
        log_first_loudly(
            logger,
            event.first,
            "Dropped a malformed frame message (%s)%s",
            event.reason,
            "; further ones on this connection are logged at DEBUG" if event.first else "",
        )
        if event.reply is not None:
            self._answer(connection, event.reply)

    def _answer(self, connection: ProviderConnection, reply: dict[str, Any]) -> None:
        """Send ``reply`` to a call that does not run: by a worker, in turn, like any call."""
        call = ProviderCall("", "", None)
        call.reply = reply
        self._queue(connection, call)

    # -- model context -------------------------------------------------------------------

    def _on_change(self) -> None:
        for connection in self._connections:
            if connection.machine.subscribed:
                connection.wake.set()

    def _current_wire(self) -> SerializedModelContext:
        context = self._registry.get_model_context()
        if context is not self._wire_source:
            tools = context.tools
            if tools is not self._tools_source:  # not an instructions-only change
                # The same steps on the wire form: only the changed tools serialized.
                steps = tools.steps(self._tools_source) if type(tools) is ToolMap else None
                self._tools_wire.advance(tools, steps)
                self._tools_source = tools
            self._wire = protocol.serialize_context(context, tools=self._tools_wire.live)
            self._wire_source = context
        return self._wire

    async def _push_updates(self, connection: ProviderConnection) -> None:
        """Send the context to one peer whenever it changed, or was asked for.

        The only task that sends contexts to this peer, one at a time: changes made
        while a send waits only wake it again, so at most one snapshot waits per peer,
        always the newest. A transport whose ``send`` never waits (``memory_pair``)
        offers ``TransportAttribute.send_latest``, which replaces a snapshot the peer
        has not taken yet; patches, which follow one another, are sent in order.
        """
        send = connection.transport.extra(TransportAttribute.send_latest, None)
        machine = connection.machine
        while True:
            await connection.wake.wait()
            connection.wake = connection.new_event()
            await anyio.lowlevel.checkpoint()  # let the rest of a burst land first
            message = machine.context_update(self._current_wire(), self._tools_wire)
            if message is None:
                continue
            try:
                if send is not None and not machine.patches:
                    await send(_CONTEXT_KEY, message)
                else:
                    await connection.transport.send(message)
            except CLOSED_ERRORS:
                return
            except (TypeError, ValueError) as exc:  # e.g. a description no JSON can carry
                logger.warning("Could not send the model context to a host: %s", exc)

    # -- tool calls ----------------------------------------------------------------------

    def _start_call(
        self, connection: ProviderConnection, event: CallRequested[ProviderCall]
    ) -> ProviderCall:
        if event.superseded is not None:  # a reused live id cancels the older call
            event.superseded.cancel()
        call = ProviderCall(
            event.id, event.tool_name, event.args, connection.send_event if event.events else None
        )
        connection.machine.track(event.id, call)
        return call

    def _queue(self, connection: ProviderConnection, call: ProviderCall) -> None:
        connection.queue.append(call)
        if connection.ready == 0:
            self._add_worker(connection)

    def _add_worker(self, connection: ProviderConnection) -> None:
        """Wake an idle worker, or start one unless the connection has its cap."""
        if connection.idle:
            connection.ready += 1
            connection.idle.pop().set()
        elif self._spawn_worker(connection):
            connection.ready += 1

    def _spawn_worker(self, connection: ProviderConnection, reading: bool = False) -> bool:
        if connection.workers >= _MAX_WORKERS:
            return False
        connection.workers += 1
        connection.task_group.start_soon(self._worker, connection, reading)
        return True

    def _pass_reading(self, connection: ProviderConnection) -> bool:
        """Hand the reading turn to an idle worker, or to a new one; ``False`` if every
        worker the connection may have is busy (reading then waits for this one)."""
        if connection.idle:
            turn = connection.reading_turn = connection.idle.pop()
            turn.set()
            return True
        return self._spawn_worker(connection, reading=True)

    async def _worker(self, connection: ProviderConnection, reading: bool = False) -> None:
        """Read the connection while holding its reading turn (``reading``), and run
        calls, each cancellable on its own.

        Leader and followers: the worker that reads a call while no other waits runs
        it itself, so its result goes out without waiting for another task to be
        scheduled, and hands the reading turn on (to an idle worker, or a new one) just
        before the call or the sending of its result first waits; a call that never
        waits keeps the turn, and no other worker is woken. Calls
        read while others wait are queued. A worker is *ready* while it neither reads
        nor runs a call; one that takes a queued call while others wait and nobody else
        is ready recruits another worker first, so a slow call never holds up the rest
        (up to ``_MAX_WORKERS``: then calls wait in the queue, and the reading turn stays
        with its worker). Idle workers wait to be woken rather than exit.

        One cancel scope serves many calls: cancelling a call cancels the scope of the
        worker running it, which then carries on in a fresh scope. Entering a scope per
        call would cost a large share of a call.
        """
        # A worker starts in whichever task took a call inline (nats-py's, for a NATS
        # replica), whose context variables are not this frame's: it sets the frame's
        # thread limit itself, or its sync tools would run under the default one.
        current_limiter.set(self._threads)
        queue, machine, idle = connection.queue, connection.machine, connection.idle
        try:
            while True:
                with anyio.CancelScope() as scope:
                    while not scope.cancel_called:
                        if reading:
                            read = await self._read_call(connection)
                            if read is None:  # the connection ended: serve() ends it all
                                connection.ended.set()
                                return
                            # Run it holding the reading turn, which goes on to another worker
                            # only if the call (or sending its result) waits: most finish
                            # first, and this worker then reads on without waking another.
                            handoff = ReadingHandoff(self._pass_reading, connection)
                            read.scope = scope
                            try:
                                error, result = await UntilSuspended(self._run(read), handoff)
                            finally:
                                read.scope = None
                                reading = handoff.settle()
                            reply = self._reply(connection, read, error, result)
                            if reading:
                                try:
                                    await UntilSuspended(reply, handoff)
                                finally:
                                    reading = handoff.settle()
                            else:
                                await reply
                            continue
                        if not queue:
                            connection.ready -= 1
                            if len(idle) >= _MAX_IDLE_WORKERS:
                                return
                            wake = connection.new_event()
                            idle.append(wake)
                            await wake.wait()
                            if connection.reading_turn is wake:  # handed the reading turn
                                connection.reading_turn = None
                                reading = True
                            continue  # else whoever woke us counted us ready again
                        call = queue.popleft()
                        if connection.room is not None and len(queue) < _MAX_QUEUED_CALLS:
                            connection.room.set()  # the reader may read again
                            connection.room = None
                        if call.reply is not None:  # answered without running anything
                            await connection.send_reply(call.id, call.reply)
                            continue
                        if not machine.is_live(call.id, call):
                            continue  # cancelled or superseded while queued
                        connection.ready -= 1
                        if queue and connection.ready == 0:
                            self._add_worker(connection)
                        call.scope = scope
                        try:
                            error, result = await self._run(call)
                        finally:
                            call.scope = None
                            connection.ready += 1
                        await self._reply(connection, call, error, result)
        finally:
            connection.workers -= 1

    async def _reply(
        self, connection: ProviderConnection, call: ProviderCall, error: str | None, result: Any
    ) -> None:
        """Send a finished call's ``tool-result``, stamped with this frame's document,
        unless it was cancelled or superseded meanwhile."""
        if not connection.machine.finish(call.id, call):
            return
        if connection.progress or connection.logs:  # reported before, sent before
            await connection.flush_events()
        if error is not None:
            reply = protocol.encode_tool_error(call.id, error, document_id=self._document_id)
        else:
            # The transport converts the result to JSON as it sends it (models,
            # dataclasses, datetimes...); one it cannot convert becomes
            # RESULT_NOT_SENDABLE in send_reply.
            reply = protocol.encode_tool_result(call.id, result, document_id=self._document_id)
        await connection.send_reply(call.id, reply)

    async def _run(self, call: ProviderCall) -> tuple[str | None, Any]:
        """``(error, result)`` of running ``call``: an error string, or ``None`` and the
        result."""
        args = call.args
        tool = self._registry.get_model_context().tools.get(call.name)
        if tool is None:
            return f'Tool "{call.name}" not found', None
        limit = self.max_argument_bytes
        if limit is not None and args is not None:
            try:
                size = len(encode_json(args))
            except TypeError as exc:  # nested too deep for any JSON encoder, say
                return f'Arguments for tool "{call.name}" cannot be read: {exc}', None
            if size > limit:
                return (
                    f'Arguments for tool "{call.name}" are too large '
                    f"({size} bytes; the limit is {limit})"
                ), None
        try:
            return None, await tool.invoke(args, context=call.context)
        except ToolCallError as exc:
            return exc.message, None
        except Exception as exc:
            logger.debug("Tool %r raised", call.name, exc_info=True)
            return str(exc) or type(exc).__name__, None
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            if isinstance(exc, anyio.get_cancelled_exc_class()) and _own_cancellation(call):
                raise
            # A tool bug (a BaseException subclass, GeneratorExit, a CancelledError from
            # a task someone else cancelled): that call's error, loudly.
            logger.warning("Tool %r raised %r; answered as an error", call.name, exc)
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            return f'Tool "{call.name}" failed: {detail}', None


def _own_cancellation(call: ProviderCall) -> bool:
    """Whether a cancellation exception in a call's worker is really one of ours.

    The call's scope (``tool-cancel``), the connection ending, or the caller cancelling
    ``serve``: all of those cancel the task. A ``CancelledError`` that a tool caught
    from a task someone else cancelled does not, on asyncio (trio has no such case).
    """
    return (call.scope is not None and call.scope.cancel_called) or cancelled_here()
