"""The former public names: each still gives the same object, with a DeprecationWarning
naming what replaces it (CHANGELOG.md, Deprecated)."""

from __future__ import annotations

import importlib
import sys

import pytest

RENAMED = [
    ("assistant_frames.mcp", "MCPFrame", "MCPFrameHost"),
    ("assistant_frames.nats", "NATSBus", "NATSBusTarget"),
    ("assistant_frames.nats", "NATSFrame", "NATSFrameTarget"),
    ("assistant_frames.nats", "NATSFrameService", "NATSFrameProvider"),
]


@pytest.mark.parametrize(("module", "old", "new"), RENAMED)
def test_a_former_name_warns_and_is_the_new_one(module: str, old: str, new: str) -> None:
    package = importlib.import_module(module)
    message = f"{module}.{old} is deprecated and goes in the next minor release; use {module}.{new}"
    with pytest.warns(DeprecationWarning, match=f"use {module}.{new}$") as caught:
        value = getattr(package, old)
    assert value is getattr(package, new)
    assert [str(warning.message) for warning in caught] == [message]
    assert old not in package.__all__
    assert new in package.__all__


def test_a_name_that_never_was_is_an_attribute_error() -> None:
    package = importlib.import_module("assistant_frames.mcp")
    with pytest.raises(AttributeError, match="has no attribute 'MCPNothing'"):
        package.MCPNothing  # noqa: B018


@pytest.mark.parametrize(
    ("module", "moved_to"),
    [
        ("assistant_frames.tool_calls", "assistant_frames.formats.calls"),
        ("assistant_frames.tool_formats", "assistant_frames.formats.tools"),
    ],
)
def test_a_moved_module_warns_and_gives_the_same_names(module: str, moved_to: str) -> None:
    sys.modules.pop(module, None)  # the warning comes with the first import
    with pytest.warns(DeprecationWarning, match="import from assistant_frames.formats") as caught:
        old = importlib.import_module(module)
    assert [str(warning.message) for warning in caught] == [
        f"{module} is deprecated; import from assistant_frames.formats (or assistant_frames)"
        " instead"
    ]
    new = importlib.import_module(moved_to)
    assert old.__all__ == new.__all__
    assert all(getattr(old, name) is getattr(new, name) for name in new.__all__)
