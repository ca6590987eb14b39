"""``python -m assistant_frames``: the ``assistant-frames`` command line (see :mod:`.cli`)."""

from __future__ import annotations

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
