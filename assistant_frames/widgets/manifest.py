"""Which ``window.aui`` methods a widget may call: its manifest's grant."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from .protocol import METHODS

__all__ = ["BASE_METHODS", "PERMISSION_METHODS", "WidgetManifest"]

#: Methods every widget may call: they act on the widget itself only.
BASE_METHODS: Final = frozenset(
    {"setWidgetState", "requestClose", "openExternal", "notifyIntrinsicHeight"}
)

#: The plan's manifest permission flags and the method each grants.
PERMISSION_METHODS: Final[Mapping[str, str]] = {
    "callTools": "callTool",
    "displayMode": "requestDisplayMode",
    "followUpMessages": "sendFollowUpMessage",
    "modals": "requestModal",
}


@dataclass(frozen=True)
class WidgetManifest:
    """The methods granted to a widget; a call to any other is refused.

    The default grants :data:`BASE_METHODS` only, as the plan's manifest does with its
    permission flags all false. Methods beyond the plan's (a host's own, such as
    ``uploadFile``) are granted by name.
    """

    methods: frozenset[str] = field(default=BASE_METHODS)

    @classmethod
    def from_permissions(
        cls, permissions: Mapping[str, object], *, extra: Iterable[str] = ()
    ) -> WidgetManifest:
        """From the plan's ``permissions`` object (``{"callTools": true, ...}``).

        Flags that grant no method (``network``, ``storage``, ``clipboard``) are the
        sandbox's business and ignored here.
        """
        granted = {m for flag, m in PERMISSION_METHODS.items() if permissions.get(flag) is True}
        return cls(BASE_METHODS | granted | frozenset(extra))

    @classmethod
    def all(cls, *, extra: Iterable[str] = ()) -> WidgetManifest:
        """Every method of the plan (and ``extra``) granted."""
        return cls(METHODS | frozenset(extra))

    def grants(self, method: str) -> bool:
        """Whether the widget may call ``method``."""
        return method in self.methods
