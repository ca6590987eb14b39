"""``ToolAnnotations``: MCP's hints about how a tool behaves, as one frozen typed value.

The fields are MCP's ``ToolAnnotations``: a display ``title`` and four hints a client may
use to decide, say, whether to ask the user before a call. They are *hints*: nothing
here enforces them, and a client must not trust them from an untrusted server.

Python code uses the snake_case names; the wire form (frames and MCP alike) uses MCP's
camelCase names. Both are accepted when building one from a dict, and keys this
version does not know are kept and passed on unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["ToolAnnotations"]


class ToolAnnotations(BaseModel):
    """Hints about a tool: MCP's ``annotations`` (all optional, all advisory).

    Examples:
        >>> hints = ToolAnnotations(title="Delete a file", destructive_hint=True)
        >>> hints.to_wire()
        {'title': 'Delete a file', 'destructiveHint': True}
        >>> ToolAnnotations.coerce({"readOnlyHint": True}).read_only_hint
        True
    """

    model_config = ConfigDict(
        frozen=True,
        strict=True,  # "yes" is not a boolean hint
        extra="allow",  # hints MCP adds later pass through unchanged
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
    )

    title: str | None = None
    """A human-readable name for the tool, for display (MCP's ``title``)."""
    read_only_hint: bool | None = None
    """The tool does not change its environment (``readOnlyHint``; MCP default: false)."""
    destructive_hint: bool | None = None
    """The tool may destroy or overwrite, rather than only add (``destructiveHint``;
    meaningful when not read-only; MCP default: true)."""
    idempotent_hint: bool | None = None
    """Calling it again with the same arguments has no further effect
    (``idempotentHint``; meaningful when not read-only; MCP default: false)."""
    open_world_hint: bool | None = None
    """The tool reaches an open world of external entities, such as the web
    (``openWorldHint``; MCP default: true)."""

    @classmethod
    def coerce(cls, value: ToolAnnotations | Mapping[str, Any] | None) -> ToolAnnotations | None:
        """``value`` as annotations: kept if it already is, built from a dict, or ``None``.

        Raises ``ValueError`` (a Pydantic ``ValidationError``) when a known field has the
        wrong type, and ``TypeError`` for anything that is neither.
        """
        if value is None or isinstance(value, ToolAnnotations):
            return value
        if isinstance(value, Mapping):
            return cls.model_validate(dict(value))
        raise TypeError(
            f"annotations must be ToolAnnotations or a dict, not {type(value).__name__}"
        )

    def to_wire(self) -> dict[str, Any]:
        """The wire form: MCP's camelCase names, unset fields left out."""
        return self.model_dump(by_alias=True, exclude_none=True)
