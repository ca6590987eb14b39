"""A worker as a user writes one: a script that ends in ``asyncio.run(serve_stdio(...))``
(``connect("worker_script.py")`` runs it with the host's interpreter)."""

from __future__ import annotations

import asyncio

from common import calculator

from assistant_frames.frames import serve_stdio

if __name__ == "__main__":
    asyncio.run(serve_stdio(calculator("script")))
