"""The ACP method tables: which methods exist, who handles them, and their types.

Generated from the schema's `x-method` / `x-side` annotations (see `_methods_v1.py`), keyed by
wire method name:

* `AGENT_METHODS`: handled by the agent (sent by the client), e.g. `session/prompt`;
* `CLIENT_METHODS`: handled by the client (sent by the agent), e.g. `session/update`;
* `PROTOCOL_METHODS`: either direction (`$/cancel_request`).

`mcp/message` is in both `AGENT_METHODS` (a notification, handler `mcp_notification`) and
`CLIENT_METHODS` (a request, handler `mcp_message`). The proxy-chain methods (`proxy/*`,
x-side `proxy`) are not listed: accord is not a proxy conductor.
"""

from ._base import MethodSpec as MethodSpec
from ._methods_v1 import AGENT_METHODS as AGENT_METHODS
from ._methods_v1 import CLIENT_METHODS as CLIENT_METHODS
from ._methods_v1 import PROTOCOL_METHODS as PROTOCOL_METHODS

__all__ = ("AGENT_METHODS", "CLIENT_METHODS", "PROTOCOL_METHODS", "MethodSpec")
