"""Run every ```python block of README.md and docs/*.md in a fresh interpreter.

Each block runs on the README's own install: the blocker below makes every installed
distribution outside the dependency closure of the README's ``pip install '.[extras]'``
unimportable (trio, for one, is installed for the test suite but not by that command).

Markers, on the lines right before a block's fence:

- ``<!-- not-runnable -->``: the block is not run.
- ``<!-- needs: mcp, trio -->``: the block may also import these (extras of
  assistant-frames, or distribution names) and their dependencies; it is skipped when
  one is not installed.
- ``<!-- file: worker.py -->``: the block is a file the page's later blocks use (a
  worker script, say): it is not run itself, but written beside each of them.

Blocks are numbered from 1 in each page, counting every ```python block.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
SKIP_MARKER = "<!-- not-runnable -->"
NEEDS_MARKER = re.compile(r"^<!--\s*needs:\s*(.*?)\s*-->$")
FILE_MARKER = re.compile(r"^<!--\s*file:\s*([\w.-]+)\s*-->$")
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
README_INSTALL = re.compile(
    r"<!-- demo-command -->\n```bash\n[^\n]*?pip install [^\n]*?'\.\[([^\]]*)\]'"
)
TIMEOUT = 30

# Runs first in the block's interpreter (and in any Python subprocess it starts, which
# inherits PYTHONPATH): top-level modules named in the environment become unimportable.
BLOCKER = """\
import importlib.abc
import json
import os
import sys

_BLOCKED = frozenset(json.loads(os.environ.get("DOCS_TEST_BLOCKED_MODULES", "[]")))


class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _BLOCKED:
            raise ModuleNotFoundError(
                f"No module named {name!r} (not installed by the README's pip install; "
                "declare it with <!-- needs: ... --> before the block)",
                name=name,
            )
        return None


sys.meta_path.insert(0, _Blocker())
"""


def _project() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        project: dict[str, Any] = tomllib.load(file)["project"]
    return project


def readme_extras() -> list[str]:
    """The extras of the README's install command (``pip install '.[websockets]'``)."""
    match = README_INSTALL.search(README.read_text(encoding="utf-8"))
    assert match, "README.md has no pip install '.[extras]' command"
    return [extra.strip() for extra in match.group(1).split(",") if extra.strip()]


def _closure(requirements: Iterable[str], extras: Iterable[str] = ()) -> set[str]:
    """The installed distributions that ``requirements`` pull in, recursively."""
    seen: set[str] = set()
    pending = [(Requirement(text), frozenset(extras)) for text in requirements]
    while pending:
        requirement, active = pending.pop()
        if requirement.marker is not None and not any(
            requirement.marker.evaluate({"extra": extra}) for extra in (active or {""})
        ):
            continue
        name = canonicalize_name(requirement.name)
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # an optional dependency that is not installed
        key = f"{name}[{','.join(sorted(requirement.extras))}]"
        if key in seen:
            continue
        seen.add(key)
        pending.extend(
            (Requirement(text), frozenset(requirement.extras)) for text in dist.requires or ()
        )
    return {key.partition("[")[0] for key in seen}


def allowed_distributions(needs: Iterable[str] = ()) -> set[str]:
    """assistant-frames with the README's extras, plus ``needs``, and what they require."""
    project = _project()
    optional: dict[str, list[str]] = project["optional-dependencies"]
    requirements = list(project["dependencies"])
    for extra in [*readme_extras(), *needs]:
        requirements += optional.get(extra, [] if extra in optional else [extra])
    return _closure(requirements) | {canonicalize_name(project["name"])}


@cache
def _module_owners() -> dict[str, frozenset[str]]:
    return {
        module: frozenset(canonicalize_name(dist) for dist in dists)
        for module, dists in importlib.metadata.packages_distributions().items()
    }


def blocked_modules(needs: Iterable[str] = ()) -> list[str]:
    """Installed top-level modules that no allowed distribution provides."""
    allowed = allowed_distributions(needs)
    return sorted(
        module
        for module, owners in _module_owners().items()
        if not owners & allowed and module != "assistant_frames"
    )


