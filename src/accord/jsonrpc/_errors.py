"""The one place where a handler's exception becomes a JSON-RPC error.

A handler answers with an error by raising :class:`accord.errors.RequestError`; a pydantic
``ValidationError`` raised while reading params becomes ``-32602`` with a readable ``data``
naming the fields; anything else is a bug in the handler: it is logged here with its
traceback and the peer gets ``-32603`` with the exception's type and message, never the
traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from ..errors import InternalError, InvalidParams, RequestError

__all__ = ("exception_to_error", "validation_error_data")

logger = logging.getLogger("accord.jsonrpc")


def validation_error_data(exc: ValidationError) -> dict[str, Any]:
    """Summarize a pydantic error for the wire: one entry per problem, naming the field."""
    problems: list[dict[str, Any]] = []
    for error in exc.errors(include_url=False, include_context=False, include_input=False):
        location = ".".join(str(part) for part in error["loc"]) or "(params)"
        problems.append({"field": location, "problem": error["msg"]})
    return {"errors": problems}


def exception_to_error(exc: BaseException, method: str) -> RequestError:
    """Turn an exception raised by the handler of ``method`` into the error to send."""
    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, ValidationError):
        data = validation_error_data(exc)
        fields = ", ".join(problem["field"] for problem in data["errors"])
        return InvalidParams(f"Invalid params for {method}: {fields}", data)
    logger.error("handler for %.100r failed", method, exc_info=exc)
    return InternalError(data={"error": f"{type(exc).__name__}: {exc}"[:1000]})
