"""Every async test runs under both asyncio and trio."""

from __future__ import annotations

import signal
from typing import Any

import pytest

# The shared helpers (tests/helpers.py) assert too: have pytest explain their failures.
pytest.register_assert_rewrite("helpers")

# A run started with SIGINT ignored (a script's background job, ``cmd &``) would pass
# that on to every process it starts, and the tests that stop a server, a worker or a
# page with Ctrl-C would wait for ever. A handler of Python's is reset by exec: the
# children start with SIGINT's default again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


#: How ``browser_support.unavailable`` starts the reason of a skipped browser test.
BROWSER_SKIP = "browser tests skipped: "


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say loudly, at the end, why browser interop tests were skipped.

    Read from the skip reports, and here rather than in tests/browser: under pytest-xdist
    the skips happen in the workers, and only this process prints the summary.
    """
    reasons: list[str] = []
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        if not (isinstance(longrepr, tuple) and len(longrepr) == 3):
            continue
        _, _, reason = str(longrepr[2]).partition(BROWSER_SKIP)
        if reason and reason not in reasons:
            reasons.append(reason)
    for reason in reasons:
        terminalreporter.write_sep(
            "!", f"WARNING: browser interop tests were SKIPPED: {reason}", yellow=True, bold=True
        )
