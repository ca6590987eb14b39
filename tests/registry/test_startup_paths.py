"""What a worker builds before its first context, and what waits for first use.

A worker's start is what it imports and builds before it sends its first context: the
Pydantic models it does not need yet (tool annotations, ...) are built on first use,
which must not change what a tool is, says or does.
"""

from __future__ import annotations

from typing import Any

import pytest

from assistant_frames.registry import Tool, ToolAnnotations
from assistant_frames.registry import tool as tool_module


def test_tool_annotations_are_still_importable_from_the_tool_module() -> None:
    assert tool_module.ToolAnnotations is ToolAnnotations
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        tool_module.Nope  # noqa: B018


async def _nothing(args: Any, context: Any) -> None:
    return None


@pytest.mark.parametrize(
    "given",
    [ToolAnnotations(read_only_hint=True), {"readOnlyHint": True}, {"read_only_hint": True}],
)
def test_annotations_given_in_any_form_become_tool_annotations(given: Any) -> None:
    for tool in (Tool("t", annotations=given), Tool.from_parts("t", _nothing, annotations=given)):
        assert tool.annotations == ToolAnnotations(read_only_hint=True)
    if isinstance(given, ToolAnnotations):
        assert Tool.from_parts("t", _nothing, annotations=given).annotations is given


def test_unusable_annotations_are_refused_as_before() -> None:
    for make in (Tool, lambda name, **kw: Tool.from_parts(name, _nothing, **kw)):
        with pytest.raises(ValueError, match="annotations of tool 't' are invalid"):
            make("t", annotations={"readOnlyHint": "yes"})
        with pytest.raises(TypeError, match="Tool 't': annotations must be"):
            make("t", annotations=["readOnlyHint"])
        assert make("t", annotations=None).annotations is None
