"""Frames as NATS services: replicas behind queue groups, discovery, live context.

Needs the ``nats`` extra (the official client, ``nats-py``), and asyncio: ``nats-py`` runs
on asyncio only. The rest of assistant-frames works on trio as well, and never imports
this package unless asked to.
"""

from __future__ import annotations

from typing import Any

from .._deprecated import renamed
from . import target_kind  # noqa: F401 - registers nats:// with connect() and Federation
from .connection import NATSTarget, connect_nats, nats_client
from .discovery import NATSDiscovery
from .errors import NoResponders, ReplicaLost
from .host import NATSFrameHost
from .service import NATSFrameProvider
from .subjects import DEFAULT_PREFIX, FrameSubjects
from .targets import NATSBusTarget, NATSFrameTarget, parse_nats_url
from .widget_store import (
    NATSWidgetStateStore,
    WidgetStateConflict,
    WidgetStateStoreError,
    WidgetStateTooLarge,
    widget_key,
)

# 0.2.0: one noun per role (docs/concepts.md, Names); the old names go in 0.3.0.
_RENAMED = {
    "NATSBus": "NATSBusTarget",
    "NATSFrame": "NATSFrameTarget",
    "NATSFrameService": "NATSFrameProvider",
}


def __getattr__(name: str) -> Any:
    return renamed(__name__, name, _RENAMED, globals())


__all__ = [
    "DEFAULT_PREFIX",
    "FrameSubjects",
    "NATSBusTarget",
    "NATSDiscovery",
    "NATSFrameTarget",
    "NATSFrameHost",
    "NATSFrameProvider",
    "NATSTarget",
    "NATSWidgetStateStore",
    "NoResponders",
    "ReplicaLost",
    "WidgetStateConflict",
    "WidgetStateStoreError",
    "WidgetStateTooLarge",
    "connect_nats",
    "nats_client",
    "parse_nats_url",
    "widget_key",
]
