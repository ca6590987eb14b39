"""MCP Apps on the author side: a tool's UI, the ``ui://`` resources, three-tier results.

Pure data, no ``mcp`` import at run time (the ``mcp`` extra is optional): the CSP and
permissions of a resource are kept in their wire form, and ``mcp.server.apps``'
``ResourceCsp`` / ``ResourcePermissions`` are accepted as well as plain dicts.

A tool's UI lives in its ``meta`` (MCP's ``_meta.ui``), the one place that already
crosses frames and MCP; :class:`ToolUI` only builds and reads that entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from pydantic_core import to_jsonable_python

if TYPE_CHECKING:
    from mcp.server.apps import ResourceCsp, ResourcePermissions

__all__ = ["ToolResult", "ToolUI", "UIResource"]

# mcp.server.apps' APP_MIME_TYPE and Visibility, restated because the mcp extra is
# optional here (a test checks they agree).
_APP_MIME_TYPE: Final = "text/html;profile=mcp-app"
Visibility: TypeAlias = Literal["model", "app"]

DEFAULT_VISIBILITY: Final[tuple[Visibility, ...]] = ("model", "app")

_CSP_KEYS: Final = frozenset(
    {"connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"}
)
_PERMISSION_KEYS: Final = frozenset({"camera", "microphone", "geolocation", "clipboardWrite"})

# A host source as CSP writes it: optional scheme, host (a leading "*." allowed), optional
# port and path of printable ASCII. Nothing that could end the directive or the header
# (";", ",", white space, control characters) or quote a keyword. Matched whole.
_CSP_SOURCE: Final = re.compile(
    r"(?:[a-z][a-z0-9+.-]*://)?(?:\*\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*(?::(?:\d{1,5}|\*))?"
    r"(?:/[!-~]*)?",
    re.IGNORECASE | re.ASCII,
)


def csp_sources(field: str, domains: Iterable[object] | None) -> list[str]:
    """A CSP domain list checked and without repeats; ``ValueError`` naming ``field``
    (``"connectDomains"``...) for an entry that is no host source (``"*"``,
    ``"'unsafe-eval'"``, ``"a.com; script-src *"``, a trailing newline...)."""
    sources: list[str] = []
    for domain in domains or ():
        if (
            not isinstance(domain, str)
            or not _CSP_SOURCE.fullmatch(domain)
            or any(c in domain for c in ";,'")
        ):
            raise ValueError(f"_meta.ui.csp.{field} has {domain!r}, which is not a host source")
        if domain not in sources:
            sources.append(domain)
    return sources


# ChatGPT Apps (the Apps SDK) keys a tool's UI declares beside ``_meta.ui``: at the top
# level of ``_meta``, since McpUiToolMeta allows no extra keys under ``ui``.
INVOKING_KEY: Final = "openai/toolInvocation/invoking"
INVOKED_KEY: Final = "openai/toolInvocation/invoked"
FILE_PARAMS_KEY: Final = "openai/fileParams"
MAX_STATUS_LENGTH: Final = 64
"""ChatGPT's limit on the ``invoking`` / ``invoked`` status texts."""


def _check_status(value: object, what: str) -> None:
    if value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, not {value!r}")
    if len(value) > MAX_STATUS_LENGTH:
        raise ValueError(
            f"{what} must be at most {MAX_STATUS_LENGTH} characters (ChatGPT's limit), "
            f"not {len(value)}: {value!r}"
        )


def check_ui_uri(uri: object, what: str = "A UI resource URI") -> str:
    """``uri`` if it is a ``ui://`` URI with something after the scheme, else ``ValueError``."""
    if not isinstance(uri, str) or not uri.startswith("ui://") or len(uri) == len("ui://"):
        raise ValueError(f"{what} must be a ui:// URI (e.g. 'ui://weather/view'), not {uri!r}")
    return uri


