"""Remote ACP: serve an agent over WebSocket and Streamable HTTP, and reach one from a client.

The server side (:func:`serve_remote`) listens on TCP (TLS with an ``ssl.SSLContext``),
checks every request's bearer token and ``Origin`` (:class:`AccessPolicy`) before anything
else, bounds what a client may make it hold (:class:`ServerLimits`), and hands each accepted
ACP connection to a callback as a message-level :class:`~accord.transports.Transport`: the
agent runtime's ``serve``. The client side (:func:`open_remote`) turns a ``ws://``,
``wss://``, ``http://`` or ``https://`` URL into such a transport. Transports carry
messages and nothing more: reconnecting and resuming sessions after a drop is the client's
(``accord.client.connect(url)``, ``accord bridge``), above the connection.
The wire follows the ACP RFD "Streamable HTTP & WebSocket transport" (one endpoint,
``/acp``; ``Acp-Connection-Id`` / ``Acp-Session-Id``), over HTTP/1.1.

Needs the ``remote`` extra (h11, wsproto), imported only when a server or client is opened.

Above: :mod:`accord.client` (``connect(url)``), :mod:`accord.cli` (``accord serve --listen``,
``accord bridge``). Below: :mod:`accord.transports`, :mod:`accord.errors`.
"""

from typing import TYPE_CHECKING

from ._auth import TOKEN_ENV as TOKEN_ENV
from ._auth import AccessPolicy as AccessPolicy
from ._auth import Refusal as Refusal
from ._auth import generate_token as generate_token
from ._auth import is_loopback_host as is_loopback_host
from ._auth import read_token as read_token
from ._client import open_remote as open_remote
from ._endpoint import RemoteEndpoint as RemoteEndpoint
from ._endpoint import is_remote_url as is_remote_url
from ._limits import ServerLimits as ServerLimits

if TYPE_CHECKING:
    from ._server import serve_remote as serve_remote

__all__ = (
    "TOKEN_ENV",
    "AccessPolicy",
    "Refusal",
    "RemoteEndpoint",
    "ServerLimits",
    "generate_token",
    "is_loopback_host",
    "is_remote_url",
    "open_remote",
    "read_token",
    "serve_remote",
)


def __getattr__(name: str) -> object:
    # h11 and wsproto (the `remote` extra) load only when the server or client is used.
    if name == "serve_remote":
        from ._server import serve_remote

        return serve_remote
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
