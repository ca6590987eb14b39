"""Echo child for ``benchmarks/run.py``: writes every line it reads back, flushed.

The floor for a round trip through a subprocess pipe: no parsing, no event loop.
"""

from __future__ import annotations

import sys


def main() -> None:
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    for line in iter(stdin.readline, b""):
        stdout.write(line)
        stdout.flush()


if __name__ == "__main__":
    main()
