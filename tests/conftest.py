"""Every async test runs under both asyncio and trio."""

from __future__ import annotations

from typing import Any

import pytest

# The shared helpers (tests/helpers.py) assert too: have pytest explain their failures.
pytest.register_assert_rewrite("helpers")


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
