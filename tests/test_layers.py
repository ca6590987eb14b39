"""The architecture in docs/concepts.md: what import-linter does not check.

The layers, the absence of cycles and of imports of private modules are import-linter's
contracts (``[tool.importlinter]`` in pyproject.toml, run as ``lint-imports`` in CI). This
file checks the rest: that the diagram in docs/concepts.md is the layers contract, that
no module imports a private *name* (``from ..x import _y``) from another package, and
that the one upward import the contracts let through is deferred to first use.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "assistant_frames"

BASE = {"_anyio", "_json", "_text", "_threads", "_resident_threads", "_version", "calls", "errors"}

#: serve_stdio's former home, kept working (deprecated): deferred to first use. The
#: contracts ignore this import ("ignore_imports"); this checks that it stays deferred.
COMPATIBILITY = {("transports/__init__.py", "frames")}


def _package(module: str) -> str:
    first = module.split(".")[0]
    if first in ("", "__init__"):
        return "api"  # the root package: the public names, gathered from every layer
    return "base" if first in BASE else first


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> list[tuple[str, list[str], bool]]:
    """(absolute module under assistant_frames, imported names, at module level)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = list(path.relative_to(PACKAGE).with_suffix("").parts)[:-1]  # its package
    found: list[tuple[str, list[str], bool]] = []
    top_level = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and node.module.startswith("assistant_frames"):
                module = node.module.removeprefix("assistant_frames").lstrip(".")
            else:
                continue
            names = [alias.name for alias in node.names]
            found.append((module, names, id(node) in top_level))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("assistant_frames."):
                    module = alias.name.removeprefix("assistant_frames.")
                    found.append((module, [], id(node) in top_level))
    return found


def _layers_contract() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return [" ".join(layer.split()) for layer in layers]


def _docs_diagram() -> list[str]:
    text = (ROOT / "docs" / "concepts.md").read_text(encoding="utf-8")
    section = text.split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"<!-- layers -->\n```text\n(.*?)\n```", section, re.DOTALL)
    assert match, "docs/concepts.md: no <!-- layers --> diagram under ## Architecture"
    lines = []
    for line in match.group(1).splitlines():
        modules = line.split("#", 1)[0].strip()  # "# ..." after a line is its comment
        if modules:
            lines.append(" ".join(modules.split()))
    return lines


def test_the_docs_diagram_is_the_layers_contract() -> None:
    assert _docs_diagram() == _layers_contract()


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_names_cross_packages(path: Path) -> None:
    relative = path.relative_to(PACKAGE)
    own = _package(".".join(relative.with_suffix("").parts))
    for module, names, _ in _imports(path):
        target = _package(module)
        if target == own:
            continue
        private = [n for n in names if n.startswith("_") and n != "__version__"]
        assert not private, f"{relative} imports private {private} from {module}"


def test_compatibility_imports_are_deferred() -> None:
    for relative, target in COMPATIBILITY:
        path = PACKAGE / relative
        found = [top for module, _, top in _imports(path) if _package(module) == target]
        assert found, f"{relative} no longer imports {target}: drop the contracts' ignore"
        assert not any(found), f"{relative} imports {target} at import time"
