"""JSON-RPC 2.0 framing of MCP Apps messages: decoding, typed errors, encoding.

:func:`decode` classifies a received dict, with the params of every method in
:data:`~.methods.METHODS` validated into their model, and raises a
:class:`ProtocolError` that knows how to answer itself; the ``encode_*`` functions
build the plain dicts to send.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from mcp_types.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from ..._text import describe_validation_error
from ...errors import AssistantFramesError
from ...transports.multiplex import jsonrpc as is_jsonrpc
from .methods import METHODS
from .models import RequestId

__all__ = [
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "REFUSED",
    "ErrorResponse",
    "InFlight",
    "InvalidParams",
    "InvalidRequest",
    "Message",
    "MethodNotFound",
    "Notification",
    "ProtocolError",
    "Refused",
    "Request",
    "Response",
    "decode",
    "encode_error",
    "encode_notification",
    "encode_request",
    "encode_result",
    "is_jsonrpc",
    "parse_result",
    "to_wire",
]

#: Implementation-defined JSON-RPC code (``-32000..-32019``) for a request the host refuses,
#: e.g. a view calling a tool that is not visible to apps.
REFUSED: Final = -32000


# -- messages ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """A received request: answer it with :func:`encode_result` or :func:`encode_error`.

    ``params`` is the validated model of ``METHODS[method].params`` (``None`` for a
    method without params); ``raw_params`` the params as received, for forwarding.
    """

    id: RequestId
    method: str
    params: Any
    raw_params: dict[str, Any] | None


@dataclass(frozen=True)
class Notification:
    """A received notification (never answered); ``params`` as on :class:`Request`."""

    method: str
    params: Any
    raw_params: dict[str, Any] | None


@dataclass(frozen=True)
class Response:
    """A received successful answer to request ``id`` (see :func:`parse_result`)."""

    id: RequestId
    result: dict[str, Any]


@dataclass(frozen=True)
class ErrorResponse:
    """A received error answer to request ``id`` (``None``: the peer could not tell)."""

    id: RequestId | None
    code: int
    message: str
    data: Any = None


Message: TypeAlias = Request | Notification | Response | ErrorResponse


class ProtocolError(AssistantFramesError, ValueError):
    """A received message that cannot be handled, as the JSON-RPC error that answers it.

    ``request_id`` is the id to answer (``None``: a notification, which is never
    answered, or a message whose id could not be read); ``method`` the method, if known.
    """

    #: The JSON-RPC error code this failure is answered with.
    jsonrpc_code: int = INVALID_REQUEST

    def __init__(
        self,
        message: str,
        *,
        request_id: RequestId | None = None,
        method: str | None = None,
        raw: object = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        self.method = method
        #: The message as received.
        self.raw = raw

    @property
    def answerable(self) -> bool:
        """True when the failed message was a request with a usable id."""
        return self.request_id is not None

    def to_wire(self) -> dict[str, Any] | None:
        """The JSON-RPC error response for this failure; ``None`` when there is none to send.

        Without an id nothing is sent: a notification is never answered, and the MCP
        TypeScript SDK's JSON-RPC schema rejects an error response with ``"id": null``.
        """
        if self.request_id is None:
            return None
        return encode_error(self.request_id, self.jsonrpc_code, self.message)


class InvalidRequest(ProtocolError):
    """``-32600``: not a JSON-RPC 2.0 message (bad envelope, id, method or params type)."""

    jsonrpc_code = INVALID_REQUEST


class MethodNotFound(ProtocolError):
    """``-32601``: a method this protocol does not have (or a notification sent as a
    request, or the reverse)."""

    jsonrpc_code = METHOD_NOT_FOUND


class InvalidParams(ProtocolError):
    """``-32602``: the params do not match the method's schema."""

    jsonrpc_code = INVALID_PARAMS


class Refused(ProtocolError):
    """``-32000``: a well-formed request the host will not serve (e.g. a tool the view
    may not call)."""

    jsonrpc_code = REFUSED


# -- decoding ----------------------------------------------------------------------------------


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def decode(raw: object) -> Message:
    """Classify and validate one received JSON-RPC 2.0 message.

    Raises :class:`InvalidRequest` for anything that is not a JSON-RPC 2.0 object
    (check :func:`is_jsonrpc` first to tell them from other channels' messages),
    :class:`MethodNotFound` for a method not in :data:`METHODS`, and
    :class:`InvalidParams` for params that do not validate.
    """
    if not isinstance(raw, dict) or not is_jsonrpc(raw):
        raise InvalidRequest("Not a JSON-RPC 2.0 message", raw=raw)
    has_id = "id" in raw
    raw_id = raw.get("id")
    request_id = raw_id if _is_id(raw_id) else None
    if "method" not in raw:
        return _decode_response(raw, request_id)
    method = raw["method"]
    if not isinstance(method, str):
        raise InvalidRequest("method must be a string", request_id=request_id, raw=raw)
    if has_id and request_id is None:
        raise InvalidRequest("id must be a string or an integer", method=method, raw=raw)
    params = raw.get("params")
    if params is not None and not isinstance(params, dict):
        raise InvalidRequest(
            "params must be an object", request_id=request_id, method=method, raw=raw
        )
    spec = METHODS.get(method)
    if spec is None or spec.is_request != has_id:
        kind = "request" if has_id else "notification"
        raise MethodNotFound(
            f"Method not found: {method} (as a {kind})",
            request_id=request_id,
            method=method,
            raw=raw,
        )
    parsed = None
    if spec.params is not None:
        try:
            parsed = spec.params.model_validate({} if params is None else params)
        except ValidationError as exc:
            raise InvalidParams(
                f"Invalid params for {method}: {describe_validation_error(exc)}",
                request_id=request_id,
                method=method,
                raw=raw,
            ) from None
    if request_id is not None:
        return Request(request_id, method, parsed, params)
    return Notification(method, parsed, params)


