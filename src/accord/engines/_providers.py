"""The model providers an engine routes its model requests through (unstable ACP ``providers/*``).

An engine implementing :class:`ProviderSettings` beside :class:`~._protocol.Engine` lets the
client see and change where its model requests go: ``providers/list`` answers
:meth:`ProviderSettings.list_providers`, ``providers/set`` calls
:meth:`ProviderSettings.set_provider`, ``providers/disable`` calls
:meth:`ProviderSettings.disable_provider`. The runtime advertises ``agentCapabilities.providers``
exactly for such an engine and answers -32601 to the three methods otherwise.

``providers/set`` carries secrets (its ``headers`` hold the API key): an engine keeps them
where secrets belong (the coder: the platform keyring) and never in a session's state, a log
or an error message. What a change means for sessions already open is the engine's to say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..schema import ProviderInfo, SetProviderRequest

__all__ = ("ProviderSettings",)


@runtime_checkable
class ProviderSettings(Protocol):
    """What an engine offering ``providers/*`` implements beside :class:`~._protocol.Engine`."""

    async def list_providers(self) -> Sequence[ProviderInfo]:
        """The providers the engine can route through, with their current routing."""
        ...

    async def set_provider(self, request: SetProviderRequest) -> None:
        """Replace the whole configuration of one provider (``providers/set``).

        Raises:
            RequestError: the request cannot be honoured (an unknown provider id, a protocol
                it does not speak, a bad URL or header: -32602); the message must not
                contain a header's value.
        """
        ...

    async def disable_provider(self, provider_id: str) -> None:
        """Stop routing through ``provider_id`` (``providers/disable``).

        Raises:
            RequestError: an unknown id, or one that cannot be disabled (-32602).
        """
        ...
