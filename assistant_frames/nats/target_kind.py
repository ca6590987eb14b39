"""The ``nats`` kind of target of :func:`~assistant_frames.connect` and ``Federation``.

Registered with the federation when this package is imported (the federation imports it
by name when it meets a ``nats://`` URL, and never otherwise): a :class:`NATSFrameTarget` is
reached through a :class:`~.host.NATSFrameHost`, a :class:`NATSBusTarget` through a
:class:`~.discovery.NATSDiscovery`.
"""

from __future__ import annotations

from typing import Any

from ..federation.targets import FrameTarget, TargetHandler, register_target_kind
from ..frames.connection import FrameConnection
from .discovery import NATSDiscovery
from .host import NATSFrameHost
from .targets import SCHEMES, NATSBusTarget, NATSFrameTarget, resolve_nats_target

__all__ = ["NATS_TARGETS"]


def _connection(
    target: NATSFrameTarget | NATSBusTarget, frame_target: FrameTarget
) -> FrameConnection:
    if isinstance(target, NATSFrameTarget):
        return NATSFrameHost(
            target.name,
            nats=target.nats,
            nats_options=target.nats_options,
            prefix=target.prefix,
            timeout=frame_target.timeout,
            liveness=target.liveness,
            context_timeout=frame_target.connect_timeout,
        )
    return NATSDiscovery(
        nats=target.nats,
        nats_options=target.nats_options,
        prefix=target.prefix,
        interval=target.interval,
        timeout=frame_target.timeout,
        connect_timeout=frame_target.connect_timeout,
        name=frame_target.name,
    )


def _accepts(target: Any) -> bool:
    return isinstance(target, (NATSFrameTarget, NATSBusTarget))


NATS_TARGETS = TargetHandler(
    kind="nats",
    schemes=SCHEMES,
    accepts=_accepts,
    resolve=resolve_nats_target,
    connection=_connection,
)
"""``nats://`` (and ``tls://``) URLs, :class:`NATSFrameTarget` and :class:`NATSBusTarget`."""

register_target_kind(NATS_TARGETS)
