"""Frames as NATS services: replicas behind queue groups, discovery, live context.

Needs the ``nats`` extra (the official client, ``nats-py``), and asyncio: ``nats-py`` runs
on asyncio only. The rest of assistant-frames works on trio as well, and never imports
this package unless asked to.
"""

from __future__ import annotations

from . import target_kind  # noqa: F401 - registers nats:// with connect() and Federation
from .connection import NATSTarget, connect_nats, nats_client
from .discovery import NATSDiscovery
from .errors import NoResponders, ReplicaLost
from .host import NATSFrameHost
from .service import NATSFrameService
from .subjects import DEFAULT_PREFIX, FrameSubjects
from .targets import NATSBus, NATSFrame, parse_nats_url

__all__ = [
    "DEFAULT_PREFIX",
    "FrameSubjects",
    "NATSBus",
    "NATSDiscovery",
    "NATSFrame",
    "NATSFrameHost",
    "NATSFrameService",
    "NATSTarget",
    "NoResponders",
    "ReplicaLost",
    "connect_nats",
    "nats_client",
    "parse_nats_url",
]
