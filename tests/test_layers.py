"""The architecture in docs/concepts.md, checked against the code's imports.

Each module's package is its first component under ``assistant_frames`` (the root's own
modules are the base). A package may import only the packages its layer allows, and no
module imports a private name (``_x``) from another package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "assistant_frames"

BASE = {"_anyio", "_json", "_text", "_threads", "_version", "calls", "errors"}

#: What each package may import besides the base and itself. Everything not named here
#: (mcp, integrations, tool_formats, testing...) may use any layer below the CLI.
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "registry": set(),
    "transports": set(),
    "frames": {"registry", "transports"},
    # The view's proxied requests go to an MCP server; its tools are listed as MCP's.
    "apps": {"registry", "transports", "mcp", "tool_formats"},
    # The AUI_* widget host: its callTool goes to an app's server, gated as the bridge does.
    "widgets": {"apps", "registry", "transports", "mcp"},
}
TOP = {"cli", "demo", "_demo_worker", "__main__"}  # applications of the library

#: serve_stdio's former home, kept working (deprecated): deferred to first use.
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


def _cases() -> list[Path]:
    return _modules()


@pytest.mark.parametrize("path", _cases(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_layers(path: Path) -> None:
    relative = path.relative_to(PACKAGE)
    own = _package(".".join(relative.with_suffix("").parts))
    if own in TOP:
        if own == "demo":
            assert all(_package(m) != "cli" for m, _, _ in _imports(path)), "demo imports cli"
        return
    allowed = ALLOWED.get(own)
    for module, names, _ in _imports(path):
        target = _package(module)
        if target in (own, "base") or (str(relative), target) in COMPATIBILITY:
            continue
        assert target not in TOP, f"{relative} imports the application layer {module}"
        assert target != "api", f"{relative} imports {names} from the root, which imports it"
        if allowed is not None:
            assert target in allowed, f"{relative} ({own}) may not import {module}"


@pytest.mark.parametrize("path", _cases(), ids=lambda p: str(p.relative_to(PACKAGE)))
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
        for module, _, top_level in _imports(path):
            if _package(module) == target:
                assert not top_level, f"{relative} imports {module} at import time"
