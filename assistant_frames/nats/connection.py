"""Connecting to NATS: the official client (``nats-py``), its options passed through.

Every NATS piece here takes ``nats=``: a server URL (or a list of them), which it
connects to and closes again, or a connected ``nats.aio.client.Client`` that it shares
and leaves open. Authentication (token, user and password, a credentials file, TLS) is
``nats-py``'s: pass its ``connect()`` options as ``nats_options``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeAlias

import anyio
import nats
import sniffio
from nats.aio.client import Client
from nats.errors import NoServersError

from .._text import without_credentials
from ..errors import ConnectError

__all__ = ["NATSTarget", "Client", "connect_nats", "nats_client"]

logger = logging.getLogger("assistant_frames.nats")

# Attempts per server after the first, when connecting (not when reconnecting).
_CONNECT_ATTEMPTS = 2
# How long closing a client of ours may take to drain it before it is just closed.
_CLOSE_TIMEOUT = 3.0

NATSTarget: TypeAlias = str | Sequence[str] | Client
"""A server URL (``nats://127.0.0.1:4222``), several, or a connected client."""


async def connect_nats(
    servers: str | Sequence[str],
    *,
    name: str | None = None,
    connect_timeout: float = 5.0,
    **options: Any,
) -> Client:
    """A client connected to ``servers``; :class:`~assistant_frames.ConnectError` if not.

    ``options`` go to ``nats.connect`` as they are (``token=``, ``user=``,
    ``password=``, ``user_credentials=``, ``tls=``, ``max_reconnect_attempts=``...).
    Unless given, the client reconnects forever, every 0.5 s, and logs what goes wrong
    on the ``assistant_frames.nats`` logger instead of printing it. Connecting itself
    tries each server a few times only: a server that is down, or refuses the
    credentials, is a ``ConnectError`` within seconds, not a wait without end.
    """
    errors: list[Exception] = []  # what went wrong while connecting, to say why it failed

    connecting = True

    async def error_cb(error: Exception) -> None:
        if connecting:
            errors.append(error)
        # While connecting, a failure is the error connect_nats raises: not logged twice.
        log = logger.debug if connecting else logger.warning
        log("NATS: %s", error or type(error).__name__)

    async def disconnected_cb() -> None:
        logger.info("NATS: disconnected from the server")

    async def reconnected_cb() -> None:
        logger.info("NATS: reconnected")

    settings: dict[str, Any] = {
        "name": name,
        "connect_timeout": connect_timeout,
        "max_reconnect_attempts": -1,
        "reconnect_time_wait": 0.5,
        "drain_timeout": 2.0,  # closing never waits long on a server that is gone
        "error_cb": error_cb,
        "disconnected_cb": disconnected_cb,
        "reconnected_cb": reconnected_cb,
    }
    settings.update(options)
    # nats-py bounds the first connect by max_reconnect_attempts too: at -1 (reconnect
    # forever) a wrong token or a server that is down makes connect() wait forever. So
    # connect with a few attempts per server, then reconnect as asked (nats-py reads the
    # option again at each reconnect).
    reconnects = settings["max_reconnect_attempts"]
    # (0 is unbounded too, for nats-py.)
    bounded = reconnects if reconnects > 0 else _CONNECT_ATTEMPTS
    settings["max_reconnect_attempts"] = min(bounded, _CONNECT_ATTEMPTS)
    urls = [servers] if isinstance(servers, str) else list(servers)
    shown = ", ".join(without_credentials(url) for url in urls)
    # And bounded as a whole: some failures (a TLS handshake the client refuses) would
    # otherwise keep nats-py trying past every per-attempt timeout.
    bound = settings["connect_timeout"] * (settings["max_reconnect_attempts"] + 1) * len(urls)

    def said() -> list[Exception]:
        # After its attempts nats-py says only "no servers" (or nothing, past the bound):
        # the errors say why. The server's own word (an authorization violation) beats a
        # reset that follows it.
        return [e for e in errors if not isinstance(e, OSError)] or errors

    try:
        with anyio.fail_after(bound + 1.0):
            client = await nats.connect(servers=urls, **settings)
    except TimeoutError as exc:
        why = f": {said()[-1]}" if errors else ""
        raise ConnectError(
            f"Could not connect to NATS at {shown} within {bound + 1:g} s{why}"
        ) from exc
    except Exception as exc:  # nats-py raises its own and OSError alike
        cause = said()[-1] if errors and isinstance(exc, NoServersError) else exc
        raise ConnectError(f"Could not connect to NATS at {shown}: {cause}") from exc
    finally:
        connecting = False
    client.options["max_reconnect_attempts"] = reconnects
    return client


@asynccontextmanager
async def nats_client(
    target: NATSTarget,
    options: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
) -> AsyncIterator[Client]:
    """``target`` as a connected client: a given one as is (left open), or a new one
    connected to the URL(s) with ``options`` and drained and closed on the way out.

    Raises ``RuntimeError`` outside asyncio: ``nats-py`` runs on asyncio only, and
    :class:`~assistant_frames.ConnectError` for a given client that is closed.
    """
    library = sniffio.current_async_library()
    if library != "asyncio":
        raise RuntimeError(f"NATS needs asyncio (nats-py runs on asyncio only), not {library}")
    if isinstance(target, Client):
        if options:
            raise ValueError("nats_options apply only when connecting to a URL, not to a client")
        if target.is_closed:  # for good: nothing can subscribe or publish on it again
            raise ConnectError("The NATS client given is closed")
        yield target
        return
    client = await connect_nats(target, name=name, **dict(options or {}))
    try:
        yield client
    finally:
        # Shielded: leaving a cancelled scope must still close the client (and its tasks).
        with anyio.CancelScope(shield=True):
            if not client.is_closed:
                drained = False
                # Bounded: draining ends with a round trip (10 s against a server that
                # hangs), past the drain_timeout nats-py applies to the subscriptions.
                with anyio.move_on_after(_CLOSE_TIMEOUT):
                    try:
                        await client.drain()
                        drained = True
                    except Exception as exc:  # the server may be gone
                        logger.debug("NATS: while draining: %r", exc)
                if not drained and not client.is_closed:  # closing is all that is left
                    try:
                        await client.close()
                    except Exception as exc:  # flushing what it buffered to a lost server
                        logger.debug("NATS: while closing: %r", exc)
