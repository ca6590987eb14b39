"""Where a view is shown (display modes) and what it is told of its surroundings.

A host declares the display modes it supports; a view declares its own in
``appCapabilities.availableDisplayModes``. The view may use their intersection, and
``inline`` always, which is where anything else falls back to. :func:`build_host_context`
builds the host context once per host (theme, locale, time zone...); each view's
display mode and tool are added per view.
"""

from __future__ import annotations

import locale as _locale
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Literal, overload
from zoneinfo import ZoneInfo

from .._version import package_version
from .protocol import (
    ContainerDimensions,
    DeviceCapabilities,
    DisplayMode,
    HostContext,
    HostStyles,
    SafeAreaInsets,
    Theme,
)

__all__ = [
    "DISPLAY_MODES",
    "allowed_display_modes",
    "as_host_context",
    "build_host_context",
    "choose_display_mode",
    "updated_host_context",
]

#: Every display mode, in the order hosts list them.
DISPLAY_MODES: Final[tuple[DisplayMode, ...]] = ("inline", "fullscreen", "pip")


def allowed_display_modes(
    host: Iterable[DisplayMode], view: Iterable[DisplayMode] | None
) -> list[DisplayMode]:
    """The modes a view may use: ``inline``, plus the host's that the view declared too.

    A view that declares none (``None``) gets ``inline`` only.
    """
    declared = set(view or ())
    return ["inline", *(mode for mode in DISPLAY_MODES[1:] if mode in host and mode in declared)]


def choose_display_mode(requested: str, allowed: Iterable[DisplayMode]) -> DisplayMode:
    """``requested`` if it is allowed, else ``inline``."""
    for mode in allowed:
        if mode == requested:
            return mode
    return "inline"


def build_host_context(
    *,
    theme: Theme = "light",
    locale: str | None = None,
    time_zone: str | None = None,
    user_agent: str | None = None,
    platform: Literal["web", "desktop", "mobile"] = "web",
    device_capabilities: DeviceCapabilities | Mapping[str, Any] | None = None,
    safe_area_insets: SafeAreaInsets | Mapping[str, float] | None = None,
    container_dimensions: ContainerDimensions | Mapping[str, float] | None = None,
    style_variables: Mapping[str, str | None] | None = None,
    **extra: Any,
) -> HostContext:
    """A host context with every key set, once per host; views get it as it is.

    Unset keys default to this process's: the locale (as a BCP 47 tag, else ``en-US``),
    the IANA time zone (``TZ`` or the system's, else ``UTC``), a user agent naming this
    library, no touch and no hover, zero safe-area insets. ``extra`` keys are kept (the
    host context is open).
    """
    values: dict[str, Any] = {
        "theme": theme,
        "locale": locale or _default_locale(),
        "timeZone": time_zone or _default_time_zone(),
        "userAgent": user_agent or f"assistant-frames/{package_version()}",
        "platform": platform,
        "deviceCapabilities": device_capabilities or {"touch": False, "hover": False},
        "safeAreaInsets": safe_area_insets or {"top": 0, "right": 0, "bottom": 0, "left": 0},
        **extra,
    }
    if container_dimensions is not None:
        values["containerDimensions"] = container_dimensions
    if style_variables is not None:
        values["styles"] = HostStyles(variables=dict(style_variables))
    return HostContext.model_validate(values)


@overload
def as_host_context(context: HostContext | Mapping[str, Any]) -> HostContext: ...


@overload
def as_host_context(context: None) -> None: ...


def as_host_context(context: HostContext | Mapping[str, Any] | None) -> HostContext | None:
    """``context`` as a :class:`HostContext`: one is kept as it is, a mapping (its wire
    form) validated into one; ``None`` stays ``None``."""
    if context is None or isinstance(context, HostContext):
        return context
    return HostContext.model_validate(context)


def updated_host_context(context: HostContext, changes: Mapping[str, Any]) -> HostContext:
    """``context`` with the keys of ``changes`` (``theme="dark"``, ...) set, validated again."""
    return HostContext.model_validate({**context.model_dump(exclude_none=True), **changes})


def _default_locale() -> str:
    name = _locale.getlocale()[0] or ""
    tag = name.split(".")[0].replace("_", "-")
    return tag if tag and tag not in ("C", "POSIX") else "en-US"


def _default_time_zone() -> str:
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    try:  # /etc/localtime -> .../zoneinfo/Europe/Oslo
        target = str(Path("/etc/localtime").resolve())
        candidates.append(target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else "")
    except OSError:
        pass
    for name in candidates:
        if name:
            try:
                ZoneInfo(name)
            except (ValueError, OSError, KeyError):
                continue
            return name
    return "UTC"