@dataclass(frozen=True, slots=True)
class ToolUI:
    """The UI of a tool: the ``ui://`` resource a host renders for it, and who sees it.

    ``visibility`` is ``("model", "app")`` by default; ``("app",)`` makes a tool the
    view may call but a host never offers to a model. Give it as ``ui=`` when adding a
    tool (a bare URI string is ``ToolUI(uri)``); it becomes the tool's ``_meta.ui``.

    For ChatGPT: ``invoking`` and ``invoked`` are the status texts shown while the tool
    runs and once it is done (at most 64 characters, checked here), ``file_params`` the
    names of parameters that take files. They are kept at the top level of ``_meta`` as
    ``openai/toolInvocation/invoking``, ``openai/toolInvocation/invoked`` and
    ``openai/fileParams``.
    """

    resource_uri: str
    visibility: Sequence[Visibility] = DEFAULT_VISIBILITY
    """Kept as a tuple, whatever sequence it was given as."""
    invoking: str | None = field(default=None, kw_only=True)
    invoked: str | None = field(default=None, kw_only=True)
    file_params: Sequence[str] | None = field(default=None, kw_only=True)
    """Kept as a tuple, whatever sequence it was given as."""

    def __post_init__(self) -> None:
        check_ui_uri(self.resource_uri, "A tool's UI resource URI")
        values = self.visibility
        if isinstance(values, str) or not isinstance(values, Iterable):
            raise ValueError(f"visibility must be a list of 'model' and 'app', not {values!r}")
        values = tuple(values)
        bad = [v for v in values if v not in ("model", "app")]
        if bad or not values or len(set(values)) != len(values):
            raise ValueError(
                "visibility must list 'model' and/or 'app', each at most once, "
                f"not {list(values)!r}"
            )
        object.__setattr__(self, "visibility", values)
        _check_status(self.invoking, "invoking")
        _check_status(self.invoked, "invoked")
        params = self.file_params
        if params is not None:
            if isinstance(params, str) or not isinstance(params, Iterable):
                raise ValueError(f"file_params must be a list of parameter names, not {params!r}")
            params = tuple(params)
            if not all(isinstance(p, str) and p for p in params) or len(set(params)) != len(params):
                raise ValueError(
                    f"file_params must list parameter names, each once, not {list(params)!r}"
                )
            object.__setattr__(self, "file_params", params)

    @classmethod
    def coerce(cls, value: ToolUI | str) -> ToolUI:
        """A :class:`ToolUI` from itself or a bare ``ui://`` URI."""
        if isinstance(value, ToolUI):
            return value
        if isinstance(value, str):
            return cls(value)
        raise TypeError(f"ui must be a ToolUI or a ui:// URI string, not {value!r}")

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any] | None) -> ToolUI | None:
        """The UI a tool's ``_meta`` declares (``_meta.ui``), or ``None`` if none or malformed."""
        ui = meta.get("ui") if meta else None
        if not isinstance(ui, Mapping):
            return None
        visibility = ui.get("visibility", list(DEFAULT_VISIBILITY))
        try:
            found = cls(ui.get("resourceUri"), tuple(visibility))  # type: ignore[arg-type]
        except (ValueError, TypeError):
            return None
        try:  # ChatGPT's keys are extras: malformed ones (from a server, say) are dropped
            return cls(
                found.resource_uri,
                found.visibility,
                invoking=meta.get(INVOKING_KEY) if meta else None,
                invoked=meta.get(INVOKED_KEY) if meta else None,
                file_params=meta.get(FILE_PARAMS_KEY) if meta else None,
            )
        except (ValueError, TypeError):
            return found

    def to_meta(self) -> dict[str, Any]:
        """The ``_meta.ui`` entry: exactly McpUiToolMeta's keys (it allows no others)."""
        return {"resourceUri": self.resource_uri, "visibility": list(self.visibility)}

    def openai_meta(self) -> dict[str, Any]:
        """The ChatGPT keys set on this UI, for the top level of the tool's ``_meta``."""
        meta: dict[str, Any] = {}
        if self.invoking is not None:
            meta[INVOKING_KEY] = self.invoking
        if self.invoked is not None:
            meta[INVOKED_KEY] = self.invoked
        if self.file_params is not None:
            meta[FILE_PARAMS_KEY] = list(self.file_params)
        return meta


def with_ui(meta: Mapping[str, Any] | None, ui: ToolUI | str | None) -> Mapping[str, Any] | None:
    """``meta`` with its ``ui`` entry set from ``ui`` (``None`` leaves ``meta`` as it is)."""
    if ui is None:
        return meta  # checked (and copied) by the tool
    if meta is not None and not isinstance(meta, Mapping):
        return meta  # the tool's check says what is wrong with it
    tool_ui = ToolUI.coerce(ui)
    return {**(meta or {}), "ui": tool_ui.to_meta(), **tool_ui.openai_meta()}


def _wire(value: Any, keys: frozenset[str], what: str) -> dict[str, Any] | None:
    """A CSP or permissions value (an ``mcp.server.apps`` model or a dict) in wire form."""
    if value is None:
        return None
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(by_alias=True, exclude_none=True)
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a dict or mcp.server.apps' model, not {value!r}")
    unknown = sorted(set(value) - keys)
    if unknown:
        raise ValueError(f"{what} has unknown keys {unknown}; known: {sorted(keys)}")
    wire: dict[str, Any] = to_jsonable_python(dict(value))
    if keys is _CSP_KEYS:  # refused when declared, not when a host first serves the view
        for key, domains in wire.items():
            if domains is not None and not isinstance(domains, list):
                raise ValueError(f"{what}: {key} must be a list of host sources")
            csp_sources(key, domains)
    return wire


