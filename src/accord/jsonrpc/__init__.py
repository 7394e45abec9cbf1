"""JSON-RPC 2.0 for accord: a core with no I/O and an async connection pump.

This layer knows methods only as strings and params only as JSON values; it is not ACP-aware.
Below it sit the transports (``accord.transports``), which move whole messages and own the
framing (a line that does not parse arrives as ``accord.transports.MalformedFrame``); above it
the typed ACP roles (``accord.roles``), which turn methods into typed calls.
"""

from ._connection import CANCEL_REQUEST_METHOD as CANCEL_REQUEST_METHOD
from ._connection import AnswerHook as AnswerHook
from ._connection import Connection as Connection
from ._connection import ConnectionStatistics as ConnectionStatistics
from ._connection import NotificationHandler as NotificationHandler
from ._connection import RequestHandler as RequestHandler
from ._connection import WireObserver as WireObserver
from ._connection import after_reply as after_reply
from ._connection import current_request_id as current_request_id
from ._connection import on_cancel_request as on_cancel_request
from ._connection import set_wire_observer as set_wire_observer
from ._core import Endpoint as Endpoint
from ._core import Incoming as Incoming
from ._core import InvalidMessage as InvalidMessage
from ._core import NotificationReceived as NotificationReceived
from ._core import RequestId as RequestId
from ._core import RequestReceived as RequestReceived
from ._core import ResponseReceived as ResponseReceived
from ._core import StrayResponse as StrayResponse
from ._core import is_request_id as is_request_id
from ._errors import exception_to_error as exception_to_error
from ._errors import validation_error_data as validation_error_data

__all__ = (
    "CANCEL_REQUEST_METHOD",
    "AnswerHook",
    "Connection",
    "ConnectionStatistics",
    "Endpoint",
    "Incoming",
    "InvalidMessage",
    "NotificationHandler",
    "NotificationReceived",
    "RequestHandler",
    "RequestId",
    "RequestReceived",
    "ResponseReceived",
    "StrayResponse",
    "WireObserver",
    "after_reply",
    "current_request_id",
    "exception_to_error",
    "is_request_id",
    "on_cancel_request",
    "set_wire_observer",
    "validation_error_data",
)
