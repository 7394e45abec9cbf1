"""accord: the Agent Client Protocol (ACP) for Python, in both roles.

Packages, from the wire up (nothing imports what sits above it):

* ``accord.schema``: wire models generated from the official ACP JSON Schema;
* ``accord.jsonrpc``: JSON-RPC 2.0, a core with no I/O and an async connection;
* ``accord.transports``: stdio, subprocess and in-memory transports;
* ``accord.roles``: the typed ``Agent`` and ``Client`` interfaces and their connections;
* ``accord.events`` and ``accord.store``: the canonical event chain and session persistence;
* ``accord.agent``: the agent runtime that serves any engine; ``accord.engines``: engines
  (pydantic-ai); ``accord.coder``: the accord coding agent;
* ``accord.client``: the client library that drives any ACP agent;
* ``accord.cli``: the ``accord`` command; ``accord.testing``: the public test kit.

Importing ``accord`` itself is cheap: it imports none of these.
"""

__version__ = "0.1.0"

__all__ = ("__version__",)
