"""W3C trace context in ``_meta``: read from incoming requests, carried onto outgoing ones.

ACP reserves the root ``_meta`` keys ``traceparent``, ``tracestate`` and ``baggage`` for W3C
trace context (RFD meta-propagation). A client that traces its work puts its span there; for
its trace to continue through the agent, everything the agent does for that request must
carry it on: the requests the agent sends back (permission, files, terminals, elicitation)
and the engine's own calls.

This module does that without OpenTelemetry (strings only, nothing imported):

* :class:`TraceContext` holds the three values; :meth:`TraceContext.from_meta` reads them
  from a ``_meta`` object, keeping a ``traceparent`` only when it is well-formed (version,
  32-hex trace id, 16-hex parent id, flags; all-zero ids are invalid) and the others only
  with it;
* every incoming request's handler runs with its trace context as the current one
  (:func:`current_trace`, a context variable, so it follows the handler into the tasks it
  starts); a request without one runs with none;
* every outgoing request gets the current trace context in its ``_meta``, unless the caller
  set those keys itself (:func:`with_trace`).

:func:`use_trace` replaces the current context for a block: the agent runtime does that when
it opens a span for a turn, so requests made during the turn name the turn's span as parent.

Below: nothing of accord. Above: :class:`~accord.roles.RoleConnection`, the agent runtime.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final, cast

__all__ = ("TraceContext", "current_trace", "use_trace", "with_trace")

_TRACEPARENT: Final = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_ZERO_TRACE: Final = "0" * 32
_ZERO_PARENT: Final = "0" * 16
#: Bounds from the W3C spec (tracestate: 32 members of at most 256 bytes, so about 8 KiB).
_MAX_TRACESTATE: Final = 8192
_MAX_BAGGAGE: Final = 8192


@dataclass(frozen=True, slots=True)
class TraceContext:
    """W3C trace context as carried in ``_meta``.

    Attributes:
        traceparent: ``version-traceid-parentid-flags``, e.g.
            ``00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01``.
        tracestate: Vendor-specific trace state, passed on unchanged.
        baggage: W3C baggage, passed on unchanged.
    """

    traceparent: str
    tracestate: str | None = None
    baggage: str | None = None

    @property
    def trace_id(self) -> str:
        """The 32-hex trace id."""
        return self.traceparent[3:35]

    @property
    def parent_id(self) -> str:
        """The 16-hex id of the span the trace continues from."""
        return self.traceparent[36:52]

    @classmethod
    def from_meta(cls, meta: object) -> TraceContext | None:
        """The trace context in a ``_meta`` value, or ``None`` (absent or malformed)."""
        if not isinstance(meta, Mapping):
            return None
        fields = cast(Mapping[str, Any], meta)
        traceparent = fields.get("traceparent")
        if not isinstance(traceparent, str) or not is_valid_traceparent(traceparent):
            return None
        tracestate = fields.get("tracestate")
        baggage = fields.get("baggage")
        return cls(
            traceparent,
            tracestate
            if isinstance(tracestate, str) and len(tracestate) <= _MAX_TRACESTATE
            else None,
            baggage if isinstance(baggage, str) and len(baggage) <= _MAX_BAGGAGE else None,
        )

    def to_meta(self) -> dict[str, str]:
        """The ``_meta`` keys of this context."""
        meta = {"traceparent": self.traceparent}
        if self.tracestate is not None:
            meta["tracestate"] = self.tracestate
        if self.baggage is not None:
            meta["baggage"] = self.baggage
        return meta


def is_valid_traceparent(value: str) -> bool:
    """Whether ``value`` is a well-formed W3C ``traceparent``."""
    match = _TRACEPARENT.match(value)
    if match is None:
        return False
    version, trace_id, parent_id, _ = match.groups()
    return version != "ff" and trace_id != _ZERO_TRACE and parent_id != _ZERO_PARENT


_current: ContextVar[TraceContext | None] = ContextVar("accord_trace_context", default=None)


def current_trace() -> TraceContext | None:
    """The trace context of the request being handled (``None`` outside one, or without)."""
    return _current.get()


@contextmanager
def use_trace(trace: TraceContext | None) -> Generator[None]:
    """Make ``trace`` the current trace context inside the block."""
    token = _current.set(trace)
    try:
        yield
    finally:
        _current.reset(token)


def with_trace(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with the current trace context in ``_meta`` (keys already set win)."""
    trace = _current.get()
    if trace is None:
        return params
    meta: Any = params.get("_meta")
    if isinstance(meta, dict):
        existing = cast(dict[str, Any], meta)
        if "traceparent" in existing:
            return params
        params["_meta"] = {**trace.to_meta(), **existing}
    else:
        params["_meta"] = trace.to_meta()
    return params
