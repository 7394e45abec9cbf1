"""Protocol version negotiation (ACP ``initialize``).

The client sends the latest version it supports. An agent that supports that version answers
it; otherwise it answers the latest version it supports, and the client decides whether it can
go on. accord speaks version 1; version 2 (a draft) will be added beside it.
"""

from __future__ import annotations

__all__ = ("LATEST_PROTOCOL_VERSION", "SUPPORTED_PROTOCOL_VERSIONS", "negotiate_version")

#: The protocol versions accord can speak, oldest first.
SUPPORTED_PROTOCOL_VERSIONS: tuple[int, ...] = (1,)
#: The version accord asks for and answers by default.
LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[-1]


def negotiate_version(requested: int) -> int:
    """Return the version an agent answers to a client that asked for ``requested``."""
    if requested in SUPPORTED_PROTOCOL_VERSIONS:
        return requested
    return LATEST_PROTOCOL_VERSION
