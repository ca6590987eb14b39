"""A replica of the NATS frame ``calc`` (common.calculator()) at the URL in argv[1],
until stdin closes."""

from __future__ import annotations

import sys

import anyio
from common import calculator

from assistant_frames.nats import NATSFrameProvider


async def main() -> None:
    async with NATSFrameProvider(calculator("replica"), "calc", nats=sys.argv[1]):
        print("serving", flush=True)
        await anyio.wrap_file(sys.stdin).read()  # until the parent closes our stdin
