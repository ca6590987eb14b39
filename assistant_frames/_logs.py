"""How the library logs what a peer can repeat without end: the first time at WARNING,
later times at DEBUG, so that a peer sending bad input in a loop cannot flood the log
(nor hide what it does: each time is still logged, at DEBUG)."""

from __future__ import annotations

import logging

__all__ = ["log_first_loudly"]


def log_first_loudly(
    logger: logging.Logger, first: bool, message: str, *args: object, exc_info: bool = False
) -> None:
    """Log ``message % args`` on ``logger``: at WARNING when ``first``, else at DEBUG."""
    logger.log(logging.WARNING if first else logging.DEBUG, message, *args, exc_info=exc_info)