def _decode_response(raw: dict[str, Any], request_id: RequestId | None) -> Message:
    if "result" in raw:
        if request_id is None or "error" in raw:
            raise InvalidRequest("A response needs an id and one of result or error", raw=raw)
        result = raw["result"]
        if not isinstance(result, dict):
            raise InvalidRequest("result must be an object", request_id=request_id, raw=raw)
        return Response(request_id, result)
    error = raw.get("error")
    if not isinstance(error, dict):
        raise InvalidRequest(
            "A message needs a method, a result or an error", request_id=request_id, raw=raw
        )
    if raw.get("id") is not None and request_id is None:
        raise InvalidRequest("id must be a string, an integer or null", raw=raw)
    code, message = error.get("code"), error.get("message")
    if not isinstance(code, int) or isinstance(code, bool) or not isinstance(message, str):
        raise InvalidRequest(
            "error needs an integer code and a string message", request_id=request_id, raw=raw
        )
    return ErrorResponse(request_id, code, message, error.get("data"))


def parse_result(method: str, result: Mapping[str, Any]) -> Any:
    """The typed result of ``method`` (the request a :class:`Response` answers).

    The method comes from the caller's books (:class:`~assistant_frames.calls.PendingCall`
    ``.name``). Raises :class:`InvalidParams` when the result does not validate (the
    peer broke the protocol) and :class:`MethodNotFound` for a method that has no result.
    """
    spec = METHODS.get(method)
    if spec is None or spec.result is None:
        raise MethodNotFound(f"Method not found: {method} (as a request)", method=method)
    try:
        return spec.result.model_validate(result)
    except ValidationError as exc:
        raise InvalidParams(
            f"Invalid result for {method}: {describe_validation_error(exc)}",
            method=method,
            raw=result,
        ) from None


# -- encoding ----------------------------------------------------------------------------------


def to_wire(value: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    """A model's wire form (camelCase, unset optional fields left out); mappings as is."""
    if isinstance(value, BaseModel):
        try:
            return value.model_dump(mode="json", by_alias=True, exclude_none=True)
        except UnicodeEncodeError:
            # pydantic-core's JSON mode refuses an object key holding a lone surrogate,
            # which a peer's JSON may carry (as a \ud800 escape) in any open object: the
            # Python mode keeps it, and each value is made JSON-able on its own.
            return _jsonable(value.model_dump(by_alias=True, exclude_none=True))  # type: ignore[no-any-return]
    return dict(value)


def _jsonable(value: Any) -> Any:
    """``value`` (a Python-mode dump) in JSON form, its object keys as they are."""
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    return to_jsonable_python(value, inf_nan_mode="null")


def encode_request(
    request_id: RequestId, method: str, params: BaseModel | Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A JSON-RPC request; ``params`` left out when ``None``."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = to_wire(params)
    return message


def encode_notification(
    method: str, params: BaseModel | Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A JSON-RPC notification; ``params`` left out when ``None``."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = to_wire(params)
    return message


def encode_result(request_id: RequestId, result: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": to_wire(result)}


def encode_error(
    request_id: RequestId, code: int, message: str, data: Any = None
) -> dict[str, Any]:
    """A JSON-RPC error response; ``data`` left out when ``None``.

    No ``"id": null`` form: the MCP TypeScript SDK rejects it (see :meth:`ProtocolError.to_wire`).
    """
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


class InFlight:
    """The peer's requests being answered: at most ``limit`` at once, and no id twice.

    Both ends keep these books (a host for its view's requests, a view for its host's):
    :meth:`admit` gives a request a place or says why it is refused (answered with
    :data:`REFUSED`), :meth:`finished` frees the place once it is answered.
    """

    __slots__ = ("_ids", "limit")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"max_requests must be at least 1, not {limit!r}")
        self.limit = limit
        self._ids: set[RequestId] = set()

    def __len__(self) -> int:
        return len(self._ids)

    def admit(self, request_id: RequestId) -> str | None:
        """``None`` when ``request_id`` now holds a place; else why it is refused."""
        if request_id in self._ids:
            return f"Request id {request_id!r} is already in flight"
        if len(self._ids) >= self.limit:
            return f"Too many requests in flight (at most {self.limit})"
        self._ids.add(request_id)
        return None

    def finished(self, request_id: RequestId) -> None:
        """``request_id`` is answered (or given up): its place frees."""
        self._ids.discard(request_id)
