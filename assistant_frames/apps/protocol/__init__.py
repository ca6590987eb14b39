"""The MCP Apps wire protocol, sans-I/O: constants, ``ui/*`` models, JSON-RPC 2.0 framing.

A view (the app, in its iframe) and its host exchange JSON-RPC 2.0 messages: the
``ui/*`` methods of the MCP Apps extension and the MCP requests a view may proxy to its
server (``tools/call``, ``resources/read``...). Names, shapes and versions follow the
shipped ``@modelcontextprotocol/ext-apps`` 2.0.4 (its ``schema.json``); where the spec
and that SDK differ, the SDK's wire behaviour wins.

:func:`decode` classifies a received dict as a :class:`Request`, :class:`Notification`,
:class:`Response` or :class:`ErrorResponse`, with the params of every method in
:data:`METHODS` validated into their model, and raises a :class:`ProtocolError`
(:class:`InvalidRequest`, :class:`MethodNotFound`, :class:`InvalidParams`) that knows
how to answer itself (:meth:`ProtocolError.to_wire`). The ``encode_*`` functions build
the plain dicts to send. Id correlation belongs to :class:`~assistant_frames.calls.PendingCalls`;
nothing here awaits or touches a transport.

MCP's own types (``Implementation``, ``Tool``, ``CallToolResult``, content blocks...) are
the ``mcp`` SDK's; the extension's constants and resource metadata come from
``mcp.server.apps``.

Not the ``mcp`` SDK's JSON-RPC dispatcher: it owns its read loop and session, while this
module must classify single messages that arrive on a sub-stream shared with the frame
channel (see :mod:`assistant_frames.transports.multiplex`).
"""

from mcp.server.apps import (
    APP_MIME_TYPE,
    EXTENSION_ID,
    ResourceCsp,
    ResourcePermissions,
    Visibility,
)

from . import jsonrpc, methods, models, tool_meta
from .jsonrpc import *  # noqa: F403
from .methods import *  # noqa: F403
from .models import *  # noqa: F403
from .tool_meta import *  # noqa: F403

# The names of the extension the mcp SDK defines, then each module's own.
__all__ = ["APP_MIME_TYPE", "EXTENSION_ID", "ResourceCsp", "ResourcePermissions", "Visibility"]
__all__ += jsonrpc.__all__
__all__ += methods.__all__
__all__ += models.__all__
__all__ += tool_meta.__all__
