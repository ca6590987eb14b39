"""Run every ```python block of README.md and docs/*.md in a fresh interpreter.

A block whose fence line is immediately preceded by a ``<!-- not-runnable -->`` line is
skipped. Blocks are numbered from 1 in each page, counting every ```python block.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP_MARKER = "<!-- not-runnable -->"
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
TIMEOUT = 30


def _blocks(path: Path) -> list[tuple[int, int, str]]:
    """``(block number, line of the fence, code)`` for the runnable blocks of a page."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for number, match in enumerate(FENCE.finditer(text), start=1):
        before = text[: match.start()]
        previous_line = before.removesuffix("\n").rsplit("\n", 1)[-1]
        if previous_line.strip() != SKIP_MARKER:
            blocks.append((number, before.count("\n") + 1, match.group(1)))
    return blocks


def _cases() -> list[Any]:
    return [
        pytest.param(path.name, number, line, code, id=f"{path.name}-{number}")
        for path in PAGES
        for number, line, code in _blocks(path)
    ]


def test_docs_have_runnable_blocks() -> None:
    assert _cases(), "no runnable ```python blocks found in README.md or docs/"


@pytest.mark.parametrize(("page", "number", "line", "code"), _cases())
def test_doc_block_runs(page: str, number: int, line: int, code: str, tmp_path: Path) -> None:
    where = f"{page}, python block {number} (line {line})"
    script = tmp_path / f"{Path(page).stem}_block_{number}.py"
    script.write_text(code, encoding="utf-8")
    try:
        completed = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{where}: timed out after {TIMEOUT} s")
    assert completed.returncode == 0, (
        f"{where} exited with {completed.returncode}\n"
        f"--- stdout ---\n{completed.stdout}\n--- stderr ---\n{completed.stderr}"
    )