@dataclass(frozen=True, slots=True)
class UIResource:
    """A ``ui://`` HTML resource, served as ``text/html;profile=mcp-app``.

    ``csp`` (``connectDomains``, ``resourceDomains``, ``frameDomains``,
    ``baseUriDomains``) and ``permissions`` (``camera``, ``microphone``,
    ``geolocation``, ``clipboardWrite``) are kept in their wire form; build them from
    ``mcp.server.apps.ResourceCsp`` / ``ResourcePermissions`` or dicts with
    :meth:`create`. ``domain`` is the dedicated origin the view asks for and
    ``prefers_border`` whether it wants the host's border.
    """

    uri: str
    html: str
    name: str | None = None
    title: str | None = None
    description: str | None = None
    csp: Mapping[str, Any] | None = None
    permissions: Mapping[str, Any] | None = None
    domain: str | None = None
    prefers_border: bool | None = None

    @classmethod
    def create(
        cls,
        uri: str,
        html: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: ResourceCsp | Mapping[str, Any] | None = None,
        permissions: ResourcePermissions | Mapping[str, Any] | None = None,
        domain: str | None = None,
        prefers_border: bool | None = None,
    ) -> UIResource:
        """Check and build a resource; raises ``ValueError`` for a URI that is not ``ui://``."""
        check_ui_uri(uri)
        if not isinstance(html, str):
            raise TypeError(f"The HTML of {uri!r} must be a string, not {type(html).__name__}")
        return cls(
            uri,
            html,
            name=name,
            title=title,
            description=description,
            csp=_wire(csp, _CSP_KEYS, f"csp of {uri!r}"),
            permissions=_wire(permissions, _PERMISSION_KEYS, f"permissions of {uri!r}"),
            domain=domain,
            prefers_border=prefers_border,
        )

    def ui_meta(self) -> dict[str, Any]:
        """The resource's ``_meta.ui`` (McpUiResourceMeta): only what is set."""
        ui: dict[str, Any] = {}
        if self.csp is not None:
            ui["csp"] = dict(self.csp)
        if self.permissions is not None:
            ui["permissions"] = dict(self.permissions)
        if self.domain is not None:
            ui["domain"] = self.domain
        if self.prefers_border is not None:
            ui["prefersBorder"] = self.prefers_border
        return ui

    def to_wire(self) -> dict[str, Any]:
        """The resource as a frame sends it (MCP's ``Resource`` fields plus ``text``)."""
        wire: dict[str, Any] = {"uri": self.uri, "mimeType": _APP_MIME_TYPE, "text": self.html}
        for key, value in (
            ("name", self.name),
            ("title", self.title),
            ("description", self.description),
        ):
            if value is not None:
                wire[key] = value
        ui = self.ui_meta()
        if ui:
            wire["_meta"] = {"ui": ui}
        return wire

    @classmethod
    def from_wire(cls, wire: Any) -> UIResource:
        """The resource a frame sent; ``ValueError`` if it is not one."""
        if not isinstance(wire, Mapping):
            raise ValueError(f"a UI resource must be an object, not {wire!r:.60}")
        uri = check_ui_uri(wire.get("uri"))
        text = wire.get("text")
        if not isinstance(text, str):
            raise ValueError(f"UI resource {uri!r} has no text")
        meta = wire.get("_meta")
        ui = meta.get("ui") if isinstance(meta, Mapping) else None
        ui = ui if isinstance(ui, Mapping) else {}
        strings = {key: wire.get(key) for key in ("name", "title", "description")}
        csp, permissions = ui.get("csp"), ui.get("permissions")
        domain, border = ui.get("domain"), ui.get("prefersBorder")
        return cls.create(
            uri,
            text,
            **{key: value for key, value in strings.items() if isinstance(value, str)},
            csp=csp if isinstance(csp, Mapping) else None,
            permissions=permissions if isinstance(permissions, Mapping) else None,
            domain=domain if isinstance(domain, str) else None,
            prefers_border=border if isinstance(border, bool) else None,
        )


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's result in MCP Apps' three tiers.

    ``content`` is for the model (a string is one text block; else MCP content blocks),
    ``structured_content`` for the view and the model, ``meta`` (``_meta``) for the
    view only: it never reaches a model. Return one from a tool instead of a plain value
    (which keeps working). Leaving ``content`` out gives the model
    ``structured_content``'s JSON as text, as a plain return would.
    """

    content: str | Sequence[Mapping[str, Any]] | None = None
    structured_content: Any = None
    meta: Mapping[str, Any] | None = None

    def content_blocks(self) -> list[dict[str, Any]]:
        """MCP content blocks for ``content`` (or ``structured_content``'s JSON text)."""
        content = self.content
        if content is None:
            if self.structured_content is None:
                return []
            import json  # here: a worker's start need not import it

            text = json.dumps(
                to_jsonable_python(self.structured_content, inf_nan_mode="null"),
                ensure_ascii=False,
                separators=(",", ":"),
            )
            return [{"type": "text", "text": text}]
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        return [dict(block) for block in content]

    def model_value(self) -> Any:
        """What a model is given: ``structured_content`` if any, else the content (a lone
        text block as its string), never ``meta``."""
        if self.structured_content is not None:
            return self.structured_content
        content = self.content
        if content is None or isinstance(content, str):
            return content
        blocks = [dict(block) for block in content]
        if len(blocks) == 1 and blocks[0].get("type") == "text":
            return blocks[0].get("text")
        return blocks or None


def model_value(result: Any) -> Any:
    """``result`` as a model may see it: a :class:`ToolResult` loses its ``meta``."""
    return result.model_value() if isinstance(result, ToolResult) else result
