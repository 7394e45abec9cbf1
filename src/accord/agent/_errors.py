"""Errors the agent runtime answers with, placed in both branches of the error tree.

Each class is a :class:`~accord.errors.SessionError` (what went wrong, for code that catches
session problems) and a :class:`~accord.errors.RequestError` (how it travels on the wire)::

    SessionNotActive   SessionNotFound + ResourceNotFound (-32002)   no such session is active
                                                                      (or stored, for load)
    PromptInProgress   SessionBusy     + InvalidParams    (-32602)   a prompt while a turn runs

The code for a concurrent prompt is -32602 (invalid params: the request is valid JSON-RPC but
not valid for the session's current state), with ``data = {"sessionId": ..., "reason":
"busy"}`` so a client can tell it from a malformed prompt. The running turn is not affected.

Below: :mod:`accord.errors`. Above: the runtime modules.
"""

from __future__ import annotations

from ..errors import InvalidParams, ResourceNotFound, SessionBusy, SessionNotFound

__all__ = ("PromptInProgress", "SessionNotActive", "session_not_found")


class SessionNotActive(SessionNotFound, ResourceNotFound):
    """The session is not known (-32002): never created, deleted, or not loaded/resumed."""


class PromptInProgress(SessionBusy, InvalidParams):
    """A prompt arrived while the session runs (or is loading) another turn (-32602)."""


def session_not_found(session_id: str, detail: str = "") -> SessionNotActive:
    """Return the -32002 error for ``session_id``; ``detail`` is appended to the message."""
    message = f"session {session_id!r} not found"
    if detail:
        message += f": {detail}"
    return SessionNotActive(message, {"sessionId": session_id})
