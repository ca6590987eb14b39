"""Newline-delimited JSON framing, without I/O: one JSON value per line.

:func:`encode_line` frames a message; :class:`LineDecoder` takes the bytes a stream
delivers, in chunks of any size, and yields the messages of its complete lines,
dropping (and counting) what is not one: lines that are not JSON, lines longer than
the limit (skipped up to their end) and a partial last line.
"""

from __future__ import annotations

import logging
import sys
from collections import deque
from typing import Any

from .._json import decode_json
from .._logs import log_first_loudly
from .contract import encode_message

__all__ = ["LineDecoder", "encode_line"]

logger = logging.getLogger("assistant_frames.transports")

_DROPPED_SAMPLES = 3  # dropped lines kept for diagnosis


def encode_line(item: Any, max_message_bytes: int | None) -> bytes:
    """``item`` as one line of JSON (``encode_message``'s errors, before anything else)."""
    return encode_message(item, max_message_bytes) + b"\n"


class LineDecoder:
    """Splits the bytes fed to it into lines and decodes each as JSON, into
    :attr:`messages`; empty lines are skipped.

    What is dropped is logged (the first at WARNING on the ``assistant_frames.transports``
    logger, later ones at DEBUG), counted in :attr:`dropped` and sampled in
    :attr:`dropped_samples` (the first three, up to 80 characters each).
    """

    def __init__(self, max_line_bytes: int | None) -> None:
        self._max_line_bytes = sys.maxsize if max_line_bytes is None else max_line_bytes
        self.messages: deque[Any] = deque()
        self._partial = bytearray()
        self._skipping = False  # inside a line that is too long
        self.dropped = 0
        self.dropped_samples: list[str] = []

    def feed(self, chunk: bytes) -> None:
        """Take ``chunk``: each line it completes is decoded or dropped."""
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                rest = chunk[start:]
                if not self._skipping:
                    self._partial += rest
                    if len(self._partial) > self._max_line_bytes:
                        self._drop(f"a line longer than {self._max_line_bytes} bytes")
                        self._partial.clear()
                        self._skipping = True
                return
            if self._skipping:
                self._skipping = False
            elif self._partial:
                self._partial += chunk[start:end]
                if len(self._partial) > self._max_line_bytes:
                    self._drop(f"a line longer than {self._max_line_bytes} bytes")
                else:
                    self._parse(bytes(self._partial))
                self._partial.clear()
            elif end - start > self._max_line_bytes:
                self._drop(f"a line longer than {self._max_line_bytes} bytes")
            else:
                self._parse(chunk[start:end])
            start = end + 1

    def end(self) -> None:
        """The stream has ended: a partial last line is dropped."""
        if self._partial:
            self._drop("a partial line at the end of the stream", self._partial)

    def _parse(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            self.messages.append(decode_json(line))
        except ValueError:  # UnicodeDecodeError included
            self._drop(f"a line that is not JSON: {line[:80]!r}", line)

    def _drop(self, what: str, line: bytes | bytearray | None = None) -> None:
        self.dropped += 1
        if len(self.dropped_samples) < _DROPPED_SAMPLES:
            sample = bytes(line[:80]).decode("utf-8", "replace") if line is not None else None
            self.dropped_samples.append(sample if sample is not None else f"<{what}>")
        log_first_loudly(logger, self.dropped == 1, "Dropped %s", what)
