"""Resolving a view's ``ui://`` resource into what a host renders: HTML and its sandbox.

``resources/read`` must give exactly one content of MIME ``text/html;profile=mcp-app``,
as text or as a base64 blob. The sandbox (CSP, permissions, dedicated domain, border)
comes from the content's ``_meta.ui``, key by key falling back to the resource's entry
in ``resources/list``. Anything else is an :class:`AppResourceError`.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as mcp
from pydantic import ValidationError

from .csp import allow_attribute, build_csp
from .errors import AppError
from .forwarding import AppServer
from .protocol import APP_MIME_TYPE, ResourceCsp, ResourcePermissions

__all__ = ["AppResource", "AppResourceError", "check_ui_uri", "resolve_resource"]

logger = logging.getLogger("assistant_frames.apps")

# ui://<authority>[/<path>]: no whitespace, nothing before the scheme.
_UI_URI = re.compile(r"^ui://[^\s/?#]+(?:[/?#]\S*)?$")
_UI_KEYS = ("csp", "permissions", "domain", "prefersBorder")


class AppResourceError(AppError):
    """A view's resource could not be read, or is not an MCP Apps view."""


def check_ui_uri(uri: str) -> str:
    """``uri`` if it is a ``ui://`` URI with an authority; else :class:`AppResourceError`."""
    if not isinstance(uri, str) or not _UI_URI.match(uri):
        raise AppResourceError(f"{uri!r} is not a ui:// resource URI")
    return uri


@dataclass(frozen=True)
class AppResource:
    """A view's HTML and the sandbox its resource asked for.

    :attr:`csp_header` is the ``Content-Security-Policy`` to serve it with (the spec's
    default when ``csp`` is ``None``); :attr:`allow` the iframe ``allow`` attribute.
    """

    html: str
    uri: str | None = None
    csp: ResourceCsp | None = None
    permissions: ResourcePermissions | None = None
    domain: str | None = None
    prefers_border: bool | None = None

    @property
    def csp_header(self) -> str:
        """The Content-Security-Policy header value for this view."""
        return build_csp(self.csp)

    @property
    def allow(self) -> str:
        """The iframe ``allow`` attribute for the permissions the resource asked for."""
        return allow_attribute(self.permissions)

    @classmethod
    def from_meta(
        cls, html: str, ui: Mapping[str, Any] | None, uri: str | None = None
    ) -> AppResource:
        """From HTML and a ``_meta.ui`` mapping; :class:`AppResourceError` if malformed."""
        ui = ui or {}
        try:
            csp = None if ui.get("csp") is None else ResourceCsp.model_validate(ui["csp"])
            permissions = ui.get("permissions")
            if permissions is not None:
                permissions = ResourcePermissions.model_validate(permissions)
        except ValidationError as exc:
            raise AppResourceError(f"The resource's _meta.ui is malformed: {exc}") from None
        domain, border = ui.get("domain"), ui.get("prefersBorder")
        if domain is not None and not isinstance(domain, str):
            raise AppResourceError("The resource's _meta.ui.domain is not a string")
        if border is not None and not isinstance(border, bool):
            raise AppResourceError("The resource's _meta.ui.prefersBorder is not a boolean")
        resource = cls(html, uri, csp, permissions, domain, border)
        try:
            resource.csp_header  # noqa: B018 - a domain that is no host source fails here
        except ValueError as exc:
            raise AppResourceError(str(exc)) from None
        return resource


def _ui(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    ui = meta.get("ui") if meta else None
    return dict(ui) if isinstance(ui, Mapping) else {}


def _html(content: mcp.TextResourceContents | mcp.BlobResourceContents) -> str:
    if isinstance(content, mcp.TextResourceContents):
        return content.text
    try:
        return base64.b64decode(content.blob, validate=True).decode("utf-8")
    except (binascii.Error, ValueError) as exc:
        raise AppResourceError(f"The resource's blob is not base64 UTF-8 HTML: {exc}") from None


def _is_app_mime(mime: str | None) -> bool:
    if mime is None:
        return False
    return [part.strip().lower() for part in mime.split(";")] == APP_MIME_TYPE.split(";")


async def resolve_resource(
    server: AppServer, uri: str, *, timeout: float | None = 30.0
) -> AppResource:
    """Read ``uri`` from ``server`` and check it is one MCP Apps view.

    Raises :class:`AppResourceError` when the URI is no ``ui://`` URI, the read fails or
    times out (``timeout`` seconds), or the result is not exactly one content of MIME
    ``text/html;profile=mcp-app`` with text or base64 HTML.
    """
    check_ui_uri(uri)
    try:
        with anyio.fail_after(timeout):
            result = await server.read_resource(uri)
    except TimeoutError:
        raise AppResourceError(f"resources/read {uri} got no answer within {timeout:g} s") from None
    except Exception as exc:  # the server's refusal, a gone server...: the view cannot show
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        raise AppResourceError(f"resources/read {uri} failed: {message}") from None
    contents = result.contents
    if len(contents) != 1:
        raise AppResourceError(
            f"resources/read {uri} gave {len(contents)} contents; an app view is exactly one"
        )
    content = contents[0]
    if not _is_app_mime(content.mime_type):
        raise AppResourceError(
            f"resources/read {uri} gave MIME {content.mime_type!r}, not {APP_MIME_TYPE!r}"
        )
    html = _html(content)
    ui = _ui(content.meta)
    if any(key not in ui for key in _UI_KEYS):  # fall back to the listing, key by key
        listed = await _listed_ui(server, uri, timeout)
        ui = {**{k: v for k, v in listed.items() if k in _UI_KEYS}, **ui}
    return AppResource.from_meta(html, ui, uri)


async def _listed_ui(server: AppServer, uri: str, timeout: float | None) -> dict[str, Any]:
    try:
        with anyio.fail_after(timeout):
            resources = await server.list_resources()
    except Exception as exc:  # the listing is only a fallback: the content's meta stands
        logger.info("resources/list for %s failed, using the content's _meta only: %s", uri, exc)
        return {}
    for resource in resources:
        if str(resource.uri) == uri:
            return _ui(resource.meta)
    return {}