def missing(needs: Iterable[str]) -> list[str]:
    """The needed extras or distributions that are not installed."""
    optional: dict[str, list[str]] = _project()["optional-dependencies"]
    absent = []
    for need in needs:
        for text in optional.get(need, [need]):
            try:
                importlib.metadata.distribution(Requirement(text).name)
            except importlib.metadata.PackageNotFoundError:
                absent.append(need)
    return absent


Block = tuple[int, int, str, list[str], dict[str, str]]


def _blocks(path: Path) -> list[Block]:
    """``(number, line of the fence, code, needs, files)`` for the runnable blocks of a page.

    ``files`` are the page's earlier ``<!-- file: NAME -->`` blocks, by name.
    """
    text = path.read_text(encoding="utf-8")
    blocks: list[Block] = []
    files: dict[str, str] = {}
    for number, match in enumerate(FENCE.finditer(text), start=1):
        before = text[: match.start()]
        markers = []
        for line in reversed(before.removesuffix("\n").split("\n")):
            if not line.strip().startswith("<!--"):
                break
            markers.append(line.strip())
        if SKIP_MARKER in markers:
            continue
        if named := [found.group(1) for m in markers if (found := FILE_MARKER.match(m))]:
            files[named[0]] = match.group(1)
            continue
        needs = [
            need.strip()
            for marker in markers
            if (found := NEEDS_MARKER.match(marker))
            for need in found.group(1).split(",")
            if need.strip()
        ]
        blocks.append((number, before.count("\n") + 1, match.group(1), needs, dict(files)))
    return blocks


def _cases() -> list[Any]:
    return [
        pytest.param(path.name, number, line, code, needs, files, id=f"{path.name}-{number}")
        for path in PAGES
        for number, line, code, needs, files in _blocks(path)
    ]


def run_block(
    code: str, needs: list[str], tmp_path: Path, name: str, files: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with the blocker installed (and ``files`` beside it); raises
    ``TimeoutExpired`` past ``TIMEOUT``."""
    for file_name, text in (files or {}).items():
        (tmp_path / file_name).write_text(text, encoding="utf-8")
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    script = tmp_path / f"{name}.py"
    script.write_text(code, encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    env["DOCS_TEST_BLOCKED_MODULES"] = json.dumps(blocked_modules(needs))
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def test_docs_have_runnable_blocks() -> None:
    assert _cases(), "no runnable ```python blocks found in README.md or docs/"
    assert _blocks(README), "README.md's ```python blocks are not run"


def test_readme_install_leaves_out_test_only_packages() -> None:
    # The premise of the blocker: trio is installed here, but not by the README's command.
    pytest.importorskip("trio")
    assert "trio" in blocked_modules()
    assert "trio" not in blocked_modules(["trio"])
    assert "websockets" not in blocked_modules()
    assert {"anyio", "pydantic", "jsonschema"}.isdisjoint(blocked_modules())


def test_a_block_cannot_import_what_the_readme_does_not_install(tmp_path: Path) -> None:
    pytest.importorskip("trio")
    code = 'import anyio\n\nanyio.run(anyio.sleep, 0, backend="trio")\n'
    blocked = run_block(code, [], tmp_path, "blocked")
    assert blocked.returncode != 0
    assert "No module named 'trio'" in blocked.stderr
    declared = run_block(code, ["trio"], tmp_path, "declared")
    assert declared.returncode == 0, declared.stderr


@pytest.mark.parametrize(("page", "number", "line", "code", "needs", "files"), _cases())
def test_doc_block_runs(
    page: str,
    number: int,
    line: int,
    code: str,
    needs: list[str],
    files: dict[str, str],
    tmp_path: Path,
) -> None:
    where = f"{page}, python block {number} (line {line})"
    if absent := missing(needs):
        pytest.skip(f"{where} needs {', '.join(absent)}, which is not installed")
    try:
        completed = run_block(code, needs, tmp_path, f"{Path(page).stem}_block_{number}", files)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{where}: timed out after {TIMEOUT} s")
    assert completed.returncode == 0, (
        f"{where} exited with {completed.returncode}\n"
        f"--- stdout ---\n{completed.stdout}\n--- stderr ---\n{completed.stderr}"
    )
